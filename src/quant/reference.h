// ggml's scalar reference (de)quantizers, one pair per type, on typed blocks. These are the
// definition of each format: SIMD kernels elsewhere must agree with them bit for bit.
// No checks here (hot paths call them): k must be a multiple of the block size, pointers
// valid. `qw` is an importance matrix of k weights (nullptr for none), as ggml_quantize_chunk
// passes it; types whose ggml quantizer ignores it have no qw parameter.
#pragma once
#include <cstdint>

#include "quant/blocks.h"

namespace minfer::quant::ref {

void quantize_q4_0(const float* x, block_q4_0* y, int64_t k, const float* qw);
void quantize_q4_1(const float* x, block_q4_1* y, int64_t k, const float* qw);
void quantize_q5_0(const float* x, block_q5_0* y, int64_t k, const float* qw);
void quantize_q5_1(const float* x, block_q5_1* y, int64_t k, const float* qw);
void quantize_q8_0(const float* x, block_q8_0* y, int64_t k);
void quantize_q8_1(const float* x, block_q8_1* y, int64_t k);
void quantize_q2_K(const float* x, block_q2_K* y, int64_t k, const float* qw);
void quantize_q3_K(const float* x, block_q3_K* y, int64_t k, const float* qw);
void quantize_q4_K(const float* x, block_q4_K* y, int64_t k, const float* qw);
void quantize_q5_K(const float* x, block_q5_K* y, int64_t k, const float* qw);
void quantize_q6_K(const float* x, block_q6_K* y, int64_t k, const float* qw);
void quantize_q8_K(const float* x, block_q8_K* y, int64_t k);
void quantize_iq4_nl(const float* x, block_iq4_nl* y, int64_t k, const float* qw);
void quantize_iq4_xs(const float* x, block_iq4_xs* y, int64_t k, const float* qw);
void quantize_iq3_xxs(const float* x, block_iq3_xxs* y, int64_t k, const float* qw);
void quantize_iq3_s(const float* x, block_iq3_s* y, int64_t k, const float* qw);
void quantize_iq2_s(const float* x, block_iq2_s* y, int64_t k, const float* qw);
void quantize_iq2_xxs(const float* x, block_iq2_xxs* y, int64_t k, const float* qw);
void quantize_iq2_xs(const float* x, block_iq2_xs* y, int64_t k, const float* qw);
void quantize_iq1_s(const float* x, block_iq1_s* y, int64_t k, const float* qw);
void quantize_iq1_m(const float* x, block_iq1_m* y, int64_t k, const float* qw);
void quantize_q1_0(const float* x, block_q1_0* y, int64_t k);
void quantize_q2_0(const float* x, block_q2_0* y, int64_t k);
void quantize_mxfp4(const float* x, block_mxfp4* y, int64_t k);
void quantize_nvfp4(const float* x, block_nvfp4* y, int64_t k);
void quantize_tq1_0(const float* x, block_tq1_0* y, int64_t k);
void quantize_tq2_0(const float* x, block_tq2_0* y, int64_t k);

void dequantize_q4_0(const block_q4_0* x, float* y, int64_t k);
void dequantize_q4_1(const block_q4_1* x, float* y, int64_t k);
void dequantize_q5_0(const block_q5_0* x, float* y, int64_t k);
void dequantize_q5_1(const block_q5_1* x, float* y, int64_t k);
void dequantize_q8_0(const block_q8_0* x, float* y, int64_t k);
void dequantize_q8_1(const block_q8_1* x, float* y, int64_t k);
void dequantize_q2_K(const block_q2_K* x, float* y, int64_t k);
void dequantize_q3_K(const block_q3_K* x, float* y, int64_t k);
void dequantize_q4_K(const block_q4_K* x, float* y, int64_t k);
void dequantize_q5_K(const block_q5_K* x, float* y, int64_t k);
void dequantize_q6_K(const block_q6_K* x, float* y, int64_t k);
void dequantize_q8_K(const block_q8_K* x, float* y, int64_t k);
void dequantize_iq4_nl(const block_iq4_nl* x, float* y, int64_t k);
void dequantize_iq4_xs(const block_iq4_xs* x, float* y, int64_t k);
void dequantize_iq2_xxs(const block_iq2_xxs* x, float* y, int64_t k);
void dequantize_iq2_xs(const block_iq2_xs* x, float* y, int64_t k);
void dequantize_iq2_s(const block_iq2_s* x, float* y, int64_t k);
void dequantize_iq3_xxs(const block_iq3_xxs* x, float* y, int64_t k);
void dequantize_iq3_s(const block_iq3_s* x, float* y, int64_t k);
void dequantize_iq1_s(const block_iq1_s* x, float* y, int64_t k);
void dequantize_iq1_m(const block_iq1_m* x, float* y, int64_t k);
void dequantize_q1_0(const block_q1_0* x, float* y, int64_t k);
void dequantize_q2_0(const block_q2_0* x, float* y, int64_t k);
void dequantize_mxfp4(const block_mxfp4* x, float* y, int64_t k);
void dequantize_nvfp4(const block_nvfp4* x, float* y, int64_t k);
void dequantize_tq1_0(const block_tq1_0* x, float* y, int64_t k);
void dequantize_tq2_0(const block_tq2_0* x, float* y, int64_t k);

}  // namespace minfer::quant::ref
