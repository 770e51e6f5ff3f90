// AVX2 bodies of the non-matmul kernels (kernels_ops.h), chosen at run time; bit-identical to
// the scalar ones (no FMA contraction, sums of squares in double lanes in element order) except
// the attention (attn_tiles.h).
#include <cmath>
#include <cstdint>

#include "backend/cpu/kernels_dot.h"
#include "backend/cpu/kernels_ops.h"
#include "backend/cpu/scratch.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "backend/cpu/isa_target.h"

MINFER_ISA_BEGIN(MINFER_ISA_AVX2)
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "backend/cpu/avx2_transpose.h"

namespace minfer::cpu {
namespace {

void add256(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

void mul256(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < n; ++i) out[i] = a[i] * b[i];
}

void to_f16_256(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(src + i);
    __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
    h = _mm_blendv_epi8(h, _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16(short(0x8000))), _mm_set1_epi16(0x7E00)), nan16);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) {
    const __m128i h = _mm_cvtps_ph(_mm_set_ss(src[i]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const uint16_t v = uint16_t(_mm_extract_epi16(h, 0));
    dst[i] = src[i] != src[i] ? uint16_t((v & 0x8000) | 0x7E00) : v;
  }
}

// Sums of squares of 4 rows, row r in double lane r, each in element order from 0.0.
void sumsq4(const float* x, int64_t d, double* sums) {
  __m256d acc = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 4 <= d; i += 4) {
    __m128 r0 = _mm_loadu_ps(x + i), r1 = _mm_loadu_ps(x + d + i), r2 = _mm_loadu_ps(x + 2 * d + i),
           r3 = _mm_loadu_ps(x + 3 * d + i);
    r0 = _mm_mul_ps(r0, r0);
    r1 = _mm_mul_ps(r1, r1);
    r2 = _mm_mul_ps(r2, r2);
    r3 = _mm_mul_ps(r3, r3);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(r0));
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(r1));
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(r2));
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(r3));
  }
  _mm256_storeu_pd(sums, acc);
  for (int k = 0; k < 4; ++k)
    for (int64_t j = i; j < d; ++j) sums[k] += double(x[k * d + j] * x[k * d + j]);
}

// out = (x * scale) * w (or x * scale), the scalar kernel's two roundings.
void scale_row256(const float* x, const float* w, float scale, int64_t d, float* o) {
  const __m256 s = _mm256_set1_ps(scale);
  int64_t i = 0;
  if (w) {
    for (; i + 8 <= d; i += 8)
      _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), s), _mm256_loadu_ps(w + i)));
    for (; i < d; ++i) o[i] = (x[i] * scale) * w[i];
  } else {
    for (; i + 8 <= d; i += 8) _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), s));
    for (; i < d; ++i) o[i] = x[i] * scale;
  }
}

void rope256(const float* x, float* y, int64_t n_rows, int64_t head_dim, int64_t n_rot,
             RopeStyle style, const float* ct, const float* st) {
  const int64_t half = n_rot / 2;
  for (int64_t h = 0; h < n_rows; ++h) {
    const float* v = x + h * head_dim;
    float* o = y + h * head_dim;
    if (style == RopeStyle::NeoX) {
      int64_t i = 0;
      for (; i + 8 <= half; i += 8) {
        const __m256 x0 = _mm256_loadu_ps(v + i), x1 = _mm256_loadu_ps(v + half + i);
        const __m256 c = _mm256_loadu_ps(ct + i), s = _mm256_loadu_ps(st + i);
        _mm256_storeu_ps(o + i, _mm256_sub_ps(_mm256_mul_ps(x0, c), _mm256_mul_ps(x1, s)));
        _mm256_storeu_ps(o + half + i, _mm256_add_ps(_mm256_mul_ps(x0, s), _mm256_mul_ps(x1, c)));
      }
      for (; i < half; ++i) {
        const float x0 = v[i], x1 = v[i + half];
        o[i] = x0 * ct[i] - x1 * st[i];
        o[i + half] = x0 * st[i] + x1 * ct[i];
      }
    } else {
      // Pairs (2i, 2i+1): ct = (c, c), st = (-s, s) per pair, so v' = v * ct + swap(v) * st.
      int64_t i = 0;
      for (; i + 8 <= 2 * half; i += 8) {
        const __m256 xv = _mm256_loadu_ps(v + i);
        const __m256 xs = _mm256_permute_ps(xv, 0xB1);
        _mm256_storeu_ps(o + i, _mm256_add_ps(_mm256_mul_ps(xv, _mm256_loadu_ps(ct + i)),
                                              _mm256_mul_ps(xs, _mm256_loadu_ps(st + i))));
      }
      for (; i < 2 * half; i += 2) {
        const float x0 = v[i], x1 = v[i + 1];
        o[i] = x0 * ct[i] + x1 * st[i];
        o[i + 1] = x1 * ct[i + 1] + x0 * st[i + 1];
      }
    }
    if (o != v)
      for (int64_t i = 2 * half; i < head_dim; ++i) o[i] = v[i];
  }
}


