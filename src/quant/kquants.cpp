// The 256-element super-block formats: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K (ggml's
// quantize_row_*_ref and, with an importance matrix, quantize_row_*_impl).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/fp16.h"
#include "quant/reference.h"
#include "quant/scale_search.h"

namespace minfer::quant::ref {
using detail::make_q3_quants;
using detail::make_qkx2_quants;
using detail::make_qkx3_quants;
using detail::make_qp_quants;
using detail::make_qx_quants;
using detail::nearest_int;

namespace {

inline int clamp_i(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

// The importance weights of a sub-block's n values, qw x sqrt(sigma2 + x^2) as ggml's, and
// their sum (in ggml's order, for make_qp_quants / make_qx_quants over the sub-blocks).
inline float imatrix_weights(int n, const float* x, const float* qw, float sigma2, float* w) {
  for (int l = 0; l < n; ++l) w[l] = qw[l] * std::sqrt(sigma2 + x[l] * x[l]);
  float sum = 0;
  for (int l = 0; l < n; ++l) sum += w[l];
  return sum;
}

// Four 2-bit quants per byte: byte l of each 32-byte group holds elements l, l+32, l+64, l+96.
inline void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < QK_K; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] =
          uint8_t(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

// Q4_K/Q5_K: 6-bit scale and min of sub-block j into the 12 packed bytes (inverse of
// get_scale_min_k4).
inline void put_scale_min_k4(int j, uint8_t ls, uint8_t lm, uint8_t* s) {
  if (j < 4) {
    s[j] = ls;
    s[j + 4] = lm;
  } else {
    s[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
    s[j - 4] |= uint8_t((ls >> 4) << 6);
    s[j - 0] |= uint8_t((lm >> 4) << 6);
  }
}

// Q3_K: 6-bit scale l (already offset by 32) of sub-block j (0..15) into 12 packed bytes
// (which must start zeroed).
inline void put_scale_q3(int j, int l, uint8_t* s) {
  if (j < 8)
    s[j] = uint8_t(l & 0xF);
  else
    s[j - 8] |= uint8_t((l & 0xF) << 4);
  l >>= 4;
  s[j % 4 + 8] |= uint8_t(l << (2 * (j / 4)));
}

// Final Q3_K pass shared by ref and imatrix paths: requantize with the stored (rounded)
// scales, then split into hmask (bit 2) and 2-bit quants.
void finish_q3_K(const float* x, block_q3_K* y, int8_t* L) {
  for (int j = 0; j < QK_K / 16; ++j) {
    const float d = fp16_to_fp32(y->d) * get_scale_q3_K(j, y->scales);
    if (d == 0) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = clamp_i(nearest_int(x[16 * j + ii] / d), -4, 3);
      L[16 * j + ii] = int8_t(l + 4);
    }
  }
  std::memset(y->hmask, 0, QK_K / 8);
  int m = 0;
  uint8_t hm = 1;
  for (int j = 0; j < QK_K; ++j) {
    if (L[j] > 3) {
      y->hmask[m] |= hm;
      L[j] -= 4;
    }
    if (++m == QK_K / 8) {
      m = 0;
      hm = uint8_t(hm << 1);
    }
  }
  pack_2bit(reinterpret_cast<const uint8_t*>(L), y->qs);
}

// Final Q4_K/Q5_K pass: requantize every sub-block with its stored scale and min.
void requantize_k4(const float* x, uint16_t dh, uint16_t dminh, const uint8_t* scales, int nmax,
                   uint8_t* L) {
  for (int j = 0; j < QK_K / 32; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, scales, &sc, &m);
    const float d = fp16_to_fp32(dh) * sc;
    if (d == 0) continue;
    const float dm = fp16_to_fp32(dminh) * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = uint8_t(clamp_i(l, 0, nmax));
    }
  }
}

inline void pack_q4_K(const uint8_t* L, uint8_t* q) {
  for (int j = 0; j < QK_K; j += 64, q += 32)
    for (int l = 0; l < 32; ++l) q[l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
}

inline void pack_q5_K(const uint8_t* L, uint8_t* qh, uint8_t* ql) {
  std::memset(qh, 0, QK_K / 8);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < QK_K; n += 64, ql += 32) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= m1;
      }
      int l2 = L[n + j + 32];
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= m2;
      }
      ql[j] = uint8_t(l1 | (l2 << 4));
    }
    m1 = uint8_t(m1 << 2);
    m2 = uint8_t(m2 << 2);
  }
}

