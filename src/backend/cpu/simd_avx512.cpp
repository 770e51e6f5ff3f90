// AVX-512 (F/BW/VL) + VNNI kernels, chosen at run time (cpu_features.h). The tiles are those of
// simd_tiles.h with the int8 dot product done by one vpdpbusd on 256-bit vectors, and more
// registers (32) allow wider tiles.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <vector>

#include "backend/cpu/act_quant.h"
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/kernels_dot.h"
#include "backend/cpu/packed_gemm.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/scratch.h"
#include "common/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "backend/cpu/isa_target.h"

namespace minfer::cpu {
namespace {
inline uint8_t* scratch(int slot, size_t bytes) {
  return thread_scratch(ScratchSlot(int(ScratchSlot::TileA) + slot), bytes);
}
}  // namespace
}  // namespace minfer::cpu

MINFER_ISA_BEGIN(MINFER_ISA_AVX512VNNI)
#if !defined(__clang__)
// Only the explicit FMA intrinsics may fuse: scalar steps must round like the scalar kernels.
#pragma GCC optimize("fp-contract=off")
// GCC 12 reports _mm512_undefined_ps() (inside _mm512_cvtepi32_ps) as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace minfer::cpu {
namespace {
struct I8Ops {
  static constexpr bool kVnni = true;
  static __m256i dot(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
  }
  static __m256i dot_acc(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }
};
}  // namespace
}  // namespace minfer::cpu

#define MINFER_TILES_AVX512 1
#include "backend/cpu/simd_tiles.h"
#undef MINFER_TILES_AVX512
#include "backend/cpu/avx512_transpose.h"
#include "backend/cpu/avx512_vnni.h"

namespace minfer::cpu {
namespace {

// ---- Prefill GEMM for the Q8_0-activation types -------------------------------------------
// Weights are repacked on the fly into 16-row panels: per block, 8 zmm of 16 rows x 4 bytes
// (byte k of row r at 64*(k/4) + 4*r + k%4), as unsigned w + 128, then the 16 row scales. One
// vpdpbusd then multiplies 4 elements of 16 rows with 4 elements of one token broadcast to all
// lanes, so a block of 16 rows x 1 token is 8 instructions and no horizontal sums; the +128
// offset is removed by starting the sum at -128 * sum(x_q) of the token's block. Packing costs
// O(rows * cols), amortized over the tokens (used from kGemmMinTokens up).
constexpr int kPanel = 16;
constexpr size_t kPanelBlock = 8 * 64 + 64;  // quants, then 16 float scales
constexpr int64_t kGemmMinTokens = 4;

template <class Dec>
void pack_panel(const uint8_t* w, size_t ws, int64_t nr, int64_t nb, uint8_t* out) {
  const __m256i flip = _mm256_set1_epi8(char(0x80));
  alignas(32) uint32_t q[8];
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* pb = out + b * kPanelBlock;
    float* dv = reinterpret_cast<float*>(pb + 512);
    for (int r = 0; r < kPanel; ++r) {
      __m256i v = flip;  // padding rows: w = 0 (and d = 0)
      float d = 0.0f;
      if (r < nr) {
        const uint8_t* wb = w + size_t(r) * ws + b * Dec::kBytes;
        v = _mm256_xor_si256(Dec::q(wb), flip);
        d = f16(wb);
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(q), v);
      uint32_t* o = reinterpret_cast<uint32_t*>(pb) + r;
      for (int g = 0; g < 8; ++g) o[16 * g] = q[g];
      dv[r] = d;
    }
  }
}

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// T tokens x one panel. xd/xc: per (token, block) activation scale and -128 * sum(q).
template <int T>
inline void panel_tile(const uint8_t* panel, int64_t nb, const uint8_t* x, size_t xs,
                       const float* xd, const int32_t* xc, int64_t t0, float* y, int64_t ldy,
                       __mmask16 rows) {
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* pb = panel + b * kPanelBlock;
    __m512i wq[8];
    for (int g = 0; g < 8; ++g) wq[g] = _mm512_load_si512(pb + 64 * g);
    const __m512 dw = _mm512_load_ps(pb + 512);
    for (int t = 0; t < T; ++t) {
      const size_t tb = size_t(t0 + t) * size_t(nb) + size_t(b);
      const uint8_t* xq = x + size_t(t0 + t) * xs + b * 34 + 2;
      __m512i s = _mm512_set1_epi32(xc[tb]);
      for (int g = 0; g < 8; ++g)
        s = _mm512_dpbusd_epi32(s, wq[g], _mm512_set1_epi32(load_i32(xq + 4 * g)));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(xd[tb])),
                               acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * ldy, rows, acc[t]);
}

// ---- Decode GEMV (one token) for Q8_0 and Q4_0 ---------------------------------------------
// Two weight rows share one zmm: row 2p in the low 256 bits, row 2p+1 in the high 256, so one
// vpdpbusd / convert / FMA serves both, and each half does exactly what q8_tile<Dec, 1, 1>
// does for its row (same lanes, same order: bit-identical results). The per-row scales of
// 2P (up to 16) rows are converted from F16 together and spread to the halves with one permute per pair.
template <class Dec>
struct PairDec;
template <>
struct PairDec<DecQ8_0> {
  static __m512i u(const uint8_t* a, const uint8_t* b) {
    __m512i v = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)(a + 2)));
    v = _mm512_inserti64x4(v, _mm256_loadu_si256((const __m256i*)(b + 2)), 1);
    return _mm512_xor_si512(v, _mm512_set1_epi8(char(0x80)));
  }
};
template <>
struct PairDec<DecQ4_0> {
  // Per half as nibbles(): bytes 0-15 the low nibbles, bytes 16-31 the high ones.
  static __m512i u(const uint8_t* a, const uint8_t* b) {
    __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)(a + 2)));
    v = _mm512_mask_broadcast_i32x4(v, 0xFF00, _mm_loadu_si128((const __m128i*)(b + 2)));
    v = _mm512_mask_srli_epi16(v, 0xFF00FF00u, v, 4);
    return _mm512_and_si512(v, _mm512_set1_epi8(0x0F));
  }
};

inline uint64_t load_u16(const uint8_t* p) {
  uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return h;
}

// Decode streams every weight once from DRAM: software prefetch this many bytes ahead in each
// row beats the hardware prefetcher alone (measured 256-1024; 512 best).
constexpr size_t kGemvPrefetch = 512;

template <class Dec, int P>
inline void gemv_rows(const uint8_t* w, size_t ws, const uint8_t* x, int64_t nb, float* y) {
  constexpr int R = 2 * P;
  const uint8_t* wr[R];
  for (int r = 0; r < R; ++r) wr[r] = w + size_t(r) * ws;
  __m512 acc[P];
  __m512i idx[P];
  for (int p = 0; p < P; ++p) {
    acc[p] = _mm512_setzero_ps();
    idx[p] = _mm512_inserti64x4(_mm512_set1_epi32(2 * p), _mm256_set1_epi32(2 * p + 1), 1);
  }
  const __m512i koff = _mm512_set1_epi8(char(Dec::kOffset));
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* xb = x + b * 34;
    const float dx = f16(xb);
    const __m512i xq = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(xb + 2)));
    const __m512i corr = _mm512_sub_epi32(_mm512_setzero_si512(),
                                          _mm512_dpbusd_epi32(_mm512_setzero_si512(), koff, xq));
    const size_t off = size_t(b) * Dec::kBytes;
    uint64_t h4[4] = {0, 0, 0, 0};
    for (int r = 0; r < R; ++r) h4[r / 4] |= load_u16(wr[r] + off) << (16 * (r % 4));
    const __m512 sc512 = _mm512_mul_ps(
        _mm512_cvtph_ps(_mm256_set_epi64x((long long)h4[3], (long long)h4[2], (long long)h4[1],
                                          (long long)h4[0])),
        _mm512_set1_ps(dx));
    for (int p = 0; p < P; ++p) {
      _mm_prefetch((const char*)(wr[2 * p] + off + kGemvPrefetch), _MM_HINT_T0);
      _mm_prefetch((const char*)(wr[2 * p + 1] + off + kGemvPrefetch), _MM_HINT_T0);
      const __m512i u = PairDec<Dec>::u(wr[2 * p] + off, wr[2 * p + 1] + off);
      const __m512 s = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(corr, u, xq));
      acc[p] = _mm512_fmadd_ps(_mm512_permutexvar_ps(idx[p], sc512), s, acc[p]);
    }
  }
  for (int p = 0; p < P; ++p) {
    y[2 * p] = hsum(_mm512_castps512_ps256(acc[p]));
    y[2 * p + 1] = hsum(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[p]), 1)));
  }
}

template <class Dec>
void q8_gemv(int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, float* y) {
  const int64_t nb = n / 32;
  int64_t r = 0;
  for (; r + 16 <= nr; r += 16) gemv_rows<Dec, 8>(w + size_t(r) * ws, ws, x, nb, y + r);
  for (; r + 8 <= nr; r += 8) gemv_rows<Dec, 4>(w + size_t(r) * ws, ws, x, nb, y + r);
  for (; r + 2 <= nr; r += 2) gemv_rows<Dec, 1>(w + size_t(r) * ws, ws, x, nb, y + r);
  if (r < nr) {
    const Tile a{n, w, ws, x, 0, y, 0};
    q8_tile<Dec, 1, 1>(a, r, 0);
  }
}

template <class Dec, int R, int T>
void q8_gemm(GgmlType type, int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x,
             size_t xs, int64_t nt, float* y, int64_t ldy) {
  if constexpr (std::is_same_v<Dec, DecQ8_0> || std::is_same_v<Dec, DecQ4_0>)
    if (nt == 1) {
      q8_gemv<Dec>(n, w, ws, nr, x, y);
      return;
    }
  if (nt < kGemmMinTokens) {
    q8_tiles<Dec, R, T>(type, n, w, ws, nr, x, xs, nt, y, ldy);
    return;
  }
  const int64_t nb = n / 32;
  float* xd = reinterpret_cast<float*>(scratch(0, size_t(nt * nb) * 4));
  int32_t* xc = reinterpret_cast<int32_t*>(scratch(1, size_t(nt * nb) * 4));
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* xb = x + size_t(t) * xs + b * 34;
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb + 2));
      xd[t * nb + b] = f16(xb);
      xc[t * nb + b] = -128 * hsum_i32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, q));
    }
  uint8_t* panel = scratch(2, size_t(nb) * kPanelBlock);
  for (int64_t r0 = 0; r0 < nr; r0 += kPanel) {
    const int64_t pr = nr - r0 < kPanel ? nr - r0 : kPanel;
    pack_panel<Dec>(w + size_t(r0) * ws, ws, pr, nb, panel);
    const __mmask16 rows = __mmask16((1u << pr) - 1u);
    int64_t t0 = 0;
    for (; t0 + 8 <= nt; t0 += 8) panel_tile<8>(panel, nb, x, xs, xd, xc, t0, y + r0, ldy, rows);
    for (; t0 + 4 <= nt; t0 += 4) panel_tile<4>(panel, nb, x, xs, xd, xc, t0, y + r0, ldy, rows);
    for (; t0 < nt; ++t0) panel_tile<1>(panel, nb, x, xs, xd, xc, t0, y + r0, ldy, rows);
  }
}

// ---- Prefill GEMM for the K-quants x Q8_K ---------------------------------------------------
// The same 16-row panels as above, per super-block of 256: 64 groups of 16 rows x 4 unsigned
// quants (q4_K/q5_K: q itself; q6_K: q + 32), then per-row integer scales (and mins) as int32
// lanes and the row's d (and dmin). Integer sums per super-block, then the scalar kernels'
// float steps lane-wise: the results are bit-identical to the scalar path.

constexpr size_t kQuantBytes = 64 * 64;  // 256 quants x 16 rows

// Per type: block bytes, the panel bytes per super-block, and the decoding of one row's block
// into 256 unsigned quants plus its int32 scale/min parameters.
struct KQ4 {
  static constexpr size_t kBytes = 144;
  static constexpr bool kHigh = false;
  // quants, sc[8], the mins as int16 pairs (2q, 2q + 1) in 4 vectors (4 unused), d, dmin
  static constexpr size_t kBlock = kQuantBytes + 16 * 64 + 2 * 64;
};
struct KQ5 {
  static constexpr size_t kBytes = 176;
  static constexpr bool kHigh = true;
  static constexpr size_t kBlock = KQ4::kBlock;
};

template <class K>
struct Q45KPanel {
  static void decode(const uint8_t* wb, uint8_t* q, int32_t* sc, int32_t* mn, float* d, float* dmin) {
    constexpr size_t kQs = K::kHigh ? 48 : 16;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i qh = _mm256_setzero_si256();
    if (K::kHigh) qh = _mm256_loadu_si256((const __m256i*)(wb + 16));
    for (int j = 0; j < 8; ++j) {
      const __m256i raw = _mm256_loadu_si256((const __m256i*)(wb + kQs + 32 * (j / 2)));
      __m256i v = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(raw, 4) : raw, m4);
      if (K::kHigh) {
        const __m256i bit = _mm256_set1_epi8(char(1 << j));
        const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit);
        v = _mm256_or_si256(v, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
      }
      _mm256_store_si256((__m256i*)(q + 32 * j), v);
      int scj, mnj;
      scale_min_k4(j, wb + 4, &scj, &mnj);
      sc[j] = scj;
      mn[j] = mnj;
    }
    *d = f16(wb);
    *dmin = f16(wb + 2);
  }
};

struct Q6KPanel {
  static constexpr size_t kBlock = kQuantBytes + 16 * 64 + 64;  // quants, sc[16], d
};
// Q2_K: Q6_K's 16 sub-blocks of 16 (scales 0..15, quants 0..3 as they are) and Q4_K's mins term:
// the 16 mins as 8 int16 pairs (2q, 2q + 1) against the activations' Q8KSums::bsum16, then d, dmin.
struct Q2KPanel {
  static constexpr size_t kBlock = kQuantBytes + 24 * 64 + 2 * 64;  // quants, sc[16], mins[8], d, dmin
};
// The values of the 4-bit codes (IQ4_XS: kvalues_iq4nl; packed_iq4_values) + 128, the unsigned
// form vpdpbusd multiplies.
struct Iq4Table {
  alignas(16) uint8_t v[16];
  explicit constexpr Iq4Table(GgmlType t) : v{} {
    for (int i = 0; i < 16; ++i) v[i] = uint8_t(packed_iq4_values(t).v[i] + 128);
  }
};
template <GgmlType T>
constexpr Iq4Table kIq4Offset128{T};

// The i-quants: signed values stored + 128 (unsigned for vpdpbusd; Q8KSums::off128_* takes the
// 128 back), integer scales per sub-block, one float d (the lattice types' final 1/8 or 1/4
// folded in: a power of two, so the products and sums round as the scalar path's), no mins.
// Off128Panel: 8 sub-blocks of 32 (IQ4_XS, IQ2_XXS, IQ3_XXS, IQ3_S, IQ1_S, and with scales of 1
// the ternary TQ1_0, TQ2_0); Off128Sub16Panel:
// 16 of 16 (IQ2_XS, IQ2_S, IQ1_M, whose scales are per 16 columns).
struct Off128Panel {
  static constexpr size_t kBlock = kQuantBytes + 8 * 64 + 64;  // quants, sc[8], d
};
struct Off128Sub16Panel {
  static constexpr size_t kBlock = kQuantBytes + 16 * 64 + 64;  // quants, sc[16], d
};
// The panels with 16 sub-blocks of 16 columns, and where a panel's d and dmin are (float slots).
template <class K>
constexpr bool kSub16 =
    std::is_same_v<K, Q6KPanel> || std::is_same_v<K, Q2KPanel> || std::is_same_v<K, Off128Sub16Panel>;
template <class K>
constexpr int kDSlot = std::is_same_v<K, Q2KPanel> ? 24 : std::is_same_v<K, Off128Panel> ? 8 : 16;
// The panels whose quants carry an offset (taken back per sub-block from Q8KSums) and no mins.
template <class K>
constexpr bool kOffsetPanel =
    std::is_same_v<K, Q6KPanel> || std::is_same_v<K, Off128Panel> || std::is_same_v<K, Off128Sub16Panel>;
