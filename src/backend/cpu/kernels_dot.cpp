// The scalar dot products: the reference every SIMD path is tested against. Each follows the
// integer/float split of ggml's generic vec_dot_*: quants multiply and add as integers within
// a block (exact), the block's scales are applied once in float.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/act_quant.h"
#include "backend/cpu/kernels_dot.h"
#include "common/error.h"
#include "common/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_lattice.h"

namespace minfer::cpu {
namespace {

using namespace quant;

inline float h2f(uint16_t h) { return fp16_to_fp32(h); }

float dot_f32(int64_t n, const float* w, const float* x) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += double(w[i] * x[i]);
  return float(s);
}

float dot_f16(int64_t n, const uint16_t* w, const uint16_t* x) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += double(h2f(w[i]) * h2f(x[i]));
  return float(s);
}

float dot_bf16(int64_t n, const uint16_t* w, const uint16_t* x) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += double(bf16_to_fp32(w[i]) * bf16_to_fp32(x[i]));
  return float(s);
}

float dot_q4_0(int64_t n, const block_q4_0* w, const block_q8_0* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK4_0; ++b) {
    int sumi = 0;
    for (int j = 0; j < 16; ++j) {
      sumi += ((w[b].qs[j] & 0x0F) - 8) * x[b].qs[j];
      sumi += ((w[b].qs[j] >> 4) - 8) * x[b].qs[j + 16];
    }
    s += float(sumi) * (h2f(w[b].d) * h2f(x[b].d));
  }
  return s;
}

float dot_q4_1(int64_t n, const block_q4_1* w, const block_q8_1* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK4_1; ++b) {
    int sumi = 0;
    for (int j = 0; j < 16; ++j) {
      sumi += (w[b].qs[j] & 0x0F) * x[b].qs[j];
      sumi += (w[b].qs[j] >> 4) * x[b].qs[j + 16];
    }
    s += (h2f(w[b].d) * h2f(x[b].d)) * float(sumi) + h2f(w[b].m) * h2f(x[b].s);
  }
  return s;
}

inline uint32_t load_qh(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

float dot_q5_0(int64_t n, const block_q5_0* w, const block_q8_0* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK5_0; ++b) {
    const uint32_t qh = load_qh(w[b].qh);
    int sumi = 0;
    for (int j = 0; j < 16; ++j) {
      const int h0 = int((qh >> j) & 1) << 4;
      const int h1 = int((qh >> (j + 16)) & 1) << 4;
      sumi += (((w[b].qs[j] & 0x0F) | h0) - 16) * x[b].qs[j];
      sumi += (((w[b].qs[j] >> 4) | h1) - 16) * x[b].qs[j + 16];
    }
    s += float(sumi) * (h2f(w[b].d) * h2f(x[b].d));
  }
  return s;
}

float dot_q5_1(int64_t n, const block_q5_1* w, const block_q8_1* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK5_1; ++b) {
    const uint32_t qh = load_qh(w[b].qh);
    int sumi = 0;
    for (int j = 0; j < 16; ++j) {
      const int h0 = int((qh >> j) & 1) << 4;
      const int h1 = int((qh >> (j + 16)) & 1) << 4;
      sumi += ((w[b].qs[j] & 0x0F) | h0) * x[b].qs[j];
      sumi += ((w[b].qs[j] >> 4) | h1) * x[b].qs[j + 16];
    }
    s += (h2f(w[b].d) * h2f(x[b].d)) * float(sumi) + h2f(w[b].m) * h2f(x[b].s);
  }
  return s;
}

float dot_q8_0(int64_t n, const block_q8_0* w, const block_q8_0* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK8_0; ++b) {
    int sumi = 0;
    for (int j = 0; j < 32; ++j) sumi += w[b].qs[j] * x[b].qs[j];
    s += float(sumi) * (h2f(w[b].d) * h2f(x[b].d));
  }
  return s;
}

