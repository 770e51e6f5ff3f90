// Row-wise and element-wise kernels with ggml's exact arithmetic (expf, double sums where
// ggml uses ggml_float).
#include <algorithm>
#include <cmath>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_dot.h"
#include "backend/cpu/threadpool.h"

namespace minfer::cpu {

void rms_norm(const float* x, const float* weight, int64_t nt, int64_t d, float eps, float* out) {
  for (int64_t t = 0; t < nt; ++t) {
    const float* xr = x + t * d;
    float* o = out + t * d;
    double sum = 0.0;  // ggml_float
    for (int64_t i = 0; i < d; ++i) sum += double(xr[i] * xr[i]);
    const float mean = float(sum / double(d));
    const float scale = 1.0f / std::sqrt(mean + eps);
    // ggml scales first, then multiplies by the weight in a separate op.
    if (weight)
      for (int64_t i = 0; i < d; ++i) o[i] = (xr[i] * scale) * weight[i];
    else
      for (int64_t i = 0; i < d; ++i) o[i] = xr[i] * scale;
  }
}

namespace {
// A prompt's FFN activations are large (tokens x n_ff): split them across the threads.
void swiglu_any(const float* gate, const float* up, float* out, int64_t n) {
  const SwigluFn f = swiglu_fn(active_isa());
  constexpr int64_t kChunk = 1 << 14;
  const int64_t n_chunks = (n + kChunk - 1) / kChunk;
  auto chunk = [&](int64_t c, int) {
    const int64_t i = c * kChunk, m = std::min(kChunk, n - i);
    f(gate + i, up ? up + i : nullptr, out + i, m);
  };
  if (n >= 4 * kChunk)
    parallel_for(n_chunks, chunk);
  else
    for (int64_t c = 0; c < n_chunks; ++c) chunk(c, 0);
}
}  // namespace

void silu(const float* x, float* out, int64_t n) { swiglu_any(x, nullptr, out, n); }

void swiglu(const float* gate, const float* up, float* out, int64_t n) { swiglu_any(gate, up, out, n); }

void add(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

}  // namespace minfer::cpu