template <class K>
inline int32_t panel_offset_term(const Q8KSums& pr, int j) {
  if constexpr (std::is_same_v<K, Off128Panel>) return pr.off128_32[j];
  if constexpr (std::is_same_v<K, Off128Sub16Panel>) return pr.off128_16[j];
  return pr.q6c[j];
}

// One row's super-block of a lattice i-quant as 256 values + 128 (q) and its scales per 16
// columns (sc16), through simd_tiles.h's decoders; returns d x the type's final factor (IQ1's
// values are 8 x grid +- 1 and its factor 1/8: float(8 sumi + sumi1) / 8 rounds as the scalar
// path's float(sumi) + float(sumi1) / 8, both exact below 2^24).
template <class D>
inline float lattice_panel_row(const uint8_t* wb, uint8_t* q, int32_t* sc16) {
  const typename SbOf<D>::type sb(wb);
  for (int ib = 0; ib < 8; ++ib) {
    const IqSub d = sb.sub(wb, ib);
    const __m256i v = _mm256_sign_epi8(d.u, d.signer);
    _mm256_store_si256((__m256i*)(q + 32 * ib), _mm256_add_epi8(v, _mm256_set1_epi8(char(0x80))));
    sc16[2 * ib] = int16_t(_mm256_extract_epi16(d.scale, 0));  // (signed in general)
    sc16[2 * ib + 1] = int16_t(_mm256_extract_epi16(d.scale, 8));
  }
  return D::d(wb) * D::kFinal;
}

// sum over i of a[i] * b[i], 16 int16 each (a super-block's scales or mins against its bsums).
inline int dot16_epi16(__m256i a, __m256i b) { return hsum_i32(_mm256_madd_epi16(a, b)); }

// A Q3_K super-block (hmask[32], qs[64], scales[12], d) in Q6_K's panel terms: its quants
// q - 4 (q = low 2 bits + 4 x the hmask bit) stored as Q6_K's (q - 4) + 32, its 6-bit scales
// less 32 as Q6_K's int8 ones, the same d. The integer sums are then the same as Q3_K's own
// (scale x dot(q - 4, x) per 16 columns) and the float step is Q6_K's, which is Q3_K's:
// (d x d_x) x isum per super-block. So Q3_K prompts run the Q6_K panel tiles, bit-identical.
void q3k_to_q6k_panel_row(const uint8_t* wb, uint8_t* q, int32_t* sc, int r, float* d) {
  const __m256i hm = _mm256_loadu_si256((const __m256i*)wb);
  for (int k = 0; k < 2; ++k) {
    const __m256i q3 = _mm256_loadu_si256((const __m256i*)(wb + 32 + 32 * k));
    for (int j = 0; j < 4; ++j)
      _mm256_store_si256((__m256i*)(q + 128 * k + 32 * j),
                         _mm256_add_epi8(q3k_quarter(q3, hm, k, j), _mm256_set1_epi8(28)));
  }
  alignas(16) int8_t s8[16];
  _mm_store_si128((__m128i*)s8, q3k_scales(wb));
  for (int j = 0; j < 16; ++j) sc[16 * j + r] = s8[j];
  *d = f16(wb + 108);
}

// Writes rows [0, nr) of super-block b (padding rows: zero quants and scales) into pb; Q6KPanel
// from Q6_K or Q3_K rows (type).
template <class K>
void pack_kq(GgmlType type, const uint8_t* w, size_t ws, int64_t nr, int64_t b, uint8_t* pb, uint8_t* tmp) {
  int32_t* sc = reinterpret_cast<int32_t*>(pb + kQuantBytes);
  const size_t block_at = size_t(b) * type_traits(type).type_size;  // (an out-of-line lookup: once)
  for (int r = 0; r < kPanel; ++r) {
    uint8_t* q = tmp + 256 * r;
    if (r >= nr) {
      __builtin_memset(q, 0, 256);
      for (size_t j = 0; j < (K::kBlock - kQuantBytes) / 64; ++j) sc[16 * j + r] = 0;  // (0.0f too)
      continue;
    }
    const uint8_t* wb;
    if constexpr (std::is_same_v<K, Off128Sub16Panel>) {
      int32_t sc16[16];
      const uint8_t* lb = w + size_t(r) * ws + block_at;
      const float d = type == GgmlType::IQ2_XS  ? lattice_panel_row<DecIq2xs>(lb, q, sc16)
                      : type == GgmlType::IQ2_S ? lattice_panel_row<DecIq2s>(lb, q, sc16)
                                                : lattice_panel_row<DecIq1m>(lb, q, sc16);
      for (int j = 0; j < 16; ++j) sc[16 * j + r] = sc16[j];
      reinterpret_cast<float*>(pb + kQuantBytes + 16 * 64)[r] = d;
      continue;
    } else if constexpr (std::is_same_v<K, Off128Panel>) {
      if (type == GgmlType::IQ4_XS) {  // its nibbles straight through the + 128 table (the
        // lattice decoder's sign steps cost 5-11 % of IQ4_XS's prompt time)
        wb = w + size_t(r) * ws + b * 136;
        const __m256i table = _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i*)kIq4Offset128<GgmlType::IQ4_XS>.v));
        for (int j = 0; j < 8; ++j) {
          const __m128i v = _mm_loadu_si128((const __m128i*)(wb + 8 + 16 * j));
          const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v),
                                               _mm256_set1_epi8(0x0F));  // columns 0-15 | 16-31
          _mm256_store_si256((__m256i*)(q + 32 * j), _mm256_shuffle_epi8(table, nib));
          sc[16 * j + r] = iq4xs_scale(wb, j);
        }
        reinterpret_cast<float*>(pb + kQuantBytes + 8 * 64)[r] = f16(wb);
        continue;
      }
      int32_t sc16[16];
      const uint8_t* lb = w + size_t(r) * ws + block_at;
      const float d = type == GgmlType::IQ2_XXS   ? lattice_panel_row<DecIq2xxs>(lb, q, sc16)
                      : type == GgmlType::IQ3_XXS ? lattice_panel_row<DecIq3xxs>(lb, q, sc16)
                      : type == GgmlType::IQ3_S   ? lattice_panel_row<DecIq3s>(lb, q, sc16)
                      : type == GgmlType::TQ1_0   ? lattice_panel_row<DecTq1>(lb, q, sc16)
                      : type == GgmlType::TQ2_0   ? lattice_panel_row<DecTq2>(lb, q, sc16)
                                                  : lattice_panel_row<DecIq1s>(lb, q, sc16);
      for (int j = 0; j < 8; ++j) sc[16 * j + r] = sc16[2 * j];  // (one scale per 32 columns)
      reinterpret_cast<float*>(pb + kQuantBytes + 8 * 64)[r] = d;
      continue;
    } else if constexpr (std::is_same_v<K, Q2KPanel>) {
      // scales[16] (scale | min << 4), qs[64] (column 128k + 32j + l: bits 2j of qs[32k + l]), d, dmin
      wb = w + size_t(r) * ws + b * 84;
      const __m256i m2 = _mm256_set1_epi8(0x03);
      for (int k = 0; k < 2; ++k) {
        const __m256i q2 = _mm256_loadu_si256((const __m256i*)(wb + 16 + 32 * k));
        for (int j = 0; j < 4; ++j)
          _mm256_store_si256((__m256i*)(q + 128 * k + 32 * j),
                             _mm256_and_si256(_mm256_srl_epi16(q2, _mm_cvtsi32_si128(2 * j)), m2));
      }
      for (int j = 0; j < 16; ++j) sc[16 * j + r] = wb[j] & 0x0F;
      for (int m = 0; m < 8; ++m) sc[16 * (16 + m) + r] = (wb[2 * m] >> 4) | ((wb[2 * m + 1] >> 4) << 16);
      reinterpret_cast<float*>(pb + kQuantBytes + 24 * 64)[r] = f16(wb + 80);
      reinterpret_cast<float*>(pb + kQuantBytes + 25 * 64)[r] = f16(wb + 82);
    } else if constexpr (std::is_same_v<K, Q6KPanel>) {
      if (type == GgmlType::Q3_K) {
        q3k_to_q6k_panel_row(w + size_t(r) * ws + b * 110, q, sc, r,
                             reinterpret_cast<float*>(pb + kQuantBytes + 16 * 64) + r);
        continue;
      }
      wb = w + size_t(r) * ws + b * 210;
      const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
      for (int k = 0; k < 2; ++k) {
        const __m256i qh = _mm256_loadu_si256((const __m256i*)(wb + 128 + 32 * k));
        for (int rr = 0; rr < 4; ++rr) {
          const __m256i l = _mm256_loadu_si256((const __m256i*)(wb + 64 * k + 32 * (rr & 1)));
          const __m256i lo = _mm256_and_si256(rr >> 1 ? _mm256_srli_epi16(l, 4) : l, m4);
          const __m256i hi = _mm256_slli_epi16(
              _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * rr)), m2), 4);
          _mm256_store_si256((__m256i*)(q + 128 * k + 32 * rr), _mm256_or_si256(lo, hi));
        }
      }
      for (int j = 0; j < 16; ++j) sc[16 * j + r] = int8_t(wb[192 + j]);
      reinterpret_cast<float*>(pb + kQuantBytes + 16 * 64)[r] = f16(wb + 208);
    } else {
      wb = w + size_t(r) * ws + b * K::kBytes;
      int32_t scv[8], mnv[8];
      float d, dmin;
      Q45KPanel<K>::decode(wb, q, scv, mnv, &d, &dmin);
      for (int j = 0; j < 8; ++j) sc[16 * j + r] = scv[j];
      for (int q = 0; q < 4; ++q) sc[16 * (8 + q) + r] = mnv[2 * q] | (mnv[2 * q + 1] << 16);
      reinterpret_cast<float*>(pb + kQuantBytes + 16 * 64)[r] = d;
      reinterpret_cast<float*>(pb + kQuantBytes + 17 * 64)[r] = dmin;
    }
  }
  for (int c = 0; c < 4; ++c) {
    __m512i v[16];
    for (int r = 0; r < kPanel; ++r) v[r] = _mm512_load_si512(tmp + 256 * r + 64 * c);
    transpose16(v);
    for (int g = 0; g < 16; ++g) _mm512_store_si512(pb + 64 * (16 * c + g), v[g]);
  }
}

// Each byte of q times the (small, non-negative) factor of its dword lane, where every product
// fits its byte: one 16-bit multiply scales both bytes of a word (no carry crosses them).
inline __m512i lane_bytes_times(__m512i q, __m512i f) {
  return _mm512_mullo_epi16(q, _mm512_or_si512(f, _mm512_slli_epi32(f, 16)));
}

// Q2_K's panels fold the 4-bit sub-block scales into the quants (0..3): q x sc is at most 45, a
// byte, so a super-block's integer sum needs no multiply per sub-block and token. In place, once
// per panel; kq_tile and the AMX tile read the folded quants.
inline void q2k_fold_scales(uint8_t* panel, int64_t nsb) {
  for (int64_t b = 0; b < nsb; ++b) {
    uint8_t* pb = panel + b * Q2KPanel::kBlock;
    const int32_t* par = reinterpret_cast<const int32_t*>(pb + kQuantBytes);
    for (int k = 0; k < 16; ++k) {
      const __m512i sc = _mm512_load_si512(par + 16 * k);
      for (int i = 0; i < 4; ++i) {
        uint8_t* o = pb + 64 * (4 * k + i);
        _mm512_store_si512(o, lane_bytes_times(_mm512_load_si512(o), sc));
      }
    }
  }
}

// kq_tile's float step for one token and super-block: d x d_x x isum, less dmin x d_x x the mins
// term (the types with mins: Q4_K/Q5_K's 8 against the 32-column sums' pairs, Q2_K's 16 against
// bsum16); dmv is unused for the offset panels (no mins).
template <class K>
inline __m512 kq_term(const int32_t* par, __m512 dv, __m512 dmv, const Q8KSums& pr, __m512i isum) {
  const __m512 xd = _mm512_set1_ps(pr.d);
  __m512 term = _mm512_mul_ps(_mm512_mul_ps(dv, xd), _mm512_cvtepi32_ps(isum));
  if constexpr (!kOffsetPanel<K>) {
    constexpr bool kQ2 = std::is_same_v<K, Q2KPanel>;
    __m512i summs = _mm512_setzero_si512();
    for (int q = 0; q < (kQ2 ? 8 : 4); ++q)
      summs = _mm512_dpwssd_epi32(summs, _mm512_load_si512(par + 16 * ((kQ2 ? 16 : 8) + q)),
                                  _mm512_set1_epi32(kQ2 ? pr.bsum16[q] : pr.pair16[q]));
    term = _mm512_sub_ps(term, _mm512_mul_ps(_mm512_mul_ps(dmv, xd), _mm512_cvtepi32_ps(summs)));
  }
  return term;
}

// T tokens x G panels (16 rows each, the second at panel + nsb K::kBlock and its outputs at
// y + 16; the `rows` of them stored). Chunks outer, tokens inner: T x G independent vpdpbusd
// chains, each activation word broadcast once into a register for the G panels' products (G = 1:
// folded into its vpdpbusd); the float sums live in L1. One core, 3072 x 1024 x 128, GOP/s:
// Q4_K 299 -> 336 with 8 tokens x 1 panel against 4 tokens token-outer; Q6_K unchanged (its
// vpmulld per 16 columns bounds it).
template <class K, int T, int G = 1>
inline void kq_tile(const uint8_t* panel, int64_t nsb, const uint8_t* x, size_t xs,
                    const Q8KSums* prep, int64_t t0, float* y, int64_t ldy, __mmask16 rows) {
  constexpr bool kOff = kOffsetPanel<K>, k16 = kSub16<K>;
  constexpr bool kFolded = std::is_same_v<K, Q2KPanel>;  // (q2k_fold_scales: no scale step)
  const size_t pstride = size_t(nsb) * K::kBlock;
  alignas(64) float accm[G][T * 16];
  for (int p = 0; p < G; ++p)
    for (int t = 0; t < T; ++t) _mm512_store_ps(accm[p] + 16 * t, _mm512_setzero_ps());
  const uint8_t* x0 = x + size_t(t0) * xs + 4;
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* pb[G];
    const int32_t* par[G];
    for (int p = 0; p < G; ++p) {
      pb[p] = panel + p * pstride + b * K::kBlock;
      par[p] = reinterpret_cast<const int32_t*>(pb[p] + kQuantBytes);
    }
    const uint8_t* xb = x0 + b * kQ8KBytes;
    __m512i isum[G][T];
#pragma GCC unroll 8
    for (int p = 0; p < G; ++p)
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) isum[p][t] = _mm512_setzero_si512();
    // q4_K/q5_K: 8 sub-blocks of 32 (8 groups); q6_K, q2_K: 16 of 16 (4 groups).
    constexpr int kSub = k16 ? 16 : 8, kGroups = k16 ? 4 : 8;
    // Q4_K sums each sub-block's two 16-column halves apart: a half is below 2^15 in magnitude
    // (16 x 15 x 128), so the halves share an int32 lane as an int16 pair (a shift and a word
    // blend) and one vpdpwssd multiplies both by the 6-bit scale and adds them. On Zen 4 vpdpbusd,
    // vpdpwssd, vpmulld, vpternlog and the float multiplies share two ports, and shifts, blends,
    // adds and converts run beside them: one vpdpwssd a token and sub-block instead of two (one
    // for each half) is 72 port cycles a sub-block of 8 tokens instead of 80. Q5_K's halves
    // reach 16 x 31 x 128 and keep vpmulld.
    constexpr bool kHalves = std::is_same_v<K, KQ4>;
    for (int j = 0; j < kSub; ++j) {
      // q6_K's quants are stored + 32, the i-quants' + 128: start from -32 (-128) x sum(x) of
      // the sub-block.
      __m512i s[G][T], h[G][T];  // h: Q4_K's second half
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const Q8KSums& pr = prep[size_t(t0 + t) * size_t(nsb) + size_t(b)];
        const __m512i s0 = !kOff ? _mm512_setzero_si512() : _mm512_set1_epi32(panel_offset_term<K>(pr, j));
#pragma GCC unroll 2
        for (int p = 0; p < G; ++p) {
          s[p][t] = s0;
          if constexpr (kHalves) h[p][t] = _mm512_setzero_si512();
        }
      }
