// llama-perplexity's computation on llama.cpp's logits (chunks of N_CTX, BOS in front of each when
// the vocabulary adds one, the second half scored): the expected values of
// tests/runtime/test_perplexity.cpp. A development tool, run from the oracle's folder:
//   cp scripts/oracle/perplexity.mjs /tmp/oracle/ && cd /tmp/oracle &&
//   node perplexity.mjs MODEL TEXT_FILE N_CTX [KV F32]
import {getLlama, LlamaLogLevel} from "node-llama-cpp";
import fs from "node:fs";
import path from "node:path";
const [model_path, text_path, nctx_s, kv = "F32"] = process.argv.slice(2);
const nctx = Number(nctx_s);
const llama = await getLlama({gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, maxThreads: 0, logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: path.resolve(model_path), gpuLayers: 0});
const text = fs.readFileSync(text_path, "utf8");
let ids = [...model.tokenize(text, false)];
if (model.tokens.shouldPrependBosToken && model.tokens.bos != null) ids = [model.tokens.bos, ...ids];
const context = await model.createContext({contextSize: Math.max(256, nctx), batchSize: Math.max(256, nctx), threads: 2, sequences: 1, flashAttention: false,
  experimentalKvCacheKeyType: kv, experimentalKvCacheValueType: kv});
const nChunks = Math.floor(ids.length / nctx), first = Math.floor(nctx / 2);
let nll = 0, nll2 = 0, count = 0; const running = []; const seq = context.getSequence();
const gen = {generateNext: {probabilities: true, options: {temperature: 0}}};
for (let c = 0; c < nChunks; c++) {
  await seq.clearHistory();
  const chunk = ids.slice(c * nctx, (c + 1) * nctx);
  if (model.tokens.shouldPrependBosToken) chunk[0] = model.tokens.bos;
  const res = await seq.controlledEvaluate(chunk.map((t, i) => (i >= first && i < nctx - 1) ? [t, gen] : t));
  for (let i = first; i < nctx - 1; i++) {
    const pm = res[i].next.probabilities; let z = 0; for (const p of pm.values()) z += p;
    const p = (pm.get(ids[c * nctx + i + 1]) ?? 0) / z;
    const v = -Math.log(p); nll += v; nll2 += v * v; count++;
  }
  running.push(Math.exp(nll / count));

}
const mean = nll / count, ppl = Math.exp(mean); let var2 = nll2 / count - mean * mean;
console.log(JSON.stringify({n_tokens: ids.length, running: running.map((x) => +x.toFixed(6)), ppl, err: var2 > 0 ? Math.sqrt(var2 / (count - 1)) * ppl : 0}));
await context.dispose();
