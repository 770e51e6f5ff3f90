#!/usr/bin/env bash
# llama.cpp and minfer on the same GGUF file, same threads, in one sitting: ROUNDS rounds, each
# running, per prompt size, llama.cpp's native mini-bench and at once `minfer bench` on the same
# tests (the first size's run also times tg), so that each pair sees the same minute of the host
# (its memory swings between ~35 and ~65 GB/s within a minute on the shared VMs: engines run a
# round apart measured different states). Prints per-round numbers and a summary table with the
# medians over rounds, the ratios minfer / llama.cpp of the medians and the median of the rounds'
# paired ratios, for pp128, pp512 and tg64, the issue's targets
# (decode >= 2x, prefill >= 3x) and the memory-bandwidth bound of decode, and what each engine's
# decode reads: whether 2x llama.cpp's reading is within the read bandwidth measured this sitting.
#
# usage: bench/compare-llamacpp.sh MODEL.gguf [THREADS]
# env:   LLAMACPP_ORACLE  the installed oracle folder (default /tmp/oracle)
#        MINFER           the minfer binary (default: build/minfer of this checkout)
#        ROUNDS (3), REPS (3: timed repetitions per engine per round), BW_GBS (31: memory read
#        bandwidth for the bound), PP ("128,512"), TG (64), KV (f16; llama.cpp's default)
#        ISA              both engines on one instruction set, as on a CPU that has no more:
#                         avx2 (llama.cpp's haswell build), avxvnni (its alderlake build: AVX2
#                         + AVX-VNNI, as on Intel's client CPUs since 2021), avx512 (its icelake
#                         build: AVX-512 VNNI, no AMX); default: each engine's best for this CPU
#        BENCH_KERNELS    bench_kernels binary (default: bench/bench_kernels beside MINFER, else
#                         this checkout's build/bench/bench_kernels, when
#                         built): its MemRead, run before and after the rounds, prints the read
#                         bandwidth the host left this sitting (two samples: context, not a bound)
#        DEPTH            also decode after DEPTH tokens in the cache ("tg64 @ d1024"): llama.cpp's
#                         mini-bench after a DEPTH-token prompt (no --tg-empty), minfer bench -d
#
# tg follows llama-bench's convention on both sides: decode steps from an empty KV cache
# (mini-bench --tg-empty). The oracle's README table measured tg after a 128-token prompt,
# which is a little slower for both engines.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
model=${1:-}
threads=${2:-2}
oracle=${LLAMACPP_ORACLE:-/tmp/oracle}
minfer=${MINFER:-$root/build/minfer}
rounds=${ROUNDS:-3}
reps=${REPS:-3}
bw=${BW_GBS:-31}
pp_list=${PP:-128,512}
tg=${TG:-64}
kv=${KV:-f16}
depth=${DEPTH:-0}
kernels=${BENCH_KERNELS:-$(dirname "$minfer")/bench/bench_kernels}
# A copied binary (MINFER=/tmp/minfer-old) has none beside it: this checkout's build's, then.
[ -n "${BENCH_KERNELS:-}" ] || [ -x "$kernels" ] || kernels=$root/build/bench/bench_kernels

if [[ -z "$model" || "$model" == -h || "$model" == --help ]]; then
  sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
[[ -f "$model" ]] || { echo "compare-llamacpp: $model: no such file" >&2; exit 1; }
[[ -x "$minfer" ]] || { echo "compare-llamacpp: minfer binary $minfer not found (build it, or set MINFER=...)" >&2; exit 1; }
mini="$oracle/native/mini-bench"
if [[ ! -x "$mini" ]]; then
  cat >&2 <<EOF
compare-llamacpp: llama.cpp's mini-bench not found at $mini.
Install the oracle (llama.cpp v0.4.0 from npm, ~730 MB, nothing goes into the repo), from the repo root:
  cp -r ../shared/oracle /tmp/oracle && ln -sfn "\$(realpath ../shared)" /tmp/shared
  (cd /tmp/oracle && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci && bash native/build.sh)
then run again (or point LLAMACPP_ORACLE at another install folder).
EOF
  exit 1