#pragma GCC unroll 8
      for (int g = 0; g < kGroups; ++g) {
        __m512i wq[G];
#pragma GCC unroll 2
        for (int p = 0; p < G; ++p) wq[p] = _mm512_load_si512(pb[p] + 64 * (kGroups * j + g));
        const bool second = kHalves && g >= kGroups / 2;
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const uint8_t* xa = xb + size_t(t) * xs + 4 * kGroups * j + 4 * g;
          if constexpr (G == 1) {
            dpbusd_bcast(kFolded ? isum[0][t] : second ? h[0][t] : s[0][t], wq[0], xa);
          } else {
            const __m512i xv = _mm512_set1_epi32(load_i32(xa));
#pragma GCC unroll 2
            for (int p = 0; p < G; ++p) {
              __m512i& acc = kFolded ? isum[p][t] : second ? h[p][t] : s[p][t];
              acc = _mm512_dpbusd_epi32(acc, wq[p], xv);
            }
          }
        }
      }
      if constexpr (kFolded) continue;
#pragma GCC unroll 2
      for (int p = 0; p < G; ++p) {
        const __m512i scv = _mm512_load_si512(par[p] + 16 * j);
        const __m512i sc2 = kHalves ? _mm512_or_si512(scv, _mm512_slli_epi32(scv, 16)) : scv;  // (sc, sc)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          if constexpr (kHalves)  // the odd int16 lanes from h << 16
            isum[p][t] = _mm512_dpwssd_epi32(
                isum[p][t], _mm512_mask_blend_epi16(__mmask32(0xAAAAAAAA), s[p][t], _mm512_slli_epi32(h[p][t], 16)), sc2);
          else
            isum[p][t] = _mm512_add_epi32(isum[p][t], _mm512_mullo_epi32(s[p][t], scv));
        }
      }
    }
#pragma GCC unroll 2
    for (int p = 0; p < G; ++p) {
      const __m512 dv = _mm512_load_ps(pb[p] + kQuantBytes + kDSlot<K> * 64);
      const __m512 dmv = kOff ? dv : _mm512_load_ps(pb[p] + kQuantBytes + (kDSlot<K> + 1) * 64);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m512 term = kq_term<K>(par[p], dv, dmv, prep[size_t(t0 + t) * size_t(nsb) + size_t(b)], isum[p][t]);
        _mm512_store_ps(accm[p] + 16 * t, _mm512_add_ps(_mm512_load_ps(accm[p] + 16 * t), term));
      }
    }
  }
  for (int p = 0; p < G; ++p)
    for (int t = 0; t < T; ++t)
      _mm512_mask_storeu_ps(y + (t0 + t) * ldy + 16 * p, rows, _mm512_load_ps(accm[p] + 16 * t));
}

// ---- K-quant prefill on AMX tiles --------------------------------------------------------------
// The sub-block scales go into the weights, so that a super-block's 256 columns are one integer
// sum per tile. Q4_K, Q5_K: a row's 6-bit scale splits as sc = 8 hi + lo (hi, lo <= 7), and its quants times
// each part are at most 31 x 7 = 217, unsigned bytes. Per super-block and 16 tokens x 16 rows,
// TDPBSUD (signed activations, unsigned weights) runs 64 columns at a time into two int32 tiles,
// sum_j lo_j P_j and sum_j hi_j P_j, and 8 x the second plus the first is kq_tile's exact
// sum_j sc_j P_j; from there the float steps are kq_tile's, lane for lane (the mins by
// vpdpwssd on the same int16 pairs): results are bit-identical to the scalar kernels. (A
// sub-block at a time, its sums stored and multiplied by the scales with vpmulld in the vector
// units, ran half the speed: on the AMX Xeon measured the tile unit and the 512-bit vector ops
// do not overlap, so every vector op per sub-block counts in full.) Q6_K/Q3_K and Q2_K: below.

// Every tile 16 rows of 64 bytes: int32 sums, activations (16 tokens x 64 columns) and weights
// (64 columns as 16 rows of 16 x 4 bytes); each kernel below says which tile holds what.
constexpr AmxTileConfig kKqTiles = {
    1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

__attribute__((target(MINFER_ISA_AVX512VNNI ",amx-tile,amx-int8"))) void kq_amx_begin() { _tile_loadconfig(&kKqTiles); }
__attribute__((target(MINFER_ISA_AVX512VNNI ",amx-tile,amx-int8"))) void kq_amx_end() { _tile_release(); }

constexpr size_t kKqScaledBytes = 2 * kQuantBytes;  // per super-block: q x lo, then q x hi

// A panel's quants times the two parts of their rows' scales (above), per super-block.
template <class K>
void kq_amx_scaled(const uint8_t* panel, int64_t nsb, uint8_t* out) {
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* pb = panel + b * K::kBlock;
    const int32_t* par = reinterpret_cast<const int32_t*>(pb + kQuantBytes);
    uint8_t* ob = out + size_t(b) * kKqScaledBytes;
    for (int j = 0; j < 8; ++j) {
      const __m512i sc = _mm512_load_si512(par + 16 * j);
      const __m512i lo = _mm512_and_si512(sc, _mm512_set1_epi32(7));
      const __m512i hi = _mm512_srli_epi32(sc, 3);
      for (int k = 0; k < 8; ++k) {
        const __m512i q = _mm512_load_si512(pb + 512 * j + 64 * k);
        _mm512_store_si512(ob + 512 * j + 64 * k, lane_bytes_times(q, lo));
        _mm512_store_si512(ob + kQuantBytes + 512 * j + 64 * k, lane_bytes_times(q, hi));
      }
    }
  }
}

// Q6_K's panel (and Q3_K's, decoded into it): values stored + 32 and signed scales (Q6_K: 8-bit,
// Q3_K: 6-bit). The scale splits as sc = 49 d2 + 7 d1 + d0 with every digit in -3..3 (balanced
// base 7 reaches +-171), and (q - 32) x d is at most 96 in magnitude: three signed weight
// panels, TDPBSSD into three tiles, and isum = (C2 x 7 + C1) x 7 + C0 is exactly kq_tile's
// sum_j sc_j x (P_j - 32 bsum_j).
struct Base7Digits {
  int32_t v[256];  // sc + 128 -> d0, d1, d2 as the low three signed bytes
  constexpr Base7Digits() : v() {
    for (int sc = -128; sc < 128; ++sc) {
      int r = sc, d[3] = {};
      for (int i = 0; i < 3; ++i) {
        d[i] = ((r + 3 + 7 * 64) % 7) - 3;
        r = (r - d[i]) / 7;
      }
      v[sc + 128] = int32_t(uint32_t(uint8_t(d[0])) | uint32_t(uint8_t(d[1])) << 8 | uint32_t(uint8_t(d[2])) << 16);
    }
  }
};
constexpr Base7Digits kBase7{};
constexpr bool base7_exact() {
  for (int sc = -128; sc < 128; ++sc) {
    const uint32_t v = uint32_t(kBase7.v[sc + 128]);
    const int d0 = int8_t(v & 0xFF), d1 = int8_t(v >> 8 & 0xFF), d2 = int8_t(v >> 16 & 0xFF);
    if (49 * d2 + 7 * d1 + d0 != sc || d0 < -3 || d0 > 3 || d1 < -3 || d1 > 3 || d2 < -3 || d2 > 3) return false;
  }
  return true;
}
static_assert(base7_exact());
constexpr size_t kQ6ScaledBytes = 3 * kQuantBytes;  // per super-block: (q - 32) x d0, d1, d2

// x (signed bytes) times the digit of its dword lane (-3..3), bytewise: each product fits.
inline __m512i times_digit(__m512i x, __m512i x2, __m512i dig) {
  const __m512i a = _mm512_abs_epi32(dig);
  __m512i p = _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(a, _mm512_set1_epi32(1)), x);
  p = _mm512_add_epi8(p, _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(a, _mm512_set1_epi32(2)), x2));
  return _mm512_mask_mov_epi32(p, _mm512_cmplt_epi32_mask(dig, _mm512_setzero_si512()),
                               _mm512_sub_epi8(_mm512_setzero_si512(), p));
}

void kq_amx_scaled6(const uint8_t* panel, int64_t nsb, uint8_t* out) {
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* pb = panel + b * Q6KPanel::kBlock;
    const int32_t* par = reinterpret_cast<const int32_t*>(pb + kQuantBytes);
    uint8_t* ob = out + size_t(b) * kQ6ScaledBytes;
    for (int k = 0; k < 16; ++k) {
      const __m512i dg = _mm512_i32gather_epi32(
          _mm512_add_epi32(_mm512_load_si512(par + 16 * k), _mm512_set1_epi32(128)), kBase7.v, 4);
      const __m512i d0 = _mm512_srai_epi32(_mm512_slli_epi32(dg, 24), 24);
      const __m512i d1 = _mm512_srai_epi32(_mm512_slli_epi32(dg, 16), 24);
      const __m512i d2 = _mm512_srai_epi32(_mm512_slli_epi32(dg, 8), 24);
      for (int i = 0; i < 4; ++i) {
        const size_t o = 64 * (4 * k + i);
        const __m512i x = _mm512_sub_epi8(_mm512_load_si512(pb + o), _mm512_set1_epi8(32));
        const __m512i x2 = _mm512_add_epi8(x, x);
        _mm512_store_si512(ob + o, times_digit(x, x2, d0));
        _mm512_store_si512(ob + kQuantBytes + o, times_digit(x, x2, d1));
        _mm512_store_si512(ob + 2 * kQuantBytes + o, times_digit(x, x2, d2));
      }
    }
  }
}

// The panels with an AMX tile (the lattice i-quants' and IQ4_XS's have none).
template <class K>
constexpr bool kAmxPanel = std::is_same_v<K, KQ4> || std::is_same_v<K, KQ5> || std::is_same_v<K, Q6KPanel> ||
                           std::is_same_v<K, Q2KPanel>;

// The AMX weight panels' bytes per super-block.
template <class K>
constexpr size_t kq_amx_scaled_bytes() {
  return std::is_same_v<K, Q6KPanel> ? kQ6ScaledBytes : std::is_same_v<K, Q2KPanel> ? 0 : kKqScaledBytes;
}

// 16 x NT tokens from t0 x one panel (its AMX weight panels at scaled; kq_amx_begin must have
// configured the tiles), then kq_tile's float steps. A tile product takes several times its
// issue interval to finish, so a super-block's products run as independent chains of sums,
// combined per token into kq_tile's integer sum:
// - Q4_K/Q5_K, NT = 2: tiles 0-3 the lo and hi sums of each token tile (activation tiles 4, 5;
//   weight tiles 6, 7 shared by both): isum = lo + 8 hi;
// - Q4_K/Q5_K, NT = 1: the lo and hi sums of the even and odd 64-column steps, added;
// - Q6_K/Q3_K: tiles 0-2 the three digits' sums (weights 5-7): isum = (C2 x 7 + C1) x 7 + C0;
// - Q2_K (its panel's own quants, the scales folded in): each 64-column step into its own tile
//   0-3, added.
template <class K, int NT>
__attribute__((target(MINFER_ISA_AVX512VNNI ",amx-tile,amx-int8"))) void kq_amx_tile(
    const uint8_t* panel, const uint8_t* scaled, int64_t nsb, const uint8_t* x, size_t xs,
    const Q8KSums* prep, int64_t t0, float* y, int64_t ldy, __mmask16 rows) {
  constexpr bool kQ6 = std::is_same_v<K, Q6KPanel>, kQ2 = std::is_same_v<K, Q2KPanel>;
  static_assert(kAmxPanel<K> && (NT == 1 || !(kQ6 || kQ2)));
  alignas(64) int32_t sums[1024];
  alignas(64) float acc[256 * NT];
  for (int m = 0; m < 16 * NT; ++m) _mm512_store_ps(acc + 16 * m, _mm512_setzero_ps());
  const long xsl = long(xs);
  const Q8KSums* pt = prep + t0 * nsb;
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* pb = panel + b * K::kBlock;
    const int32_t* par = reinterpret_cast<const int32_t*>(pb + kQuantBytes);
    const uint8_t* xa = x + size_t(t0) * xs + b * kQ8KBytes + 4;
    const uint8_t* w = kQ2 ? pb : scaled + size_t(b) * kq_amx_scaled_bytes<K>();
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    if constexpr (kQ6) {
      for (int c = 0; c < 256; c += 64) {
        _tile_loadd(4, xa + c, xsl);
        _tile_loadd(5, w + 16 * c, 64);
        _tile_loadd(6, w + kQuantBytes + 16 * c, 64);
        _tile_loadd(7, w + 2 * kQuantBytes + 16 * c, 64);
        _tile_dpbssd(0, 4, 5);
        _tile_dpbssd(1, 4, 6);
        _tile_dpbssd(2, 4, 7);
      }
    } else if constexpr (kQ2) {  // (a 64-column weight tile: 16 rows of 64 bytes)
      _tile_loadd(4, xa, xsl);
      _tile_loadd(6, w, 64);
      _tile_dpbsud(0, 4, 6);
      _tile_loadd(5, xa + 64, xsl);
      _tile_loadd(7, w + 1024, 64);
      _tile_dpbsud(1, 5, 7);
      _tile_loadd(4, xa + 128, xsl);
      _tile_loadd(6, w + 2048, 64);
      _tile_dpbsud(2, 4, 6);
      _tile_loadd(5, xa + 192, xsl);
      _tile_loadd(7, w + 3072, 64);
      _tile_dpbsud(3, 5, 7);
    } else if constexpr (NT == 2) {
      const uint8_t* hi = w + kQuantBytes;
      const uint8_t* xa1 = xa + 16 * xs;
      for (int c = 0; c < 256; c += 64) {
        _tile_loadd(4, xa + c, xsl);
        _tile_loadd(5, xa1 + c, xsl);
        _tile_loadd(6, w + 16 * c, 64);
        _tile_loadd(7, hi + 16 * c, 64);
        _tile_dpbsud(0, 4, 6);
        _tile_dpbsud(1, 4, 7);
        _tile_dpbsud(2, 5, 6);
        _tile_dpbsud(3, 5, 7);
      }
    } else {
      const uint8_t* hi = w + kQuantBytes;
      for (int c = 0; c < 256; c += 128) {
        _tile_loadd(4, xa + c, xsl);
        _tile_loadd(6, w + 16 * c, 64);
        _tile_loadd(7, hi + 16 * c, 64);
        _tile_dpbsud(0, 4, 6);
        _tile_dpbsud(1, 4, 7);
        _tile_loadd(5, xa + c + 64, xsl);
        _tile_loadd(6, w + 16 * c + 1024, 64);
        _tile_loadd(7, hi + 16 * c + 1024, 64);
        _tile_dpbsud(2, 5, 6);
        _tile_dpbsud(3, 5, 7);
      }
    }
    _tile_stored(0, sums, 64);
    _tile_stored(1, sums + 256, 64);
    _tile_stored(2, sums + 512, 64);
    if constexpr (!kQ6) _tile_stored(3, sums + 768, 64);
    const __m512 dv = _mm512_load_ps(pb + kQuantBytes + kDSlot<K> * 64);
    const __m512 dmv = kOffsetPanel<K> ? dv : _mm512_load_ps(pb + kQuantBytes + (kDSlot<K> + 1) * 64);
    for (int m = 0; m < 16 * NT; ++m) {
      const int32_t* sl = sums + 512 * (m / 16) + 16 * (m % 16);
      const auto at = [&](int i) { return _mm512_load_si512(sl + 256 * i); };
      __m512i isum;
      if constexpr (kQ6) {
        const __m512i c2 = at(2);
        const __m512i t = _mm512_add_epi32(_mm512_sub_epi32(_mm512_slli_epi32(c2, 3), c2), at(1));
        isum = _mm512_add_epi32(_mm512_sub_epi32(_mm512_slli_epi32(t, 3), t), at(0));
      } else if constexpr (kQ2) {
        isum = _mm512_add_epi32(_mm512_add_epi32(at(0), at(1)), _mm512_add_epi32(at(2), at(3)));
      } else if constexpr (NT == 2) {
        isum = _mm512_add_epi32(at(0), _mm512_slli_epi32(at(1), 3));
      } else {
        isum = _mm512_add_epi32(_mm512_add_epi32(at(0), at(2)), _mm512_slli_epi32(_mm512_add_epi32(at(1), at(3)), 3));
      }
      const __m512 term = kq_term<K>(par, dv, dmv, pt[m * nsb + b], isum);
      _mm512_store_ps(acc + 16 * m, _mm512_add_ps(_mm512_load_ps(acc + 16 * m), term));
    }
  }
  for (int m = 0; m < 16 * NT; ++m) _mm512_mask_storeu_ps(y + (t0 + m) * ldy, rows, _mm512_load_ps(acc + 16 * m));
}

