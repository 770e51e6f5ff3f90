// Q8_0 activation quantization on AVX-512, 16 blocks at a time. A block's scale needs the
// maximum of its 32 |x|, and the packed _0 kernels' offset correction the sum of its quants:
// per block on its own, each is a horizontal reduction of ~8 shuffle and combine uops. Here the
// 16 blocks' partial vectors are reduced together by one transposing shuffle tree (30 shuffles
// and 15 combines for all 16, ~3 uops a block), and d, 127 / amax and d's F16 rounding are one
// vector instruction each for the 16 blocks. The quants go straight into the packed tiles, with
// no Q8_0 row in between unless the caller wants it.
//
// Bit-identical to the AVX2/scalar rows re-laid by packed_act_quantize's fallback: the same
// divisions, x * id rounded half to even, saturated to int8 as the AVX2 packs do; a maximum does
// not depend on the order in which it is taken.
// Q8_K (the K-quants' activations) likewise: one super-block a step, its bsums and the packed
// kernels' Q8KSums by the same reduction, instead of a horizontal sum per 16 quants (AVX2) and a
// scalar pass over the row afterwards (q8k_sums).
#include <algorithm>
#include <cstdint>

#include "backend/cpu/act_quant.h"
#include "backend/cpu/packed_gemm.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "backend/cpu/isa_target.h"

MINFER_ISA_BEGIN(MINFER_ISA_AVX512)
#if !defined(__clang__)
// GCC 12's AVX-512 headers trip these on their own _mm512_undefined_* placeholders.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace minfer::cpu {
namespace {

// Lane b of the result combines the 16 lanes of v[b] (op: max or add), for b < 16. Each level
// halves the lanes a block has left and doubles the blocks a vector holds; after the last one
// lane 4k + p holds block 4p + k, which the final permute puts back in order.
template <class Op>
inline __m512 reduce16(const __m512* v, Op op) {
  __m512 c[8], e[4], f[2];
  for (int i = 0; i < 8; ++i)
    c[i] = op(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
              _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  for (int j = 0; j < 4; ++j)
    e[j] = op(_mm512_shuffle_f32x4(c[2 * j], c[2 * j + 1], 0x88),
              _mm512_shuffle_f32x4(c[2 * j], c[2 * j + 1], 0xDD));
  for (int m = 0; m < 2; ++m)
    f[m] = op(_mm512_shuffle_ps(e[2 * m], e[2 * m + 1], 0x88),
              _mm512_shuffle_ps(e[2 * m], e[2 * m + 1], 0xDD));
  const __m512 g = op(_mm512_shuffle_ps(f[0], f[1], 0x88), _mm512_shuffle_ps(f[0], f[1], 0xDD));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, g);
}

inline __m512 max_ps(__m512 a, __m512 b) { return _mm512_max_ps(a, b); }
inline __m512 add_epi32(__m512 a, __m512 b) {
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}

// n (1..16) blocks from x. Full: n == 16, no bounds tests in the loops.
template <bool Full>
inline void q8_0_blocks(const float* x, int n, quant::block_q8_0* row, int offset, int64_t tile,
                        uint8_t* tq, float* d, int32_t* c) {
  __m512 v[16];
#pragma GCC unroll 16
  for (int b = 0; b < 16; ++b)
    v[b] = Full || b < n ? _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + 32 * b)),
                                         _mm512_abs_ps(_mm512_loadu_ps(x + 32 * b + 16)))
                         : _mm512_setzero_ps();
  const __m512 amax = reduce16(v, max_ps);
  const __m512 k127 = _mm512_set1_ps(127.f);
  const __m256i dh = _mm512_cvtps_ph(_mm512_div_ps(amax, k127), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  alignas(64) float id[16];
  _mm512_store_ps(id, _mm512_maskz_div_ps(_mm512_cmpneq_ps_mask(amax, _mm512_setzero_ps()), k127, amax));
  alignas(32) uint16_t dhs[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(dhs), dh);
#pragma GCC unroll 16
  for (int b = 0; b < 16; ++b) {
    if (!Full && b >= n) {
      v[b] = _mm512_setzero_ps();
      continue;
    }
    const __m512 s = _mm512_set1_ps(id[b]);
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m512i q0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 32 * b), s), kRound);
    const __m512i q1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 32 * b + 16), s), kRound);
    const __m128i p0 = _mm512_cvtsepi32_epi8(q0), p1 = _mm512_cvtsepi32_epi8(q1);
    if (row) {
      row[b].d = dhs[b];
      _mm_storeu_si128(reinterpret_cast<__m128i*>(row[b].qs), p0);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(row[b].qs + 16), p1);
    }
    if (tq) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(tq + 32 * tile * b), p0);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(tq + 32 * tile * b + 16), p1);
      // The sum of the stored (saturated) quants, as the fallback's re-lay takes it.
      v[b] = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_cvtepi8_epi32(p0), _mm512_cvtepi8_epi32(p1)));
    }
  }
  if (!tq) return;
  alignas(64) float df[16];
  alignas(64) int32_t cs[16];
  _mm512_store_ps(df, _mm512_cvtph_ps(dh));
  _mm512_store_si512(cs, _mm512_mullo_epi32(_mm512_castps_si512(reduce16(v, add_epi32)),
                                            _mm512_set1_epi32(-offset)));
  for (int b = 0; b < n; ++b) {
    d[tile * b] = df[b];
    c[tile * b] = cs[b];
  }
}

