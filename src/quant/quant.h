// Weight formats: dequantization for every type minfer computes with, and quantization with
// ggml's reference quantizers (same rounding, same scale search), so that files we write
// are bit-identical to what ggml writes for the same values. Block structs: quant/blocks.h.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace minfer::quant {

// n must be a multiple of the type's block size. Error for a type without has_dequant.
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);

// ggml's quantize_row_<type>_ref (or quantize_<type> where the reference path has a search,
// e.g. IQ4_NL); `imatrix` (n weights, may be nullptr) as in ggml_quantize_chunk.
// Returns bytes written (row_size(t, n)).
size_t quantize_row(GgmlType t, const float* src, void* dst, int64_t n,
                    const float* imatrix = nullptr);

// A [nrows][n_per_row] matrix, row by row, as ggml_quantize_chunk does.
size_t quantize_rows(GgmlType t, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                     const float* imatrix = nullptr);

}  // namespace minfer::quant