float dot_iq4_nl(int64_t n, const block_iq4_nl* w, const block_q8_0* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK4_NL; ++b) {
    int sumi = 0;
    for (int j = 0; j < 16; ++j) {
      sumi += kvalues_iq4nl[w[b].qs[j] & 0x0F] * x[b].qs[j];
      sumi += kvalues_iq4nl[w[b].qs[j] >> 4] * x[b].qs[j + 16];
    }
    s += (h2f(w[b].d) * h2f(x[b].d)) * float(sumi);
  }
  return s;
}

// Q1_0 (blocks of 128 = 4 activation blocks) and Q2_0 (64 = 2): each activation block's
// integer sum scaled by its d, summed in float, then times the weight's d (ggml's generic order).
template <int QK, class B, int (*Value)(const B&, int)>
float dot_grouped(int64_t n, const B* w, const block_q8_0* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK; ++b) {
    float sumi = 0.0f;
    for (int k = 0; k < QK / 32; ++k) {
      const block_q8_0& y = x[QK / 32 * b + k];
      int isum = 0;
      for (int j = 0; j < 32; ++j) isum += Value(w[b], 32 * k + j) * y.qs[j];
      sumi += h2f(y.d) * float(isum);
    }
    s += h2f(w[b].d) * sumi;
  }
  return s;
}

float dot_mxfp4(int64_t n, const block_mxfp4* w, const block_q8_0* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK_MXFP4; ++b) {
    const float d = h2f(x[b].d) * e8m0_to_fp32_half(w[b].e);
    int lo = 0, hi = 0;
    for (int j = 0; j < 16; ++j) {
      lo += x[b].qs[j] * kvalues_fp4[w[b].qs[j] & 0x0F];
      hi += x[b].qs[j + 16] * kvalues_fp4[w[b].qs[j] >> 4];
    }
    s += d * float(lo + hi);
  }
  return s;
}

// NVFP4 (blocks of 64 = 2 activation blocks, 4 sub-blocks of 16 with their own scales).
float dot_nvfp4(int64_t n, const block_nvfp4* w, const block_q8_0* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK_NVFP4; ++b)
    for (int sb = 0; sb < 4; ++sb) {
      const float d = ue4m3_to_fp32(w[b].d[sb]);
      const block_q8_0& y = x[2 * b + sb / 2];
      const int off = (sb % 2) * QK_NVFP4_SUB;
      int lo = 0, hi = 0;
      for (int j = 0; j < 8; ++j) {
        const uint8_t q = w[b].qs[8 * sb + j];
        lo += y.qs[off + j] * kvalues_fp4[q & 0x0F];
        hi += y.qs[off + j + 8] * kvalues_fp4[q >> 4];
      }
      s += h2f(y.d) * d * float(lo + hi);
    }
  return s;
}

// The ternary types: one integer sum per super-block, then (d_w * d_x) in float.
float dot_tq1_0(int64_t n, const block_tq1_0* w, const block_q8_K* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK_K; ++b) {
    int sum = 0;
    tq1_0_for_each(w[b], [&](int e, int t) { sum += t * x[b].qs[e]; });
    s += float(sum) * (h2f(w[b].d) * x[b].d);
  }
  return s;
}

float dot_tq2_0(int64_t n, const block_tq2_0* w, const block_q8_K* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK_K; ++b) {
    int sum = 0;
    for (int e = 0; e < QK_K; ++e) sum += x[b].qs[e] * tq2_0_value(w[b], e);
    s += float(sum) * (x[b].d * h2f(w[b].d));
  }
  return s;
}

