// AVX-512 bodies of the non-matmul kernels (kernels_ops.h, and the softmax and swiglu of
// kernels_dot.h), chosen at run time. Like the other SIMD files: no standard-library templates
// under the target pragma (scratch memory comes from a function compiled before it), and only
// explicit FMA intrinsics fuse.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/kernels_dot.h"
#include "backend/cpu/kernels_ops.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace minfer::cpu {
namespace {
// Per-thread scratch, 64-byte aligned and kept across calls: a decode step allocates nothing.
float* ops_scratch(int slot, size_t n_floats) {
  thread_local std::vector<float> bufs[3];
  std::vector<float>& b = bufs[slot];
  if (b.size() < n_floats + 16) b.resize(n_floats + 16);
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(b.data()) + 63) & ~uintptr_t(63));
}
}  // namespace
}  // namespace minfer::cpu

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")
#pragma GCC optimize("fp-contract=off")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

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

// 8 x 8 transpose: r[m] = element m of rows r[0..7].
inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int k = 0; k < 2; ++k) {
    u[4 * k + 0] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
    u[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
    u[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
    u[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
  }
  for (int m = 0; m < 4; ++m) {
    r[m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x20);
    r[4 + m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x31);
  }
}

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

// ---- attention -----------------------------------------------------------------------------

inline __m512 load_row(const uint8_t* row, bool f16, int64_t i, __mmask16 m) {
  if (f16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + i));
  return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
}

// r[c] lane l = K[16 b + l][i0 + c] (f32) for keys < n (zero beyond), dims < hd.
inline void key_chunk(const uint8_t* kbase, size_t kstride, bool f16, int64_t n, int64_t hd,
                      int64_t b, int64_t i0, __m512* r) {
  const __mmask16 m = tail_mask(hd - i0);
  for (int l = 0; l < 16; ++l) {
    const int64_t j = 16 * b + l;
    r[l] = j < n ? load_row(kbase + size_t(j) * kstride, f16, i0, m) : _mm512_setzero_ps();
  }
  transpose16(r);
}

// kt[b][i][l] = K[16 b + l][i] (f32) for keys < n (zero beyond), dims < hd.
void transpose_keys(const uint8_t* kbase, size_t kstride, bool f16, int64_t n, int64_t hd, float* kt) {
  const int64_t nb = (n + 15) / 16;
  for (int64_t b = 0; b < nb; ++b) {
    float* out = kt + b * hd * 16;
    for (int64_t i0 = 0; i0 < hd; i0 += 16) {
      __m512 r[16];
      key_chunk(kbase, kstride, f16, n, hd, b, i0, r);
      // A whole chunk stores straight from the registers: with a run-time count GCC spilled
      // the 16 vectors and copied them with rep movsq (30 % of this function's time).
      if (hd - i0 >= 16) {
#pragma GCC unroll 16
        for (int c = 0; c < 16; ++c) _mm512_store_ps(out + (i0 + c) * 16, r[c]);
      } else {
        for (int64_t c = 0; c < hd - i0; ++c) _mm512_store_ps(out + (i0 + c) * 16, r[c]);
      }
    }
  }
}

// Scores of G query rows (q + g * hd) against B key blocks of kt (16 keys each, transposed):
// s[g * ld + 16 * b + l], each an FMA chain over the dimensions in order. B = 2 shares every
// broadcast query element between two blocks (the loop is then FMA-bound, not load-bound).
template <int G, int B>
inline void score_block(const float* q, int64_t hd, const float* kt, float* s, int64_t ld) {
  __m512 acc[G][B];
  for (int g = 0; g < G; ++g)
    for (int b = 0; b < B; ++b) acc[g][b] = _mm512_setzero_ps();
  for (int64_t i = 0; i < hd; ++i) {
    __m512 kv[B];
    for (int b = 0; b < B; ++b) kv[b] = _mm512_load_ps(kt + (b * hd + i) * 16);
    for (int g = 0; g < G; ++g) {
      const __m512 qv = _mm512_set1_ps(q[g * hd + i]);
      for (int b = 0; b < B; ++b) acc[g][b] = _mm512_fmadd_ps(qv, kv[b], acc[g][b]);
    }
  }
  for (int g = 0; g < G; ++g)
    for (int b = 0; b < B; ++b) _mm512_storeu_ps(s + g * ld + 16 * b, acc[g][b]);
}

// outs[g][c + 16 * k + l] = sum over j < n of w[g * ld + j] * V[j][c + 16 * k + l] for k < C
// column chunks (the last one masked by m), in key order (one FMA chain per lane).
// F16 and kMasked (the last chunk is partial) are template parameters: a run-time test or a
// masked load in the loop makes GCC keep the accumulators in memory.
template <int G, int C, bool F16, bool kMasked>
inline void vsum_block512(const float* w, int64_t ld, int64_t n, const uint8_t* vbase,
                          size_t vstride, int64_t c, __mmask16 m, float* const* outs) {
  __m512 acc[G][C];
  for (int g = 0; g < G; ++g)
    for (int k = 0; k < C; ++k) acc[g][k] = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; ++j) {
    __m512 vv[C];
    for (int k = 0; k < C; ++k)
      if (kMasked && k == C - 1)
        vv[k] = load_row(vbase + size_t(j) * vstride, F16, c + 16 * k, m);
      else
        vv[k] = F16 ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                          reinterpret_cast<const uint16_t*>(vbase + size_t(j) * vstride) + c + 16 * k)))
                    : _mm512_loadu_ps(reinterpret_cast<const float*>(vbase + size_t(j) * vstride) + c + 16 * k);
    for (int g = 0; g < G; ++g) {
      const __m512 wv = _mm512_set1_ps(w[g * ld + j]);
      for (int k = 0; k < C; ++k) acc[g][k] = _mm512_fmadd_ps(wv, vv[k], acc[g][k]);
    }
  }
  for (int g = 0; g < G; ++g)
    for (int k = 0; k < C; ++k)
      _mm512_mask_storeu_ps(outs[g] + c + 16 * k, k == C - 1 ? m : __mmask16(0xFFFF), acc[g][k]);
}

