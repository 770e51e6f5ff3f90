// The 32-element block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1 (ggml's quantize_row_*_ref
// and, with an importance matrix, quantize_row_*_impl).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "common/fp16.h"
#include "quant/reference.h"
#include "quant/scale_search.h"

namespace minfer::quant::ref {
using detail::trunc_to_i8;

namespace {

// Largest-magnitude element, keeping its sign (ggml's amax/max pair).
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; j++) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

inline void min_max(const float* x, int n, float* mn, float* mx) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < n; j++) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  *mn = min;
  *mx = max;
}

inline void pack_q5_high_bits(const uint8_t* L, uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = uint8_t((L[j] & 0x0F) | ((L[j + 16] & 0x0F) << 4));
    qh |= ((L[j] & 0x10u) >> 4) << (j + 0);
    qh |= ((L[j + 16] & 0x10u) >> 4) << (j + 16);
  }
  std::memcpy(qh_bytes, &qh, 4);
}

// Mean square of the whole row: the imatrix paths weight by sqrt(sigma2 + x^2).
inline float row_sigma2(const float* x, int64_t n) {
  float sum_x2 = 0;
  for (int64_t j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
  return sum_x2 / n;
}

}  // namespace

void quantize_q4_0(const float* x, block_q4_0* y, int64_t k, const float* qw) {
  const int64_t nb = k / QK4_0;
  if (qw) {
    const float sigma2 = row_sigma2(x, k);
    float weight[QK4_0];
    int8_t L[QK4_0];
    for (int64_t ib = 0; ib < nb; ++ib) {
      const float* xb = x + QK4_0 * ib;
      const float* w = qw + QK4_0 * ib;
      for (int j = 0; j < QK4_0; ++j) weight[j] = w[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
      const float d = detail::make_qx_quants(QK4_0, 8, xb, L, 1, weight);
      y[ib].d = fp32_to_fp16(d);
      for (int j = 0; j < 16; ++j) y[ib].qs[j] = uint8_t(L[j] | (L[j + 16] << 4));
    }
    return;
  }
  for (int64_t i = 0; i < nb; i++) {
    const float* xb = x + i * QK4_0;
    const float d = signed_absmax(xb, QK4_0) / -8;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
      const uint8_t xi0 = uint8_t(std::min<int>(15, trunc_to_i8(xb[j] * id + 8.5f)));
      const uint8_t xi1 = uint8_t(std::min<int>(15, trunc_to_i8(xb[j + 16] * id + 8.5f)));
      y[i].qs[j] = uint8_t(xi0 | (xi1 << 4));
    }
  }
}