fi
command -v node >/dev/null || { echo "compare-llamacpp: node is needed (it came with the oracle)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# llama.cpp loads the best of its CPU builds from a folder: a folder holding only the one
# build pins it.
mini_args=()
case "${ISA:-}" in
  "") ;;
  avx2 | avxvnni | avx512)
    case "$ISA" in avx2) variant=haswell ;; avxvnni) variant=alderlake ;; *) variant=icelake ;; esac
    lib="$oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-$variant.so"
    [[ -f "$lib" ]] || { echo "compare-llamacpp: $lib not found" >&2; exit 1; }
    mkdir -p "$tmp/backend" && ln -s "$lib" "$tmp/backend/"
    mini_args=(--backend-dir "$tmp/backend")
    export MINFER_ISA=$ISA
    ;;
  *) echo "compare-llamacpp: ISA must be avx2, avxvnni or avx512 (or unset)" >&2; exit 1 ;;
esac
loadavg() { cut -d' ' -f1 /proc/loadavg; }
# GB/s of bench_kernels' MemRead at this thread count, or nothing without the binary.
memread() {
  [[ -x "$kernels" ]] || return 0
  "$kernels" --benchmark_filter="^MemRead/threads:$threads/" --benchmark_min_time=0.5 2>/dev/null |
    sed -n 's/.*GB\/s=\([0-9.]*\)G\/s.*/\1/p'
}

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ)  model $model  threads $threads  rounds $rounds  reps $reps  kv $kv  isa ${ISA:-best}"
echo "# minfer: $minfer   llama.cpp: $mini"
IFS=, read -r -a pps <<<"$pp_list"
read_before=$(memread)
for ((r = 1; r <= rounds; r++)); do
  for p in "${pps[@]}"; do
    # One mini-bench run per prompt size (it takes one -p); the tg of the first one counts, and
    # minfer's run of the same tests follows it at once.
    first=$([[ "$p" == "${pps[0]}" ]] && echo 1 || echo 0)
    n=$((first ? tg : 1))
    l0=$(loadavg)
    "$mini" "$model" -p "$p" -n "$n" -t "$threads" -r "$reps" --tg-empty "${mini_args[@]}" >"$tmp/llama-$r-$p.json"
    l1=$(loadavg)
    "$minfer" bench -m "$model" -p "$p" -n $((first ? tg : 0)) -t "$threads" -r "$reps" --kv-type "$kv" -o json \
      >"$tmp/minfer-$r-$p.json"
    tag=$( ((first)) && echo "pp$p (+tg$tg)" || echo "pp$p")
    echo "round $r $tag: llama.cpp load $l0 -> $l1, minfer -> $(loadavg)" >&2
  done
  if ((depth > 0)); then
    "$mini" "$model" -p "$depth" -n "$tg" -t "$threads" -r "$reps" "${mini_args[@]}" >"$tmp/llama-$r-depth.json"
    "$minfer" bench -m "$model" -p 0 -n "$tg" -d "$depth" -t "$threads" -r "$reps" --kv-type "$kv" -o json >"$tmp/minfer-$r-depth.json"
    echo "round $r tg$tg after a $depth-token prompt: load $(loadavg)" >&2
  fi
done
read_after=$(memread)

