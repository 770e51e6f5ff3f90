#!/usr/bin/env bash
# Installs every Debian package minfer needs to build, test and fuzz.
# Idempotent: packages already present are skipped; `apt-get update` runs once.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build ccache pkg-config git
  clang libclang-rt-dev            # libFuzzer + sanitizer runtimes
  libpcre2-dev libutf8proc-dev     # tokenizer regexes, Unicode
  nlohmann-json3-dev libcpp-httplib-dev libcli11-dev libfmt-dev
  libomp-dev libgtest-dev libgmock-dev libbenchmark-dev
  chromium                         # the viz page's end-to-end test (headless)
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js + npm bundle the viz page's front-end; any installed Node.js >= 18 will do.
command -v npm >/dev/null || missing+=(nodejs npm)

if ((${#missing[@]})); then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# The viz page: npm packages from viz/package-lock.json, bundled into viz/dist, which the CMake
# build embeds into the binary.
bash "$(dirname "$0")/build-viz.sh"