// Q6_K from the 16 sub-block scales found by make_qx_quants (shared by ref and imatrix).
void finish_q6_K(const float* x, block_q6_K* y, const float* scales, float max_scale,
                 float max_abs_scale, int8_t* L) {
  if (max_abs_scale < detail::kGroupMaxEps) {
    std::memset(y, 0, sizeof(*y));
    y->d = fp32_to_fp16(0.f);
    return;
  }
  const float iscale = -128.f / max_scale;
  y->d = fp32_to_fp16(1 / iscale);
  for (int ib = 0; ib < QK_K / 16; ++ib)
    y->scales[ib] = int8_t(std::min(127, nearest_int(iscale * scales[ib])));
  for (int j = 0; j < QK_K / 16; ++j) {
    const float d = fp16_to_fp32(y->d) * y->scales[j];
    if (d == 0) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = clamp_i(nearest_int(x[16 * j + ii] / d), -32, 31);
      L[16 * j + ii] = int8_t(l + 32);
    }
  }
  uint8_t* ql = y->ql;
  uint8_t* qh = y->qh;
  for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = L[j + l + 0] & 0xF;
      const uint8_t q2 = L[j + l + 32] & 0xF;
      const uint8_t q3 = L[j + l + 64] & 0xF;
      const uint8_t q4 = L[j + l + 96] & 0xF;
      ql[l + 0] = uint8_t(q1 | (q3 << 4));
      ql[l + 32] = uint8_t(q2 | (q4 << 4));
      qh[l] = uint8_t((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                      ((L[j + l + 96] >> 4) << 6));
    }
  }
}

inline float sum_sq(const float* x, int n) {
  float s = 0;
  for (int l = 0; l < n; ++l) s += x[l] * x[l];
  return s;
}

}  // namespace

void quantize_q2_K(const float* x, block_q2_K* y, int64_t k, const float* qw) {
  const int64_t nb = k / QK_K;
  uint8_t L[QK_K];
  uint8_t Laux[16];
  float weights[16];
  float mins[QK_K / 16];
  float scales[QK_K / 16];
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    block_q2_K& b = y[i];
    if (qw) {
      const float* qwb = qw + QK_K * i;
      float sw[QK_K / 16];
      uint8_t Ls[QK_K / 16], Lm[QK_K / 16];
      const float sigma2 = sum_sq(x, QK_K) / QK_K;
      for (int j = 0; j < QK_K / 16; ++j) {
        sw[j] = imatrix_weights(16, x + 16 * j, qwb + 16 * j, sigma2, weights);
        scales[j] = make_qkx3_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.9f,
                                     0.05f, 36, false);
      }
      const float dm = make_qp_quants(QK_K / 16, 15, scales, Ls, sw);
      const float mm = make_qp_quants(QK_K / 16, 15, mins, Lm, sw);
      b.d = fp32_to_fp16(dm);
      b.dmin = fp32_to_fp16(mm);
      for (int j = 0; j < QK_K / 16; ++j) b.scales[j] = uint8_t(Ls[j] | (Lm[j] << 4));
    } else {
      float max_scale = 0, max_min = 0;
      for (int j = 0; j < QK_K / 16; ++j) {
        for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
        scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f,
                                     0.1f, 15, true);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
      }
      const float q4scale = 15.f;
      if (max_scale > 0) {
        const float iscale = q4scale / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) b.scales[j] = uint8_t(nearest_int(iscale * scales[j]));
        b.d = fp32_to_fp16(max_scale / q4scale);
      } else {
        for (int j = 0; j < QK_K / 16; ++j) b.scales[j] = 0;
        b.d = fp32_to_fp16(0.f);
      }
      if (max_min > 0) {
        const float iscale = q4scale / max_min;
        for (int j = 0; j < QK_K / 16; ++j)
          b.scales[j] = uint8_t(b.scales[j] | (nearest_int(iscale * mins[j]) << 4));
        b.dmin = fp32_to_fp16(max_min / q4scale);
      } else {
        b.dmin = fp32_to_fp16(0.f);
      }
    }
    const float dall = fp16_to_fp32(b.d);
    const float mall = fp16_to_fp32(b.dmin);
    for (int j = 0; j < QK_K / 16; ++j) {
      const float d = dall * (b.scales[j] & 0xF);
      if (d == 0) continue;
      const float dm = mall * (b.scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int((x[16 * j + ii] + dm) / d);
        L[16 * j + ii] = uint8_t(clamp_i(l, 0, 3));
      }
    }
    pack_2bit(L, b.qs);
  }
}

