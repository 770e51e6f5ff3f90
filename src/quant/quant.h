// Weight formats: dequantization for every type minfer computes with, and quantization with
// ggml's reference quantizers (same rounding, same scale search), so that files we write
// are bit-identical to what ggml writes for the same values. Block structs: quant/blocks.h;
// per-type scalar reference functions: quant/reference.h.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace minfer::quant {

// Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, Q8_K, IQ4_NL, IQ4_XS (the
// types whose TypeTraits say has_dequant / has_quant), plus Q8_1, an activation format that
// TypeTraits marks unsupported because no weight may use it.
bool can_dequantize(GgmlType t);
bool can_quantize(GgmlType t);

// n must be a multiple of the type's block size. Error for a type without has_dequant.
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);

// ggml's quantize_row_<type>_ref (or quantize_<type> where the reference path has a search,
// e.g. IQ4_NL); `imatrix` (n weights, may be nullptr) as in ggml_quantize_chunk.
// Returns bytes written (row_size(t, n)).
// Error (instead of ggml's silent inf/NaN) for a NaN/Inf input value or when the values are
// too large for the format (a block scale, or an F16/BF16 element, overflows).
size_t quantize_row(GgmlType t, const float* src, void* dst, int64_t n,
                    const float* imatrix = nullptr);

// A [nrows][n_per_row] matrix, row by row, as ggml_quantize_chunk does. The imatrix has
// n_per_row weights (one per column), shared by every row.
size_t quantize_rows(GgmlType t, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                     const float* imatrix = nullptr);

// Hot-path variants (activations inside kernels): no checks, never throw. Preconditions:
// can_quantize(t) / can_dequantize(t) and n a multiple of the block size. Non-finite input
// gives what ggml gives.
void quantize_row_unchecked(GgmlType t, const float* src, void* dst, int64_t n,
                            const float* imatrix = nullptr);
void dequantize_row_unchecked(GgmlType t, const void* src, float* dst, int64_t n);

// nb TQ1_0 blocks rewritten as TQ2_0 blocks of the same values and d: each TQ1_0 value t - 1 (a
// trit t) is TQ2_0's code t. Exact: both formats' dot products are (d_w x d_x) x sum((t - 1) x).
void tq1_0_to_tq2_0(const void* src, void* dst, int64_t nb);

}  // namespace minfer::quant
