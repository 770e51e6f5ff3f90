// IQ4_NL and IQ4_XS: 4-bit indices into a fixed non-linear table (kvalues_iq4nl). IQ4_NL has
// one f16 scale per 32; IQ4_XS a super-block of 256 with an f16 scale and 6-bit signed scales
// per 32. ggml quantizes both with one routine (quantize_row_iq4_nl_impl): a search of 15
// candidate scales per block of 32, then (IQ4_XS) the block scales quantized against the
// super-block's and every index recomputed with its final scale. There is no "_ref" path.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/fp16.h"
#include "quant/reference.h"
#include "quant/scale_search.h"

namespace minfer::quant::ref {
namespace {

// Index of the table entry nearest to x (ties go up), as ggml's best_index_int8 at the
// llama.cpp release the golden files come from.
inline int best_index_int8(int n, const int8_t* val, float x) {
  if (x <= val[0]) return 0;
  if (x >= val[n - 1]) return n - 1;
  int ml = 0, mu = n - 1;
  while (mu - ml > 1) {
    const int mav = (ml + mu) / 2;
    if (x < val[mav])
      mu = mav;
    else
      ml = mav;
  }
  return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

constexpr int kNtry = 7;
constexpr int kBlock = 32;

// The best scale of one block of 32 (its indices in L), or 0 for an all-zero block (L untouched).
float block_scale(const float* x, const float* weight, uint8_t* L) {
  const int8_t* values = kvalues_iq4nl;
  float amax = 0, max = 0;
  for (int j = 0; j < kBlock; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax < detail::kGroupMaxEps) return 0;
  float d = -max / values[0];
  float id = 1 / d;
  float sumqx = 0, sumq2 = 0;
  for (int j = 0; j < kBlock; ++j) {
    const int l = best_index_int8(16, values, id * x[j]);
    L[j] = uint8_t(l);
    const float q = values[l];
    const float w = weight[j];
    sumqx += w * q * x[j];
    sumq2 += w * q * q;
  }
  d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
  float best = d * sumqx;
  for (int itry = -kNtry; itry <= kNtry; ++itry) {
    id = (itry + values[0]) / max;
    sumqx = sumq2 = 0;
    for (int j = 0; j < kBlock; ++j) {
      const int l = best_index_int8(16, values, id * x[j]);
      const float q = values[l];
      const float w = weight[j];
      sumqx += w * q * x[j];
      sumq2 += w * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// ggml's per-element weights of block ib: qw x sqrt(sigma2 + x^2) with an importance matrix,
// x^2 without; sigma2 is 2 x the mean square over the whole super-block.
void block_weights(const float* x, const float* qw, float sigma2, float* weight) {
  for (int j = 0; j < kBlock; ++j) weight[j] = qw ? qw[j] * std::sqrt(sigma2 + x[j] * x[j]) : x[j] * x[j];
}

float mean_square2(const float* x, int n) {
  float sigma2 = 0;
  for (int j = 0; j < n; ++j) sigma2 += x[j] * x[j];
  return sigma2 * (2.f / float(n));
}

void pack_nibbles(const uint8_t* L, int n, uint8_t* qs) {
  for (int i = 0; i < n / 32; ++i)
    for (int j = 0; j < 16; ++j) qs[16 * i + j] = uint8_t(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

void quantize_block(const float* x, block_iq4_nl* y, const float* qw) {
  float weight[kBlock];
  uint8_t L[kBlock] = {};
  block_weights(x, qw, mean_square2(x, kBlock), weight);
  const float scale = block_scale(x, weight, L);
  // With one block per super-block ggml stores the float scale and requantizes with it.
  y->d = fp32_to_fp16(scale);
  const float id = scale != 0 ? 1 / scale : 0;
  for (int j = 0; j < kBlock; ++j) L[j] = uint8_t(best_index_int8(16, kvalues_iq4nl, id * x[j]));
  pack_nibbles(L, kBlock, y->qs);
}

void quantize_superblock(const float* x, block_iq4_xs* y, const float* qw) {
  constexpr int kNb = QK_K / kBlock;
  const float sigma2 = mean_square2(x, QK_K);
  float scales[kNb], weight[kBlock];
  uint8_t L[QK_K] = {};
  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < kNb; ++ib) {
    block_weights(x + kBlock * ib, qw ? qw + kBlock * ib : nullptr, sigma2, weight);
    scales[ib] = block_scale(x + kBlock * ib, weight, L + kBlock * ib);
    const float abs_d = std::fabs(scales[ib]);
    if (abs_d > amax_scale) {
      amax_scale = abs_d;
      max_scale = scales[ib];
    }
  }
  // The block scales as 6-bit multiples of d = -max_scale / 32 (ggml keeps d in float here; only
  // the stored copy is f16), every index recomputed with its block's final scale.
  const float d = -max_scale / 32;
  y->d = fp32_to_fp16(d);
  y->scales_h = 0;
  const float id = d != 0 ? 1 / d : 0.f;
  for (int ib = 0; ib < kNb; ++ib) {
    int l = detail::nearest_int(id * scales[ib]);
    l = std::max(-32, std::min(31, l));
    const float dl = d * float(l);
    const float idl = dl != 0 ? 1 / dl : 0.f;
    for (int j = 0; j < kBlock; ++j)
      L[kBlock * ib + j] = uint8_t(best_index_int8(16, kvalues_iq4nl, idl * x[kBlock * ib + j]));
    l += 32;
    const uint8_t l_l = uint8_t(l & 0xf), l_h = uint8_t(l >> 4);
    if (ib % 2 == 0)
      y->scales_l[ib / 2] = l_l;
    else
      y->scales_l[ib / 2] = uint8_t(y->scales_l[ib / 2] | (l_l << 4));
    y->scales_h = uint16_t(y->scales_h | (l_h << (2 * ib)));
  }
  pack_nibbles(L, QK_K, y->qs);
}

}  // namespace

void quantize_iq4_nl(const float* x, block_iq4_nl* y, int64_t k, const float* qw) {
  for (int64_t ib = 0; ib < k / QK4_NL; ++ib)
    quantize_block(x + QK4_NL * ib, y + ib, qw ? qw + QK4_NL * ib : nullptr);
}

void quantize_iq4_xs(const float* x, block_iq4_xs* y, int64_t k, const float* qw) {
  for (int64_t ib = 0; ib < k / QK_K; ++ib)
    quantize_superblock(x + QK_K * ib, y + ib, qw ? qw + QK_K * ib : nullptr);
}

void dequantize_iq4_nl(const block_iq4_nl* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK4_NL; i++, y += QK4_NL) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * kvalues_iq4nl[x[i].qs[j] & 0xf];
      y[j + 16] = d * kvalues_iq4nl[x[i].qs[j] >> 4];
    }
  }
}

void dequantize_iq4_xs(const block_iq4_xs* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < QK_K / 32; ++ib, y += 32) {
      const float dl = d * float(iq4_xs_scale(x[i], ib));
      const uint8_t* qs = x[i].qs + 16 * ib;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * kvalues_iq4nl[qs[j] & 0xf];
        y[j + 16] = dl * kvalues_iq4nl[qs[j] >> 4];
      }
    }
  }
}

}  // namespace minfer::quant::ref
