#include "runtime/perplexity.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "runtime/context.h"
#include "runtime/logprobs.h"

namespace minfer::runtime {

PerplexityResult perplexity(Context& ctx, std::span<const int32_t> tokens, int64_t n_ctx, int64_t n_batch,
                            int32_t bos, int64_t n_chunks_max,
                            const std::function<void(int64_t, double)>& on_chunk, const ScoredPosition& on_scored) {
  if (n_ctx < 2 || n_ctx > ctx.n_ctx()) fail("perplexity: a chunk of {} tokens does not fit the context of {}", n_ctx, ctx.n_ctx());
  if (int64_t(tokens.size()) < 2 * n_ctx)
    fail("perplexity: the text is {} tokens; a context of {} needs at least {} (two chunks)", tokens.size(), n_ctx,
         2 * n_ctx);
  n_batch = std::clamp<int64_t>(n_batch, 1, n_ctx);
  PerplexityResult r;
  r.n_chunks = perplexity_chunks(int64_t(tokens.size()), n_ctx, n_chunks_max);
  const int64_t first = n_ctx / 2, n_vocab = ctx.n_vocab();
  double nll = 0, nll2 = 0;
  std::vector<int32_t> chunk;
  for (int64_t c = 0; c < r.n_chunks; ++c) {
    chunk.assign(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
    if (bos >= 0) chunk[0] = bos;
    ctx.truncate(0);
    for (int64_t b = 0; b < n_ctx; b += n_batch) {
      const int64_t n = std::min(n_batch, n_ctx - b);
      // Rows wanted: the positions from `first` on that predict a token of this chunk.
      const int64_t from = std::max(b, first), to = std::min(b + n, n_ctx - 1);
      const int64_t n_out = to > from ? b + n - from : 1;
      const std::span<const float> logits = ctx.decode(std::span(chunk).subspan(size_t(b), size_t(n)), n_out);
      for (int64_t pos = from; pos < to; ++pos) {
        const int64_t row = pos - (b + n - n_out);
        const std::vector<double> lp = log_softmax(logits.subspan(size_t(row * n_vocab), size_t(n_vocab)));
        const int32_t next = tokens[size_t(c * n_ctx + pos + 1)];
        if (on_scored) on_scored(c, lp, next);
        const double v = -lp[size_t(next)];
        nll += v;
        nll2 += v * v;
        ++r.n_scored;
      }
    }
    r.running.push_back(std::exp(nll / double(r.n_scored)));
    if (on_chunk) on_chunk(c, r.running.back());
  }
  const double mean = nll / double(r.n_scored);
  r.ppl = std::exp(mean);
  const double var = nll2 / double(r.n_scored) - mean * mean;
  r.stderr_ppl = var > 0 && r.n_scored > 1 ? std::sqrt(var / double(r.n_scored - 1)) * r.ppl : 0;
  return r;
}

}  // namespace minfer::runtime
