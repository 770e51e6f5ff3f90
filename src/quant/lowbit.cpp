// The 1- and 2-bit formats ggml v0.4.0 added (Q1_0, Q2_0) and the ternary ones (TQ1_0, TQ2_0):
// ggml's reference (de)quantizers (ggml-quants.c), the same arithmetic in the same order.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/fp16.h"
#include "quant/reference.h"

namespace minfer::quant::ref {

void quantize_q1_0(const float* x, block_q1_0* y, int64_t k) {
  for (int64_t i = 0; i < k / QK1_0; ++i, x += QK1_0) {
    // The scale is the mean magnitude; each weight keeps only its sign.
    float sum_abs = 0.0f;
    for (int j = 0; j < QK1_0; ++j) sum_abs += std::fabs(x[j]);
    y[i].d = fp32_to_fp16(sum_abs / QK1_0);
    std::memset(y[i].qs, 0, sizeof y[i].qs);
    for (int j = 0; j < QK1_0; ++j)
      if (x[j] >= 0.0f) y[i].qs[j / 8] |= uint8_t(1 << (j % 8));
  }
}

void dequantize_q1_0(const block_q1_0* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK1_0; ++i) {
    const float d = fp16_to_fp32(x[i].d), neg_d = -d;
    for (int j = 0; j < QK1_0; ++j) *y++ = q1_0_value(x[i], j) > 0 ? d : neg_d;
  }
}

void quantize_q2_0(const float* x, block_q2_0* y, int64_t k) {
  for (int64_t i = 0; i < k / QK2_0; ++i, x += QK2_0) {
    float amax = 0.0f;
    for (int j = 0; j < QK2_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax, id = d > 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    std::memset(y[i].qs, 0, sizeof y[i].qs);
    for (int j = 0; j < QK2_0; ++j) {
      const int q = std::min(3, std::max(0, int(std::round(x[j] * id)) + 1));  // -1, 0, 1, 2 -> 0..3
      y[i].qs[j / 4] |= uint8_t(q << (2 * (j % 4)));
    }
  }
}

void dequantize_q2_0(const block_q2_0* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK2_0; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < QK2_0; ++j) *y++ = float(q2_0_value(x[i], j)) * d;
  }
}

namespace {

// Packs trits t[0..count) (0..2), first the most significant, as ggml's TQ1_0 does.
inline uint8_t tq1_pack(const int* t, int count, bool shift_one_more) {
  uint8_t q = 0;
  for (int n = 0; n < count; ++n) q = uint8_t(q * 3 + t[n]);
  if (shift_one_more) q = uint8_t(q * 3);
  return uint8_t((uint16_t(q) * 256 + (243 - 1)) / 243);
}

}  // namespace

void quantize_tq1_0(const float* x, block_tq1_0* y, int64_t k) {
  constexpr int kQs = int(sizeof(block_tq1_0::qs)), kQh = int(sizeof(block_tq1_0::qh));
  for (int64_t i = 0; i < k / QK_K; ++i) {
    float amax = 0.0f;
    for (int j = 0; j < QK_K; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax, id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    auto trit = [&](float v) { return int(std::lround(v * id)) + 1; };
    int t[5];
    // Five elements a byte, 32 bytes apart, then 16 bytes apart; four a byte in qh.
    for (int j = 0; j < kQs - kQs % 32; j += 32, x += 5 * 32)
      for (int m = 0; m < 32; ++m) {
        for (int n = 0; n < 5; ++n) t[n] = trit(x[m + n * 32]);
        y[i].qs[j + m] = tq1_pack(t, 5, false);
      }
    for (int j = kQs - kQs % 32; j < kQs; j += 16, x += 5 * 16)
      for (int m = 0; m < 16; ++m) {
        for (int n = 0; n < 5; ++n) t[n] = trit(x[m + n * 16]);
        y[i].qs[j + m] = tq1_pack(t, 5, false);
      }
    for (int j = 0; j < kQh; ++j) {
      for (int m = 0; m < 4; ++m) t[m] = trit(x[j + m * kQh]);
      y[i].qh[j] = tq1_pack(t, 4, true);
    }
    x += 4 * kQh;
  }
}

void dequantize_tq1_0(const block_tq1_0* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; ++i, y += QK_K) {
    const float d = fp16_to_fp32(x[i].d);
    tq1_0_for_each(x[i], [&](int e, int t) { y[e] = float(t) * d; });
  }
}

void quantize_tq2_0(const float* x, block_tq2_0* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; ++i) {
    float amax = 0.0f;
    for (int j = 0; j < QK_K; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax, id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < int(sizeof(block_tq2_0::qs)); j += 32, x += 4 * 32)
      for (int m = 0; m < 32; ++m) {
        uint8_t q = 0;
        for (int n = 0; n < 4; ++n) q = uint8_t(q + (((int(std::lround(x[m + n * 32] * id)) + 1) & 3) << (2 * n)));
        y[i].qs[j + m] = q;
      }
  }
}

void dequantize_tq2_0(const block_tq2_0* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int e = 0; e < QK_K; ++e) *y++ = float(tq2_0_value(x[i], e)) * d;
  }
}

}  // namespace minfer::quant::ref

namespace minfer::quant {

void tq1_0_to_tq2_0(const void* src, void* dst, int64_t nb) {
  const auto* x = static_cast<const block_tq1_0*>(src);
  auto* y = static_cast<block_tq2_0*>(dst);
  for (int64_t i = 0; i < nb; ++i) {
    block_tq2_0 b{};
    // element e = 128 j + 32 l + m: code t = value + 1 at bits 2 l of qs[32 j + m]
    tq1_0_for_each(x[i], [&](int e, int v) {
      b.qs[32 * (e / 128) + e % 32] = uint8_t(b.qs[32 * (e / 128) + e % 32] | ((v + 1) << (2 * ((e / 32) % 4))));
    });
    b.d = x[i].d;
    y[i] = b;
  }
}

}  // namespace minfer::quant
