// The packed kernels of the _0 types (repack.h's x16 layout) for CPUs with AVX2 but no
// AVX-512: each 64-byte chunk (4 columns x 16 rows) is two ymm of 8 rows. Without vpdpbusd, a
// chunk times the token's 4 broadcast quants is maddubs + madd with ones, which gives the same
// int32 per row as vpdpbusd as long as maddubs' int16 pair sums cannot saturate: Q4_0 and Q5_0
// quants (at most 31 x 127 x 2) go in unsigned as stored; Q8_0's w + 128 would not fit, so its
// quants are turned back into signed bytes and multiplied in sign form (|w| times x with w's
// sign, at most 128 x 127 x 2), which sums w * x directly, without the offset correction. The
// integer sums are exact and the float steps are the scalar kernel's (packed_gemm.h): results
// are bit-identical to it.
#include "backend/cpu/packed_gemm.h"
#include "backend/cpu/repack.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#pragma GCC optimize("fp-contract=off")

namespace minfer::cpu {
namespace {

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// Decode prefetch distance: as the AVX-512 GEMV (packed_avx512.cpp).
constexpr int kPrefetch = 8192;

// Per type: the quant bytes of a group block, and the 8 chunks of half h (rows 8h..8h+7) as
// bytes ready for maddubs' unsigned operand (Q8_0: signed; see dot()).
struct AQ8 {
  static constexpr GgmlType kType = GgmlType::Q8_0;
  static constexpr size_t kBytes = 512;
  static constexpr bool kSigned = true;
  static void load(const uint8_t* q, int h, __m256i* w) {
    const __m256i k = _mm256_set1_epi8(char(0x80));
    for (int c = 0; c < 8; ++c) w[c] = _mm256_xor_si256(_mm256_load_si256((const __m256i*)(q + 64 * c + 32 * h)), k);
  }
};
struct AQ4 {
  static constexpr GgmlType kType = GgmlType::Q4_0;
  static constexpr size_t kBytes = 256;
  static constexpr bool kSigned = false;
  static void load(const uint8_t* q, int h, __m256i* w) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {
      const __m256i v = _mm256_load_si256((const __m256i*)(q + 64 * c + 32 * h));
      w[c] = _mm256_and_si256(v, m4);
      w[c + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
  }
};
struct AQ5 {
  static constexpr GgmlType kType = GgmlType::Q5_0;
  static constexpr size_t kBytes = 320;
  static constexpr bool kSigned = false;
  static void load(const uint8_t* q, int h, __m256i* w) {
    AQ4::load(q, h, w);
    // Byte lane b of the half takes bit b of the chunk's 32-bit mask half: broadcast, spread
    // byte b / 8 to lane b, test bit b % 8.
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
                                            2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bits = _mm256_set1_epi64x(int64_t(0x8040201008040201ULL));
    const __m256i h5 = _mm256_set1_epi8(0x10);
    for (int c = 0; c < 8; ++c) {
      const __m256i m = _mm256_shuffle_epi8(_mm256_set1_epi32(load_i32(q + 256 + 8 * c + 4 * h)), spread);
      const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(m, bits), bits);
      w[c] = _mm256_or_si256(w[c], _mm256_and_si256(set, h5));
    }
  }
};

// vpdpbusd's sum for 8 rows: s + per row the dot of 4 columns with the 4 quants in x4.
template <class P>
inline __m256i dot(__m256i s, __m256i w, __m256i x4) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (P::kSigned)
    return _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x4, w)), ones));
  else
    return _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x4), ones));
}

// T tokens (from t0) x half h of one group.
template <class P, int T>
inline void avx2_tile(const uint8_t* grp, int64_t nb, int h, const PackedAct& x, int64_t t0, float* y,
                      int64_t ldy) {
  constexpr size_t qb = P::kBytes;
  const uint8_t* sc = grp + size_t(nb) * qb;
  __m256 acc[T];
  const uint8_t* xr[T];
  for (int t = 0; t < T; ++t) {
    acc[t] = _mm256_setzero_ps();
    xr[t] = x.q + size_t(t0 + t) * x.stride + 2;
  }
  const float* xd = x.d + t0 * nb;
  const int32_t* xc = x.c + t0 * nb;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q = grp + size_t(b) * qb;
    if (T == 1 && h == 0)  // the second half's pass finds the group in L1/L2
      for (size_t l = 0; l < qb; l += 64) _mm_prefetch((const char*)(q + kPrefetch + l), _MM_HINT_T2);
    __m256i w[8];
    P::load(q, h, w);
    const __m256 dw = _mm256_cvtph_ps(_mm_load_si128((const __m128i*)(sc + 32 * b + 16 * h)));
    for (int t = 0; t < T; ++t) {
      const uint8_t* xb = xr[t] + 34 * b;
      __m256i s = P::kSigned ? _mm256_setzero_si256() : _mm256_set1_epi32(xc[t * nb + b]);
      for (int k = 0; k < 8; ++k) s = dot<P>(s, w[k], _mm256_set1_epi32(load_i32(xb + 4 * k)));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(xd[t * nb + b])), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (t0 + t) * ldy + 8 * h, acc[t]);
}

template <class P>
void gemm_avx2(GgmlType, const uint8_t* wp, int64_t n_groups, int64_t nb, const PackedAct& x,
               int64_t nt, float* y, int64_t ldy) {
  const size_t gb = packed_group_bytes(P::kType, nb * 32);
  for (int64_t g = 0; g < n_groups; ++g) {
    const uint8_t* grp = wp + size_t(g) * gb;
    float* yg = y + 16 * g;
    for (int h = 0; h < 2; ++h) {
      int64_t t0 = 0;
      for (; t0 + 4 <= nt; t0 += 4) avx2_tile<P, 4>(grp, nb, h, x, t0, yg, ldy);
      for (; t0 < nt; ++t0) avx2_tile<P, 1>(grp, nb, h, x, t0, yg, ldy);
    }
  }
}

}  // namespace

PackedGemmFn packed_gemm_avx2(GgmlType t) {
  if (t == GgmlType::Q8_0) return &gemm_avx2<AQ8>;
  if (t == GgmlType::Q4_0) return &gemm_avx2<AQ4>;
  if (t == GgmlType::Q5_0) return &gemm_avx2<AQ5>;
  return nullptr;
}

}  // namespace minfer::cpu

#pragma GCC pop_options

#else  // not x86-64

namespace minfer::cpu {
PackedGemmFn packed_gemm_avx2(GgmlType) { return nullptr; }
}  // namespace minfer::cpu

#endif
