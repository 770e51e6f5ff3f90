// llama-bench style measurements on a Context: ppN = one N-token prefill from an empty KV
// cache, tgN = N single-token decode steps from an empty KV cache (llama-bench's convention:
// no prompt before them). With a depth D ("pp512 @ d1024", llama-bench's -d) the cache first
// holds D tokens, prefilled untimed before each run: the attention's share at long contexts.
// Token ids are random but fixed by a seed, so every engine and every run sees the same input.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/hparams.h"
#include "quant/types.h"

namespace minfer::runtime {

class Model;
class Context;

struct BenchTest {
  std::string name;      // "pp128", "tg64", "tg64 @ d512"
  int64_t n_prompt = 0;  // tokens of the one prefill batch (pp); 0 for tg
  int64_t n_gen = 0;     // single-token decode steps (tg); 0 for pp
  int64_t n_depth = 0;   // tokens already in the cache when the timed part starts
};

struct BenchResult {
  std::string test;
  int threads = 0;
  int64_t n_prompt = 0, n_gen = 0, n_depth = 0;
  std::vector<double> samples_ts;  // tokens per second of each timed repetition
  double avg_ts = 0;
  double stddev_ts = 0;            // sample standard deviation (n - 1); 0 for one sample
};

// "pp128" / "tg64" ("pp128 @ d512" with a depth); Error for a size < 1 or a depth < 0.
BenchTest pp_test(int64_t n, int64_t depth = 0);
BenchTest tg_test(int64_t n, int64_t depth = 0);

// n ids drawn uniformly from the middle of the vocabulary (away from the special/control
// tokens at either end), deterministic for (n_vocab, seed).
std::vector<int32_t> bench_tokens(int64_t n_vocab, int64_t n, uint64_t seed);

// One warm-up run (the whole test for pp, a few steps for tg: enough to build and reuse the
// graph) and then `reps` timed runs, each starting from an empty KV cache (and the depth's
// untimed prefill). Prompts go in decode calls of at most n_batch tokens (llama-bench's
// n_ubatch, 512 by default). The context must hold n_depth + n_prompt (or n_gen) tokens. Error
// when reps < 1 or n_batch < 1.
BenchResult run_bench(Context& ctx, const BenchTest& test, int reps, uint64_t seed, int64_t n_batch = 512);

// Mean and sample standard deviation of r.samples_ts into r.avg_ts / r.stddev_ts.
void summarize(BenchResult& r);

// What a decode step has to stream from memory, for the bandwidth bound.
struct ModelFootprint {
  uint64_t tensor_bytes = 0;     // all tensors (llama-bench's "size")
  uint64_t n_params = 0;         // all tensor elements
  uint64_t bytes_per_token = 0;  // weights one decode step reads: everything but the embedding
                                 // table, plus one embedding row (the whole table again when
                                 // it doubles as the output matrix)
};
ModelFootprint model_footprint(const Model& m);

// The file type as llama.cpp names it in llama-bench's model column (llama_ftype_name):
// general.file_type's name ("Q4_K - Medium"), or, where the file has none, "(guessed) " and the
// name for the type most tensors have, as llama.cpp guesses it.
std::string file_type_desc(const Model& m);

// The size class llama-bench prints before the file type ("qwen3 0.6B Q8_0"): llama.cpp v0.4.0's
// table for the architecture (its load_arch_hparams), from the layer count and, where that
// leaves sizes apart, the width, head counts or vocabulary; "?B" for shapes it has no entry for.
std::string size_class(const models::HParams& hp);

}  // namespace minfer::runtime
