// ggml's scale-search helpers shared by the K-quant and imatrix quantizers (ggml-quants.c:
// nearest_int, make_qx_quants, make_q3_quants, make_qkx2_quants, make_qkx3_quants,
// make_qp_quants). Internal to the quant module. Every float expression keeps ggml's
// operation order: the quantized bytes depend on the exact rounding of each step.
#pragma once
#include <cstdint>
#include <cstring>

namespace minfer::quant::detail {

// Groups whose largest magnitude is below this are treated as all zero.
inline constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, via the 1.5*2^23 trick; exact for |f| <= 4194303 and,
// like ggml's, garbage-but-deterministic outside that range.
inline int nearest_int(float f) {
  const float v = f + 12582912.f;
  int32_t i;
  std::memcpy(&i, &v, sizeof(i));
  return (i & 0x007fffff) - 0x00400000;
}

// C's float -> int8_t conversion as x86 performs it (cvttss2si, then the low byte): NaN and
// out-of-range give 0x80000000 whose low byte is 0. Defined for every input, unlike a cast.
inline int8_t trunc_to_i8(float v) {
  int32_t i = (v >= -2147483648.0f && v < 2147483648.0f) ? int32_t(v) : INT32_MIN;
  return int8_t(uint8_t(uint32_t(i) & 0xff));
}

float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw);
float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse);
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad);
float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad);
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights);

}  // namespace minfer::quant::detail
