// Bundles src/main.js (cytoscape + dagre included) into dist/app.js and copies the static
// files, so that `minfer` can embed dist/* at build time and serve the page offline.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });
await build({
  entryPoints: [join(here, 'src', 'main.js')],
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  outfile: join(dist, 'app.js'),
  legalComments: 'none',
  logLevel: 'warning',
});
for (const f of ['index.html', 'style.css']) copyFileSync(join(here, 'src', f), join(dist, f));
console.log('viz: wrote', dist);
