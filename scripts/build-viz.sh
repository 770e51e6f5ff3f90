#!/usr/bin/env bash
# Installs the viz front-end's npm packages (viz/package-lock.json: cytoscape, cytoscape-dagre,
# esbuild; playwright-core for the browser test) and bundles the page into viz/dist, which the
# next CMake build embeds into `minfer` (src/server/embed_assets.cmake). Run at set-up time,
# never from the C++ build. Needs node + npm; the browser test also needs Debian's chromium.
set -euo pipefail
cd "$(dirname "$0")/../viz"
if ! command -v npm >/dev/null; then
  echo "build-viz: npm not found (apt-get install nodejs npm); minfer will build without the page" >&2
  exit 1
fi
npm ci --no-audit --no-fund
npm run build