void quantize_q3_K(const float* x, block_q3_K* y, int64_t k, const float* qw) {
  const int64_t nb = k / QK_K;
  int8_t L[QK_K];
  float scales[QK_K / 16];
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    block_q3_K& b = y[i];
    std::memset(b.scales, 0, 12);
    if (qw) {
      const float* qwb = qw + QK_K * i;
      float weight[16];
      float sw[QK_K / 16];
      int8_t Ls[QK_K / 16];
      const float sigma2 = 2 * sum_sq(x, QK_K) / QK_K;
      for (int j = 0; j < QK_K / 16; ++j) {
        sw[j] = imatrix_weights(16, x + 16 * j, qwb + 16 * j, sigma2, weight);
        scales[j] = make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, weight);
      }
      const float d_block = make_qx_quants(QK_K / 16, 32, scales, Ls, 1, sw);
      for (int j = 0; j < QK_K / 16; ++j) put_scale_q3(j, Ls[j], b.scales);
      b.d = fp32_to_fp16(d_block);
    } else {
      float max_scale = 0, amax = 0;
      for (int j = 0; j < QK_K / 16; ++j) {
        scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
        const float scale = std::fabs(scales[j]);
        if (scale > amax) {
          amax = scale;
          max_scale = scales[j];
        }
      }
      if (max_scale != 0) {
        const float iscale = -32.f / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) {
          // ggml stores nearest_int's result in an int8_t before clamping.
          const int8_t l0 = int8_t(nearest_int(iscale * scales[j]));
          put_scale_q3(j, clamp_i(l0, -32, 31) + 32, b.scales);
        }
        b.d = fp32_to_fp16(1 / iscale);
      } else {
        b.d = fp32_to_fp16(0.f);
      }
    }
    finish_q3_K(x, &b, L);
  }
}

namespace {

// Q4_K and Q5_K share everything but the quants' range, the search's parameters without an
// importance matrix and the packing: a super-block's 8 sub-block scales and mins (6 bits each
// under d and dmin), and its quants L in [0, nmax].
template <class Block>
void quantize_k4_block(const float* x, const float* qwb, int nmax, float rmin, int nstep, Block& b,
                       uint8_t* L) {
  uint8_t Laux[32];
  float weights[32];
  float mins[QK_K / 32];
  float scales[QK_K / 32];
  if (qwb) {
    uint8_t Ls[QK_K / 32], Lm[QK_K / 32];
    float sw[QK_K / 32];
    const float sigma2 = 2 * sum_sq(x, QK_K) / QK_K;
    for (int j = 0; j < QK_K / 32; ++j) {
      sw[j] = imatrix_weights(32, x + 32 * j, qwb + 32 * j, sigma2, weights);
      scales[j] = make_qkx3_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.9f,
                                   0.05f, 36, false);
    }
    const float d_block = make_qp_quants(QK_K / 32, 63, scales, Ls, sw);
    const float m_block = make_qp_quants(QK_K / 32, 63, mins, Lm, sw);
    for (int j = 0; j < QK_K / 32; ++j)
      put_scale_min_k4(j, std::min<uint8_t>(63, Ls[j]), std::min<uint8_t>(63, Lm[j]), b.scales);
    b.d = fp32_to_fp16(d_block);
    b.dmin = fp32_to_fp16(m_block);
  } else {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
      const float av_x = std::sqrt(sum_sq(x + 32 * j, 32) / 32);
      for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
      scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin,
                                   0.1f, nstep, false);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < QK_K / 32; ++j) {
      const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
      const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
      put_scale_min_k4(j, ls, lm, b.scales);
    }
    b.d = fp32_to_fp16(max_scale / 63.f);
    b.dmin = fp32_to_fp16(max_min / 63.f);
  }
  requantize_k4(x, b.d, b.dmin, b.scales, nmax, L);
}

}  // namespace