// Tokens from 0 in tiles of 32, then 16 (Q6KPanel, Q2KPanel: 16); returns the first token left (for the
// VNNI tiles).
template <class K>
int64_t kq_amx_tiles(const uint8_t* panel, const uint8_t* scaled, int64_t nsb, const uint8_t* x,
                     size_t xs, const Q8KSums* prep, int64_t nt, float* y, int64_t ldy, __mmask16 rows) {
  int64_t t0 = 0;
  if constexpr (!std::is_same_v<K, Q6KPanel> && !std::is_same_v<K, Q2KPanel>)
    for (; t0 + 32 <= nt; t0 += 32) kq_amx_tile<K, 2>(panel, scaled, nsb, x, xs, prep, t0, y, ldy, rows);
  for (; t0 + 16 <= nt; t0 += 16) kq_amx_tile<K, 1>(panel, scaled, nsb, x, xs, prep, t0, y, ldy, rows);
  return t0;
}

// The AMX weight panels of a panel (above; Q2_K's panel holds its scaled quants already).
template <class K>
void kq_amx_weights(const uint8_t* panel, int64_t nsb, uint8_t* out) {
  if constexpr (std::is_same_v<K, Q6KPanel>)
    kq_amx_scaled6(panel, nsb, out);
  else if constexpr (!std::is_same_v<K, Q2KPanel>)
    kq_amx_scaled<K>(panel, nsb, out);
}

// ---- Decode GEMV for q4_K / q5_K on the GGUF layout -------------------------------------------
// One row's super-block is two zmm of nibbles: the low nibbles of bytes 0-63 are sub-blocks 0
// and 2, the high ones 1 and 3 (bytes 64-127: 4/6 and 5/7). The token's Q8_K quants are
// rearranged once per call to match (zmm k = the two sub-blocks of nibble set k), so a row
// costs 4 maddubs (u8 x s8 pair sums fit in int16: 2 x 31 x 127) and 4 madd with the rows'
// sub-block scales spread by one permute each. The integer sum per super-block is exact and the
// float steps are q45k_tile's: results are bit-identical to the scalar kernel.

// Decode of the GGUF-layout rows streams each row once: fetch 8 KiB ahead into the outer caches.
constexpr int kKqAhead = 8192;

struct KqGemvAct {
  __m512i xq[4];   // sub-blocks (0|2), (1|3), (4|6), (5|7)
  __m128i pairs;   // 8 int16 bsum pairs (sub-blocks of 32)
  float d;
};

inline void kq_gemv_prep(const uint8_t* xb, KqGemvAct* a) {
  const uint8_t* q = xb + 4;
  auto two = [&](int j0, int j1) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)(q + 32 * j0))),
                              _mm256_loadu_si256((const __m256i*)(q + 32 * j1)), 1);
  };
  a->xq[0] = two(0, 2);
  a->xq[1] = two(1, 3);
  a->xq[2] = two(4, 6);
  a->xq[3] = two(5, 7);
  const __m256i bs = _mm256_loadu_si256((const __m256i*)(xb + 260));  // 16 int16 bsums
  const __m256i ps = _mm256_madd_epi16(bs, _mm256_set1_epi16(1));     // 8 int32 pair sums
  a->pairs = _mm256_cvtepi32_epi16(ps);                                // |pair| <= 4064
  a->d = q8k_d(xb);
}

// The 8 6-bit scales and mins of a q4_K/q5_K super-block as int16 (ggml's 12-byte packing).
inline void kq_scales(const uint8_t* p, __m128i* sc, __m128i* mn) {
  uint32_t u[4];
  __builtin_memcpy(u, p, 12);
  constexpr uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
  u[3] = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);
  const uint32_t a = u[1] & k1;
  u[1] = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);
  u[2] = a;
  u[0] &= k1;
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));  // sc[0..7], mn[0..7]
  *sc = _mm_cvtepu8_epi16(v);
  *mn = _mm_cvtepu8_epi16(_mm_srli_si128(v, 8));
}

template <class K>
inline float kq_gemv_row(const uint8_t* wr, int64_t nsb, const KqGemvAct* act) {
  constexpr size_t kQs = K::kHigh ? 48 : 16;
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  // int16 lanes 0-15 take scale j0, lanes 16-31 scale j1, for the sub-block pairs of xq[k].
  const __m512i perm[4] = {
      _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1),
      _mm512_inserti64x4(_mm512_set1_epi16(1), _mm256_set1_epi16(3), 1),
      _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1),
      _mm512_inserti64x4(_mm512_set1_epi16(5), _mm256_set1_epi16(7), 1)};
  float s = 0.0f;
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* wb = wr + b * K::kBytes;
    for (int l = 0; l < 192; l += 64) _mm_prefetch((const char*)(wb + kKqAhead + l), _MM_HINT_T2);
    const KqGemvAct& a = act[b];
    __m128i sc8, mn8;
    kq_scales(wb + 4, &sc8, &mn8);
    const __m512i sc = _mm512_broadcast_i32x4(sc8);
    const __m512i v0 = _mm512_loadu_si512(wb + kQs), v1 = _mm512_loadu_si512(wb + kQs + 64);
    __m512i q[4] = {_mm512_and_si512(v0, m4), _mm512_and_si512(_mm512_srli_epi16(v0, 4), m4),
                    _mm512_and_si512(v1, m4), _mm512_and_si512(_mm512_srli_epi16(v1, 4), m4)};
    if constexpr (K::kHigh) {
      // Fifth bit of element e of sub-block j: bit j of qh[e].
      const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(wb + 16)));
      const int js[4][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};
      for (int k = 0; k < 4; ++k) {
        const __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8(char(1 << js[k][0])),
                                               _mm256_set1_epi8(char(1 << js[k][1])), 1);
        q[k] = _mm512_mask_add_epi8(q[k], _mm512_test_epi8_mask(qh, bit), q[k], _mm512_set1_epi8(0x10));
      }
    }
    __m512i isum = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k)
      isum = _mm512_add_epi32(isum, _mm512_madd_epi16(_mm512_maddubs_epi16(q[k], a.xq[k]),
                                                      _mm512_permutexvar_epi16(perm[k], sc)));
    const __m128i mm = _mm_madd_epi16(mn8, a.pairs);
    __m128i m2 = _mm_add_epi32(mm, _mm_shuffle_epi32(mm, 0x4E));
    m2 = _mm_add_epi32(m2, _mm_shuffle_epi32(m2, 0xB1));
    const int summs = _mm_cvtsi128_si32(m2);
    const float d = f16(wb), dmin = f16(wb + 2);
    s += (d * a.d) * float(_mm512_reduce_add_epi32(isum)) - (dmin * a.d) * float(summs);
  }
  return s;
}

// q6_K: per half (128 columns) of a super-block, the 64 bytes of ql are columns 0-63 (low
// nibbles: 0-31 | 32-63) and 64-127 (high nibbles), each with 2 bits of qh shifted per 32-column
// quarter; the token's quants of those columns are contiguous. u = q + 32 < 64, so maddubs' pair
// sums fit in int16; the -32 offset is q6k_tile's: minus 32 * sum(scale x bsum).
// int16 scale lanes for the quarter pairs: lane i of set 2k + hi takes sub-block 8k + 4hi + i/8.
alignas(64) constexpr int16_t kQ6ScaleLanes[4][32] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
    {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7},
    {8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
    {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13, 14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15}};

// The one-token rows' constants (q6k, q3k, q2k): the int16 scale lanes above, and the shifts
// that take 32 bytes broadcast to both 256-bit halves to the 2-bit fields of quarters 2p (low
// half) and 2p + 1 (high half).
struct RowLanes {
  __m512i idx[4], shift[2];
  RowLanes() {
    for (int j = 0; j < 4; ++j) idx[j] = _mm512_load_si512(kQ6ScaleLanes[j]);
    shift[0] = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    shift[1] = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
  }
};

inline float q6k_gemv_row(const uint8_t* wr, int64_t nsb, const uint8_t* x) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(0x03);
  const RowLanes lanes;
  float s = 0.0f;
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* wb = wr + b * 210;
    const uint8_t* xb = x + b * kQ8KBytes;
    for (int l = 0; l < 256; l += 64) _mm_prefetch((const char*)(wb + kKqAhead + l), _MM_HINT_T2);
    const __m128i sc8 = _mm_loadu_si128((const __m128i*)(wb + 192));
    const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
    const __m512i sc = _mm512_castsi256_si512(sc16);
    __m512i isum = _mm512_setzero_si512();
    for (int k = 0; k < 2; ++k) {
      const __m512i v = _mm512_loadu_si512(wb + 64 * k);
      const __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(wb + 128 + 32 * k)));
      const __m512i u0 = _mm512_or_si512(
          _mm512_and_si512(v, m4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(h, lanes.shift[0]), m3), 4));
      const __m512i u1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4),
                                         _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(h, lanes.shift[1]), m3), 4));
      const __m512i x0 = _mm512_loadu_si512(xb + 4 + 128 * k), x1 = _mm512_loadu_si512(xb + 4 + 128 * k + 64);
      isum = _mm512_add_epi32(isum, _mm512_madd_epi16(_mm512_maddubs_epi16(u0, x0),
                                                      _mm512_permutexvar_epi16(lanes.idx[2 * k], sc)));
      isum = _mm512_add_epi32(isum, _mm512_madd_epi16(_mm512_maddubs_epi16(u1, x1),
                                                      _mm512_permutexvar_epi16(lanes.idx[2 * k + 1], sc)));
    }
    const int corr = dot16_epi16(sc16, _mm256_loadu_si256((const __m256i*)(xb + 260)));
    s += (f16(wb + 208) * q8k_d(xb)) * float(_mm512_reduce_add_epi32(isum) - 32 * corr);
  }
  return s;
}

// q3_K (hmask[32], qs[64], scales[12], d), one token: per 128-column half k, the zmm of columns
// 128k + 64p + (0..63) holds u = low 2 bits | 4 x hmask bit for quarters 2p and 2p + 1 (qs
// broadcast to both 256-bit halves, shifted by 4p and 4p + 2), the token's quants of those
// columns are contiguous, and the int16 scale lanes are q6k's (16-column sub-blocks too). The -4
// offset is q3k_tile's: minus 4 x sum(scale x bsum). Same integers and float step as dot_q3_K.
inline float q3k_gemv_row(const uint8_t* wr, int64_t nsb, const uint8_t* x) {
  const __m512i m3 = _mm512_set1_epi8(0x03), four = _mm512_set1_epi8(0x04);
  const RowLanes lanes;
  float s = 0.0f;
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* wb = wr + b * 110;
    const uint8_t* xb = x + b * kQ8KBytes;
    for (int l = 0; l < 128; l += 64) _mm_prefetch((const char*)(wb + kKqAhead + l), _MM_HINT_T2);
    const __m256i sc16 = _mm256_cvtepi8_epi16(q3k_scales(wb));
    const __m512i sc = _mm512_castsi256_si512(sc16);
    const __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)wb));
    __m512i isum = _mm512_setzero_si512();
    for (int k = 0; k < 2; ++k) {
      const __m512i q = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(wb + 32 + 32 * k)));
      for (int p = 0; p < 2; ++p) {
        const __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8(char(1 << (4 * k + 2 * p))),
                                               _mm256_set1_epi8(char(1 << (4 * k + 2 * p + 1))), 1);
        __m512i u = _mm512_and_si512(_mm512_srlv_epi16(q, lanes.shift[p]), m3);
        u = _mm512_mask_add_epi8(u, _mm512_test_epi8_mask(hm, bit), u, four);
        const __m512i xv = _mm512_loadu_si512(xb + 4 + 128 * k + 64 * p);
        isum = _mm512_add_epi32(isum, _mm512_madd_epi16(_mm512_maddubs_epi16(u, xv),
                                                        _mm512_permutexvar_epi16(lanes.idx[2 * k + p], sc)));
      }
    }
    const int corr = dot16_epi16(sc16, _mm256_loadu_si256((const __m256i*)(xb + 260)));
    s += (f16(wb + 108) * q8k_d(xb)) * float(_mm512_reduce_add_epi32(isum) - 4 * corr);
  }
  return s;
}

// q2_K (scales[16]: scale | min << 4 per 16 columns, qs[64], d, dmin), one token: qs as q3_K's
// low bits (q3k_gemv_row), each 16 columns' scale by q6k's int16 lanes, the mins against the
// activations' sums; the float step is dot_q2_K's, (d_x d) isum - (d_x dmin) summs.
inline float q2k_gemv_row(const uint8_t* wr, int64_t nsb, const uint8_t* x) {
  const __m512i m3 = _mm512_set1_epi8(0x03);
  const __m128i m4 = _mm_set1_epi8(0x0F);
  const RowLanes lanes;
  float s = 0.0f;
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* wb = wr + b * 84;
    const uint8_t* xb = x + b * kQ8KBytes;
    _mm_prefetch((const char*)(wb + kKqAhead), _MM_HINT_T2);
    _mm_prefetch((const char*)(wb + kKqAhead + 64), _MM_HINT_T2);
    const __m128i sc8 = _mm_loadu_si128((const __m128i*)wb);
    const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(sc8, m4));
    const __m256i mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), m4));
    const __m512i sc = _mm512_castsi256_si512(sc16);
    __m512i isum = _mm512_setzero_si512();
    for (int k = 0; k < 2; ++k) {
      const __m512i q = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(wb + 16 + 32 * k)));
      for (int p = 0; p < 2; ++p) {
        const __m512i u = _mm512_and_si512(_mm512_srlv_epi16(q, lanes.shift[p]), m3);
        const __m512i xv = _mm512_loadu_si512(xb + 4 + 128 * k + 64 * p);
        isum = _mm512_add_epi32(isum, _mm512_madd_epi16(_mm512_maddubs_epi16(u, xv),
                                                        _mm512_permutexvar_epi16(lanes.idx[2 * k + p], sc)));
      }
    }
    const int summs = dot16_epi16(mn16, _mm256_loadu_si256((const __m256i*)(xb + 260)));
    const float dall = q8k_d(xb) * f16(wb + 80), dmin = q8k_d(xb) * f16(wb + 82);
    s += dall * float(_mm512_reduce_add_epi32(isum)) - dmin * float(summs);
  }
  return s;
}

// iq4_xs (d, scales_h, scales_l[4], qs[128]), one token: the 64 bytes of qs of blocks 4k..4k+3
// hold in 128-bit lane i the nibbles of block 4k + i (low: its columns 0-15, high: 16-31); the
// token's quants are rearranged once per call to match, with -128 x the block's sum in the
// first int32 of each lane (the values are looked up + 128 for vpdpbusd). The lanes' sums times
// the blocks' scales (int32: up to 8 x 241 x 127 a lane) add up to dot_iq4_xs's integers.
struct Iq4GemvAct {
  __m512i lo[2], hi[2], c[2];
};

inline void iq4xs_gemv_prep(const uint8_t* xb, Iq4GemvAct* a) {
  const __m512i* q = reinterpret_cast<const __m512i*>(xb + 4);
  for (int k = 0; k < 2; ++k) {
    const __m512i z0 = _mm512_loadu_si512(q + 2 * k), z1 = _mm512_loadu_si512(q + 2 * k + 1);
    a->lo[k] = _mm512_shuffle_i64x2(z0, z1, 0x88);  // 128-bit lanes 0, 2 of z0, then of z1
    a->hi[k] = _mm512_shuffle_i64x2(z0, z1, 0xDD);  // lanes 1, 3
    alignas(64) int32_t c[16] = {};
    for (int i = 0; i < 4; ++i) {
      const int j = 4 * k + i;
      c[4 * i] = -128 * (q8k_bsum(xb, 2 * j) + q8k_bsum(xb, 2 * j + 1));
    }
    a->c[k] = _mm512_load_si512(c);
  }
}