node - "$tmp" "$rounds" "$pp_list" "$tg" "$bw" "${read_before:-}" "${read_after:-}" "$depth" <<'EOF'
const fs = require("fs");
const [dir, rounds, ppList, tg, bw, readBefore, readAfter, depth] = process.argv.slice(2);
const pps = ppList.split(",").map(Number);
const median = (a) => { const s = [...a].sort((x, y) => x - y), m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const rows = [];  // {test, llama: [per round], minfer: [per round]}
const get = (t) => rows.find((r) => r.test === t) || (rows.push({test: t, llama: [], minfer: []}), rows[rows.length - 1]);
let info = null, llamaInfo = "";
for (let r = 1; r <= Number(rounds); r++) {
  for (const p of pps) {
    const j = JSON.parse(fs.readFileSync(`${dir}/llama-${r}-${p}.json`, "utf8"));
    get(`pp${p}`).llama.push(j.pp_tps.median);
    llamaInfo = j.system_info;
    if (p === pps[0]) get(`tg${tg}`).llama.push(j.tg_tps.median);
  }
  for (const p of pps)
    for (const e of JSON.parse(fs.readFileSync(`${dir}/minfer-${r}-${p}.json`, "utf8"))) {
      get(e.test).minfer.push(median(e.samples_ts));
      info = e;
    }
  if (Number(depth) > 0) {
    const t = `tg${tg} @ d${depth}`;
    get(t).llama.push(JSON.parse(fs.readFileSync(`${dir}/llama-${r}-depth.json`, "utf8")).tg_tps.median);
    for (const e of JSON.parse(fs.readFileSync(`${dir}/minfer-${r}-depth.json`, "utf8"))) get(t).minfer.push(median(e.samples_ts));
  }
}
const target = (t) => t.startsWith("tg") ? 2.0 : 3.0;
const bound = Number(bw) * 1e9 / info.bytes_per_token;
// Weights that fit in the caches are not streamed from memory: no bandwidth bound then.
const cached = info.bytes_per_token < 64e6;
console.log(`\nllama.cpp system info: ${llamaInfo.trim()}`);
console.log(`minfer kernels: isa ${info.isa}, matmul ${JSON.stringify(info.matmul_isa)}, repacked at load: ${info.repacked_at_load}, copied at load: ${info.copied_at_load}, KV ${info.kv_type}`);
console.log(cached ? `decode bandwidth bound: none (${(info.bytes_per_token / 1e6).toFixed(1)} MB per token fits in the caches)\n`
                   : `decode bandwidth bound: ${bw} GB/s / ${(info.bytes_per_token / 1e6).toFixed(1)} MB per token = ${bound.toFixed(1)} tok/s\n`);
// The read bandwidth the neighbours left this sitting (MemRead before and after the rounds): on
// a shared host it swings within a minute (26.7 -> 18.5 GB/s seen), so it is context, not a bound.
if (readBefore && readAfter)
  console.log(`read bandwidth this sitting (bench_kernels MemRead): ${Number(readBefore).toFixed(1)} GB/s before, ${Number(readAfter).toFixed(1)} after\n`);
console.log("| test | llama.cpp t/s | minfer t/s | minfer / llama.cpp | rounds' ratios, median | target | minfer % of bw bound |");
console.log("|---|---:|---:|---:|---:|---:|---:|");
for (const r of rows) {
  const l = median(r.llama), m = median(r.minfer), ratio = m / l;
  const paired = median(r.llama.map((v, i) => r.minfer[i] / v));
  // At a depth a step also reads the KV cache: the weights-only bound does not apply.
  const pct = r.test.startsWith("tg") && !r.test.includes("@") && !cached ? `${(100 * m / bound).toFixed(0)} %` : "";
  console.log(`| ${r.test} | ${l.toFixed(2)} | ${m.toFixed(2)} | ${ratio.toFixed(2)}x ${ratio >= target(r.test) ? "(met)" : "(not met)"} | ${paired.toFixed(2)}x | ${target(r.test).toFixed(1)}x | ${pct} |`);
}
// What each engine's decode reads (weights per token x tokens/s) and what the decode target would
// need: where 2x llama.cpp's reading exceeds the read bandwidth of the sitting, no engine can meet
// the target on this host, whatever its kernels do.
const tgRow = rows.find((r) => r.test === `tg${tg}`);
if (tgRow && !cached) {
  const gbs = (tps) => tps * info.bytes_per_token / 1e9;
  const l = gbs(median(tgRow.llama)), m = gbs(median(tgRow.minfer));
  let line = `\ndecode reads: llama.cpp ${l.toFixed(1)} GB/s, minfer ${m.toFixed(1)} GB/s; 2x llama.cpp needs ${(2 * l).toFixed(1)} GB/s`;
  if (readBefore && readAfter) {
    const most = Math.max(Number(readBefore), Number(readAfter));
    line += ` (MemRead at most ${most.toFixed(1)} this sitting: ${2 * l <= most ? "within it" : "beyond it"}; minfer ${(100 * m / most).toFixed(0)} % of it)`;
  }
  console.log(line);
}
console.log("\nper round (median of reps), llama.cpp / minfer:");
for (const r of rows) console.log(`  ${r.test}: ${r.llama.map((v, i) => `${v.toFixed(1)}/${(r.minfer[i] ?? NaN).toFixed(1)}`).join("  ")}`);
EOF
