// IQ4_NL: 4-bit indices into a fixed non-linear table (kvalues_iq4nl), one f16 scale per 32.
// ggml's quantizer (quantize_iq4_nl -> quantize_row_iq4_nl_impl) searches 15 candidate
// scales per block; there is no separate "_ref" path.
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

void quantize_block(const float* x, block_iq4_nl* y, const float* qw) {
  const int8_t* values = kvalues_iq4nl;
  float sigma2 = 0;
  for (int j = 0; j < QK4_NL; ++j) sigma2 += x[j] * x[j];
  sigma2 *= 2.f / QK4_NL;

  float weight[QK4_NL];
  uint8_t L[QK4_NL];
  std::memset(y->qs, 0, sizeof(y->qs));
  if (qw) {
    for (int j = 0; j < QK4_NL; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + x[j] * x[j]);
  } else {
    for (int j = 0; j < QK4_NL; ++j) weight[j] = x[j] * x[j];
  }
  float amax = 0, max = 0;
  for (int j = 0; j < QK4_NL; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  float scale = 0;
  if (amax >= detail::kGroupMaxEps) {
    float d = -max / values[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < QK4_NL; ++j) {
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
      for (int j = 0; j < QK4_NL; ++j) {
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
    scale = d;
  }
  // With one block per super-block ggml stores the float scale and requantizes with it.
  y->d = fp32_to_fp16(scale);
  const float id = scale != 0 ? 1 / scale : 0;
  for (int j = 0; j < QK4_NL; ++j) L[j] = uint8_t(best_index_int8(16, values, id * x[j]));
  for (int j = 0; j < 16; ++j) y->qs[j] = uint8_t(L[j] | (L[16 + j] << 4));
}

}  // namespace

void quantize_iq4_nl(const float* x, block_iq4_nl* y, int64_t k, const float* qw) {
  for (int64_t ib = 0; ib < k / QK4_NL; ++ib)
    quantize_block(x + QK4_NL * ib, y + ib, qw ? qw + QK4_NL * ib : nullptr);
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

}  // namespace minfer::quant::ref
