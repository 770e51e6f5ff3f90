#include "runtime/bench.h"

#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <string>

#include "common/error.h"
#include "gguf/gguf.h"
#include "runtime/context.h"
#include "runtime/model.h"

namespace minfer::runtime {

namespace {

std::string depth_suffix(int64_t depth) {
  if (depth < 0) fail("bench: depth {} must be >= 0", depth);
  return depth > 0 ? " @ d" + std::to_string(depth) : "";
}

}  // namespace

BenchTest pp_test(int64_t n, int64_t depth) {
  if (n < 1) fail("bench: prompt size {} must be >= 1", n);
  return {"pp" + std::to_string(n) + depth_suffix(depth), n, 0, depth};
}

BenchTest tg_test(int64_t n, int64_t depth) {
  if (n < 1) fail("bench: generation length {} must be >= 1", n);
  return {"tg" + std::to_string(n) + depth_suffix(depth), 0, n, depth};
}

std::vector<int32_t> bench_tokens(int64_t n_vocab, int64_t n, uint64_t seed) {
  if (n_vocab < 1) fail("bench: the model has no vocabulary");
  // Same range as the oracle's mini-bench: skip the lowest ids (byte/control tokens) and,
  // for big vocabularies, everything past 32000 (added and special tokens live at the end).
  const int64_t nv = std::min<int64_t>(n_vocab, 32000);
  const int64_t margin = std::min<int64_t>(300, nv / 8);
  const int64_t lo = margin, hi = std::max<int64_t>(nv - margin, lo + 1);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi - 1);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = int32_t(dist(rng));
  return ids;
}

