#!/usr/bin/env bash
# Fuzzes the GGUF reader: scripts/fuzz.sh BUILD_DIR SECONDS
# BUILD_DIR must hold a fuzz_gguf built with -DMINFER_FUZZ=ON (clang). The seed corpus is
# the first 64 KB of every GGUF file in ../shared plus a small complete GGUF built here, so
# the fuzzer starts from real headers. Exits non-zero when the fuzzer finds a crash.
set -euo pipefail
BUILD_DIR=${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS}
SECONDS_TO_RUN=${2:?usage: scripts/fuzz.sh BUILD_DIR SECONDS}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$BUILD_DIR/fuzz/fuzz_gguf"
[ -x "$BIN" ] || { echo "fuzz.sh: $BIN not found; build the fuzz_gguf target first" >&2; exit 2; }

SEED="$BUILD_DIR/fuzz-seed"
CORPUS="$BUILD_DIR/fuzz-corpus"
ARTIFACTS="$BUILD_DIR/fuzz-artifacts"
rm -rf "$SEED"
mkdir -p "$SEED" "$CORPUS" "$ARTIFACTS"

n=0
for f in "$ROOT"/../shared/models/*.gguf "$ROOT"/../shared/vocab/*.gguf; do
  [ -f "$f" ] || continue
  head -c 65536 "$f" > "$SEED/$(basename "$f")"
  n=$((n + 1))
done

# A complete little-endian GGUF v3: 2 keys, 2 tensors (F32 [4], Q8_0 [32]), data.
u32() { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) $((($1 >> 24) & 255)))"; }
u64() { u32 "$1"; u32 0; }
str() { u64 "${#1}"; printf '%s' "$1"; }
{
  printf 'GGUF'; u32 3; u64 2; u64 2
  str general.architecture; u32 8; str llama
  str tokenizer.ggml.tokens; u32 9; u32 8; u64 3; str a; str bc; str '<s>'
  str t0; u32 1; u64 4; u32 0; u64 0
  str t1; u32 2; u64 32; u64 1; u32 8; u64 32
} > "$SEED/small.gguf"
size=$(stat -c %s "$SEED/small.gguf")
head -c $(( (32 - size % 32) % 32 + 32 + 34 + 30 )) /dev/zero >> "$SEED/small.gguf"
n=$((n + 1))
echo "fuzz.sh: $n seeds in $SEED; fuzzing for $SECONDS_TO_RUN s"

"$BIN" "$CORPUS" "$SEED" -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -timeout=10 \
  -rss_limit_mb=2048 -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