// The 8 block scales less 32 as int32 lanes 0-7: block j's 4 low bits at bit 4j of scales_l,
// its 2 high ones at bit 2j of scales_h.
inline __m256i iq4xs_scales8(const uint8_t* wb) {
  uint32_t sl, sh = 0;
  __builtin_memcpy(&sl, wb + 4, 4);
  __builtin_memcpy(&sh, wb + 2, 2);
  const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(sl)), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                      _mm256_set1_epi32(0xF));
  const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(sh)), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                                      _mm256_set1_epi32(3));
  return _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
}

inline float iq4xs_gemv_row(const uint8_t* wr, int64_t nsb, const uint8_t* x, const Iq4GemvAct* act) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128((const __m128i*)kIq4Offset128<GgmlType::IQ4_XS>.v));
  // int32 lane l of half k takes block 4k + l / 4.
  const __m512i spread[2] = {_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                             _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7)};
  float s = 0.0f;
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* wb = wr + b * 136;
    const uint8_t* xb = x + b * kQ8KBytes;
    for (int l = 0; l < 136; l += 64) _mm_prefetch((const char*)(wb + kKqAhead + l), _MM_HINT_T2);
    const __m512i sc8 = _mm512_castsi256_si512(iq4xs_scales8(wb));
    const Iq4GemvAct& a = act[b];
    __m512i isum = _mm512_setzero_si512();
    for (int k = 0; k < 2; ++k) {
      const __m512i v = _mm512_loadu_si512(wb + 8 + 64 * k);
      const __m512i lo = _mm512_shuffle_epi8(table, _mm512_and_si512(v, m4));
      const __m512i hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
      const __m512i sums = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(a.c[k], lo, a.lo[k]), hi, a.hi[k]);
      isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(sums, _mm512_permutexvar_epi32(spread[k], sc8)));
    }
    s += (f16(wb) * q8k_d(xb)) * float(_mm512_reduce_add_epi32(isum));
  }
  return s;
}

void iq4xs_gemv(int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, float* y) {
  const int64_t nsb = n / 256;
  auto* act = reinterpret_cast<Iq4GemvAct*>(scratch(0, size_t(nsb) * sizeof(Iq4GemvAct)));
  for (int64_t b = 0; b < nsb; ++b) iq4xs_gemv_prep(x + b * kQ8KBytes, act + b);
  for (int64_t r = 0; r < nr; ++r) y[r] = iq4xs_gemv_row(w + size_t(r) * ws, nsb, x, act);
}

// ---- The ternary types, one token --------------------------------------------------------------
// A super-block's values t (0..2; the scalar kernel's are t - 1) as 4 zmm of unsigned bytes, each
// against 64 of the token's quants by one vpdpbusd: sum(t x) - sum(x) is the scalar kernel's
// integer sum, then its float step. Where the 256-bit tiles took ~20 instructions a 32-column
// block (the values decoded a block at a time, sign form), this is ~60 a super-block.

// The token's quants of a super-block in the order of the value vectors (TQ2_0's vector l holds
// columns 32 l.. and 128 + 32 l..; TQ1_0's are in order), their sum and d.
struct TqAct {
  alignas(64) int8_t x[256];
  int32_t sum;
  float d;
};
template <class D>
void tq_prep(const uint8_t* xb, TqAct* a) {
  const int8_t* q = q8k_qs(xb);
  for (int l = 0; l < 4; ++l) {
    const int lo = std::is_same_v<D, DecTq2> ? 32 * l : 64 * l, hi = std::is_same_v<D, DecTq2> ? 128 + 32 * l : 64 * l + 32;
    __builtin_memcpy(a->x + 64 * l, q + lo, 32);
    __builtin_memcpy(a->x + 64 * l + 32, q + hi, 32);
  }
  a->sum = q8k_sum(xb);
  a->d = q8k_d(xb);
}

// Bytes of v times per-16-bit-lane constants m, each product's low 8 bits (no byte multiply).
inline __m512i mul_bytes(__m512i v, __m512i m) {
  const __m512i lo = _mm512_and_si512(_mm512_mullo_epi16(v, m), _mm512_set1_epi16(0x00FF));
  return _mm512_or_si512(lo, _mm512_mullo_epi16(_mm512_and_si512(v, _mm512_set1_epi16(short(0xFF00))), m));
}
// Per 128-bit lane k the multiplier m[k] in every 16-bit lane (m[3] < 0: TQ1_0's qh lane, bytes
// 4 n .. 4 n + 3 times 3^n).
inline __m512i lane_multipliers(int m0, int m1, int m2, int m3) {
  const __m128i last = m3 < 0 ? _mm_setr_epi16(1, 1, 3, 3, 9, 9, 27, 27) : _mm_set1_epi16(short(m3));
  __m512i v = _mm512_castsi128_si512(_mm_set1_epi16(short(m0)));
  v = _mm512_inserti32x4(v, _mm_set1_epi16(short(m1)), 1);
  v = _mm512_inserti32x4(v, _mm_set1_epi16(short(m2)), 2);
  return _mm512_inserti32x4(v, last, 3);
}
// (p x 3) >> 8 a byte: DecTq1::trit's steps.
inline __m512i trit512(__m512i p) {
  const __m512i a = _mm512_subs_epu8(p, _mm512_set1_epi8(1));
  const __m512i c = _mm512_avg_epu8(a, _mm512_avg_epu8(a, _mm512_setzero_si512()));
  return _mm512_and_si512(_mm512_srli_epi16(c, 6), _mm512_set1_epi8(3));
}

template <class D>
inline float tq_gemv_row(const uint8_t* wr, int64_t nsb, const TqAct* act) {
  float s = 0.0f;
  [[maybe_unused]] const __m512i mA = lane_multipliers(1, 1, 3, 3), mB = lane_multipliers(9, 9, 27, 27),
                                 mC = lane_multipliers(81, 81, 1, 3), mD = lane_multipliers(9, 27, 81, -1);
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* wb = wr + size_t(b) * D::kBytes;
    const TqAct& a = act[b];
    __m512i t[4];
    if constexpr (std::is_same_v<D, DecTq2>) {
      const __m512i q = _mm512_loadu_si512(wb);
      for (int l = 0; l < 4; ++l) t[l] = _mm512_and_si512(_mm512_srli_epi16(q, 2 * l), _mm512_set1_epi8(3));
    } else {
      // Elements 64 v .. 64 v + 63 in vector v: trits 0, 1 of qs[0..31]; 2, 3; 4 and then trits 0,
      // 1 of qs[32..47]; trits 2, 3, 4 of qs[32..47] and the 16 of qh (byte 4 n + j: qh[j] 3^n).
      const __m256i q0 = _mm256_loadu_si256((const __m256i*)wb);
      const __m128i q1 = _mm_loadu_si128((const __m128i*)(wb + 32));
      int32_t qh;
      __builtin_memcpy(&qh, wb + 48, 4);
      const __m512i ab = _mm512_broadcast_i64x4(q0);
      const __m512i c = _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi256_si512(q0), q1, 2), q1, 3);
      const __m512i d = _mm512_inserti32x4(_mm512_broadcast_i32x4(q1), _mm_set1_epi32(qh), 3);
      t[0] = trit512(mul_bytes(ab, mA));
      t[1] = trit512(mul_bytes(ab, mB));
      t[2] = trit512(mul_bytes(c, mC));
      t[3] = trit512(mul_bytes(d, mD));
    }
    const __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), t[0], _mm512_load_si512(a.x));
    const __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), t[1], _mm512_load_si512(a.x + 64));
    const __m512i s2 = _mm512_dpbusd_epi32(s0, t[2], _mm512_load_si512(a.x + 128));
    const __m512i s3 = _mm512_dpbusd_epi32(s1, t[3], _mm512_load_si512(a.x + 192));
    s += (D::d(wb) * a.d) * float(_mm512_reduce_add_epi32(_mm512_add_epi32(s2, s3)) - a.sum);
  }
  return D::kFinal * s;
}

template <class D>
void tq_gemv(int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, float* y) {
  const int64_t nsb = n / 256;
  auto* act = reinterpret_cast<TqAct*>(scratch(0, size_t(nsb) * sizeof(TqAct)));
  for (int64_t b = 0; b < nsb; ++b) tq_prep<D>(x + b * kQ8KBytes, act + b);
  for (int64_t r = 0; r < nr; ++r) y[r] = tq_gemv_row<D>(w + size_t(r) * ws, nsb, act);
}

template <class K>
void kq_gemv(int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, float* y) {
  const int64_t nsb = n / 256;
  auto* act = reinterpret_cast<KqGemvAct*>(scratch(0, size_t(nsb) * sizeof(KqGemvAct)));
  for (int64_t b = 0; b < nsb; ++b) kq_gemv_prep(x + b * kQ8KBytes, act + b);
  for (int64_t r = 0; r < nr; ++r) y[r] = kq_gemv_row<K>(w + size_t(r) * ws, nsb, act);
}

template <class K>
void kq_gemm(GgmlType type, int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x,
             size_t xs, int64_t nt, float* y, int64_t ldy) {
  if (nt == 1) {
    if constexpr (std::is_same_v<K, Q2KPanel>)
      for (int64_t r = 0; r < nr; ++r) y[r] = q2k_gemv_row(w + size_t(r) * ws, n / 256, x);
    else if constexpr (std::is_same_v<K, Off128Panel> || std::is_same_v<K, Off128Sub16Panel>) {
      if (type == GgmlType::IQ4_XS)
        iq4xs_gemv(n, w, ws, nr, x, y);
      else if (type == GgmlType::IQ2_XXS)  // signs as bits: masked 256-bit rows (simd_tiles.h)
        iqlat_gemv_masked<DecIq2xxs>(n, w, ws, nr, x, y);
      else if (type == GgmlType::IQ2_XS)
        iqlat_gemv_masked<DecIq2xs>(n, w, ws, nr, x, y);
      else if (type == GgmlType::IQ2_S)
        iqlat_gemv_masked<DecIq2s>(n, w, ws, nr, x, y);
      else if (type == GgmlType::IQ3_XXS)
        iqlat_gemv_masked<DecIq3xxs>(n, w, ws, nr, x, y);
      else if (type == GgmlType::IQ3_S)
        iqlat_gemv_masked<DecIq3s>(n, w, ws, nr, x, y);
      else if (type == GgmlType::TQ1_0)
        tq_gemv<DecTq1>(n, w, ws, nr, x, y);
      else if (type == GgmlType::TQ2_0)
        tq_gemv<DecTq2>(n, w, ws, nr, x, y);
      else  // IQ1 (its signs are in its values): the 256-bit tiles (a 512-bit row measured slower)
        dot_tile_avx2(type)(type, n, w, ws, nr, x, xs, 1, y, ldy);
    }
    else if constexpr (std::is_same_v<K, Q6KPanel>)
      for (int64_t r = 0; r < nr; ++r)
        y[r] = type == GgmlType::Q3_K ? q3k_gemv_row(w + size_t(r) * ws, n / 256, x)
                                      : q6k_gemv_row(w + size_t(r) * ws, n / 256, x);
    else
      kq_gemv<K>(n, w, ws, nr, x, y);
    return;
  }
  if (nt < kGemmMinTokens) {
    dot_tile_avx2(type)(type, n, w, ws, nr, x, xs, nt, y, ldy);
    return;
  }
  const int64_t nsb = n / 256;
  auto* prep = reinterpret_cast<Q8KSums*>(scratch(0, size_t(nt * nsb) * sizeof(Q8KSums)));
  for (int64_t t = 0; t < nt; ++t) q8k_sums(x + size_t(t) * xs, nsb, prep + t * nsb);
  uint8_t* panel = scratch(2, size_t(nsb) * K::kBlock);
  uint8_t* tmp = scratch(3, 256 * kPanel);
  // The AMX path is chosen here rather than by dot_tile(): the panels and the token tails are
  // shared with the VNNI path.
  const bool amx = kAmxPanel<K> && nt >= 16 && active_isa() >= Isa::Amx;
  uint8_t* scaled = amx ? scratch(1, size_t(nsb) * kq_amx_scaled_bytes<K>()) : nullptr;
  if (amx) kq_amx_begin();
  for (int64_t r0 = 0; r0 < nr; r0 += kPanel) {
    const int64_t pr = nr - r0 < kPanel ? nr - r0 : kPanel;
    for (int64_t b = 0; b < nsb; ++b)
      pack_kq<K>(type, w + size_t(r0) * ws, ws, pr, b, panel + b * K::kBlock, tmp);
    if constexpr (std::is_same_v<K, Q2KPanel>) q2k_fold_scales(panel, nsb);
    const __mmask16 rows = __mmask16((1u << pr) - 1u);
    int64_t t0 = 0;
    if (amx)
      if constexpr (kAmxPanel<K>) {
        kq_amx_weights<K>(panel, nsb, scaled);
        t0 = kq_amx_tiles<K>(panel, scaled, nsb, x, xs, prep, nt, y + r0, ldy, rows);
      }
    for (; t0 + 8 <= nt; t0 += 8) kq_tile<K, 8>(panel, nsb, x, xs, prep, t0, y + r0, ldy, rows);
    for (; t0 + 4 <= nt; t0 += 4) kq_tile<K, 4>(panel, nsb, x, xs, prep, t0, y + r0, ldy, rows);
    for (; t0 < nt; ++t0) kq_tile<K, 1>(panel, nsb, x, xs, prep, t0, y + r0, ldy, rows);
  }
  if (amx) kq_amx_end();
}

// ---- K-quants in the x16 layout (repack.h) ---------------------------------------------------
// Decode: the 16 rows of a group are the 16 lanes, so a sub-block is 8 vpdpbusd and one
// multiply by the rows' scales, with no horizontal sums and no scale unpacking; each group is
// one sequential stream. Prefill turns each super-block of a group into kq_tile's panel (the
// chunks are already its 4-column groups) and runs the GGUF-layout path's tiles: the integer
// sums and float steps are the scalar kernels', so every path is bit-identical to them.

template <GgmlType T>
struct KPacked {
  static constexpr size_t kBlock = packed_kq_block_bytes(T);
  static constexpr size_t kPar = packed_kq_scales(T);
};

// Scales per 16-column sub-block (Q2_K's with mins: its branches come first where that differs).
template <GgmlType T>
constexpr bool kPackedSub16 = T == GgmlType::Q6_K || T == GgmlType::Q3_K || T == GgmlType::Q2_K;