void quantize_q4_K(const float* x, block_q4_K* y, int64_t k, const float* qw) {
  uint8_t L[QK_K];
  for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
    quantize_k4_block(x, qw ? qw + QK_K * i : nullptr, 15, -1.f, 20, y[i], L);
    pack_q4_K(L, y[i].qs);
  }
}

void quantize_q5_K(const float* x, block_q5_K* y, int64_t k, const float* qw) {
  uint8_t L[QK_K];
  for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
    quantize_k4_block(x, qw ? qw + QK_K * i : nullptr, 31, -0.5f, 15, y[i], L);
    pack_q5_K(L, y[i].qh, y[i].qs);
  }
}

void quantize_q6_K(const float* x, block_q6_K* y, int64_t k, const float* qw) {
  const int64_t nb = k / QK_K;
  int8_t L[QK_K];
  float scales[QK_K / 16];
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
      const float* w = qw ? qw + QK_K * i + 16 * ib : nullptr;
      const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, w);
      scales[ib] = scale;
      const float abs_scale = std::fabs(scale);
      if (abs_scale > max_abs_scale) {
        max_abs_scale = abs_scale;
        max_scale = scale;
      }
    }
    finish_q6_K(x, &y[i], scales, max_scale, max_abs_scale, L);
  }
}

void quantize_q8_K(const float* x, block_q8_K* y, int64_t k) {
  const int64_t nb = k / QK_K;
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    float max = 0, amax = 0;
    for (int j = 0; j < QK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0) {
      y[i].d = 0;
      std::memset(y[i].qs, 0, QK_K);
      // ggml leaves bsums untouched here; zero them so the block is fully defined.
      std::memset(y[i].bsums, 0, sizeof(y[i].bsums));
      continue;
    }
    // -127 rather than -128: ggml's choice so that the AVX IQ2_XXS kernel stays simple.
    const float iscale = -127.f / max;
    for (int j = 0; j < QK_K; ++j) y[i].qs[j] = int8_t(std::min(127, nearest_int(iscale * x[j])));
    for (int j = 0; j < QK_K / 16; ++j) {
      int sum = 0;
      for (int ii = 0; ii < 16; ++ii) sum += y[i].qs[j * 16 + ii];
      y[i].bsums[j] = int16_t(sum);
    }
    y[i].d = 1 / iscale;
  }
}

void dequantize_q2_K(const block_q2_K* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const float d = fp16_to_fp32(x[i].d);
    const float min = fp16_to_fp32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int half = 0; half < 2; ++half) {
          const uint8_t sc = x[i].scales[is++];
          const float dl = d * (sc & 0xF), ml = min * (sc >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * ((q[l + 16 * half] >> shift) & 3) - ml;
        }
      }
    }
  }
}

void dequantize_q3_K(const block_q3_K* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const float d_all = fp16_to_fp32(x[i].d);
    const uint8_t* q = x[i].qs;
    const uint8_t* hm = x[i].hmask;
    uint8_t m = 1;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m = uint8_t(m << 1)) {
        for (int half = 0; half < 2; ++half) {
          const float dl = d_all * get_scale_q3_K(is++, x[i].scales);
          for (int l = 16 * half; l < 16 * half + 16; ++l)
            *y++ = dl * (((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
        }
      }
    }
  }
}

void dequantize_q4_K(const block_q4_K* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const uint8_t* q = x[i].qs;
    const float d = fp16_to_fp32(x[i].d);
    const float min = fp16_to_fp32(x[i].dmin);
    for (int is = 0; is < 8; is += 2, q += 32) {
      uint8_t sc, m;
      get_scale_min_k4(is + 0, x[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = min * m;
      get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    }
  }
}

void dequantize_q5_K(const block_q5_K* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    const float d = fp16_to_fp32(x[i].d);
    const float min = fp16_to_fp32(x[i].dmin);
    uint8_t u1 = 1, u2 = 2;
    for (int is = 0; is < 8; is += 2, ql += 32) {
      uint8_t sc, m;
      get_scale_min_k4(is + 0, x[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = min * m;
      get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
      u1 = uint8_t(u1 << 2);
      u2 = uint8_t(u2 << 2);
    }
  }
}

void dequantize_q6_K(const block_q6_K* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int n = 0; n < QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
    }
  }
}

void dequantize_q8_K(const block_q8_K* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++)
    for (int j = 0; j < QK_K; ++j) *y++ = x[i].d * x[i].qs[j];
}

}  // namespace minfer::quant::ref
