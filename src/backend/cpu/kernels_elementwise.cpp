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

void sumsq_scalar(const float* x, int64_t d, double* sum) {
  double s = 0.0;  // ggml_float
  for (int64_t i = 0; i < d; ++i) s += double(x[i] * x[i]);
  *sum = s;
}

// ggml scales first, then multiplies by the weight in a separate op.
void scale_row_scalar(const float* x, const float* w, float scale, int64_t d, float* o) {
  if (w)
    for (int64_t i = 0; i < d; ++i) o[i] = (x[i] * scale) * w[i];
  else
    for (int64_t i = 0; i < d; ++i) o[i] = x[i] * scale;
}

// rms_norm of nr rows: sums `lanes` rows at a time (the rest one by one), all of a group's
// sums before any of its rows is written (out may be x).
void rms_rows(const RmsParts& k, const float* x, const float* w, int64_t nr, int64_t d, float eps,
              float* out) {
  double sums[16];
  const int64_t lanes = k.lanes;
  for (int64_t r = 0; r < nr; r += lanes) {
    const int64_t rows = std::min(lanes, nr - r);
    if (rows == lanes && d >= lanes)
      k.sumsq(x + r * d, d, sums);
    else
      for (int64_t i = 0; i < rows; ++i) sumsq_scalar(x + (r + i) * d, d, sums + i);
    for (int64_t i = 0; i < rows; ++i) {
      const float mean = float(sums[i] / double(d));
      k.scale(x + (r + i) * d, w, 1.0f / std::sqrt(mean + eps), d, out + (r + i) * d);
    }
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
    const OpsKernels scalar{{1, &sumsq_scalar, &scale_row_scalar}, &add_scalar, &mul_scalar,
                            &rope_rows_scalar, nullptr, &to_f16_scalar};
    const OpsKernels per_isa[3] = {scalar, ops_avx2(), ops_avx512()};
    // Each entry falls back to the next slower ISA's.
    for (int i = 0; i < 3; ++i) {
      const OpsKernels& k = per_isa[i];
      const OpsKernels& prev = i > 0 ? isa[i - 1] : scalar;
      isa[i].rms = k.rms.sumsq ? k.rms : prev.rms;
      isa[i].add = k.add ? k.add : prev.add;
      isa[i].mul = k.mul ? k.mul : prev.mul;
      isa[i].rope = k.rope ? k.rope : prev.rope;
      isa[i].to_f16 = k.to_f16 ? k.to_f16 : prev.to_f16;
      isa[i].attn_block = k.attn_block;  // no fallback: nullptr is the generic path (scalar)
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
  // AvxVnni adds only matmul kernels: its element-wise ones are AVX2's.
  return t.isa[isa >= Isa::Avx512 ? 2 : isa >= Isa::Avx2 ? 1 : 0];
}

void rms_norm(const float* x, const float* weight, int64_t nt, int64_t d, float eps, float* out) {
  if (nt <= 0 || d <= 0) return;
  const RmsParts& k = ops_kernels(active_isa()).rms;
  // Chunks of 16 rows (at least ~4K elements); every row is computed the same way in any chunk.
  const int64_t rows = std::max<int64_t>(16, (4096 / d + 15) / 16 * 16);
  const int64_t n_chunks = (nt + rows - 1) / rows;
  if (nt * d >= kMinParallel && n_chunks > 1)
    parallel_for(n_chunks, [&](int64_t c, int) {
      const int64_t r0 = c * rows, nr = std::min(rows, nt - r0);
      rms_rows(k, x + r0 * d, weight, nr, d, eps, out + r0 * d);
    });
  else
    rms_rows(k, x, weight, nt, d, eps, out);
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