// Chunk c (columns 4c..4c+3 | 16+4c..16+4c+3 of sub-block j) as unsigned bytes, 16 rows.
template <GgmlType T>
inline void kp_chunk(const uint8_t* o, int j, int c, __m512i* lo, __m512i* hi) {
  if constexpr (T == GgmlType::Q2_K) {  // 2 bits at 2c of the two vectors
    const __m512i m2 = _mm512_set1_epi8(0x03);
    *lo = _mm512_and_si512(_mm512_srli_epi16(_mm512_load_si512(o + packed_kq_quants(T, j, 0)), 2 * c), m2);
    *hi = _mm512_and_si512(_mm512_srli_epi16(_mm512_load_si512(o + packed_kq_quants(T, j, 1)), 2 * c), m2);
    return;
  }
  if constexpr (T == GgmlType::Q3_K) {  // u = q + 4: 2 bits at 2c of the two vectors, the third
    // at c (lo) and 4 + c (hi) of the third vector, moved to bit 2 (0xF8: a | (b & c)).
    const __m512i m2 = _mm512_set1_epi8(0x03), b2 = _mm512_set1_epi8(0x04);
    const __m512i vl = _mm512_load_si512(o + packed_kq_quants(T, j, 0));
    const __m512i vh = _mm512_load_si512(o + packed_kq_quants(T, j, 1));
    const __m512i v3 = _mm512_load_si512(o + packed_kq_extra(T, j));
    const __m512i t_lo = c < 2 ? _mm512_slli_epi16(v3, 2 - c) : _mm512_srli_epi16(v3, c - 2);
    *lo = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(vl, 2 * c), m2), t_lo, b2, 0xF8);
    *hi = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(vh, 2 * c), m2),
                                    _mm512_srli_epi16(v3, c + 2), b2, 0xF8);
    return;
  }
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512i v = _mm512_load_si512(o + packed_kq_quants(T, j, c));
  asm("" : "+v"(v));  // one load (dpbusd_nibbles says why)
  *lo = _mm512_and_si512(v, m4);
  *hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  if constexpr (packed_iq4_layout(T)) {  // the codes' values + 128
    const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128((const __m128i*)kIq4Offset128<T>.v));
    *lo = _mm512_shuffle_epi8(table, *lo);
    *hi = _mm512_shuffle_epi8(table, *hi);
  }
  if constexpr (T == GgmlType::Q5_K) {
    uint64_t ml, mh;
    __builtin_memcpy(&ml, o + packed_kq_extra(T, j) + 16 * c, 8);
    __builtin_memcpy(&mh, o + packed_kq_extra(T, j) + 16 * c + 8, 8);
    const __m512i b4 = _mm512_set1_epi8(0x10);
    *lo = _mm512_mask_add_epi8(*lo, _cvtu64_mask64(ml), *lo, b4);
    *hi = _mm512_mask_add_epi8(*hi, _cvtu64_mask64(mh), *hi, b4);
  }
  if constexpr (T == GgmlType::Q6_K) {
    __m512i h = _mm512_load_si512(o + packed_kq_extra(T, j) + 64 * (c / 2));
    asm("" : "+v"(h));
    const __m512i m = _mm512_set1_epi8(0x30);
    // 0xF8: a | (b & c) (vpternlog truth table over a, b, c).
    if (c % 2 == 0) {
      *lo = _mm512_ternarylogic_epi32(*lo, _mm512_slli_epi16(h, 4), m, 0xF8);
      *hi = _mm512_ternarylogic_epi32(*hi, _mm512_slli_epi16(h, 2), m, 0xF8);
    } else {
      *lo = _mm512_ternarylogic_epi32(*lo, h, m, 0xF8);
      *hi = _mm512_ternarylogic_epi32(*hi, _mm512_srli_epi16(h, 2), m, 0xF8);
    }
  }
}

// One token (Q8_K row x, its blocks' sums ks) times one group of nsb super-blocks: y[0..15].
template <GgmlType T>
inline void kp_gemv(const uint8_t* grp, int64_t nsb, const uint8_t* x, const Q8KSums* ks, float* y,
                    bool prefetch) {
  using P = KPacked<T>;
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* o = grp + size_t(b) * P::kBlock;
    if (prefetch)
      MINFER_ROLLED_LOOP
      for (size_t l = 0; l < P::kBlock; l += 64) _mm_prefetch((const char*)(o + kPackedPrefetch + l), _MM_HINT_T2);
    const uint8_t* xb = x + b * kQ8KBytes;
    const uint8_t* xq = xb + 4;
    const uint8_t* par = o + P::kPar;
    const __m512 xd = _mm512_set1_ps(q8k_d(xb));
    // All sub-blocks' sums first, then their scales: the super-block is read front to back
    // (quants, then the scales after them), one stream.
    __m512i s0v[8], s1v[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      __m512i s0, s1;
      if constexpr (T == GgmlType::Q6_K) {
        s0 = _mm512_set1_epi32(ks[b].q6c[2 * j]);
        s1 = _mm512_set1_epi32(ks[b].q6c[2 * j + 1]);
      } else if constexpr (T == GgmlType::Q3_K) {  // its quants are stored + 4
        s0 = _mm512_set1_epi32(-4 * ks[b].bsum[2 * j]);
        s1 = _mm512_set1_epi32(-4 * ks[b].bsum[2 * j + 1]);
      } else if constexpr (packed_iq4_layout(T)) {  // its values are looked up + 128
        s0 = _mm512_set1_epi32(ks[b].off128_32[j]);
        s1 = _mm512_setzero_si512();
      } else {
        s0 = _mm512_setzero_si512();
        s1 = _mm512_setzero_si512();
      }
      if constexpr (T == GgmlType::Q4_K) {
        // The high nibbles in place into s1 (dpbusd_nibbles), shifted back once a sub-block.
        for (int c = 0; c < 4; ++c)
          dpbusd_nibbles(s0, s1, _mm512_load_si512(o + packed_kq_quants(T, j, c)), xq + 32 * j + 4 * c,
                         xq + 32 * j + 16 + 4 * c);
        s1 = _mm512_srai_epi32(s1, 4);
      } else {
        for (int c = 0; c < 4; ++c) {
          __m512i lo, hi;
          kp_chunk<T>(o, j, c, &lo, &hi);
          dpbusd_bcast(s0, lo, xq + 32 * j + 4 * c);
          dpbusd_bcast(s1, hi, xq + 32 * j + 16 + 4 * c);
        }
      }
      s0v[j] = s0;
      s1v[j] = s1;
    }
    __m512i isum = _mm512_setzero_si512(), isum1 = _mm512_setzero_si512(), msum2 = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m512i s0 = s0v[j], s1 = s1v[j];
      if constexpr (T == GgmlType::Q2_K) {
        // Lane r: the scale | min << 4 bytes of sub-blocks 2j, 2j + 1 as an int16 pair; the two
        // sums (|s| <= 16 x 3 x 128) as the same pair: one vpdpwssd each for scales and mins.
        const __m512i sm = _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i*)(par + 32 * j)));
        const __m512i pair = _mm512_mask_blend_epi16(0xAAAAAAAA, s0, _mm512_slli_epi32(s1, 16));
        isum = _mm512_dpwssd_epi32(isum, pair, _mm512_and_si512(sm, _mm512_set1_epi16(0x0F)));
        msum2 = _mm512_dpwssd_epi32(msum2, _mm512_srli_epi16(sm, 4), _mm512_set1_epi32(ks[b].bsum16[j]));
      } else if constexpr (kPackedSub16<T>) {
        const __m512i c0 = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i*)(par + 32 * j)));
        const __m512i c1 = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i*)(par + 32 * j + 16)));
        isum = _mm512_add_epi32(isum, _mm512_add_epi32(_mm512_mullo_epi32(s0, c0), _mm512_mullo_epi32(s1, c1)));
      } else if constexpr (packed_iq4_layout(T)) {  // int8 scales (IQ4_XS's less 32)
        const __m512i sc = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i*)(par + 16 * j)));
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(_mm512_add_epi32(s0, s1), sc));
      } else if constexpr (T == GgmlType::Q4_K) {
        // Each 16-column half fits an int16: vpdpwssd by the scale, as kq_tile. Two chains (the
        // halves), added once: one chain of 16 vpdpwssd waited on their latency.
        const __m512i sc = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i*)(par + 16 * j)));
        isum = _mm512_dpwssd_epi32(isum, s0, sc);
        isum1 = _mm512_dpwssd_epi32(isum1, s1, sc);
      } else {
        const __m512i sc = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i*)(par + 16 * j)));
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(_mm512_add_epi32(s0, s1), sc));
      }
    }
    if constexpr (T == GgmlType::Q4_K) isum = _mm512_add_epi32(isum, isum1);
    __m512 d = _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(par + kKqD)));
    if constexpr (packed_iq4_final(T) != 1.0f) d = _mm512_mul_ps(d, _mm512_set1_ps(packed_iq4_final(T)));
    __m512 term = _mm512_mul_ps(_mm512_mul_ps(d, xd), _mm512_cvtepi32_ps(isum));
    if constexpr (T == GgmlType::Q2_K) {
      const __m512 dm = _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(par + kKqDmin)));
      term = _mm512_sub_ps(term, _mm512_mul_ps(_mm512_mul_ps(dm, xd), _mm512_cvtepi32_ps(msum2)));
    } else if constexpr (!kPackedSub16<T> && !packed_iq4_layout(T)) {
      // Mins: lane r of pair p holds (min 2p, min 2p+1) of row r as int16; the activations'
      // bsum pairs of those sub-blocks likewise (Q8KSums::pair16, |pair| <= 32 x 128).
      __m512i msum = _mm512_setzero_si512();
      for (int q = 0; q < 4; ++q)
        msum = _mm512_dpwssd_epi32(msum, _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i*)(par + kKqMins + 32 * q))),
                                   _mm512_set1_epi32(ks[b].pair16[q]));
      const __m512 dm = _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(par + kKqDmin)));
      term = _mm512_sub_ps(term, _mm512_mul_ps(_mm512_mul_ps(dm, xd), _mm512_cvtepi32_ps(msum)));
    }
    acc = _mm512_add_ps(acc, term);
  }
  _mm512_storeu_ps(y, acc);
}

// Super-block b of a group as kq_tile's panel block.
template <GgmlType T, class K>
inline void kp_panel(const uint8_t* o, uint8_t* pb) {
  using P = KPacked<T>;
  const uint8_t* par = o + P::kPar;
  int32_t* sc = reinterpret_cast<int32_t*>(pb + kQuantBytes);
  for (int j = 0; j < 8; ++j)
    for (int c = 0; c < 4; ++c) {
      __m512i lo, hi;
      kp_chunk<T>(o, j, c, &lo, &hi);
      if constexpr (T == GgmlType::Q3_K) {  // as q3k_to_q6k_panel_row: (q - 4) + 32
        lo = _mm512_add_epi8(lo, _mm512_set1_epi8(28));
        hi = _mm512_add_epi8(hi, _mm512_set1_epi8(28));
      }
      if constexpr (kPackedSub16<T>) {  // 16-column sub-blocks 2j (low) and 2j + 1 (high)
        _mm512_store_si512(pb + 64 * (4 * (2 * j) + c), lo);
        _mm512_store_si512(pb + 64 * (4 * (2 * j + 1) + c), hi);
      } else {
        _mm512_store_si512(pb + 64 * (8 * j + c), lo);
        _mm512_store_si512(pb + 64 * (8 * j + 4 + c), hi);
      }
    }
  if constexpr (T == GgmlType::Q2_K) {  // Q2KPanel: sc[16], the mins as int16 pairs, d, dmin
    for (int j = 0; j < 8; ++j) {
      const __m512i sm = _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i*)(par + 32 * j)));
      const __m512i m4 = _mm512_set1_epi32(0x0F);
      _mm512_store_si512(sc + 16 * (2 * j), _mm512_and_si512(sm, m4));
      _mm512_store_si512(sc + 16 * (2 * j + 1), _mm512_and_si512(_mm512_srli_epi32(sm, 16), m4));
      _mm512_store_si512(sc + 16 * (16 + j), _mm512_srli_epi16(sm, 4));
    }
    _mm512_store_ps(pb + kQuantBytes + 24 * 64, _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(par + kKqD))));
    _mm512_store_ps(pb + kQuantBytes + 25 * 64, _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(par + kKqDmin))));
  } else if constexpr (packed_iq4_layout(T)) {  // Off128Panel: sc[8], d (x the final factor)
    for (int j = 0; j < 8; ++j)
      _mm512_store_si512(sc + 16 * j, _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i*)(par + 16 * j))));
    _mm512_store_ps(pb + kQuantBytes + 8 * 64,
                    _mm512_mul_ps(_mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(par + kKqD))),
                                  _mm512_set1_ps(packed_iq4_final(T))));
  } else if constexpr (kPackedSub16<T>) {
    for (int k = 0; k < 16; ++k)
      _mm512_store_si512(sc + 16 * k, _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i*)(par + 16 * k))));
    _mm512_store_ps(pb + kQuantBytes + 16 * 64, _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(par + kKqD))));
  } else {
    for (int j = 0; j < 8; ++j)
      _mm512_store_si512(sc + 16 * j, _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i*)(par + 16 * j))));
    for (int q = 0; q < 4; ++q)  // row r's mins 2q and 2q + 1 as the int16 pair of lane r
      _mm512_store_si512(sc + 16 * (8 + q), _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i*)(par + kKqMins + 32 * q))));
    _mm512_store_ps(pb + kQuantBytes + 16 * 64, _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(par + kKqD))));
    _mm512_store_ps(pb + kQuantBytes + 17 * 64, _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(par + kKqDmin))));
  }
}

// Up to 8 tokens the packed K-quants run the one-token rows once per token (a group's 16 rows
// stay in L1 after the first): decoding the panel costs more than it saves below that. Zen 5,
// qwen3-0.6b, 2 threads, ms a pass of 4 / 8 tokens, GEMM -> rows: Q4_K_M 16.9 / 19.9 -> 12.6 /
// 17.5, Q3_K_M 15.6 / 18.9 -> 12.3 / 18.2, Q2_K 14.7 / 18.0 -> 11.7 / 16.8, IQ4_XS 15.5 / 18.4 ->
// 13.8 / 17.6, Q5_K_M 17.5 / 22.8 -> 15.8 / 22.7; at 12 tokens the GEMM wins for most types.
// Speculative decoding's verification batches are of these sizes.
constexpr int64_t kKqGemmMinTokens = 9;

template <GgmlType T, class K, bool kAmx>
void kp_gemm(GgmlType, const uint8_t* wp, int64_t n_groups, int64_t nsb, const PackedAct& xa,
             int64_t nt, float* y, int64_t ldy) {
  const size_t gb = packed_group_bytes(T, nsb * 256);
  const uint8_t* x = xa.q;
  const size_t xs = xa.stride;
  if (nt < kKqGemmMinTokens) {
    const bool prefetch = decode_prefetch(DecodeStream::SuperBlocks);
    for (int64_t g = 0; g < n_groups; ++g)
      for (int64_t t = 0; t < nt; ++t)
        kp_gemv<T>(wp + size_t(g) * gb, nsb, x + size_t(t) * xs, xa.ks + t * nsb, y + t * ldy + 16 * g, prefetch);
    return;
  }
  const Q8KSums* prep = xa.ks;
  const size_t pstride = size_t(nsb) * K::kBlock;
  // The offset panels (Q6_K's, IQ4_XS's) take two groups a tile: one core, 3072 x 1024 x 128,
  // Q6_K 295-299 -> 316-317 GOP/s, IQ4_XS 361-363 -> 387-390; Q4_K, Q5_K and Q2_K measured the same
  // or slower that way and keep 8 tokens x one panel.
  constexpr int kMaxPanels = kOffsetPanel<K> ? 2 : 1;
  uint8_t* panel = scratch(2, kMaxPanels * pstride);
  constexpr bool amx = kAmx;
  uint8_t* scaled = amx && nt >= 16 ? scratch(1, size_t(nsb) * kq_amx_scaled_bytes<K>()) : nullptr;
  if (amx && nt >= 16) kq_amx_begin();
  for (int64_t g = 0; g < n_groups; g += kMaxPanels) {
    const int np = g + 1 < n_groups ? kMaxPanels : 1;
    for (int p = 0; p < np; ++p) {
      for (int64_t b = 0; b < nsb; ++b)
        kp_panel<T, K>(wp + size_t(g + p) * gb + size_t(b) * KPacked<T>::kBlock, panel + p * pstride + b * K::kBlock);
      if constexpr (std::is_same_v<K, Q2KPanel>) q2k_fold_scales(panel + p * pstride, nsb);
    }
    float* yg = y + 16 * g;
    int64_t t0 = 0;
    if constexpr (amx)
      if (nt >= 16)
        for (int p = 0; p < np; ++p) {
          kq_amx_weights<K>(panel + p * pstride, nsb, scaled);
          t0 = kq_amx_tiles<K>(panel + p * pstride, scaled, nsb, x, xs, prep, nt, yg + 16 * p, ldy, 0xFFFF);
        }
    if (kMaxPanels == 2 && np == 2) {
      for (; t0 + 4 <= nt; t0 += 4) kq_tile<K, 4, 2>(panel, nsb, x, xs, prep, t0, yg, ldy, 0xFFFF);
      for (; t0 < nt; ++t0) kq_tile<K, 1, 2>(panel, nsb, x, xs, prep, t0, yg, ldy, 0xFFFF);
    } else {
      for (; t0 + 8 <= nt; t0 += 8) kq_tile<K, 8>(panel, nsb, x, xs, prep, t0, yg, ldy, 0xFFFF);
      for (; t0 + 4 <= nt; t0 += 4) kq_tile<K, 4>(panel, nsb, x, xs, prep, t0, yg, ldy, 0xFFFF);
      for (; t0 < nt; ++t0) kq_tile<K, 1>(panel, nsb, x, xs, prep, t0, yg, ldy, 0xFFFF);
    }
  }
  if (amx && nt >= 16) kq_amx_end();
}