void quantize_q4_1(const float* x, block_q4_1* y, int64_t k, const float* qw) {
  const int64_t nb = k / QK4_1;
  if (qw) {
    const float sigma2 = row_sigma2(x, k);
    float weight[QK4_1];
    uint8_t L[QK4_1], Laux[QK4_1];
    for (int64_t ib = 0; ib < nb; ++ib) {
      const float* xb = x + QK4_1 * ib;
      const float* w = qw + QK4_1 * ib;
      for (int j = 0; j < QK4_1; ++j) weight[j] = w[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
      float min;
      const float d =
          detail::make_qkx3_quants(QK4_1, 15, xb, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
      y[ib].d = fp32_to_fp16(d);
      y[ib].m = fp32_to_fp16(-min);
      for (int j = 0; j < 16; ++j) y[ib].qs[j] = uint8_t(L[j] | (L[j + 16] << 4));
    }
    return;
  }
  for (int64_t i = 0; i < nb; i++) {
    const float* xb = x + i * QK4_1;
    float min, max;
    min_max(xb, QK4_1, &min, &max);
    const float d = (max - min) / 15;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    for (int j = 0; j < 16; ++j) {
      const uint8_t xi0 = uint8_t(std::min<int>(15, trunc_to_i8((xb[j] - min) * id + 0.5f)));
      const uint8_t xi1 = uint8_t(std::min<int>(15, trunc_to_i8((xb[j + 16] - min) * id + 0.5f)));
      y[i].qs[j] = uint8_t(xi0 | (xi1 << 4));
    }
  }
}

void quantize_q5_0(const float* x, block_q5_0* y, int64_t k, const float* qw) {
  const int64_t nb = k / QK5_0;
  if (qw) {
    const float sigma2 = row_sigma2(x, k);
    float weight[QK5_0];
    int8_t L[QK5_0];
    for (int64_t ib = 0; ib < nb; ++ib) {
      const float* xb = x + QK5_0 * ib;
      const float* w = qw + QK5_0 * ib;
      for (int j = 0; j < QK5_0; ++j) weight[j] = w[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
      const float d = detail::make_qx_quants(QK5_0, 16, xb, L, 1, weight);
      y[ib].d = fp32_to_fp16(d);
      uint8_t Lu[QK5_0];
      for (int j = 0; j < QK5_0; ++j) Lu[j] = uint8_t(L[j]);
      pack_q5_high_bits(Lu, y[ib].qs, y[ib].qh);
    }
    return;
  }
  for (int64_t i = 0; i < nb; i++) {
    const float* xb = x + i * QK5_0;
    const float d = signed_absmax(xb, QK5_0) / -16;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    uint8_t L[QK5_0];
    for (int j = 0; j < QK5_0; ++j)
      L[j] = uint8_t(std::min<int>(31, trunc_to_i8(xb[j] * id + 16.5f)));
    pack_q5_high_bits(L, y[i].qs, y[i].qh);
  }
}

void quantize_q5_1(const float* x, block_q5_1* y, int64_t k, const float* qw) {
  const int64_t nb = k / QK5_1;
  if (qw) {
    const float sigma2 = row_sigma2(x, k);
    float weight[QK5_1];
    uint8_t L[QK5_1], Laux[QK5_1];
    for (int64_t ib = 0; ib < nb; ++ib) {
      const float* xb = x + QK5_1 * ib;
      const float* w = qw + QK5_1 * ib;
      for (int j = 0; j < QK5_1; ++j) weight[j] = w[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
      float min;
      const float d =
          detail::make_qkx3_quants(QK5_1, 31, xb, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
      y[ib].d = fp32_to_fp16(d);
      y[ib].m = fp32_to_fp16(-min);
      pack_q5_high_bits(L, y[ib].qs, y[ib].qh);
    }
    return;
  }
  for (int64_t i = 0; i < nb; i++) {
    const float* xb = x + i * QK5_1;
    float min, max;
    min_max(xb, QK5_1, &min, &max);
    const float d = (max - min) / 31;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    uint8_t L[QK5_1];
    // ggml converts straight to uint8_t here (no clamp): same as the low byte of the int.
    for (int j = 0; j < QK5_1; ++j) L[j] = uint8_t(trunc_to_i8((xb[j] - min) * id + 0.5f));
    pack_q5_high_bits(L, y[i].qs, y[i].qh);
  }
}

void quantize_q8_0(const float* x, block_q8_0* y, int64_t k) {
  const int64_t nb = k / QK8_0;
  for (int64_t i = 0; i < nb; i++) {
    const float* xb = x + i * QK8_0;
    float amax = 0.0f;
    for (int j = 0; j < QK8_0; j++) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < QK8_0; ++j) y[i].qs[j] = trunc_to_i8(std::round(xb[j] * id));
  }
}

void quantize_q8_1(const float* x, block_q8_1* y, int64_t k) {
  const int64_t nb = k / QK8_1;
  for (int64_t i = 0; i < nb; i++) {
    const float* xb = x + i * QK8_1;
    float amax = 0.0f;
    for (int j = 0; j < QK8_1; j++) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < QK8_1; ++j) {
      y[i].qs[j] = trunc_to_i8(std::round(xb[j] * id));
      sum += y[i].qs[j];
    }
    y[i].s = fp32_to_fp16(sum * d);
  }
}

void dequantize_q4_0(const block_q4_0* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK4_0; i++, y += QK4_0) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = ((x[i].qs[j] & 0x0F) - 8) * d;
      y[j + 16] = ((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const block_q4_1* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK4_1; i++, y += QK4_1) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = (x[i].qs[j] & 0x0F) * d + m;
      y[j + 16] = (x[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_q5_0(const block_q5_0* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK5_0; i++, y += QK5_0) {
    const float d = fp16_to_fp32(x[i].d);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int j = 0; j < 16; ++j) {
      const int h0 = ((qh >> j) << 4) & 0x10;
      const int h1 = (qh >> (j + 12)) & 0x10;
      y[j] = (((x[i].qs[j] & 0x0F) | h0) - 16) * d;
      y[j + 16] = (((x[i].qs[j] >> 4) | h1) - 16) * d;
    }
  }
}

void dequantize_q5_1(const block_q5_1* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK5_1; i++, y += QK5_1) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int j = 0; j < 16; ++j) {
      const int h0 = ((qh >> j) << 4) & 0x10;
      const int h1 = (qh >> (j + 12)) & 0x10;
      y[j] = ((x[i].qs[j] & 0x0F) | h0) * d + m;
      y[j + 16] = ((x[i].qs[j] >> 4) | h1) * d + m;
    }
  }
}

void dequantize_q8_0(const block_q8_0* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK8_0; i++, y += QK8_0) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < QK8_0; ++j) y[j] = x[i].qs[j] * d;
  }
}

void dequantize_q8_1(const block_q8_1* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK8_1; i++, y += QK8_1) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < QK8_1; ++j) y[j] = x[i].qs[j] * d;
  }
}

}  // namespace minfer::quant::ref