namespace {

using Clock = std::chrono::steady_clock;

// Seconds for one run of the test from an empty cache: ids[0, depth) prefilled untimed, the
// test's tokens after them, prompts in decode calls of at most n_batch tokens.
double run_once(Context& ctx, const std::vector<int32_t>& ids, const BenchTest& t, int64_t n_gen, size_t batch) {
  ctx.truncate(0);
  const size_t d = size_t(t.n_depth);
  auto prefill = [&](size_t from, size_t n) {
    for (size_t i = 0; i < n; i += batch)
      ctx.decode(std::span<const int32_t>(ids.data() + from + i, std::min(batch, n - i)), 1);
  };
  prefill(0, d);
  const auto t0 = Clock::now();
  if (t.n_prompt > 0) {
    prefill(d, size_t(t.n_prompt));
  } else {
    for (int64_t i = 0; i < n_gen; ++i) ctx.decode(std::span<const int32_t>(&ids[d + size_t(i)], 1), 1);
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

BenchResult run_bench(Context& ctx, const BenchTest& test, int reps, uint64_t seed, int64_t n_batch) {
  if (reps < 1) fail("bench: repetitions {} must be >= 1", reps);
  if (n_batch < 1) fail("bench: the batch size {} must be >= 1", n_batch);
  const int64_t timed = std::max(test.n_prompt, test.n_gen);
  if (timed < 1) fail("bench: test {} has no tokens", test.name);
  if (test.n_depth < 0) fail("bench: test {} has a negative depth", test.name);
  const int64_t need = test.n_depth + timed;
  if (need > ctx.n_ctx())
    fail("bench: {} needs {} tokens of context, the context holds {}", test.name, need, ctx.n_ctx());
  const std::vector<int32_t> ids = bench_tokens(ctx.n_vocab(), need, seed);

  BenchResult r;
  r.test = test.name;
  r.threads = ctx.params().n_threads;
  r.n_prompt = test.n_prompt;
  r.n_gen = test.n_gen;
  r.n_depth = test.n_depth;
  run_once(ctx, ids, test, std::min<int64_t>(test.n_gen, 4), size_t(n_batch));  // warm-up
  for (int i = 0; i < reps; ++i) {
    const double s = run_once(ctx, ids, test, test.n_gen, size_t(n_batch));
    r.samples_ts.push_back(double(timed) / std::max(s, 1e-9));
  }
  ctx.truncate(0);
  summarize(r);
  return r;
}

void summarize(BenchResult& r) {
  const size_t n = r.samples_ts.size();
  r.avg_ts = r.stddev_ts = 0;
  if (n == 0) return;
  double sum = 0;
  for (double v : r.samples_ts) sum += v;
  r.avg_ts = sum / double(n);
  if (n < 2) return;
  double ss = 0;
  for (double v : r.samples_ts) ss += (v - r.avg_ts) * (v - r.avg_ts);
  r.stddev_ts = std::sqrt(ss / double(n - 1));
}

ModelFootprint model_footprint(const Model& m) {
  ModelFootprint f;
  uint64_t embd_bytes = 0, embd_row = 0;
  for (const auto& t : m.tensors().all()) {
    const int64_t rows = t.ne[1] * t.ne[2] * t.ne[3];
    const uint64_t bytes = uint64_t(row_size(t.type, t.ne[0])) * uint64_t(rows);
    f.tensor_bytes += bytes;
    f.n_params += uint64_t(t.ne[0]) * uint64_t(rows);
    if (t.name == "token_embd.weight") {
      embd_bytes = bytes;
      embd_row = uint64_t(row_size(t.type, t.ne[0]));
    }
  }
  const bool tied = !m.tensors().has("output.weight");
  f.bytes_per_token = f.tensor_bytes - (tied ? 0 : embd_bytes - embd_row);
  return f;
}

namespace {

// llama_ftype values and llama.cpp v0.4.0's names for them (llama-model-loader.cpp).
const char* llama_ftype_name(uint64_t ftype) {
  switch (ftype) {
    case 0: return "all F32";
    case 1: return "F16";
    case 32: return "BF16";
    case 40: return "Q1_0";
    case 41: return "Q2_0";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 8: return "Q5_0";
    case 9: return "Q5_1";
    case 7: return "Q8_0";
    case 38: return "MXFP4 MoE";
    case 39: return "NVFP4";
    case 10: return "Q2_K - Medium";
    case 21: return "Q2_K - Small";
    case 11: return "Q3_K - Small";
    case 12: return "Q3_K - Medium";
    case 13: return "Q3_K - Large";
    case 14: return "Q4_K - Small";
    case 15: return "Q4_K - Medium";
    case 16: return "Q5_K - Small";
    case 17: return "Q5_K - Medium";
    case 18: return "Q6_K";
    case 36: return "TQ1_0 - 1.69 bpw ternary";
    case 37: return "TQ2_0 - 2.06 bpw ternary";
    case 19: return "IQ2_XXS - 2.0625 bpw";
    case 20: return "IQ2_XS - 2.3125 bpw";
    case 28: return "IQ2_S - 2.5 bpw";
    case 29: return "IQ2_M - 2.7 bpw";
    case 22: return "IQ3_XS - 3.3 bpw";
    case 23: return "IQ3_XXS - 3.0625 bpw";
    case 24: return "IQ1_S - 1.5625 bpw";
    case 31: return "IQ1_M - 1.75 bpw";
    case 25: return "IQ4_NL - 4.5 bpw";
    case 30: return "IQ4_XS - 4.25 bpw";
    case 26: return "IQ3_S - 3.4375 bpw";
    case 27: return "IQ3_S mix - 3.66 bpw";
    default: return "unknown, may not work";
  }
}

// llama.cpp's guess from the type most tensors have (llama_model_loader's switch; types it has
// no case for, MXFP4 among them, read as all F32).
uint64_t guessed_ftype(GgmlType t) {
  switch (t) {
    case GgmlType::F16: return 1;
    case GgmlType::BF16: return 32;
    case GgmlType::Q4_0: return 2;
    case GgmlType::Q4_1: return 3;
    case GgmlType::Q5_0: return 8;
    case GgmlType::Q5_1: return 9;
    case GgmlType::Q8_0: return 7;
    case GgmlType::Q2_K: return 10;
    case GgmlType::Q3_K: return 12;
    case GgmlType::Q4_K: return 15;
    case GgmlType::Q5_K: return 17;
    case GgmlType::Q6_K: return 18;
    case GgmlType::TQ1_0: return 36;
    case GgmlType::TQ2_0: return 37;
    case GgmlType::IQ2_XXS: return 19;
    case GgmlType::IQ2_XS: return 20;
    case GgmlType::IQ2_S: return 28;
    case GgmlType::IQ3_XXS: return 23;
    case GgmlType::IQ1_S: return 24;
    case GgmlType::IQ1_M: return 31;
    case GgmlType::IQ4_NL: return 25;
    case GgmlType::IQ4_XS: return 30;
    case GgmlType::IQ3_S: return 26;
    case GgmlType::NVFP4: return 39;
    case GgmlType::Q1_0: return 40;
    case GgmlType::Q2_0: return 41;
    default: return 0;
  }
}

}  // namespace

std::string file_type_desc(const Model& m) {
  if (const auto ft = m.file().get_uint("general.file_type")) return llama_ftype_name(*ft);
  // Tensors in name order (llama.cpp's weights map), the first type to reach the largest count.
  std::map<std::string, GgmlType> by_name;
  for (const auto& t : m.tensors().all()) by_name[t.name] = t.type;
  std::map<GgmlType, int> count;
  int most = 0;
  GgmlType type = GgmlType::F32;
  for (const auto& [name, t] : by_name)
    if (++count[t] > most) most = count[t], type = t;
  return std::string("(guessed) ") + llama_ftype_name(guessed_ftype(type));
}

std::string size_class(const models::HParams& hp) {
  const int64_t n = hp.n_layer, e = hp.n_embd;
  switch (hp.arch) {
    case models::Arch::Llama:
      switch (n) {
        case 16: case 22: return "1B";
        case 26: case 28: return "3B";
        case 30: return "256M";
        case 32: return hp.n_vocab == 49152 ? "3B" : hp.n_vocab < 40000 ? "7B" : "8B";
        case 36: return "8B";
        case 40: return "13B";
        case 48: return "34B";
        case 60: return "30B";
        case 80: return hp.n_head == hp.n_head_kv ? "65B" : "70B";
        default: return "?B";
      }
    case models::Arch::Qwen2:
      switch (n) {
        case 24: return e == 1024 ? "0.5B" : "1B";
        case 28: return e == 1536 ? "1.5B" : "7B";
        case 32: return "7B";
        case 36: return "3B";
        case 40: return hp.n_head == 20 ? "4B" : "13B";
        case 48: return "14B";
        case 64: return "32B";
        case 80: return "70B";
        default: return "?B";
      }
    case models::Arch::Qwen3:
      switch (n) {
        case 28: return e == 1024 ? "0.6B" : "1.7B";
        case 36: return e == 2560 ? "4B" : "8B";
        case 40: return "14B";
        case 64: return "32B";
        default: return "?B";
      }
  }
  return "?B";
}

}  // namespace minfer::runtime