// ---- F32 / F16 / BF16 with 512-bit FMA: row tiles, masked loads for the row tail --------------

struct Load512F32 {
  static __m512 v(const uint8_t* p, int64_t i) { return _mm512_loadu_ps((const float*)p + i); }
  static __m512 m(const uint8_t* p, int64_t i, __mmask16 k) {
    return _mm512_maskz_loadu_ps(k, (const float*)p + i);
  }
};
struct Load512F16 {
  static __m512 v(const uint8_t* p, int64_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)((const uint16_t*)p + i)));
  }
  static __m512 m(const uint8_t* p, int64_t i, __mmask16 k) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, (const uint16_t*)p + i));
  }
};

struct Load512BF16 {
  static __m512 v(const uint8_t* p, int64_t i) {
    const __m256i h = _mm256_loadu_si256((const __m256i*)((const uint16_t*)p + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 m(const uint8_t* p, int64_t i, __mmask16 k) {
    const __m256i h = _mm256_maskz_loadu_epi16(k, (const uint16_t*)p + i);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
};

// Q8_0 rows (the attention's V cache): element i is d x q[i] of its block of 32, as
// dequantize_row gives it (i a multiple of 16: a vector never straddles blocks).
struct Load512Q8_0 {
  static __m512 q8(const uint8_t* p, int64_t i, __m128i q) {
    const quant::block_q8_0* b = reinterpret_cast<const quant::block_q8_0*>(p) + i / 32;
    return _mm512_mul_ps(_mm512_set1_ps(f16(reinterpret_cast<const uint8_t*>(&b->d))),
                         _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  }
  static const int8_t* qs(const uint8_t* p, int64_t i) {
    return reinterpret_cast<const quant::block_q8_0*>(p)[i / 32].qs + i % 32;
  }
  static __m512 v(const uint8_t* p, int64_t i) { return q8(p, i, _mm_loadu_si128((const __m128i*)qs(p, i))); }
  static __m512 m(const uint8_t* p, int64_t i, __mmask16 k) { return q8(p, i, _mm_maskz_loadu_epi8(k, qs(p, i))); }
};

// ---- Weighted row sums (attention's V accumulation on the dot path: a Q8_0 cache) -----------
// 32 columns (one Q8_0 block) x up to 8 weight rows a pass, in 16 accumulators: each V row's
// conversion feeds 8 rows' FMAs, where the 256-bit vsum_simd converts it again for every 3.
// Each lane sums w x v in j order with one FMA a row, as vsum_simd does.
template <class L, int G>
inline void vsum512_block(int64_t n, const float* w, const uint8_t* v, size_t vs, int64_t c, float* out,
                          int64_t d) {
  __m512 acc[G][2];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) acc[g][0] = acc[g][1] = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* row = v + size_t(j) * vs;
    const __m512 x0 = L::v(row, c), x1 = L::v(row, c + 16);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      const __m512 a = _mm512_set1_ps(w[g * n + j]);
      acc[g][0] = _mm512_fmadd_ps(a, x0, acc[g][0]);
      acc[g][1] = _mm512_fmadd_ps(a, x1, acc[g][1]);
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) {
    _mm512_storeu_ps(out + g * d + c, acc[g][0]);
    _mm512_storeu_ps(out + g * d + c + 16, acc[g][1]);
  }
}

template <class L>
void vsum512_typed(int64_t n, int64_t G, const float* w, const uint8_t* v, size_t vs, int64_t d, float* out) {
  int64_t c = 0;
  for (; c + 32 <= d; c += 32) {
    int64_t g = 0;
    for (; g + 8 <= G; g += 8) vsum512_block<L, 8>(n, w + g * n, v, vs, c, out + g * d, d);
    if (G - g >= 4) vsum512_block<L, 4>(n, w + g * n, v, vs, c, out + g * d, d), g += 4;
    if (G - g >= 2) vsum512_block<L, 2>(n, w + g * n, v, vs, c, out + g * d, d), g += 2;
    if (G - g == 1) vsum512_block<L, 1>(n, w + g * n, v, vs, c, out + g * d, d);
  }
  // The columns past the last 32 (F32/F16 heads of odd sizes; a Q8_0 cache's heads are whole
  // blocks): one lane at a time, the same FMA chain.
  for (int64_t g = 0; g < G; ++g)
    for (int64_t i = c; i < d; ++i) {
      __m128 acc = _mm_setzero_ps();
      for (int64_t j = 0; j < n; ++j)
        acc = _mm_fmadd_ss(_mm_set_ss(w[g * n + j]), _mm512_castps512_ps128(L::m(v + size_t(j) * vs, i, 1)), acc);
      out[g * d + i] = _mm_cvtss_f32(acc);
    }
}

void vsum512(int64_t n, int64_t G, const float* w, const uint8_t* v, size_t vs, GgmlType vt, int64_t d,
             float* out) {
  if (vt == GgmlType::F16)
    vsum512_typed<Load512F16>(n, G, w, v, vs, d, out);
  else if (vt == GgmlType::Q8_0)
    vsum512_typed<Load512Q8_0>(n, G, w, v, vs, d, out);
  else
    vsum512_typed<Load512F32>(n, G, w, v, vs, d, out);
}

// C sums per output (1 or 4), column 16 c of every 16 C into sum c (the rest into sum 0), added
// as (s0 + s1) + (s2 + s3) at the end. F16 and BF16 take 4: with one chain a one-token row was
// bound by the FMA's latency (one 32-byte F16 load per 4 cycles; Gemv_F16 3072 x 1024 one core,
// hot: 19-23 -> 41-42 GB/s), and R x T is then at most 2 x 2 (16 sums in registers). F32 keeps
// one sum and 4 x 4 tiles: its rows of 64-byte loads are not latency-bound, and the 4 sums'
// reductions cost more than the FMAs on the 64-column rows of a tiny model (stories260K pp128
// 48-116 -> 23-38 kt/s). Every tile shape of a type sums in one order, so a one-token row equals
// the same row in a 2-token tile.
template <class L, int R, int T, int C>
inline void f512_tile(const Tile& a, int64_t r0, int64_t t0) {
  static_assert((C == 1 && R * T <= 16) || (C == 4 && R * T <= 4));
  __m512 acc[R][T][C];
  const uint8_t* wr[R];
  const uint8_t* xr[T];
  for (int r = 0; r < R; ++r) wr[r] = a.w + size_t(r0 + r) * a.ws;
  for (int t = 0; t < T; ++t) xr[t] = a.x + size_t(t0 + t) * a.xs;
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c) acc[r][t][c] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 * C <= a.n; i += 16 * C)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      __m512 xv[T];
      for (int t = 0; t < T; ++t) xv[t] = L::v(xr[t], i + 16 * c);
      for (int r = 0; r < R; ++r) {
        const __m512 wv = L::v(wr[r], i + 16 * c);
        for (int t = 0; t < T; ++t) acc[r][t][c] = _mm512_fmadd_ps(wv, xv[t], acc[r][t][c]);
      }
    }
  for (; i < a.n; i += 16) {
    const __mmask16 k = a.n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (a.n - i)) - 1u);
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = L::m(xr[t], i, k);
    for (int r = 0; r < R; ++r) {
      const __m512 wv = L::m(wr[r], i, k);
      for (int t = 0; t < T; ++t) acc[r][t][0] = _mm512_fmadd_ps(wv, xv[t], acc[r][t][0]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) {
      __m512 v = acc[r][t][0];
      if constexpr (C == 4)
        v = _mm512_add_ps(_mm512_add_ps(acc[r][t][0], acc[r][t][1]), _mm512_add_ps(acc[r][t][2], acc[r][t][3]));
      a.y[(t0 + t) * a.ldy + r0 + r] = _mm512_reduce_add_ps(v);
    }
}

template <class L, int C>
struct F512K {
  template <int R, int T>
  static void run(const Tile& a, int64_t r0, int64_t t0) { f512_tile<L, R, T, C>(a, r0, t0); }
};

// ---- F16 / BF16 prompts: 16 rows in the lanes, weights widened once per call -----------------
// The 2 x 2 tile widens every weight and activation vector it loads (4 conversions per 4 FMAs)
// and reduces 16 lanes per output at the end. Here a call's activations are widened to F32 once,
// each 16-row group's weights once into a panel (column k: the 16 rows' values, by 16 x 16
// transposes), and a tile of T tokens is, per column, one panel load and T FMAs with the token's
// value broadcast from memory (two groups a tile where there are two: fpanel_tile2). The sums run
// in blocks of kFPanelBlock columns, then added: as short as the lanes' partial sums were (the
// float order differs from the tile's). Widening the activations costs a call 1 / 16 of its FMAs
// per row: matmul gives these prompts items of many rows (kernels_matmul.cpp).
constexpr int64_t kFPanelBlock = 256;

template <int T>
inline void fpanel_tile(const float* pan, int64_t n, const float* xf, int64_t t0, __mmask16 rows, float* y,
                        int64_t ldy) {
  __m512 tot[T], acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_ps();
  const float* xt = xf + t0 * n;
  for (int64_t k0 = 0; k0 < n; k0 += kFPanelBlock) {
    const int64_t k1 = std::min(n, k0 + kFPanelBlock);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t k = k0; k < k1; ++k) {
      const __m512 w = _mm512_load_ps(pan + 16 * k);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[t] = _mm512_fmadd_ps(w, _mm512_set1_ps(xt[t * n + k]), acc[t]);
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) tot[t] = _mm512_add_ps(tot[t], acc[t]);
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * ldy, rows, tot[t]);
}

// The two-group tiles' running totals, in L1 (fpanel_tile2, bpanel_tile2): tot += acc after each
// block of columns (the first: 0 + acc), then the rows of each token stored under the groups' masks.
template <int T>
inline void pair_totals(float (&tot)[2][T][16], const __m512 (&acc0)[T], const __m512 (&acc1)[T], bool first) {
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
    const __m512 a0 = first ? _mm512_setzero_ps() : _mm512_load_ps(tot[0][t]);
    const __m512 a1 = first ? _mm512_setzero_ps() : _mm512_load_ps(tot[1][t]);
    _mm512_store_ps(tot[0][t], _mm512_add_ps(a0, acc0[t]));
    _mm512_store_ps(tot[1][t], _mm512_add_ps(a1, acc1[t]));
  }
}

template <int T>
inline void pair_store(const float (&tot)[2][T][16], __mmask16 rm0, __mmask16 rm1, float* y0, float* y1,
                       int64_t ldy) {
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
    _mm512_mask_storeu_ps(y0 + t * ldy, rm0, _mm512_load_ps(tot[0][t]));
    _mm512_mask_storeu_ps(y1 + t * ldy, rm1, _mm512_load_ps(tot[1][t]));
  }
}

// Two groups (32 rows) x T tokens: each broadcast token value serves two FMAs (with one group,
// 9 loads per 8 FMAs; AMD Zen 5 one core, Gemm128_F16 3072 x 1024 128-144 -> 149-161 GOP/s,
// 1024 x 3072 125-128 -> 147-157). The per-block totals wait in L1 (tot) so that the 2 T sums
// keep the registers; each output sums in fpanel_tile's order.
template <int T>
inline void fpanel_tile2(const float* p0, const float* p1, int64_t n, const float* xf, int64_t t0, __mmask16 rm0,
                         __mmask16 rm1, float* y0, float* y1, int64_t ldy) {
  alignas(64) float tot[2][T][16];
  __m512 acc0[T], acc1[T];
  const float* xt = xf + t0 * n;
  for (int64_t k0 = 0; k0 < n; k0 += kFPanelBlock) {
    const int64_t k1 = std::min(n, k0 + kFPanelBlock);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
    for (int64_t k = k0; k < k1; ++k) {
      const __m512 w0 = _mm512_load_ps(p0 + 16 * k), w1 = _mm512_load_ps(p1 + 16 * k);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m512 xv = _mm512_set1_ps(xt[t * n + k]);
        acc0[t] = _mm512_fmadd_ps(w0, xv, acc0[t]);
        acc1[t] = _mm512_fmadd_ps(w1, xv, acc1[t]);
      }
    }
    pair_totals<T>(tot, acc0, acc1, k0 == 0);
  }
  pair_store<T>(tot, rm0, rm1, y0 + t0 * ldy, y1 + t0 * ldy, ldy);
}

template <class L>
void fpanel_gemm(GgmlType t, int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, size_t xs,
                 int64_t nt, float* y, int64_t ldy) {
  if (nt < float_panel_tokens(t, Isa::Avx512)) {
    row_stream_tiles<F512K<L, 4>, 2, 2>(t, n, w, ws, nr, x, xs, nt, y, ldy);
    return;
  }
  const int64_t nf = n / 16 * 16;
  const __mmask16 tail = __mmask16((1u << (n - nf)) - 1);
  float* xf = reinterpret_cast<float*>(scratch(0, size_t(nt * n) * 4));
  for (int64_t tt = 0; tt < nt; ++tt) {
    const uint8_t* xr = x + size_t(tt) * xs;
    float* o = xf + tt * n;
    for (int64_t k = 0; k < nf; k += 16) _mm512_storeu_ps(o + k, L::v(xr, k));
    if (tail) _mm512_mask_storeu_ps(o + nf, tail, L::m(xr, nf, tail));
  }
  const size_t pstride = size_t(nf + 16) * 16;  // floats a panel
  float* pan = reinterpret_cast<float*>(scratch(1, pstride * 2 * 4));  // (two: fpanel_tile2)
  auto fill = [&](int64_t r0, float* pn) {
    const int rows = int(std::min<int64_t>(16, nr - r0));
    for (int64_t k = 0; k < n; k += 16) {
      const __mmask16 cols = k < nf ? __mmask16(0xFFFF) : tail;
      __m512 v[16];
      for (int r = 0; r < 16; ++r)
        v[r] = r < rows ? L::m(w + size_t(r0 + r) * ws, k, cols) : _mm512_setzero_ps();
      transpose16(v);
      for (int c = 0; c < 16; ++c) _mm512_store_ps(pn + 16 * (k + c), v[c]);
    }
    return __mmask16((1u << rows) - 1);
  };
  int64_t r0 = 0;
  for (; r0 + 16 < nr; r0 += 32) {
    const float* pan1 = pan + pstride;
    const __mmask16 rm0 = fill(r0, pan), rm1 = fill(r0 + 16, pan + pstride);
    int64_t t0 = 0;
    for (; t0 + 8 <= nt; t0 += 8) fpanel_tile2<8>(pan, pan1, n, xf, t0, rm0, rm1, y + r0, y + r0 + 16, ldy);
    for (; t0 + 4 <= nt; t0 += 4) fpanel_tile2<4>(pan, pan1, n, xf, t0, rm0, rm1, y + r0, y + r0 + 16, ldy);
    for (; t0 < nt; ++t0) fpanel_tile2<1>(pan, pan1, n, xf, t0, rm0, rm1, y + r0, y + r0 + 16, ldy);
  }
  for (; r0 < nr; r0 += 16) {
    const __mmask16 rm = fill(r0, pan);
    int64_t t0 = 0;
    for (; t0 + 8 <= nt; t0 += 8) fpanel_tile<8>(pan, n, xf, t0, rm, y + r0, ldy);
    for (; t0 + 4 <= nt; t0 += 4) fpanel_tile<4>(pan, n, xf, t0, rm, y + r0, ldy);
    for (; t0 < nt; ++t0) fpanel_tile<1>(pan, n, xf, t0, rm, y + r0, ldy);
  }
}

