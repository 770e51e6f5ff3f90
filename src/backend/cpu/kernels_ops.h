// Per-ISA bodies of the non-matmul kernels (rms_norm, add, mul, rope, attention, F16
// conversion), internal to the CPU backend. The public entry points (kernels.h) split the work
// into chunks for the thread pool and call these on each chunk; every body computes each output
// element exactly as the scalar reference does, except where noted (attention: summation order
// of the dot products and a polynomial exp, within the tests' tolerances).
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels.h"

namespace minfer::cpu {

// rms_norm's per-ISA parts, driven by one row loop (kernels_elementwise.cpp): the sums of
// squares of `lanes` rows of d at once, each accumulated in double in element order from 0.0
// (the scalar kernel's `sum += double(x * x)`; SIMD versions give each row its own double
// lane), and one row scaled as the scalar kernel does, (x * scale) * w in two roundings.
using SumSqRowsFn = void (*)(const float* x, int64_t d, double* sums);
using ScaleRowFn = void (*)(const float* x, const float* w, float scale, int64_t d, float* out);
struct RmsParts {
  int lanes = 1;
  SumSqRowsFn sumsq = nullptr;
  ScaleRowFn scale = nullptr;
};
// out[i] = a[i] op b[i].
using BinaryFn = void (*)(const float* a, const float* b, float* out, int64_t n);
// Rotates n_rows head vectors of head_dim (x + r * head_dim) by one token's angles (the table
// layout of kernels_rope.cpp) into y (y == x: in place; otherwise dims >= n_rot are copied).
using RopeRowsFn = void (*)(const float* x, float* y, int64_t n_rows, int64_t head_dim,
                            int64_t n_rot, RopeStyle style, const float* cos_t, const float* sin_t);

// One attention work item: tokens [t0, t1) of the batch against KV head hk (F32 or F16 K and V).
// Scores per (query head, key) are dot products summed in f32 (AVX-512: one FMA chain per key
// in dimension order; AVX2: 8 lane chains added by a fixed tree), softmax as ggml_soft_max
// (polynomial exp), V summed in key order; the same for a token alone or in a batch.
using AttnBlockFn = void (*)(const float* q, const int32_t* pos, int64_t t0, int64_t t1,
                             int64_t hk, const KvRegion& k, const KvRegion& v,
                             const AttnParams& p, float* out);

// dst[i] = fp32_to_fp16(src[i]) (round to nearest even; a NaN becomes 0x7E00 with its sign, as
// there).
using ToF16Fn = void (*)(const float* src, uint16_t* dst, int64_t n);

struct OpsKernels {
  RmsParts rms;  // sumsq nullptr: the slower ISA's
  BinaryFn add = nullptr;
  BinaryFn mul = nullptr;
  RopeRowsFn rope = nullptr;
  AttnBlockFn attn_block = nullptr;  // nullptr: the generic per-(token, KV head) path
  ToF16Fn to_f16 = nullptr;
};

// The kernels for `isa` (slower ISAs' entries where it has none). Never nullptr except
// attn_block.
const OpsKernels& ops_kernels(Isa isa);

// Per-ISA tables (simd_ops_*.cpp); entries nullptr where that ISA has no kernel.
OpsKernels ops_avx2();
OpsKernels ops_avx512();

}  // namespace minfer::cpu