float dot_q2_K(int64_t n, const block_q2_K* w, const block_q8_K* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK_K; ++b) {
    const uint8_t* sc = w[b].scales;
    int summs = 0;
    for (int j = 0; j < 16; ++j) summs += x[b].bsums[j] * (sc[j] >> 4);
    const float dall = x[b].d * h2f(w[b].d);
    const float dmin = x[b].d * h2f(w[b].dmin);
    int isum = 0;
    // 128 values per 32 bytes of qs: four 2-bit planes, each two sub-blocks of 16.
    for (int k = 0; k < QK_K / 128; ++k) {
      const uint8_t* q2 = w[b].qs + 32 * k;
      const int8_t* q8 = x[b].qs + 128 * k;
      for (int j = 0; j < 4; ++j) {
        const int shift = 2 * j;
        for (int half = 0; half < 2; ++half) {
          const int d = sc[8 * k + 2 * j + half] & 0xF;
          int isuml = 0;
          for (int l = 16 * half; l < 16 * half + 16; ++l) isuml += q8[32 * j + l] * ((q2[l] >> shift) & 3);
          isum += d * isuml;
        }
      }
    }
    s += dall * float(isum) - dmin * float(summs);
  }
  return s;
}

float dot_q3_K(int64_t n, const block_q3_K* w, const block_q8_K* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK_K; ++b) {
    int scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = get_scale_q3_K(j, w[b].scales);
    int isum = 0;
    for (int k = 0; k < QK_K / 128; ++k) {
      const uint8_t* q3 = w[b].qs + 32 * k;
      for (int j = 0; j < 4; ++j) {
        const int m = 1 << (4 * k + j);
        for (int half = 0; half < 2; ++half) {
          int isuml = 0;
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int q = ((q3[l] >> (2 * j)) & 3) - ((w[b].hmask[l] & m) ? 0 : 4);
            isuml += q * x[b].qs[128 * k + 32 * j + l];
          }
          isum += scales[8 * k + 2 * j + half] * isuml;
        }
      }
    }
    s += (h2f(w[b].d) * x[b].d) * float(isum);
  }
  return s;
}

// Shared by q4_K and q5_K: 8 sub-blocks of 32 with 6-bit scale and min.
template <bool kHigh, typename Block>
float dot_q45_K(int64_t n, const Block* w, const block_q8_K* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK_K; ++b) {
    int isum = 0, summs = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, mn;
      get_scale_min_k4(j, w[b].scales, &sc, &mn);
      summs += mn * (x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
      const uint8_t* q4 = w[b].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      int isuml = 0;
      for (int l = 0; l < 32; ++l) {
        int q = (q4[l] >> shift) & 0x0F;
        if constexpr (kHigh) q += ((w[b].qh[l] >> j) & 1) << 4;
        isuml += q * x[b].qs[32 * j + l];
      }
      isum += sc * isuml;
    }
    s += (h2f(w[b].d) * x[b].d) * float(isum) - (h2f(w[b].dmin) * x[b].d) * float(summs);
  }
  return s;
}

// IQ4_XS: 8 blocks of 32, each kvalues_iq4nl[q] with a signed 6-bit scale; integer sums per
// super-block (the scales applied as integers, as ggml's x86 kernels do), one float step.
float dot_iq4_xs(int64_t n, const block_iq4_xs* w, const block_q8_K* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK_K; ++b) {
    int isum = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const uint8_t* qs = w[b].qs + 16 * ib;
      const int8_t* q8 = x[b].qs + 32 * ib;
      int isuml = 0;
      for (int j = 0; j < 16; ++j)
        isuml += kvalues_iq4nl[qs[j] & 0x0F] * q8[j] + kvalues_iq4nl[qs[j] >> 4] * q8[j + 16];
      isum += iq4_xs_scale(w[b], ib) * isuml;
    }
    s += (h2f(w[b].d) * x[b].d) * float(isum);
  }
  return s;
}

// The lattice i-quants: integer sums per super-block of grid value x activation (signs applied
// as integers), block scales as integers, then one float step, as ggml's generic
// vec_dot_iq*_q8_K (IQ2's odd scales 2s + 1 and the final 1/8, IQ3_XXS's 1/4), through the
// types' group accessors (quant/iq_lattice.h).
inline int signed_group(uint64_t grid, uint8_t signs, const int8_t* q8) {
  int sum = 0;
  for (int j = 0; j < 8; ++j) sum += int(uint8_t(grid >> (8 * j))) * q8[j] * ((signs >> j) & 1 ? -1 : 1);
  return sum;
}
template <class L>
float dot_lattice(int64_t n, const typename L::Block* w, const block_q8_K* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK_K; ++b) {
    const int8_t* q8 = x[b].qs;
    int32_t bsum = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib)
      for (int h = 0; h < 2; ++h) {
        int32_t sumi = 0;
        for (int l = 2 * h; l < 2 * h + 2; ++l, q8 += 8)
          sumi += signed_group(L::grid(w[b], ib, l), L::signs(w[b], ib, l), q8);
        bsum += sumi * L::scale(w[b], ib, h);
      }
    s += (h2f(w[b].d) * x[b].d) * float(bsum);
  }
  return L::kFinal * s;
}