// Prefetches bytes [from, to) of a K or V head's rows, clipped at end, one line at a time, into
// L1 or L2.
inline void prefetch_rows(const uint8_t* base, size_t from, size_t to, size_t end, bool l1) {
  for (size_t o = from; o < std::min(to, end); o += 64)
    if (l1)
      _mm_prefetch((const char*)(base + o), _MM_HINT_T0);
    else
      _mm_prefetch((const char*)(base + o), _MM_HINT_T1);
}

// score_block's scores straight from the K rows: each 16 x 16 chunk transposed in registers and
// used at once, in the same FMA order. For a work item of one tile (a decode step), where a
// transposed copy would be written and read back once: at long contexts that copy (1 MiB a KV
// head at 2K tokens) went through L3.
// A decode step finds its K and V rows in memory (the weights streamed since evicted them), so
// each key block fetches the K rows kAhead blocks on into L1 and its own V rows into L2 for the
// weighted sum that follows: after a 608-token prompt, a layer's attention qwen2.5-0.5b 40 ->
// 29 us, qwen3-0.6b 169 -> 155 (rows in cache: qwen3's 512 keys 104 -> 111 us on one thread).
template <int G>
inline void score_direct(const float* q, int64_t hd, const uint8_t* kbase, size_t kstride, bool f16,
                         int64_t n, float* s, int64_t ld, const uint8_t* vbase, size_t vstride) {
  constexpr int64_t kAhead = 2;
  const size_t kblock = 16 * kstride, vblock = 16 * vstride, kend = size_t(n) * kstride,
               vend = size_t(n) * vstride;
  prefetch_rows(kbase, 0, kAhead * kblock, kend, true);
  for (int64_t b = 0; b < (n + 15) / 16; ++b) {
    prefetch_rows(kbase, size_t(b + kAhead) * kblock, size_t(b + kAhead + 1) * kblock, kend, true);
    prefetch_rows(vbase, size_t(b) * vblock, size_t(b + 1) * vblock, vend, false);
    __m512 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
    for (int64_t i0 = 0; i0 < hd; i0 += 16) {
      __m512 r[16];
      key_chunk(kbase, kstride, f16, n, hd, b, i0, r);
      if (hd - i0 >= 16) {
#pragma GCC unroll 16
        for (int c = 0; c < 16; ++c)
          for (int g = 0; g < G; ++g)
            acc[g] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + i0 + c]), r[c], acc[g]);
      } else {
        for (int64_t c = 0; c < hd - i0; ++c)
          for (int g = 0; g < G; ++g)
            acc[g] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + i0 + c]), r[c], acc[g]);
      }
    }
    for (int g = 0; g < G; ++g) _mm512_storeu_ps(s + g * ld + 16 * b, acc[g]);
  }
}

