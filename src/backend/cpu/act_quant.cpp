#include "backend/cpu/act_quant.h"

#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_features.h"
#include "common/error.h"
#include "common/fp16.h"

namespace minfer::cpu {
namespace {

// ggml's nearest_int: adding 1.5*2^23 leaves the rounded integer in the low mantissa bits,
// which is round-half-even for |v| < 2^22.
inline int nearest_int(float v) {
  const float val = v + 12582912.f;
  int i;
  std::memcpy(&i, &val, sizeof(int));
  return (i & 0x007fffff) - 0x00400000;
}

// Returns d (unrounded) and writes the 32 quants of one Q8_0/Q8_1 block.
inline float q8_block(const float* x, int8_t* qs) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.f;
  const float id = amax != 0.0f ? 127.f / amax : 0.0f;
  // _mm256_round_ps(_MM_ROUND_NEAREST) in ggml: half to even, as nearest_int (|x * id| <= 127).
  for (int j = 0; j < 32; ++j) qs[j] = static_cast<int8_t>(nearest_int(x[j] * id));
  return d;
}

}  // namespace

GgmlType vec_dot_type(GgmlType w) {
  switch (w) {
    case GgmlType::F32: return GgmlType::F32;
    case GgmlType::F16: return GgmlType::F16;
    case GgmlType::BF16: return GgmlType::BF16;
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::Q8_0:
    case GgmlType::IQ4_NL:
    case GgmlType::Q1_0:
    case GgmlType::Q2_0:
    case GgmlType::MXFP4:
    case GgmlType::NVFP4: return GgmlType::Q8_0;
    case GgmlType::Q4_1:
    case GgmlType::Q5_1: return GgmlType::Q8_1;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_XS:
    case GgmlType::IQ2_XXS:
    case GgmlType::IQ2_XS:
    case GgmlType::IQ2_S:
    case GgmlType::IQ3_XXS:
    case GgmlType::IQ3_S:
    case GgmlType::IQ1_S:
    case GgmlType::IQ1_M:
    case GgmlType::TQ1_0:
    case GgmlType::TQ2_0: return GgmlType::Q8_K;
    default: fail("cpu: no matmul kernel for weight type {}", type_name(w));
  }
}

void quantize_act_q8_0(const float* x, quant::block_q8_0* y, int64_t n) {
  if (active_isa() >= Isa::Avx512)
    if (const Q8TilesFn f = quantize_q8_0_avx512()) return f(x, n / 32, y, 0, 1, nullptr, nullptr, nullptr);
  if (active_isa() >= Isa::Avx2)
    if (const Q8RowFn f = quantize_q8_0_avx2()) return f(x, y, n);
  for (int64_t b = 0; b < n / 32; ++b) y[b].d = fp32_to_fp16(q8_block(x + b * 32, y[b].qs));
}

void quantize_act_q8_1(const float* x, quant::block_q8_1* y, int64_t n) {
  if (active_isa() >= Isa::Avx2)
    if (const Q8_1RowFn f = quantize_q8_1_avx2()) return f(x, y, n);
  for (int64_t b = 0; b < n / 32; ++b) {
    const float d = q8_block(x + b * 32, y[b].qs);
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += y[b].qs[j];
    y[b].d = fp32_to_fp16(d);
    y[b].s = fp32_to_fp16(d * static_cast<float>(sum));
  }
}

void quantize_act_q8_K(const float* x, quant::block_q8_K* y, int64_t n) {
  if (active_isa() >= Isa::Avx512)
    if (const Q8KSumsFn f = quantize_q8_K_avx512()) return f(x, n / quant::QK_K, y, nullptr);
  if (active_isa() >= Isa::Avx2)
    if (const Q8KRowFn f = quantize_q8_K_avx2()) return f(x, y, n);
  for (int64_t b = 0; b < n / quant::QK_K; ++b, x += quant::QK_K) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < quant::QK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      y[b].d = 0.0f;
      std::memset(y[b].qs, 0, sizeof(y[b].qs));
      std::memset(y[b].bsums, 0, sizeof(y[b].bsums));
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < quant::QK_K; ++j) {
      const int v = nearest_int(iscale * x[j]);
      y[b].qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int j = 0; j < quant::QK_K / 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[j * 16 + i];
      y[b].bsums[j] = static_cast<int16_t>(sum);
    }
    y[b].d = 1.0f / iscale;
  }
}

size_t quantize_act(GgmlType vdt, const float* x, void* y, int64_t n) {
  switch (vdt) {
    case GgmlType::F32:
      std::memcpy(y, x, size_t(n) * sizeof(float));
      break;
    case GgmlType::F16: {
      auto* o = static_cast<uint16_t*>(y);
      for (int64_t i = 0; i < n; ++i) o[i] = fp32_to_fp16(x[i]);
      break;
    }
    case GgmlType::BF16: {
      auto* o = static_cast<uint16_t*>(y);
      for (int64_t i = 0; i < n; ++i) o[i] = fp32_to_bf16(x[i]);
      break;
    }
    case GgmlType::Q8_0: quantize_act_q8_0(x, static_cast<quant::block_q8_0*>(y), n); break;
    case GgmlType::Q8_1: quantize_act_q8_1(x, static_cast<quant::block_q8_1*>(y), n); break;
    case GgmlType::Q8_K: quantize_act_q8_K(x, static_cast<quant::block_q8_K*>(y), n); break;
    default: fail("cpu: {} is not an activation type", type_name(vdt));
  }
  return row_size(vdt, n);
}

}  // namespace minfer::cpu
