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

std::vector<float> normalize_embedding(std::span<const double> v, int norm) {
  double sum = 0.0;
  if (norm == -1) {
    sum = 1.0;
  } else if (norm == 0) {
    for (double x : v) sum = std::max(sum, std::abs(x));
    sum /= 32760.0;
  } else if (norm == 2) {
    for (double x : v) sum += x * x;
    sum = std::sqrt(sum);
  } else {
    for (double x : v) sum += std::pow(std::abs(x), double(norm));
    sum = std::pow(sum, 1.0 / double(norm));
  }
  const double scale = sum > 0.0 ? 1.0 / sum : 0.0;
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = float(v[i] * scale);
  return out;
}

namespace {

// Runs `tokens` from an empty cache in batches; `use(rows, first, n)` gets each batch's output
// rows: all of them with every_row, else the first batch's first row and the last batch's last.
template <class Use>
void run_batches(Context& ctx, std::span<const int32_t> tokens, int64_t n_batch, bool every_row, Use&& use) {
  if (!ctx.params().embeddings) fail("embed: the context computes logits, not embeddings");
  if (tokens.empty()) fail("the input is empty after tokenization");
  const int64_t nt = int64_t(tokens.size());
  if (nt > ctx.n_ctx()) fail("the input is {} tokens, more than the context of {}", nt, ctx.n_ctx());
  if (n_batch < 1) fail("embed: the batch size must be >= 1, got {}", n_batch);
  ctx.truncate(0);
  for (int64_t i = 0; i < nt; i += n_batch) {
    const int64_t n = std::min(n_batch, nt - i);
    const int64_t n_out = every_row || i == 0 ? n : 1;
    use(ctx.decode(tokens.subspan(size_t(i), size_t(n)), n_out), i, n_out, i + n == nt);
  }
  ctx.truncate(0);
}

}  // namespace

std::vector<float> embed(Context& ctx, std::span<const int32_t> tokens, Pooling pooling, int64_t n_batch, int norm) {
  if (pooling != Pooling::Mean && pooling != Pooling::Cls && pooling != Pooling::Last)
    fail("pooling '{}' gives no single vector per input: use mean, cls or last", pooling_name(pooling));
  const int64_t width = ctx.row_width();
  std::vector<double> sum(static_cast<size_t>(width), 0.0);
  auto add = [&](std::span<const float> rows, int64_t r) {
    for (int64_t k = 0; k < width; ++k) sum[size_t(k)] += rows[size_t(r * width + k)];
  };
  // Mean needs every row, cls the first batch's first, last the final batch's last.
  run_batches(ctx, tokens, n_batch, pooling == Pooling::Mean,
              [&](std::span<const float> rows, int64_t first, int64_t n_out, bool last_batch) {
                if (pooling == Pooling::Mean) {
                  for (int64_t r = 0; r < n_out; ++r) add(rows, r);
                } else if (pooling == Pooling::Cls && first == 0) {
                  add(rows, 0);
                } else if (pooling == Pooling::Last && last_batch) {
                  add(rows, n_out - 1);
                }
              });
  if (pooling == Pooling::Mean)
    for (double& v : sum) v /= double(tokens.size());
  return normalize_embedding(sum, norm);
}

std::vector<std::vector<float>> embed_tokens(Context& ctx, std::span<const int32_t> tokens, int64_t n_batch, int norm) {
  const int64_t width = ctx.row_width();
  std::vector<std::vector<float>> out;
  run_batches(ctx, tokens, n_batch, true, [&](std::span<const float> rows, int64_t, int64_t n_out, bool) {
    for (int64_t r = 0; r < n_out; ++r) {
      const std::span<const float> row = rows.subspan(size_t(r * width), size_t(width));
      const std::vector<double> v(row.begin(), row.end());
      out.push_back(normalize_embedding(v, norm));
    }
  });
  return out;
}

}  // namespace minfer::runtime
