// Perplexity of a text, as llama.cpp's llama-perplexity measures it: the tokens cut into chunks
// of n_ctx; each chunk evaluated from an empty cache with its first token replaced by BOS (when
// the vocabulary adds one); the negative log-likelihood of the tokens of its second half, each
// predicted from all before it in the chunk (the first half is context only).
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace minfer::runtime {

class Context;

struct PerplexityResult {
  std::vector<double> running;  // exp(mean NLL) after each chunk (llama-perplexity's [i]x list)
  double ppl = 0;               // over every scored token
  double stderr_ppl = 0;        // llama-perplexity's "+/-": ppl * the NLL's standard error
  int64_t n_chunks = 0;
  int64_t n_scored = 0;         // tokens scored
};

// The chunks of n_ctx that `n_tokens` hold, at most n_chunks_max (<= 0: all).
inline int64_t perplexity_chunks(int64_t n_tokens, int64_t n_ctx, int64_t n_chunks_max) {
  const int64_t n = n_tokens / n_ctx;
  return n_chunks_max > 0 && n_chunks_max < n ? n_chunks_max : n;
}

// Each scored position: its chunk, the log-probabilities of the whole vocabulary, the token that
// came next (for --kl-divergence).
using ScoredPosition = std::function<void(int64_t chunk, std::span<const double> logprobs, int32_t next)>;

// Error when the text has fewer than 2 * n_ctx tokens. n_ctx <= ctx.n_ctx(); n_chunks_max <= 0:
// every whole chunk. `bos` < 0: no BOS replacement. on_chunk, when given, sees each running value
// (after on_scored has seen the chunk's positions).
PerplexityResult perplexity(Context& ctx, std::span<const int32_t> tokens, int64_t n_ctx, int64_t n_batch,
                            int32_t bos, int64_t n_chunks_max = 0,
                            const std::function<void(int64_t chunk, double running)>& on_chunk = {},
                            const ScoredPosition& on_scored = {});

}  // namespace minfer::runtime