// The keys of a tile: transposed in kt (transpose_keys) or, when kt is null, read from their
// rows (score_direct).
struct TileKeys {
  const float* kt;
  const uint8_t* kbase;
  size_t kstride;
  bool f16;
};

// G query rows (q rows, already rounded as the K type needs; row g attends to its first n[g]
// keys) against the first n_all = max n[g] keys: scores, softmax, weighted V sum into outs[g].
// A row's weights past its own n are zero, so its sums are exactly those over its n keys.
template <int G, bool VF16>
void heads_tile(const float* q, int64_t hd, const TileKeys& k, float* s, int64_t ld, const int64_t* n,
                int64_t n_all, float scale, const uint8_t* vbase, size_t vstride, int64_t hdv,
                float* const* outs) {
  const int64_t nkb = (n_all + 15) / 16;
  if (k.kt) {
    int64_t b = 0;
    for (; b + 2 <= nkb; b += 2) score_block<G, 2>(q, hd, k.kt + b * hd * 16, s + 16 * b, ld);
    if (b < nkb) score_block<G, 1>(q, hd, k.kt + b * hd * 16, s + 16 * b, ld);
  } else {
    score_direct<G>(q, hd, k.kbase, k.kstride, k.f16, n_all, s, ld, vbase, vstride);
  }
  for (int g = 0; g < G; ++g) {
    softmax512(n[g], s + g * ld, scale);
    for (int64_t j = n[g]; j < n_all; ++j) s[g * ld + j] = 0.0f;
  }
  // Few rows (a decode step's heads of one KV head) sum more columns a pass: up to all 128 of a
  // head in one pass over the V rows, which decode streams from memory (G * VC accumulators and
  // VC value vectors fit the 32 registers). Each lane's chain is the same in any chunking. 5-8
  // rows take 48 columns a pass (24 accumulators), not 32: one core of AMD Zen 4, 512-token
  // prompt, a layer of qwen2.5-0.5b 5.95 -> 5.66 ms, qwen3-0.6b 12.85 -> 12.5.
  constexpr int VC = G <= 2 ? 8 : G <= 4 ? 4 : 3;
  int64_t c = 0;
  if constexpr (VC > 2)
    for (; c + 16 * VC <= hdv; c += 16 * VC)
      vsum_block512<G, VC, VF16, false>(s, ld, n_all, vbase, vstride, c, __mmask16(0xFFFF), outs);
  for (; c + 32 < hdv; c += 32)
    vsum_block512<G, 2, VF16, false>(s, ld, n_all, vbase, vstride, c, __mmask16(0xFFFF), outs);
  if (hdv - c == 32)
    vsum_block512<G, 2, VF16, false>(s, ld, n_all, vbase, vstride, c, __mmask16(0xFFFF), outs);
  else if (hdv - c > 16)
    vsum_block512<G, 2, VF16, true>(s, ld, n_all, vbase, vstride, c, tail_mask(hdv - c - 16), outs);
  else if (hdv - c == 16)
    vsum_block512<G, 1, VF16, false>(s, ld, n_all, vbase, vstride, c, __mmask16(0xFFFF), outs);
  else if (hdv > c)
    vsum_block512<G, 1, VF16, true>(s, ld, n_all, vbase, vstride, c, tail_mask(hdv - c), outs);
}

using HeadsTileFn = void (*)(const float*, int64_t, const TileKeys&, float*, int64_t, const int64_t*,
                             int64_t, float, const uint8_t*, size_t, int64_t, float* const*);
template <bool VF16>
constexpr HeadsTileFn kHeadsTile[9] = {
    nullptr,                 heads_tile<1, VF16>, heads_tile<2, VF16>,
    heads_tile<3, VF16>,     heads_tile<4, VF16>, heads_tile<5, VF16>,
    heads_tile<6, VF16>,     heads_tile<7, VF16>, heads_tile<8, VF16>};

