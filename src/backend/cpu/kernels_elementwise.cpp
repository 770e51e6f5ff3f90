// Row-wise and element-wise kernels with ggml's exact arithmetic (expf, double sums where
// ggml uses ggml_float). The SIMD bodies (kernels_ops.h) are bit-identical to the scalar ones
// here except silu/swiglu (polynomial exp); large calls are split over the thread pool in
// fixed chunks (each output element computed by one chunk, the same way on any thread).
#include <algorithm>
#include <cmath>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_dot.h"
#include "backend/cpu/kernels_ops.h"
#include "backend/cpu/threadpool.h"
#include "common/fp16.h"

namespace minfer::cpu {

void rope_rows_scalar(const float* x, float* y, int64_t n_rows, int64_t head_dim, int64_t n_rot,
                      RopeStyle style, const float* ct, const float* st);  // kernels_rope.cpp

namespace {

void rms_scalar(const float* x, const float* weight, int64_t nt, int64_t d, float eps, float* out) {
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

void add_scalar(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void to_f16_scalar(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

void mul_scalar(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

struct Tables {
  OpsKernels isa[3];
  Tables() {
    const OpsKernels scalar{&rms_scalar, &add_scalar, &mul_scalar, &rope_rows_scalar, nullptr, &to_f16_scalar};
    const OpsKernels per_isa[3] = {scalar, ops_avx2(), ops_avx512()};
    // Each entry falls back to the next slower ISA's.
    for (int i = 0; i < 3; ++i) {
      const OpsKernels& k = per_isa[i];
      const OpsKernels& prev = i > 0 ? isa[i - 1] : scalar;
      isa[i].rms_norm = k.rms_norm ? k.rms_norm : prev.rms_norm;
      isa[i].add = k.add ? k.add : prev.add;
      isa[i].mul = k.mul ? k.mul : prev.mul;
      isa[i].rope = k.rope ? k.rope : prev.rope;
      isa[i].to_f16 = k.to_f16 ? k.to_f16 : prev.to_f16;
      isa[i].attn_block = k.attn_block;  // no fallback: the generic path
    }
  }
};

// Element-wise work: chunks of kChunk elements, threaded from a minimum size. Below it, waking
// a sleeping worker (tens of microseconds on a busy VM) costs more than it saves: add, mul and
// rms_norm run at memory speed (~0.1 ns/element), so they stay on the calling thread up to
// 256K elements (a 128-token prompt of a 1K-wide model); swiglu (an exp and a division per
// element) is threaded from 64K. Tiny models' decode steps never touch the pool.
constexpr int64_t kChunk = 1 << 14;
constexpr int64_t kMinParallel = 1 << 18;
constexpr int64_t kMinParallelSwiglu = 1 << 16;

template <class F>
void chunked(int64_t n, int64_t min_parallel, F&& f) {
  const int64_t n_chunks = (n + kChunk - 1) / kChunk;
  auto chunk = [&](int64_t c, int) {
    const int64_t i = c * kChunk;
    f(i, std::min(kChunk, n - i));
  };
  if (n >= min_parallel && n_chunks > 1)
    parallel_for(n_chunks, chunk);
  else
    for (int64_t c = 0; c < n_chunks; ++c) chunk(c, 0);
}

// A prompt's FFN activations are large (tokens x n_ff): split them across the threads.
void swiglu_any(const float* gate, const float* up, float* out, int64_t n) {
  const SwigluFn f = swiglu_fn(active_isa());
  chunked(n, kMinParallelSwiglu, [&](int64_t i, int64_t m) { f(gate + i, up ? up + i : nullptr, out + i, m); });
}

}  // namespace

const OpsKernels& ops_kernels(Isa isa) {
  static const Tables t;
  return t.isa[std::min(int(isa), 2)];
}

void rms_norm(const float* x, const float* weight, int64_t nt, int64_t d, float eps, float* out) {
  if (nt <= 0 || d <= 0) return;
  const RmsRowsFn f = ops_kernels(active_isa()).rms_norm;
  // Chunks of 16 rows (at least ~4K elements); every row is computed the same way in any chunk.
  const int64_t rows = std::max<int64_t>(16, (4096 / d + 15) / 16 * 16);
  const int64_t n_chunks = (nt + rows - 1) / rows;
  if (nt * d >= kMinParallel && n_chunks > 1)
    parallel_for(n_chunks, [&](int64_t c, int) {
      const int64_t r0 = c * rows, nr = std::min(rows, nt - r0);
      f(x + r0 * d, weight, nr, d, eps, out + r0 * d);
    });
  else
    f(x, weight, nt, d, eps, out);
}

void silu(const float* x, float* out, int64_t n) { swiglu_any(x, nullptr, out, n); }

void swiglu(const float* gate, const float* up, float* out, int64_t n) { swiglu_any(gate, up, out, n); }

void add(const float* a, const float* b, float* out, int64_t n) {
  const BinaryFn f = ops_kernels(active_isa()).add;
  chunked(n, kMinParallel, [&](int64_t i, int64_t m) { f(a + i, b + i, out + i, m); });
}

void mul(const float* a, const float* b, float* out, int64_t n) {
  const BinaryFn f = ops_kernels(active_isa()).mul;
  chunked(n, kMinParallel, [&](int64_t i, int64_t m) { f(a + i, b + i, out + i, m); });
}

}  // namespace minfer::cpu
