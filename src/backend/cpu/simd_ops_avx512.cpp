// AVX-512 bodies of the non-matmul kernels (kernels_ops.h, and the softmax and swiglu of
// kernels_dot.h), chosen at run time. Like the other SIMD files: no standard-library templates
// under the target pragma (scratch memory comes from scratch.h), and only explicit FMA
// intrinsics fuse.
#include <cmath>
#include <cstdint>

#include "backend/cpu/kernels_dot.h"
#include "backend/cpu/kernels_ops.h"
#include "backend/cpu/scratch.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "backend/cpu/isa_target.h"

MINFER_ISA_BEGIN(MINFER_ISA_AVX512)
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "backend/cpu/avx2_transpose.h"
#include "backend/cpu/avx512_transpose.h"

namespace minfer::cpu {
namespace {

inline __mmask16 tail_mask(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u); }

// exp(x) as the AVX2 exp_neg (simd_tiles.h): x = n*ln2 + r, Cephes' expf polynomial for e^r,
// then scaled by 2^n with vscalefps (exact, and 0 / inf beyond the float range).
inline __m512 exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(89.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// ---- softmax and swiglu ------------------------------------------------------------------

// s = softmax(s * scale): max subtracted, exps summed in double (two 8-lane accumulators in a
// fixed order), then multiplied by the f32 reciprocal, as ggml_soft_max.
void softmax512(int64_t n, float* s, float scale) {
  const __m512 sc = _mm512_set1_ps(scale);
  __m512 mv = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + j), sc);
    _mm512_mask_storeu_ps(s + j, m, v);
    mv = _mm512_mask_max_ps(mv, m, mv, v);
  }
  const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(mv));
  __m512d sum0 = _mm512_setzero_pd(), sum1 = _mm512_setzero_pd();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    const __m512 e = _mm512_maskz_mov_ps(m, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + j), mx)));
    _mm512_mask_storeu_ps(s + j, m, e);
    sum0 = _mm512_add_pd(sum0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    sum1 = _mm512_add_pd(sum1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  const double sum = _mm512_reduce_add_pd(_mm512_add_pd(sum0, sum1));
  const __m512 inv = _mm512_set1_ps(float(1.0 / sum));
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    _mm512_mask_storeu_ps(s + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + j), inv));
  }
}

// silu(g) = g / (1 + exp(-g)) with a true division (an rcp14 + Newton step measured no faster:
// large calls are bound by memory, small ones by the exp).
inline __m512 silu512(__m512 g) {
  return _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), exp512(_mm512_sub_ps(_mm512_setzero_ps(), g))));
}

void swiglu512(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  if (up) {
    for (; i + 32 <= n; i += 32) {
      const __m512 a = silu512(_mm512_loadu_ps(gate + i));
      const __m512 b = silu512(_mm512_loadu_ps(gate + i + 16));
      _mm512_storeu_ps(out + i, _mm512_mul_ps(a, _mm512_loadu_ps(up + i)));
      _mm512_storeu_ps(out + i + 16, _mm512_mul_ps(b, _mm512_loadu_ps(up + i + 16)));
    }
    for (; i < n; i += 16) {
      const __mmask16 m = tail_mask(n - i);
      const __m512 a = silu512(_mm512_maskz_loadu_ps(m, gate + i));
      _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(a, _mm512_maskz_loadu_ps(m, up + i)));
    }
  } else {
    for (; i < n; i += 16) {
      const __mmask16 m = tail_mask(n - i);
      _mm512_mask_storeu_ps(out + i, m, silu512(_mm512_maskz_loadu_ps(m, gate + i)));
    }
  }
}

// ---- F16 conversion (kv_store) ------------------------------------------------------------

void to_f16_512(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 x = _mm512_maskz_loadu_ps(m, src + i);
    __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    h = _mm256_mask_mov_epi16(h, nan, _mm256_or_si256(_mm256_and_si256(h, _mm256_set1_epi16(short(0x8000))),
                                                      _mm256_set1_epi16(0x7E00)));
    _mm256_mask_storeu_epi16(dst + i, m, h);
  }
}

// ---- rms_norm ------------------------------------------------------------------------------

// Sums of squares of 8 rows, row r in double lane r, each in element order from 0.0 (the
// scalar kernel's `sum += double(x * x)`, the square rounded to float first).
void sumsq8(const float* x, int64_t d, double* sums) {
  __m512d acc = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= d; i += 8) {
    __m256 r[8];
    for (int k = 0; k < 8; ++k) {
      const __m256 v = _mm256_loadu_ps(x + k * d + i);
      r[k] = _mm256_mul_ps(v, v);
    }
    transpose8(r);
    for (int m = 0; m < 8; ++m) acc = _mm512_add_pd(acc, _mm512_cvtps_pd(r[m]));
  }
  _mm512_storeu_pd(sums, acc);
  for (int k = 0; k < 8; ++k)
    for (int64_t j = i; j < d; ++j) sums[k] += double(x[k * d + j] * x[k * d + j]);
}

// out = (x * scale) * w (or x * scale), the scalar kernel's two roundings.
void scale_row(const float* x, const float* w, float scale, int64_t d, float* o) {
  const __m512 s = _mm512_set1_ps(scale);
  for (int64_t i = 0; i < d; i += 16) {
    const __mmask16 m = tail_mask(d - i);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), s);
    if (w) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + i));
    _mm512_mask_storeu_ps(o + i, m, v);
  }
}