// ---- BF16 prompts on AVX512_BF16: pairs of columns, vdpbf16ps --------------------------------
// BF16 weights meet BF16 activations (ggml's vec_dot type for BF16, which the activations already
// are: act_quant), so vdpbf16ps multiplies them as they are stored, two columns a lane and
// instruction, at the FMA's rate: twice fpanel_gemm's work per instruction, and no widening. Each
// 16-row group's weights go once per call into a panel of column pairs (pair p: the 16 rows' two
// values as one dword, by 16 x 16 dword transposes of 32 columns), and the call's activation pairs
// into tiles of kBTile tokens (pair p of the tile's token t at 16 p + t: one pointer reaches every
// token, where 16 row pointers spilled). A tile of T tokens is, per pair, one panel load and T
// vdpbf16ps with the token's pair broadcast (two groups x 8 tokens where there are two groups:
// bpanel_tile2); 16 tokens keep enough independent sums in flight for vdpbf16ps's latency (AMD
// Zen 5, one core, 3072 x 1024 x 128: 8 tokens 251 GOP/s, 16 with row pointers 333, 16 re-laid
// 370). Sums in blocks of kFPanelBlock columns, as fpanel_tile. The
// products of two BF16 values are exact in F32; the additions run in another order than the FMA
// kernels' (a pair's two products first), and vdpbf16ps treats denormal inputs as zero.
constexpr int64_t kBTile = 16;

// Dword c of the first `n` (<= 16) of 16 rows `stride` bytes apart (64 bytes each), as dst[16 c
// + r] (zero past n): a panel's 16 column pairs of 16 rows, or a tile's 16 pairs of 16 tokens.
inline void dword_transpose16(const uint8_t* src, size_t stride, int64_t n, uint32_t* dst) {
  __m512i v[16];
  for (int64_t r = 0; r < 16; ++r)
    v[r] = r < n ? _mm512_loadu_si512(src + size_t(r) * stride) : _mm512_setzero_si512();
  transpose16(v);
  for (int c = 0; c < 16; ++c) _mm512_store_si512(dst + 16 * c, v[c]);
}

template <int T>
__attribute__((target(MINFER_ISA_AVX512VNNI ",avx512bf16"))) inline void bpanel_tile(const uint32_t* pan, int64_t np, const uint32_t* xt,
                                                               __mmask16 rows, float* y, int64_t ldy) {
  __m512 tot[T], acc[T];
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_ps();
  constexpr int64_t kBlockPairs = kFPanelBlock / 2;
  for (int64_t p0 = 0; p0 < np; p0 += kBlockPairs) {
    const int64_t p1 = std::min(np, p0 + kBlockPairs);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t p = p0; p < p1; ++p) {
      const __m512bh w = (__m512bh)_mm512_load_si512(pan + 16 * p);
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t)
        acc[t] = _mm512_dpbf16_ps(acc[t], w, (__m512bh)_mm512_set1_epi32(int(xt[kBTile * p + t])));
    }
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) tot[t] = _mm512_add_ps(tot[t], acc[t]);
  }
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, rows, tot[t]);
}

// Two groups x 8 tokens, where 16 tokens of one group loaded a panel vector and broadcast a
// token pair per vdpbf16ps: each broadcast now feeds two, with as many sums in flight (16), and
// the per-block totals wait in L1 (fpanel_tile2); bpanel_tile's order. AMD Zen 5 one core,
// Gemm128_BF16 3072 x 1024 271-333 -> 321-358 GOP/s; qwen3-0.6b BF16 pp128 2 threads 412-503 ->
// 530-557 t/s (alternating; one outlier at 326).
template <int T>
__attribute__((target(MINFER_ISA_AVX512VNNI ",avx512bf16"))) inline void bpanel_tile2(const uint32_t* p0, const uint32_t* p1, int64_t np,
                                                                const uint32_t* xt, __mmask16 rm0, __mmask16 rm1,
                                                                float* y0, float* y1, int64_t ldy) {
  alignas(64) float tot[2][T][16];
  __m512 acc0[T], acc1[T];
  constexpr int64_t kBlockPairs = kFPanelBlock / 2;
  for (int64_t q0 = 0; q0 < np; q0 += kBlockPairs) {
    const int64_t q1 = std::min(np, q0 + kBlockPairs);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
    for (int64_t p = q0; p < q1; ++p) {
      const __m512bh w0 = (__m512bh)_mm512_load_si512(p0 + 16 * p), w1 = (__m512bh)_mm512_load_si512(p1 + 16 * p);
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const __m512bh xv = (__m512bh)_mm512_set1_epi32(int(xt[kBTile * p + t]));
        acc0[t] = _mm512_dpbf16_ps(acc0[t], w0, xv);
        acc1[t] = _mm512_dpbf16_ps(acc1[t], w1, xv);
      }
    }
    pair_totals<T>(tot, acc0, acc1, q0 == 0);
  }
  pair_store<T>(tot, rm0, rm1, y0, y1, ldy);
}

// Short calls (decode): vdpbf16ps on the GGUF rows as they are, 32 columns an instruction and no
// widening, in f512_tile's order: four sums per output, columns 32 c of every 128 into sum c (the
// rest into sum 0, under a mask), R x T at most 2 x 2; one token takes its rows one at a time, as
// row_stream_tiles does. qwen3-0.6b BF16 tg64, 2 threads: see PERFORMANCE.md (session 19).
template <int R, int T>
__attribute__((target(MINFER_ISA_AVX512VNNI ",avx512bf16"))) inline void brow_tile(const Tile& a, int64_t r0, int64_t t0) {
  __m512 acc[R][T][4];
  const uint8_t* wr[R];
  const uint8_t* xr[T];
  for (int r = 0; r < R; ++r) wr[r] = a.w + size_t(r0 + r) * a.ws;
  for (int t = 0; t < T; ++t) xr[t] = a.x + size_t(t0 + t) * a.xs;
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < 4; ++c) acc[r][t][c] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 128 <= a.n; i += 128)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m512bh xv[T];
      for (int t = 0; t < T; ++t) xv[t] = (__m512bh)_mm512_loadu_si512(xr[t] + 2 * (i + 32 * c));
      for (int r = 0; r < R; ++r) {
        const __m512bh wv = (__m512bh)_mm512_loadu_si512(wr[r] + 2 * (i + 32 * c));
        for (int t = 0; t < T; ++t) acc[r][t][c] = _mm512_dpbf16_ps(acc[r][t][c], wv, xv[t]);
      }
    }
  for (; i < a.n; i += 32) {
    const __mmask32 k = a.n - i >= 32 ? ~__mmask32(0) : __mmask32((1u << (a.n - i)) - 1u);
    __m512bh xv[T];
    for (int t = 0; t < T; ++t) xv[t] = (__m512bh)_mm512_maskz_loadu_epi16(k, xr[t] + 2 * i);
    for (int r = 0; r < R; ++r) {
      const __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(k, wr[r] + 2 * i);
      for (int t = 0; t < T; ++t) acc[r][t][0] = _mm512_dpbf16_ps(acc[r][t][0], wv, xv[t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      a.y[(t0 + t) * a.ldy + r0 + r] = _mm512_reduce_add_ps(
          _mm512_add_ps(_mm512_add_ps(acc[r][t][0], acc[r][t][1]), _mm512_add_ps(acc[r][t][2], acc[r][t][3])));
}

__attribute__((target(MINFER_ISA_AVX512VNNI ",avx512bf16"))) void brow_gemm(int64_t n, const uint8_t* w, size_t ws, int64_t nr,
                                                      const uint8_t* x, size_t xs, int64_t nt, float* y,
                                                      int64_t ldy) {
  const Tile a{n, w, ws, x, xs, y, ldy};
  int64_t t0 = 0;
  for (; t0 + 2 <= nt; t0 += 2) {
    int64_t r0 = 0;
    for (; r0 + 2 <= nr; r0 += 2) brow_tile<2, 2>(a, r0, t0);
    for (; r0 < nr; ++r0) brow_tile<1, 2>(a, r0, t0);
  }
  for (; t0 < nt; ++t0)
    for (int64_t r0 = 0; r0 < nr; ++r0) brow_tile<1, 1>(a, r0, t0);
}

// Prompts: rows of whole 32-column pieces only (every model's); the others go to fpanel_gemm.
__attribute__((target(MINFER_ISA_AVX512VNNI ",avx512bf16"))) void bpanel_gemm(GgmlType t, int64_t n, const uint8_t* w, size_t ws,
                                                        int64_t nr, const uint8_t* x, size_t xs, int64_t nt,
                                                        float* y, int64_t ldy) {
  if (nt < kFloatPanelTokens) {
    brow_gemm(n, w, ws, nr, x, xs, nt, y, ldy);
    return;
  }
  if (n % 32 != 0) {
    fpanel_gemm<Load512BF16>(t, n, w, ws, nr, x, xs, nt, y, ldy);
    return;
  }
  const int64_t np = n / 2, ntiles = (nt + kBTile - 1) / kBTile;
  uint32_t* xi = reinterpret_cast<uint32_t*>(scratch(0, size_t(ntiles * np) * 4 * kBTile));
  for (int64_t g = 0; g < ntiles; ++g) {
    uint32_t* o = xi + g * np * kBTile;
    const int64_t tn = std::min(kBTile, nt - g * kBTile);
    for (int64_t p = 0; p < np; p += 16)
      dword_transpose16(x + size_t(g * kBTile) * xs + 4 * p, xs, tn, o + kBTile * p);
  }
  uint32_t* pan = reinterpret_cast<uint32_t*>(scratch(1, size_t(np) * 64 * 2));  // (two: bpanel_tile2)
  uint32_t* pan1 = pan + 16 * np;
  auto fill = [&](int64_t r0, uint32_t* pn) {
    const int rows = int(std::min<int64_t>(16, nr - r0));
    for (int64_t k = 0; k < n; k += 32) dword_transpose16(w + size_t(r0) * ws + 2 * k, ws, rows, pn + 8 * k);
    return __mmask16((1u << rows) - 1);
  };
  // Tails stay inside their tile of 16 (t0 % 16 + T <= 16).
  auto xt = [&](int64_t t0) { return xi + (t0 / kBTile) * np * kBTile + t0 % kBTile; };
  int64_t r0 = 0;
  for (; r0 + 16 < nr; r0 += 32) {
    const __mmask16 rm0 = fill(r0, pan), rm1 = fill(r0 + 16, pan1);
    int64_t t0 = 0;
    for (; t0 + 8 <= nt; t0 += 8) bpanel_tile2<8>(pan, pan1, np, xt(t0), rm0, rm1, y + t0 * ldy + r0, y + t0 * ldy + r0 + 16, ldy);
    for (; t0 + 4 <= nt; t0 += 4) bpanel_tile2<4>(pan, pan1, np, xt(t0), rm0, rm1, y + t0 * ldy + r0, y + t0 * ldy + r0 + 16, ldy);
    for (; t0 < nt; ++t0) bpanel_tile2<1>(pan, pan1, np, xt(t0), rm0, rm1, y + t0 * ldy + r0, y + t0 * ldy + r0 + 16, ldy);
  }
  for (; r0 < nr; r0 += 16) {
    const __mmask16 rm = fill(r0, pan);
    int64_t t0 = 0;
    for (; t0 + 16 <= nt; t0 += 16) bpanel_tile<16>(pan, np, xt(t0), rm, y + t0 * ldy + r0, ldy);
    for (; t0 + 8 <= nt; t0 += 8) bpanel_tile<8>(pan, np, xt(t0), rm, y + t0 * ldy + r0, ldy);
    for (; t0 + 4 <= nt; t0 += 4) bpanel_tile<4>(pan, np, xt(t0), rm, y + t0 * ldy + r0, ldy);
    for (; t0 < nt; ++t0) bpanel_tile<1>(pan, np, xt(t0), rm, y + t0 * ldy + r0, ldy);
  }
}

}  // namespace

bool dot_tile_avx512_uses_amx(GgmlType t) {
  return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K || t == GgmlType::Q3_K ||
         t == GgmlType::Q2_K;
}
bool dot_tile_avx512_uses_bf16(GgmlType t) { return t == GgmlType::BF16 && avx512_bf16(); }

PackedGemmFn packed_kq_gemm_avx512(GgmlType t, bool amx) {
  switch (t) {
    case GgmlType::Q4_K: return amx ? &kp_gemm<GgmlType::Q4_K, KQ4, true> : &kp_gemm<GgmlType::Q4_K, KQ4, false>;
    case GgmlType::Q5_K: return amx ? &kp_gemm<GgmlType::Q5_K, KQ5, true> : &kp_gemm<GgmlType::Q5_K, KQ5, false>;
    case GgmlType::Q6_K: return amx ? &kp_gemm<GgmlType::Q6_K, Q6KPanel, true> : &kp_gemm<GgmlType::Q6_K, Q6KPanel, false>;
    case GgmlType::Q3_K: return amx ? &kp_gemm<GgmlType::Q3_K, Q6KPanel, true> : &kp_gemm<GgmlType::Q3_K, Q6KPanel, false>;
    case GgmlType::Q2_K: return amx ? &kp_gemm<GgmlType::Q2_K, Q2KPanel, true> : &kp_gemm<GgmlType::Q2_K, Q2KPanel, false>;
    case GgmlType::IQ4_XS: return amx ? nullptr : &kp_gemm<GgmlType::IQ4_XS, Off128Panel, false>;
    case GgmlType::IQ3_S: return amx ? nullptr : &kp_gemm<GgmlType::IQ3_S, Off128Panel, false>;
    case GgmlType::IQ3_XXS: return amx ? nullptr : &kp_gemm<GgmlType::IQ3_XXS, Off128Panel, false>;
    default: return nullptr;
  }
}

VsumFn vsum_avx512() { return &vsum512; }

DotTileFn dot_tile_avx512(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return &row_stream_tiles<F512K<Load512F32, 1>, 4, 4>;
    case GgmlType::F16: return &fpanel_gemm<Load512F16>;
    case GgmlType::BF16: return dot_tile_avx512_uses_bf16(t) ? &bpanel_gemm : &fpanel_gemm<Load512BF16>;
    case GgmlType::Q8_0: return q8_gemm<DecQ8_0, 4, 4>;
    case GgmlType::Q4_0: return q8_gemm<DecQ4_0, 4, 4>;
    case GgmlType::Q5_0: return q8_gemm<DecQ5_0, 4, 4>;
    case GgmlType::IQ4_NL: return q8_gemm<DecIQ4NL, 4, 4>;
    case GgmlType::Q1_0: return q8_tiles<DecQ1_0, 4, 4>;
    case GgmlType::Q2_0: return q8_tiles<DecQ2_0, 4, 4>;
    case GgmlType::MXFP4: return q8_tiles<DecMXFP4, 4, 4>;
    case GgmlType::NVFP4: return q8_tiles<DecNVFP4, 4, 4>;
    case GgmlType::Q4_1: return q81_tiles<DecQ4_1, 4, 4>;
    case GgmlType::Q5_1: return q81_tiles<DecQ5_1, 4, 4>;
    case GgmlType::Q4_K: return kq_gemm<KQ4>;
    case GgmlType::Q5_K: return kq_gemm<KQ5>;
    case GgmlType::Q6_K: return kq_gemm<Q6KPanel>;
    case GgmlType::Q3_K: return kq_gemm<Q6KPanel>;  // prompts on Q6_K's panels, decode q3k_gemv_row
    case GgmlType::Q2_K: return kq_gemm<Q2KPanel>;  // decode q2k_gemv_row
    case GgmlType::IQ4_XS: return kq_gemm<Off128Panel>;  // decode iq4xs_gemv
    // The lattice i-quants: prompts on the offset panels, one token on the 256-bit tiles.
    case GgmlType::IQ2_XXS:
    case GgmlType::IQ3_XXS:
    case GgmlType::IQ3_S:
    case GgmlType::IQ1_S: return kq_gemm<Off128Panel>;
    case GgmlType::IQ2_XS:
    case GgmlType::IQ2_S:
    case GgmlType::IQ1_M: return kq_gemm<Off128Sub16Panel>;
    // The ternary types: prompts on the offset panels (scales 1), one token tq_gemv.
    case GgmlType::TQ1_0:
    case GgmlType::TQ2_0: return kq_gemm<Off128Panel>;
    default: return nullptr;
  }
}

}  // namespace minfer::cpu

MINFER_ISA_END()
#else
namespace minfer::cpu {
DotTileFn dot_tile_avx512(GgmlType) { return nullptr; }
VsumFn vsum_avx512() { return nullptr; }
bool dot_tile_avx512_uses_amx(GgmlType) { return false; }
bool dot_tile_avx512_uses_bf16(GgmlType) { return false; }
PackedGemmFn packed_kq_gemm_avx512(GgmlType, bool) { return nullptr; }
}  // namespace minfer::cpu
#endif