// ---- attention (attn_tiles.h) -------------------------------------------------------------

// A partial vector is its first n lanes (0 < n <= 8).
inline __m256i lanes_below(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

struct AttnVec {
  using F = __m256;
  using Mask = int;
  static constexpr int W = 8;
  static constexpr bool kLaneSums = true;
  static constexpr int kRows = 8;  // 4 measured slower in decode (qwen2.5: two passes over K and V)
  // The V sums take up to 4 rows a pass: G x VC value accumulators, VC value vectors and a
  // broadcast within 16 registers.
  static constexpr int kValueRows = 4;
  static constexpr int score_blocks(int g) { return g <= 6 ? 2 : 1; }
  static constexpr int value_chunks(int g) { return g <= 2 ? 4 : 3; }
  static Mask tail(int64_t n) { return n >= 8 ? 8 : int(n); }
  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F load(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, F x) { _mm256_store_ps(p, x); }
  static void storeu(float* p, F x) { _mm256_storeu_ps(p, x); }
  static void store_part(float* p, F x, Mask m) { _mm256_maskstore_ps(p, lanes_below(m), x); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  // W elements from element i of an F16 or F32 row, as f32.
  template <bool F16>
  static F row(const uint8_t* r, int64_t i) {
    if constexpr (F16)
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(r) + i)));
    else
      return _mm256_loadu_ps(reinterpret_cast<const float*>(r) + i);
  }
  // The first m elements (zero beyond); F16 has no masked load: staged (head sizes off 8 only).
  static F row_part(const uint8_t* r, bool f16, int64_t i, Mask m) {
    if (!f16) return _mm256_maskload_ps(reinterpret_cast<const float*>(r) + i, lanes_below(m));
    uint16_t h[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    __builtin_memcpy(h, reinterpret_cast<const uint16_t*>(r) + i, size_t(m) * 2);
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
  }
  static F round_f16(F x) { return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }
  // out[l] = the lanes of a[l] added: pairs, then pairs of pairs, then the two 128-bit halves.
  static void sum4(const F* a, float* out) {
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  }
  static void transpose(F* r) { transpose8(r); }
  static void softmax(int64_t n, float* s, float scale) { softmax_avx2()(n, s, scale); }
};

}  // namespace
}  // namespace minfer::cpu

#include "backend/cpu/attn_tiles.h"

namespace minfer::cpu {

OpsKernels ops_avx2() {
  OpsKernels k;
  k.rms = {4, &sumsq4, &scale_row256};
  k.add = &add256;
  k.mul = &mul256;
  k.rope = &rope256;
  k.attn_block = &attn_block_simd;
  k.to_f16 = &to_f16_256;
  return k;
}

}  // namespace minfer::cpu

MINFER_ISA_END()
#else
namespace minfer::cpu {
OpsKernels ops_avx2() { return {}; }
}  // namespace minfer::cpu
#endif