void q8_0_avx512(const float* x, int64_t nb, quant::block_q8_0* row, int offset, int64_t tile,
                 uint8_t* tq, float* d, int32_t* c) {
  for (int64_t b = 0; b < nb; b += 16) {
    const int n = int(std::min<int64_t>(16, nb - b));
    quant::block_q8_0* r = row ? row + b : nullptr;
    uint8_t* q = tq ? tq + 32 * tile * b : nullptr;
    float* db = tq ? d + tile * b : nullptr;
    int32_t* cb = tq ? c + tile * b : nullptr;
    if (n == 16)
      q8_0_blocks<true>(x + 32 * b, 16, r, offset, tile, q, db, cb);
    else
      q8_0_blocks<false>(x + 32 * b, n, r, offset, tile, q, db, cb);
  }
}

// Q8_K, one super-block of 256 a step: its 16 vectors stay in registers from the maximum to the
// quants, and the 16 bsums (one vector's sum each) are one reduce16. The scalar loop's strict >
// keeps the first value of largest magnitude: the first vector holding |x| == amax, its lowest
// lane. Quants as the AVX2 path's: x * iscale rounded half to even, capped at 127.
// ks (when not null) gets the packed K-quant kernels' Q8KSums from the bsums while in registers.
void q8_K_avx512(const float* x, int64_t nsb, quant::block_q8_K* y, Q8KSums* ks) {
  for (int64_t b = 0; b < nsb; ++b, x += 256) {
    __m512 v[16];
    __m512 m = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) {
      v[k] = _mm512_loadu_ps(x + 16 * k);
      m = _mm512_max_ps(m, _mm512_abs_ps(v[k]));
    }
    const float amax = _mm512_reduce_max_ps(m);
    if (amax == 0.0f) {
      y[b].d = 0.0f;
      __builtin_memset(y[b].qs, 0, sizeof(y[b].qs));
      __builtin_memset(y[b].bsums, 0, sizeof(y[b].bsums));
      if (ks) __builtin_memset(&ks[b], 0, sizeof(Q8KSums));
      continue;
    }
    const __m512 am = _mm512_set1_ps(amax);
    float max = 0.0f;
    for (int k = 0; k < 16; ++k)
      if (const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_abs_ps(v[k]), am, _CMP_EQ_OQ)) {
        max = x[16 * k + __builtin_ctz(unsigned(hit))];
        break;
      }
    const float iscale = -127.f / max;
    const __m512 is = _mm512_set1_ps(iscale);
    const __m512i cap = _mm512_set1_epi32(127);
    __m512 q[16];
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) {
      constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
      const __m512i qi = _mm512_min_epi32(_mm512_cvt_roundps_epi32(_mm512_mul_ps(v[k], is), kRound), cap);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16 * k), _mm512_cvtsepi32_epi8(qi));
      q[k] = _mm512_castsi512_ps(qi);
    }
    // (|q| <= 127: the int32 sums are the stored bytes' sums, and fit int16.)
    const __m512i bsum = _mm512_castps_si512(reduce16(q, add_epi32));
    const __m256i bsum16 = _mm512_cvtepi32_epi16(bsum);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].bsums), bsum16);
    y[b].d = 1.0f / iscale;
    if (!ks) continue;
    // q8k_sums' fields, lane for lane.
    Q8KSums& s = ks[b];
    s.d = y[b].d;
    _mm512_storeu_si512(s.bsum, bsum);
    _mm512_storeu_si512(s.q6c, _mm512_mullo_epi32(bsum, _mm512_set1_epi32(-32)));
    _mm512_storeu_si512(s.off128_16, _mm512_mullo_epi32(bsum, _mm512_set1_epi32(-128)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(s.bsum16), bsum16);
    const __m256i pair = _mm256_madd_epi16(bsum16, _mm256_set1_epi16(1));  // bsum 2j + bsum 2j+1
    _mm256_storeu_ps(s.pairf, _mm256_cvtepi32_ps(pair));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(s.off128_32), _mm256_mullo_epi32(pair, _mm256_set1_epi32(-128)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(s.pair16), _mm256_cvtepi32_epi16(pair));
  }
}

}  // namespace

Q8TilesFn quantize_q8_0_avx512() { return &q8_0_avx512; }
Q8KSumsFn quantize_q8_K_avx512() { return &q8_K_avx512; }

}  // namespace minfer::cpu

MINFER_ISA_END()

#else  // not x86-64

namespace minfer::cpu {
Q8TilesFn quantize_q8_0_avx512() { return nullptr; }
Q8KSumsFn quantize_q8_K_avx512() { return nullptr; }
}  // namespace minfer::cpu

#endif
