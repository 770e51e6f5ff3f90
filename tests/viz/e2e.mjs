// End-to-end test of `minfer viz`: starts the server on a real model, drives Debian's
// chromium (headless, through playwright-core from viz/node_modules), and checks that
//  - the page draws as many nodes as `minfer run --dump-graph-json` writes (decode and prefill),
//  - a prompt run from the page streams statistics for every executed node of every step,
//    where "executed" is derived here from the dump itself, not from the page's logic,
//  - clicking a node shows its details,
//  - compare mode finds the node perturbed in a copy of a MINFER_GRAPH_DUMP directory,
//  - malformed and oversize requests get HTTP 4xx,
// and saves a screenshot (--out DIR/viz-e2e.png; --readme-shot PATH for docs/).
// Exit 77 (skipped) when chromium or viz/node_modules is missing.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const minfer = args.minfer;
const model = args.model || resolve(root, '..', 'shared', 'models', 'tiny-qwen3-q4_0.gguf');
const out = args.out || join(root, 'build-viz', 'viz-e2e');
const chromiumPath = args.chromium || '/usr/bin/chromium';
const PROMPT = 'The capital of France is';
const N_PREDICT = 4;

let passed = 0, failed = 0;
function check(cond, what) {
  if (cond) { ++passed; console.log(`ok   ${what}`); } else { ++failed; console.log(`FAIL ${what}`); }
}

if (!existsSync(chromiumPath)) { console.log(`skip: ${chromiumPath} not installed (apt-get install chromium)`); process.exit(77); }
let chromium;
try {
  chromium = createRequire(join(root, 'viz', 'package.json'))('playwright-core').chromium;
} catch {
  console.log('skip: viz/node_modules has no playwright-core (run scripts/build-viz.sh)');
  process.exit(77);
}
if (!minfer || !existsSync(minfer)) { console.log(`error: --minfer ${minfer} not found`); process.exit(1); }
if (!existsSync(model)) {
  // The test data folder beside the repository: a loud skip where it is missing, as the C++ tests.
  if (!existsSync(dirname(dirname(model)))) { console.log(`*** SKIPPED: test data folder ${dirname(dirname(model))} is missing ***`); process.exit(77); }
  console.log(`error: model ${model} not found`);
  process.exit(1);
}
mkdirSync(out, { recursive: true });

