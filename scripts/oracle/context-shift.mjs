// llama.cpp's context shift (seq_rm + seq_add through node-llama-cpp's eraseContextTokenRanges),
// then the next-token probabilities: the expected values of tests/runtime/test_context_shift.cpp.
// A development tool, run from the oracle's folder (../shared/oracle/README.md installs it):
//   cp scripts/oracle/context-shift.mjs /tmp/oracle/ && cd /tmp/oracle &&
//   node context-shift.mjs MODEL PROMPT_IDS_JSON N_KEEP N_DISCARD NEXT_IDS_JSON [KV F32] [CTX 256] [FA off]
import {getLlama, LlamaLogLevel} from "node-llama-cpp";
import path from "node:path";
const [model_path, ids_s, keep_s, disc_s, next_s, kv = "F32", ctx_s = "256", fa_s = "off"] = process.argv.slice(2);
const ids = JSON.parse(ids_s), next = JSON.parse(next_s), nKeep = Number(keep_s), nDisc = Number(disc_s);
const llama = await getLlama({gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, maxThreads: 0, logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: path.resolve(model_path), gpuLayers: 0});
const context = await model.createContext({contextSize: Number(ctx_s), batchSize: Number(ctx_s), threads: 2, sequences: 1, flashAttention: fa_s === "on",
  experimentalKvCacheKeyType: kv, experimentalKvCacheValueType: kv});
const seq = context.getSequence();
await seq.controlledEvaluate(ids);
await seq.eraseContextTokenRanges([{start: nKeep, end: nKeep + nDisc}]);
const gen = {generateNext: {probabilities: true, options: {temperature: 0}}};
const res = await seq.controlledEvaluate(next.map((t) => [t, gen]));
const out = res.map((r) => { const pm = r.next.probabilities; let z = 0; for (const p of pm.values()) z += p;
  const top = []; for (const [id, p] of pm) { if (top.length >= 8) break; top.push([id, p / z]); } return top; });
console.log(JSON.stringify({n_past_after: seq.nextTokenIndex, out}));
await context.dispose();
