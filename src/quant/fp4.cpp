// The FP4 (E2M1) formats: MXFP4 (blocks of 32, an E8M0 power-of-two scale) and NVFP4 (blocks of
// 64 in four sub-blocks of 16, each with an unsigned E4M3 scale), as ggml's reference code
// (ggml-quants.c, ggml-impl.h) computes them.
#include <algorithm>
#include <cmath>

#include "quant/reference.h"

namespace minfer::quant {

float ue4m3_to_fp32(uint8_t x) {
  if (x == 0 || x == 0x7F) return 0.0f;
  const int exp = (x >> 3) & 0xF, man = x & 0x7;
  const float raw = exp == 0 ? std::ldexp(float(man), -9) : std::ldexp(1.0f + float(man) / 8.0f, exp - 7);
  return raw * 0.5f;
}

uint8_t fp32_to_ue4m3(float x) {
  if (!(x > 0.0f)) return 0;
  if (x > 448.0f) x = 448.0f;
  uint32_t bits;
  __builtin_memcpy(&bits, &x, 4);
  const int fp32_exp = int((bits >> 23) & 0xFF) - 127;
  const int fp32_man = int((bits >> 20) & 0x7);
  int exp = fp32_exp + 7;
  if (exp <= 0) {  // subnormal: man * 2^-9
    const int man = std::min(7, int(x * 512.0f + 0.5f));
    return man < 1 ? 0 : uint8_t(man);
  }
  if (exp >= 15) return 0x7E;
  int man = fp32_man + int((bits >> 19) & 1);  // rounds half up on the dropped bits' top
  if (man > 7) {
    man = 0;
    if (++exp >= 15) return 0x7E;
  }
  return uint8_t((exp << 3) | man);
}

namespace ref {
namespace {

// The E2M1 value nearest x / e (the first of equal ones), as ggml's best_index_mxfp4.
inline uint8_t best_index_fp4(float x, float e) {
  int best = 0;
  float best_err = std::fabs(float(kvalues_fp4[0]) * e - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(float(kvalues_fp4[i]) * e - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return uint8_t(best);
}

}  // namespace

void quantize_mxfp4(const float* x, block_mxfp4* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_MXFP4; ++i, x += QK_MXFP4) {
    float amax = 0.0f;
    for (int j = 0; j < QK_MXFP4; ++j)
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    const uint8_t e = amax > 0.0f ? uint8_t(std::floor(std::log2(amax)) - 2 + 127) : 0;
    const float d = e8m0_to_fp32_half(e);
    y[i].e = e;
    for (int j = 0; j < QK_MXFP4 / 2; ++j)
      y[i].qs[j] = uint8_t(best_index_fp4(x[j], d) | (best_index_fp4(x[QK_MXFP4 / 2 + j], d) << 4));
  }
}

void dequantize_mxfp4(const block_mxfp4* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_MXFP4; ++i, y += QK_MXFP4) {
    const float d = e8m0_to_fp32_half(x[i].e);
    for (int j = 0; j < QK_MXFP4 / 2; ++j) {
      y[j] = float(kvalues_fp4[x[i].qs[j] & 0x0F]) * d;
      y[j + QK_MXFP4 / 2] = float(kvalues_fp4[x[i].qs[j] >> 4]) * d;
    }
  }
}

void quantize_nvfp4(const float* x, block_nvfp4* y, int64_t k) {
  constexpr int kHalf = QK_NVFP4_SUB / 2;
  for (int64_t i = 0; i < k / QK_NVFP4; ++i)
    for (int s = 0; s < QK_NVFP4 / QK_NVFP4_SUB; ++s, x += QK_NVFP4_SUB) {
      float amax = 0.0f;
      for (int j = 0; j < QK_NVFP4_SUB; ++j)
        if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
      const uint8_t ue = fp32_to_ue4m3(amax / 6.0f);  // the largest E2M1 value, 6, to amax
      y[i].d[s] = ue;
      const float d = ue4m3_to_fp32(ue);
      for (int j = 0; j < kHalf; ++j)
        y[i].qs[s * kHalf + j] = uint8_t(best_index_fp4(x[j], d) | (best_index_fp4(x[kHalf + j], d) << 4));
    }
}

void dequantize_nvfp4(const block_nvfp4* x, float* y, int64_t k) {
  constexpr int kHalf = QK_NVFP4_SUB / 2;
  for (int64_t i = 0; i < k / QK_NVFP4; ++i)
    for (int s = 0; s < QK_NVFP4 / QK_NVFP4_SUB; ++s, y += QK_NVFP4_SUB) {
      const float d = ue4m3_to_fp32(x[i].d[s]);
      for (int j = 0; j < kHalf; ++j) {
        const uint8_t q = x[i].qs[s * kHalf + j];
        y[j] = float(kvalues_fp4[q & 0x0F]) * d;
        y[j + kHalf] = float(kvalues_fp4[q >> 4]) * d;
      }
    }
}

}  // namespace ref
}  // namespace minfer::quant