// Query rows per heads_tile: up to 8 (8 x 2 score accumulators and the broadcasts fit the 32
// registers). A tile takes one token's query heads of a KV head (GQA) and, when there are fewer
// than 8 of them, the same heads of the next tokens too, so every K and V load feeds up to 8 rows
// (qwen3-0.6b has 2 query heads per KV head: one token alone left the loops load-bound).
constexpr int64_t kAttnRows = 8;

void attn_block512(const float* q, const int32_t* pos, int64_t t0, int64_t t1, int64_t hk,
                   const KvRegion& k, const KvRegion& v, const AttnParams& p, float* out) {
  const int64_t hd = p.head_dim, hdv = p.head_dim_v, G = p.n_head / p.n_head_kv;
  const bool kf16 = k.type == GgmlType::F16, vf16 = v.type == GgmlType::F16;
  int64_t n_max = 0;
  for (int64_t t = t0; t < t1; ++t) n_max = int64_t(pos[t]) + 1 > n_max ? int64_t(pos[t]) + 1 : n_max;
  const int64_t nkb_max = (n_max + 15) / 16, ld = nkb_max * 16;
  float* s = ops_scratch(1, size_t(kAttnRows * ld));
  float* qr = ops_scratch(2, size_t(kAttnRows * hd));
  const int64_t gn_max = G < kAttnRows ? G : kAttnRows;
  const int64_t tq_max = kAttnRows / gn_max;  // tokens per tile
  // Several tiles share the keys transposed once; a single tile (a decode step) reads them from
  // their rows.
  const bool one_tile = G <= kAttnRows && t1 - t0 <= tq_max;
  TileKeys keys{nullptr, kv_row(k, hk, 0), k.row_bytes, kf16};
  if (!one_tile) {
    float* kt = ops_scratch(0, size_t(nkb_max * hd * 16));
    transpose_keys(keys.kbase, keys.kstride, kf16, n_max, hd, kt);
    keys.kt = kt;
  }
  const uint8_t* vbase = kv_row(v, hk, 0);
  for (int64_t ta = t0; ta < t1; ta += tq_max) {
    const int64_t tq = t1 - ta < tq_max ? t1 - ta : tq_max;
    for (int64_t g0 = 0; g0 < G; g0 += gn_max) {
      const int64_t gn = G - g0 < gn_max ? G - g0 : gn_max;
      int64_t n[kAttnRows], n_all = 0;
      float* outs[kAttnRows];
      for (int64_t tt = 0; tt < tq; ++tt)
        for (int64_t g = 0; g < gn; ++g) {
          const int64_t r = tt * gn + g, t = ta + tt, h = hk * G + g0 + g;
          n[r] = int64_t(pos[t]) + 1;
          n_all = n[r] > n_all ? n[r] : n_all;
          outs[r] = out + (t * p.n_head + h) * hdv;
          // The query as the dot product sees it: rounded to F16 for an F16 cache.
          const float* src = q + (t * p.n_head + h) * hd;
          for (int64_t i = 0; i < hd; i += 16) {
            const __mmask16 m = tail_mask(hd - i);
            __m512 x = _mm512_maskz_loadu_ps(m, src + i);
            if (kf16) x = _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            _mm512_mask_storeu_ps(qr + r * hd + i, m, x);
          }
        }
      (vf16 ? kHeadsTile<true> : kHeadsTile<false>)[tq * gn](qr, hd, keys, s, ld, n, n_all, p.scale,
                                                             vbase, v.row_bytes, hdv, outs);
    }
  }
}

}  // namespace

OpsKernels ops_avx512() {
  OpsKernels k;
  k.rms = {8, &sumsq8, &scale_row};
  // add and mul: the AVX2 bodies. They run at memory speed either way, and 64-byte loads of
  // unaligned rows split cache lines (measured 15% slower on unaligned buffers).
  k.rope = &rope512;
  k.attn_block = &attn_block512;
  k.to_f16 = &to_f16_512;
  return k;
}
SoftmaxFn softmax_avx512() { return &softmax512; }
SwigluFn swiglu_avx512() { return &swiglu512; }

}  // namespace minfer::cpu

#pragma GCC pop_options
#else
namespace minfer::cpu {
OpsKernels ops_avx512() { return {}; }
SoftmaxFn softmax_avx512() { return nullptr; }
SwigluFn swiglu_avx512() { return nullptr; }
}  // namespace minfer::cpu
#endif