// IQ1: grid values in {-1, 0, 1} plus a shift of +-1/8 per group: sum(q8 x grid) and the
// shift's sign x the groups' activation sums, both times the block scales as integers, then
// d x d_x x (sumi + 1/8 x sumi1) per super-block (ggml's order).
inline int grid_dot8(uint64_t grid, const int8_t* q8) {
  int sum = 0;
  for (int j = 0; j < 8; ++j) sum += q8[j] * int8_t(uint8_t(grid >> (8 * j)));
  return sum;
}

float dot_iq1_s(int64_t n, const block_iq1_s* w, const block_q8_K* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK_K; ++b) {
    const int8_t* q8 = x[b].qs;
    int sumi = 0, sumi1 = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const int qh = w[b].qh[ib];
      const int ls = 2 * ((qh >> 12) & 7) + 1;
      const int delta = qh & 0x8000 ? -1 : 1;
      int lsum = 0;
      for (int l = 0; l < 4; ++l, q8 += 8)
        lsum += grid_dot8(kIq1sGrid.v[w[b].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)], q8);
      sumi += ls * lsum;
      sumi1 += ls * delta * (x[b].bsums[2 * ib] + x[b].bsums[2 * ib + 1]);
    }
    s += h2f(w[b].d) * x[b].d * (float(sumi) + kIq1Delta * float(sumi1));
  }
  return s;
}

float dot_iq1_m(int64_t n, const block_iq1_m* w, const block_q8_K* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK_K; ++b) {
    const int8_t* q8 = x[b].qs;
    uint16_t sc[4];
    std::memcpy(sc, w[b].scales, 8);
    int sumi1 = 0, sumi2 = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const uint8_t* qs = w[b].qs + 4 * ib;
      const uint8_t* qh = w[b].qh + 2 * ib;
      int sum1[2] = {0, 0}, sum2[2] = {0, 0};
      for (int l = 0; l < 4; ++l, q8 += 8) {
        const int h = qh[l / 2] >> (4 * (l % 2));  // 3 index bits, then the shift's sign bit
        int xs = 0;
        for (int j = 0; j < 8; ++j) xs += q8[j];
        sum1[l / 2] += grid_dot8(kIq1sGrid.v[qs[l] | ((h & 7) << 8)], q8);
        sum2[l / 2] += xs * (h & 8 ? -1 : 1);
      }
      const int ls1 = 2 * ((sc[ib / 2] >> (6 * (ib % 2))) & 7) + 1;
      const int ls2 = 2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1;
      sumi1 += sum1[0] * ls1 + sum1[1] * ls2;
      sumi2 += sum2[0] * ls1 + sum2[1] * ls2;
    }
    s += fp16_to_fp32(iq1_m_d(w[b])) * x[b].d * (float(sumi1) + kIq1Delta * float(sumi2));
  }
  return s;
}