// ---- rope ----------------------------------------------------------------------------------

void rope512(const float* x, float* y, int64_t n_rows, int64_t head_dim, int64_t n_rot,
             RopeStyle style, const float* ct, const float* st) {
  const int64_t half = n_rot / 2;
  for (int64_t h = 0; h < n_rows; ++h) {
    const float* v = x + h * head_dim;
    float* o = y + h * head_dim;
    if (style == RopeStyle::NeoX) {
      for (int64_t i = 0; i < half; i += 16) {
        const __mmask16 m = tail_mask(half - i);
        const __m512 x0 = _mm512_maskz_loadu_ps(m, v + i), x1 = _mm512_maskz_loadu_ps(m, v + half + i);
        const __m512 c = _mm512_maskz_loadu_ps(m, ct + i), s = _mm512_maskz_loadu_ps(m, st + i);
        _mm512_mask_storeu_ps(o + i, m, _mm512_sub_ps(_mm512_mul_ps(x0, c), _mm512_mul_ps(x1, s)));
        _mm512_mask_storeu_ps(o + half + i, m, _mm512_add_ps(_mm512_mul_ps(x0, s), _mm512_mul_ps(x1, c)));
      }
    } else {
      // Pairs (2i, 2i+1): ct = (c, c), st = (-s, s) per pair, so v' = v * ct + swap(v) * st.
      for (int64_t i = 0; i < 2 * half; i += 16) {
        const __mmask16 m = tail_mask(2 * half - i);
        const __m512 xv = _mm512_maskz_loadu_ps(m, v + i);
        const __m512 xs = _mm512_permute_ps(xv, 0xB1);
        const __m512 c = _mm512_maskz_loadu_ps(m, ct + i), s = _mm512_maskz_loadu_ps(m, st + i);
        _mm512_mask_storeu_ps(o + i, m, _mm512_add_ps(_mm512_mul_ps(xv, c), _mm512_mul_ps(xs, s)));
      }
    }
    if (o != v)
      for (int64_t i = 2 * half; i < head_dim; i += 16) {
        const __mmask16 m = tail_mask(head_dim - i);
        _mm512_mask_storeu_ps(o + i, m, _mm512_maskz_loadu_ps(m, v + i));
      }
  }
}

// ---- attention (attn_tiles.h) -------------------------------------------------------------

struct AttnVec {
  using F = __m512;
  using Mask = __mmask16;
  static constexpr int W = 16;
  static constexpr bool kLaneSums = false;
  // Query rows per tile: 8 x 2 score accumulators and the broadcasts fit the 32 registers.
  static constexpr int kRows = 8;
  static constexpr int score_blocks(int) { return 2; }
  static constexpr int kValueRows = 8;
  // Few rows (a decode step's heads of one KV head) sum more columns a pass: up to all 128 of
  // a head in one pass over the V rows, which decode streams from memory. 5-8 rows take 48
  // columns a pass (24 accumulators), not 32: one core of AMD Zen 4, 512-token prompt, a layer
  // of qwen2.5-0.5b 5.95 -> 5.66 ms, qwen3-0.6b 12.85 -> 12.5.
  static constexpr int value_chunks(int g) { return g <= 2 ? 8 : g <= 4 ? 4 : 3; }
  static Mask tail(int64_t n) { return tail_mask(n); }
  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F load(const float* p) { return _mm512_load_ps(p); }
  static void store(float* p, F x) { _mm512_store_ps(p, x); }
  static void storeu(float* p, F x) { _mm512_storeu_ps(p, x); }
  static void store_part(float* p, F x, Mask m) { _mm512_mask_storeu_ps(p, m, x); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  // W elements from element i of an F16 or F32 row, as f32.
  template <bool F16>
  static F row(const uint8_t* r, int64_t i) {
    if constexpr (F16)
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(r) + i)));
    else
      return _mm512_loadu_ps(reinterpret_cast<const float*>(r) + i);
  }
  // The lanes of m (zero elsewhere).
  static F row_part(const uint8_t* r, bool f16, int64_t i, Mask m) {
    if (f16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(r) + i));
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(r) + i);
  }
  static F round_f16(F x) { return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }
  static void transpose(F* r) { transpose16(r); }
  static void softmax(int64_t n, float* s, float scale) { softmax512(n, s, scale); }
};

}  // namespace
}  // namespace minfer::cpu

#include "backend/cpu/attn_tiles.h"

namespace minfer::cpu {

OpsKernels ops_avx512() {
  OpsKernels k;
  k.rms = {8, &sumsq8, &scale_row};
  // add and mul: the AVX2 bodies. They run at memory speed either way, and 64-byte loads of
  // unaligned rows split cache lines (measured 15% slower on unaligned buffers).
  k.rope = &rope512;
  k.attn_block = &attn_block_simd;
  k.to_f16 = &to_f16_512;
  return k;
}
SoftmaxFn softmax_avx512() { return &softmax512; }
SwigluFn swiglu_avx512() { return &swiglu512; }

}  // namespace minfer::cpu

MINFER_ISA_END()
#else
namespace minfer::cpu {
OpsKernels ops_avx512() { return {}; }
SoftmaxFn softmax_avx512() { return nullptr; }
SwigluFn swiglu_avx512() { return nullptr; }
}  // namespace minfer::cpu
#endif
