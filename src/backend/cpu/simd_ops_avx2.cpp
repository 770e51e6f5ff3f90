// AVX2 bodies of the non-matmul kernels (kernels_ops.h), chosen at run time; bit-identical to
// the scalar ones (no FMA contraction, sums of squares in double lanes in element order).
#include <cmath>
#include <cstdint>

#include "backend/cpu/kernels_ops.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#pragma GCC optimize("fp-contract=off")

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

}  // namespace

OpsKernels ops_avx2() {
  OpsKernels k;
  k.rms = {4, &sumsq4, &scale_row256};
  k.add = &add256;
  k.mul = &mul256;
  k.rope = &rope256;
  k.to_f16 = &to_f16_256;
  return k;
}

}  // namespace minfer::cpu

#pragma GCC pop_options
#else
namespace minfer::cpu {
OpsKernels ops_avx2() { return {}; }
}  // namespace minfer::cpu
#endif