float dot_q6_K(int64_t n, const block_q6_K* w, const block_q8_K* x) {
  float s = 0.0f;
  for (int64_t b = 0; b < n / QK_K; ++b) {
    int isum = 0;
    for (int k = 0; k < QK_K / 128; ++k) {
      const uint8_t* ql = w[b].ql + 64 * k;
      const uint8_t* qh = w[b].qh + 32 * k;
      const int8_t* q8 = x[b].qs + 128 * k;
      // Four runs of 32: low nibbles of ql[0..32), ql[32..64), then high nibbles; qh bits 2i.
      for (int r = 0; r < 4; ++r) {
        for (int half = 0; half < 2; ++half) {
          int isuml = 0;
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int lo = (ql[l + 32 * (r & 1)] >> (4 * (r >> 1))) & 0x0F;
            const int q = (lo | (((qh[l] >> (2 * r)) & 3) << 4)) - 32;
            isuml += q * q8[32 * r + l];
          }
          isum += w[b].scales[8 * k + 2 * r + half] * isuml;
        }
      }
    }
    s += (h2f(w[b].d) * x[b].d) * float(isum);
  }
  return s;
}

void tile_scalar(GgmlType t, int64_t n, const uint8_t* w, size_t ws, int64_t nr,
                 const uint8_t* x, size_t xs, int64_t nt, float* y, int64_t ldy) {
  for (int64_t tt = 0; tt < nt; ++tt)
    for (int64_t r = 0; r < nr; ++r)
      y[tt * ldy + r] = vec_dot_scalar(t, n, w + r * ws, x + tt * xs);
}

void vsum_scalar(int64_t n, int64_t G, const float* w, const uint8_t* v, size_t vs,
                 GgmlType vt, int64_t d, float* out) {
  for (int64_t g = 0; g < G; ++g) {
    float* o = out + g * d;
    std::fill(o, o + d, 0.0f);
    for (int64_t j = 0; j < n; ++j) {
      const float a = w[g * n + j];
      const uint8_t* row = v + size_t(j) * vs;
      if (vt == GgmlType::F16) {
        for (int64_t i = 0; i < d; ++i) o[i] += a * h2f(reinterpret_cast<const uint16_t*>(row)[i]);
      } else if (vt == GgmlType::Q8_0) {
        const auto* b = reinterpret_cast<const quant::block_q8_0*>(row);
        for (int64_t i = 0; i < d; ++i) o[i] += a * (h2f(b[i / 32].d) * float(b[i / 32].qs[i % 32]));
      } else
        for (int64_t i = 0; i < d; ++i) o[i] += a * reinterpret_cast<const float*>(row)[i];
    }
  }
}

void softmax_scalar(int64_t n, float* s, float scale) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    s[j] *= scale;
    mx = std::max(mx, s[j]);
  }
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - mx);
    sum += double(s[j]);
  }
  const float inv = float(1.0 / sum);
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
}

void swiglu_scalar(const float* gate, const float* up, float* out, int64_t n) {
  if (up)
    for (int64_t i = 0; i < n; ++i) out[i] = (gate[i] / (1.0f + std::exp(-gate[i]))) * up[i];
  else
    for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i]));
}

}  // namespace

SwigluFn swiglu_fn(Isa isa) {
  SwigluFn f = isa >= Isa::Avx512 ? swiglu_avx512() : nullptr;
  if (!f && isa >= Isa::Avx2) f = swiglu_avx2();
  return f ? f : &swiglu_scalar;
}

SoftmaxFn softmax_fn(Isa isa) {
  SoftmaxFn f = isa >= Isa::Avx512 ? softmax_avx512() : nullptr;
  if (!f && isa >= Isa::Avx2) f = softmax_avx2();
  return f ? f : &softmax_scalar;
}

VsumFn vsum_fn(Isa isa) {
  VsumFn f = isa >= Isa::Avx512 ? vsum_avx512() : nullptr;
  if (!f && isa >= Isa::Avx2) f = vsum_avx2();
  return f ? f : &vsum_scalar;
}