function dumpGraph(prompt, file) {
  const r = spawnSync(minfer, ['run', model, '-p', prompt, '--no-template', '--dump-graph-json', file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`minfer run --dump-graph-json failed: ${r.stderr}`);
  return JSON.parse(readFileSync(file, 'utf8'));
}
// The executor runs every node except the inputs (filled from outside), the KV views and the
// nodes without a buffer (fusion orphans); the KV store has no buffer but writes the cache.
const executedIds = (g) => g.nodes.filter((n) => n.op !== 'Input' && n.op !== 'KvLoad' &&
                                                 (n.buffer !== null || n.op === 'KvStore')).map((n) => n.id);

const prefill = dumpGraph(PROMPT, join(out, 'prefill.json'));
const decode = dumpGraph('Hi', join(out, 'decode.json'));
const nPrompt = prefill.params.n_tokens;

// Two dumps that differ in one node: a real run, and a copy with one output perturbed.
const dumpA = join(out, 'dump-a'), dumpB = join(out, 'dump-b');
rmSync(dumpA, { recursive: true, force: true });
rmSync(dumpB, { recursive: true, force: true });
{
  const r = spawnSync(minfer, ['run', model, '-p', PROMPT, '--no-template', '-n', '2', '--temp', '0'],
                      { encoding: 'utf8', env: { ...process.env, MINFER_GRAPH_DUMP: dumpA } });
  if (r.status !== 0) throw new Error(`minfer run with MINFER_GRAPH_DUMP failed: ${r.stderr}`);
}
cpSync(dumpA, dumpB, { recursive: true });
const perturbed = readFileSync(join(dumpB, 'index.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l))
  .find((e) => e.step === 0 && e.name === 'attn.1');
{
  const f = join(dumpB, perturbed.file);
  const buf = readFileSync(f);
  buf.writeFloatLE(buf.readFloatLE(0) + 1, 0);
  writeFileSync(f, buf);
}
check(decode.params.n_tokens === 1 && nPrompt > 1, `dumps: decode graph (1 token) and prefill graph (${nPrompt} tokens)`);

const server = spawn(minfer, ['viz', model, '--port', '0', '-q'], { stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((res, rej) => {
  let buf = '';
  const t = setTimeout(() => rej(new Error('minfer viz printed no URL in 60 s')), 60000);
  server.stdout.on('data', (d) => {
    buf += d;
    const m = /http:\/\/127\.0\.0\.1:\d+\//.exec(buf);
    if (m) { clearTimeout(t); res(m[0]); }
  });
  server.on('exit', (code) => rej(new Error(`minfer viz exited with ${code}`)));
});
console.log(`server at ${url}`);

let browser;
try {
  const status = await (await fetch(url + 'status')).json();
  if (!status.assets) throw new Error('minfer was built without the page (viz/dist): run scripts/build-viz.sh, then rebuild minfer');
  // HTTP errors, without the browser.
  let r = await fetch(url + 'generate', { method: 'POST', body: '{"prompt": ' });
  check(r.status === 400, `malformed JSON -> 400 (got ${r.status})`);
  r = await fetch(url + 'generate', { method: 'POST', body: JSON.stringify({ prompt: 'x', n_predict: -3 }) });
  check(r.status === 400, `n_predict out of range -> 400 (got ${r.status})`);
  r = await fetch(url + 'generate', { method: 'POST', body: JSON.stringify({ prompt: 'x'.repeat(200000) }) });
  check(r.status === 413, `oversize body -> 413 (got ${r.status})`);
  r = await fetch(url + 'graph?n_tokens=0');
  check(r.status === 400, `graph?n_tokens=0 -> 400 (got ${r.status})`);

  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForFunction(() => window.viz && window.viz.state.model !== null, null, { timeout: 30000 });

  const counts = () => page.evaluate(() => {
    window.viz.view.setAllCollapsed(false);
    return { text: Number(document.getElementById('node-count').textContent),
             drawn: window.viz.view.drawnNodeCount(), edges: window.viz.view.cy.edges().length };
  });
  let c = await counts();
  check(c.text === decode.nodes.length && c.drawn === decode.nodes.length,
        `decode graph: page shows ${c.text} nodes, draws ${c.drawn}, dump has ${decode.nodes.length}`);
  const decodeEdges = decode.nodes.reduce((s, n) => s + new Set(n.src).size, 0);
  check(c.edges === decodeEdges, `decode graph: ${c.edges} edges drawn, dump has ${decodeEdges}`);

  await page.selectOption('#graph-kind', 'prefill');
  await page.fill('#graph-ntokens', String(nPrompt));
  await page.click('#load-graph');
  await page.waitForFunction((n) => window.viz.state.model.nTokens === n, nPrompt, { timeout: 30000 });
  c = await counts();
  check(c.text === prefill.nodes.length && c.drawn === prefill.nodes.length,
        `prefill graph: page shows ${c.text} nodes, draws ${c.drawn}, dump has ${prefill.nodes.length}`);

  // The same page opens a --dump-graph-json file from disk.
  await page.setInputFiles('#graph-file', join(out, 'decode.json'));
  await page.waitForFunction(() => /^file /.test(document.getElementById('graph-title').textContent));
  c = await counts();
  check(c.text === decode.nodes.length && c.drawn === decode.nodes.length, `opened decode.json: ${c.drawn} nodes drawn`);
  await page.click('#load-graph');
  await page.waitForFunction(() => !/^file /.test(document.getElementById('graph-title').textContent));

  // Collapsing a layer replaces its nodes with one box.
  const collapsed = await page.evaluate(() => {
    window.viz.view.setAllCollapsed(true);
    return { drawn: window.viz.view.drawnNodeCount(), boxes: window.viz.view.cy.nodes('.collapsed').length };
  });
  const nLayer = status.n_layer;
  check(collapsed.boxes === nLayer && collapsed.drawn < prefill.nodes.length,
        `collapse: ${collapsed.boxes} layer boxes, ${collapsed.drawn} nodes left drawn`);
  await page.click('#expand-all');

  // Run a prompt and collect what the stream delivered.
  await page.fill('#prompt', PROMPT);
  await page.fill('#n-predict', String(N_PREDICT));
  await page.click('#run');
  await page.waitForFunction(() => window.viz.stream.done !== null, null, { timeout: 120000 });
  const steps = await page.evaluate(() => window.viz.stream.steps.map((s) => ({
    step: s.step, graph: s.graph, n_tokens: s.n_tokens, reused: s.reused, n_nodes: s.n_nodes,
    token: s.token && s.token.piece, nodes: [...s.nodes.values()] })));
  const done = await page.evaluate(() => window.viz.stream.done);
  check(steps.length === N_PREDICT && done.n_generated === N_PREDICT,
        `generation: ${steps.length} steps, ${done.n_generated} tokens, text ${JSON.stringify(done.text)}`);
  check(steps[0] && steps[0].graph === 'prefill' && steps[0].n_tokens === nPrompt, 'step 0 runs the prefill graph');
  check(steps.slice(1).every((s) => s.graph === 'decode' && s.n_tokens === 1), 'later steps run the decode graph');
  check(steps.slice(2).every((s) => s.reused), 'decode graph reused from the second decode step on');
  for (const s of steps) {
    const want = executedIds(s.n_tokens === 1 ? decode : prefill);
    const got = s.nodes.map((n) => n.id).sort((a, b) => a - b);
    check(JSON.stringify(got) === JSON.stringify(want),
          `step ${s.step}: statistics for ${got.length} nodes = the ${want.length} executed nodes of the dump`);
    const sane = s.nodes.every((n) => n.ms >= 0 && (n.n === 0 || (n.min <= n.mean && n.mean <= n.max &&
      n.rms >= Math.abs(n.mean) - 1e-6 && n.hist.length === 16 &&
      n.hist.reduce((a, b) => a + b, 0) === n.n - n.nan - n.inf)));
    check(sane, `step ${s.step}: every node's min <= mean <= max, rms >= |mean|, histogram sums to its finite values`);
  }

  // Step back to the prefill step and click a matmul node on the canvas.
  await page.evaluate(() => window.viz.showStep(0));
  await page.waitForFunction((n) => window.viz.state.model.nTokens === n, nPrompt);
  const target = prefill.nodes.find((n) => n.op === 'MatMul' && n.name.includes('blk.1.attn_q'));
  const pos = await page.evaluate((id) => {
    const cy = window.viz.view.cy;
    const el = cy.$id(`n${id}`);
    cy.zoom(1.2);
    cy.center(el);
    const p = el.renderedPosition();
    const box = cy.container().getBoundingClientRect();
    return { x: box.left + p.x, y: box.top + p.y };
  }, target.id);
  await page.mouse.click(pos.x, pos.y);
  await page.waitForSelector('#details td[data-field="op"]');
  const det = await page.evaluate(() => Object.fromEntries(
    [...document.querySelectorAll('#details td[data-field]')].map((td) => [td.dataset.field, td.textContent])));
  check(det.id === String(target.id) && det.op === 'MatMul' && det.name === target.name,
        `click: details of node ${det.id} ${det.name} (${det.op})`);
  check(det.weights && det.weights.includes('blk.1.attn_q.weight') && det.weights.includes('Q4_0'),
        `details: weight ${det.weights}`);
  check(det.buffer && det.buffer.includes('bytes') && det.shape === `[${target.shape.join(', ')}]` && det.dtype === 'f32',
        `details: shape ${det.shape}, buffer ${det.buffer}`);
  check(det['min / max'] !== undefined && det.histogram !== undefined, 'details: step statistics with a histogram');

  await page.evaluate(() => { window.viz.view.cy.fit(undefined, 20); });
  await page.screenshot({ path: join(out, 'viz-e2e.png') });

  // Compare mode: the perturbed node is the first diverging one, and it is marked.
  await page.fill('#cmp-a', dumpA);
  await page.fill('#cmp-b', dumpB);
  await page.fill('#cmp-tol', '1e-6');
  await page.click('#cmp-run');
  await page.waitForFunction(() => /first diverging|no node differs|error|outside|cannot/.test(
    document.getElementById('cmp-result').textContent), null, { timeout: 30000 });
  const cmp = await page.evaluate(() => {
    const c = window.viz.state.compare;
    const fd = c && c.json.first_diverging;
    return { text: document.getElementById('cmp-result').textContent, fd,
             marked: window.viz.view.cy.nodes('.first-diverging').map((n) => n.data('nid')),
             selected: window.viz.state.selected, nTokens: window.viz.state.model.nTokens,
             before: c ? c.json.nodes.filter((d) => d.step === 0 && d.id < (fd ? fd.id : 0) && d.diverged).length : -1 };
  });
  check(cmp.fd && cmp.fd.step === 0 && cmp.fd.id === perturbed.id && cmp.before === 0,
        `compare: first diverging node ${JSON.stringify(cmp.fd)} is the perturbed ${perturbed.name} (#${perturbed.id}): ${cmp.text}`);
  check(cmp.marked.length === 1 && cmp.marked[0] === perturbed.id && cmp.selected === perturbed.id && cmp.nTokens === nPrompt,
        `compare: node #${cmp.marked} marked and selected on the ${cmp.nTokens}-token graph`);
  console.log(`screenshot: ${join(out, 'viz-e2e.png')}`);
  if (args['readme-shot']) {
    // A readable picture: layer 0 open, the other layers folded, a node of layer 0 selected.
    await page.selectOption('#colour-mode', 'op');
    const shown = prefill.nodes.find((n) => n.name === 'matmul_blk.0.ffn_gate.weight') || target;
    await page.evaluate((id) => {
      const v = window.viz.view;
      v.collapsed = new Set(v.model.layers.filter((l) => l > 0));
      v.render();
      window.viz.selectNode(id);
      v.cy.fit(undefined, 12);
      document.querySelector('aside').scrollTop = 0;
    }, shown.id);
    await page.screenshot({ path: args['readme-shot'] });
    console.log(`screenshot: ${args['readme-shot']}`);
  }
  check(errors.length === 0, `no page errors${errors.length ? ': ' + errors.join('; ') : ''}`);
} catch (e) {
  ++failed;
  console.log(`FAIL ${e.stack || e}`);
} finally {
  if (browser) await browser.close();
  server.kill('SIGTERM');
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
