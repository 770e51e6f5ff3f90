// Activation rounding before a matmul, as ggml's CPU backend does it: each weight type has a
// "vec_dot type" that the activation row is converted to once, and the dot products then run
// on (weight block, activation block) pairs. Internal to the CPU backend.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/blocks.h"
#include "quant/types.h"

namespace minfer::cpu {

// The type activations are converted to for a weight of type `w` (F32 stays F32).
GgmlType vec_dot_type(GgmlType w);

// Q8_0 as ggml-cpu's x86 path makes it: d = amax/127 stored as F16, q = round-half-even(x * 127/amax).
void quantize_act_q8_0(const float* x, quant::block_q8_0* y, int64_t n);

// Q8_1: Q8_0's quants plus s = F16(d * sum(q)) (d before F16 rounding).
void quantize_act_q8_1(const float* x, quant::block_q8_1* y, int64_t n);

// Q8_K (ggml's quantize_row_q8_K_ref): d = -max/127 signed by the largest |x|, bsums per 16.
void quantize_act_q8_K(const float* x, quant::block_q8_K* y, int64_t n);

// The AVX2 versions (simd_avx2.cpp; nullptr where not compiled), bit-identical to the scalar
// ones; quantize_act_q8_0/q8_1/q8_K dispatch to them by active_isa().
using Q8RowFn = void (*)(const float* x, quant::block_q8_0* y, int64_t n);
using Q8_1RowFn = void (*)(const float* x, quant::block_q8_1* y, int64_t n);
using Q8KRowFn = void (*)(const float* x, quant::block_q8_K* y, int64_t n);
Q8RowFn quantize_q8_0_avx2();
Q8_1RowFn quantize_q8_1_avx2();
Q8KRowFn quantize_q8_K_avx2();

// The AVX-512 Q8_0 quantizer (act_quant_avx512.cpp; nullptr where not compiled), which
// quantize_act_q8_0 and packed_act_quantize dispatch to: nb blocks from x; the row to `row` when
// it is not null, and the packed _0 kernels' tiles of `tile` tokens from the token's first block
// (packed_gemm.h: quants to tq + 32 tile b, d and c = -offset x the sum of the quants at
// [tile b]) when tq is not null.
using Q8TilesFn = void (*)(const float* x, int64_t nb, quant::block_q8_0* row, int offset, int64_t tile,
                           uint8_t* tq, float* d, int32_t* c);
Q8TilesFn quantize_q8_0_avx512();

// The AVX-512 Q8_K quantizer (act_quant_avx512.cpp; nullptr where not compiled), which
// quantize_act_q8_K and packed_act_quantize_k dispatch to: nsb super-blocks from x into y, and,
// when ks is not null, their Q8KSums (packed_gemm.h) as q8k_sums makes them from y.
struct Q8KSums;
using Q8KSumsFn = void (*)(const float* x, int64_t nsb, quant::block_q8_K* y, Q8KSums* ks);
Q8KSumsFn quantize_q8_K_avx512();

// Converts n floats into `vdt` (one of vec_dot_type's results); returns bytes written.
// n must be a multiple of vdt's block size.
size_t quantize_act(GgmlType vdt, const float* x, void* y, int64_t n);

}  // namespace minfer::cpu