float vec_dot_scalar(GgmlType t, int64_t n, const void* w, const void* x) {
  switch (t) {
    case GgmlType::F32: return dot_f32(n, (const float*)w, (const float*)x);
    case GgmlType::F16: return dot_f16(n, (const uint16_t*)w, (const uint16_t*)x);
    case GgmlType::BF16: return dot_bf16(n, (const uint16_t*)w, (const uint16_t*)x);
    case GgmlType::Q4_0: return dot_q4_0(n, (const block_q4_0*)w, (const block_q8_0*)x);
    case GgmlType::Q4_1: return dot_q4_1(n, (const block_q4_1*)w, (const block_q8_1*)x);
    case GgmlType::Q5_0: return dot_q5_0(n, (const block_q5_0*)w, (const block_q8_0*)x);
    case GgmlType::Q5_1: return dot_q5_1(n, (const block_q5_1*)w, (const block_q8_1*)x);
    case GgmlType::Q8_0: return dot_q8_0(n, (const block_q8_0*)w, (const block_q8_0*)x);
    case GgmlType::IQ4_NL: return dot_iq4_nl(n, (const block_iq4_nl*)w, (const block_q8_0*)x);
    case GgmlType::Q1_0: return dot_grouped<QK1_0, block_q1_0, q1_0_value>(n, (const block_q1_0*)w, (const block_q8_0*)x);
    case GgmlType::Q2_0: return dot_grouped<QK2_0, block_q2_0, q2_0_value>(n, (const block_q2_0*)w, (const block_q8_0*)x);
    case GgmlType::MXFP4: return dot_mxfp4(n, (const block_mxfp4*)w, (const block_q8_0*)x);
    case GgmlType::NVFP4: return dot_nvfp4(n, (const block_nvfp4*)w, (const block_q8_0*)x);
    case GgmlType::TQ1_0: return dot_tq1_0(n, (const block_tq1_0*)w, (const block_q8_K*)x);
    case GgmlType::TQ2_0: return dot_tq2_0(n, (const block_tq2_0*)w, (const block_q8_K*)x);
    case GgmlType::Q2_K: return dot_q2_K(n, (const block_q2_K*)w, (const block_q8_K*)x);
    case GgmlType::Q3_K: return dot_q3_K(n, (const block_q3_K*)w, (const block_q8_K*)x);
    case GgmlType::Q4_K: return dot_q45_K<false>(n, (const block_q4_K*)w, (const block_q8_K*)x);
    case GgmlType::Q5_K: return dot_q45_K<true>(n, (const block_q5_K*)w, (const block_q8_K*)x);
    case GgmlType::Q6_K: return dot_q6_K(n, (const block_q6_K*)w, (const block_q8_K*)x);
    case GgmlType::IQ4_XS: return dot_iq4_xs(n, (const block_iq4_xs*)w, (const block_q8_K*)x);
    case GgmlType::IQ2_XXS: return dot_lattice<LatIq2xxs>(n, (const block_iq2_xxs*)w, (const block_q8_K*)x);
    case GgmlType::IQ2_XS: return dot_lattice<LatIq2xs>(n, (const block_iq2_xs*)w, (const block_q8_K*)x);
    case GgmlType::IQ2_S: return dot_lattice<LatIq2s>(n, (const block_iq2_s*)w, (const block_q8_K*)x);
    case GgmlType::IQ3_XXS: return dot_lattice<LatIq3xxs>(n, (const block_iq3_xxs*)w, (const block_q8_K*)x);
    case GgmlType::IQ3_S: return dot_lattice<LatIq3s>(n, (const block_iq3_s*)w, (const block_q8_K*)x);
    case GgmlType::IQ1_S: return dot_iq1_s(n, (const block_iq1_s*)w, (const block_q8_K*)x);
    case GgmlType::IQ1_M: return dot_iq1_m(n, (const block_iq1_m*)w, (const block_q8_K*)x);
    default: fail("cpu: no dot product for weight type {}", type_name(t));
  }
}

DotTileFn dot_tile_scalar(GgmlType wtype) {
  (void)vec_dot_type(wtype);  // rejects types without a kernel
  return &tile_scalar;
}

DotTileFn dot_tile(GgmlType wtype, Isa isa) {
  DotTileFn f = nullptr;
  if (isa >= Isa::Avx512) f = dot_tile_avx512(wtype);
  if (!f && isa >= Isa::Avx2) f = dot_tile_avx2(wtype);
  return f ? f : dot_tile_scalar(wtype);
}

}  // namespace minfer::cpu
