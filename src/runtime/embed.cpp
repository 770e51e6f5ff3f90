#include "runtime/embed.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "runtime/context.h"

namespace minfer::runtime {

namespace {
constexpr const char* kNames[] = {"none", "mean", "cls", "last", "rank"};
}

Pooling pooling_from_name(std::string_view name) {
  for (int i = 0; i < 5; ++i)
    if (name == kNames[i]) return Pooling(i);
  fail("pooling '{}' is not one of none, mean, cls, last, rank", name);
}

const char* pooling_name(Pooling p) { return kNames[int(p)]; }

std::vector<float> embed(Context& ctx, std::span<const int32_t> tokens, Pooling pooling, int64_t n_batch) {
  if (!ctx.params().embeddings) fail("embed: the context computes logits, not embeddings");
  if (pooling != Pooling::Mean && pooling != Pooling::Cls && pooling != Pooling::Last)
    fail("pooling '{}' gives no single vector per input: use mean, cls or last", pooling_name(pooling));
  if (tokens.empty()) fail("the input is empty after tokenization");
  const int64_t nt = int64_t(tokens.size());
  if (nt > ctx.n_ctx()) fail("the input is {} tokens, more than the context of {}", nt, ctx.n_ctx());
  const int64_t width = ctx.row_width();
  std::vector<double> sum(static_cast<size_t>(width), 0.0);
  ctx.truncate(0);
  for (int64_t i = 0; i < nt; i += n_batch) {
    const int64_t n = std::min(n_batch, nt - i);
    const bool last_batch = i + n == nt;
    // Mean needs every row, cls the first batch's first, last the final batch's last.
    const int64_t n_out = pooling == Pooling::Mean || (pooling == Pooling::Cls && i == 0) ? n : 1;
    const std::span<const float> rows = ctx.decode(tokens.subspan(size_t(i), size_t(n)), n_out);
    auto add = [&](int64_t r) {
      for (int64_t k = 0; k < width; ++k) sum[size_t(k)] += rows[size_t(r * width + k)];
    };
    if (pooling == Pooling::Mean) {
      for (int64_t r = 0; r < n_out; ++r) add(r);
    } else if (pooling == Pooling::Cls && i == 0) {
      add(0);
    } else if (pooling == Pooling::Last && last_batch) {
      add(0);
    }
  }
  ctx.truncate(0);
  if (pooling == Pooling::Mean)
    for (double& v : sum) v /= double(nt);
  double norm = 0.0;
  for (double v : sum) norm += v * v;
  norm = std::sqrt(norm);
  std::vector<float> out(static_cast<size_t>(width));
  for (int64_t k = 0; k < width; ++k) out[size_t(k)] = norm > 0 ? float(sum[size_t(k)] / norm) : 0.0f;
  return out;
}

}  // namespace minfer::runtime
