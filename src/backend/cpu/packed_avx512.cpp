// The packed-layout matmul kernels (packed_gemm.h) on AVX-512 VNNI, and on AMX for prefill.
// Per group of 16 rows and block: 8 zmm of unsigned quants (Q4_0: 4 zmm, split into low and
// high nibbles; Q5_0: the same plus the fifth bits added under a byte mask; IQ4_NL, MXFP4, NVFP4:
// Q4_0's nibbles looked up in their tables; NVFP4 sums its 16-column halves apart); per token, 8 vpdpbusd with 4 activation bytes broadcast, starting from the
// offset correction, then one convert and one FMA for 16 outputs. AMX computes the same
// 16 tokens x 16 rows x 32 integer sums with one tile product (TDPBSSD, on the quants converted
// to signed bytes once per call), stored and then scaled exactly as above.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/packed_gemm.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/scratch.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "backend/cpu/isa_target.h"

MINFER_ISA_BEGIN(MINFER_ISA_AVX512VNNI)
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "backend/cpu/avx512_vnni.h"

namespace minfer::cpu {
namespace {

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// The packed types: quant bytes per group block, offset, and the unsigned quants of a block
// as 8 zmm (chunk k: columns 4k..4k+3 of the 16 rows).
struct PQ8 : PackedQuants<512> {
  static constexpr GgmlType kType = GgmlType::Q8_0;
  static constexpr size_t kBytes = 512;
  static constexpr int kOffset = 128;
  static constexpr bool kDecode = false;
  static void load(const uint8_t* q, __m512i* w) {
    for (int k = 0; k < 8; ++k) w[k] = _mm512_load_si512(q + 64 * k);
  }
};
struct PQ4 : PackedQuants<256> {
  static constexpr GgmlType kType = GgmlType::Q4_0;
  static constexpr size_t kBytes = 256;
  static constexpr int kOffset = 8;
  static constexpr bool kDecode = true;  // prefill splits the nibbles once per call
  static void load(const uint8_t* q, __m512i* w) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int k = 0; k < 4; ++k) {
      const __m512i v = _mm512_load_si512(q + 64 * k);
      w[k] = _mm512_and_si512(v, m4);
      w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    }
  }
};
// Q5_0: Q4_0's nibbles, then one 64-bit mask per chunk holding the fifth bits (byte lane order).
struct PQ5 : PackedQuants<320> {
  static constexpr GgmlType kType = GgmlType::Q5_0;
  static constexpr size_t kBytes = 320;
  static constexpr int kOffset = 16;
  static constexpr bool kDecode = true;  // prefill decodes the fifth bits once per call
  static void load(const uint8_t* q, __m512i* w) {
    PQ4::load(q, w);
    const __m512i h = _mm512_set1_epi8(0x10);
    for (int k = 0; k < 8; ++k) {
      uint64_t m;
      __builtin_memcpy(&m, q + 256 + 8 * k, 8);
      w[k] = _mm512_mask_add_epi8(w[k], _cvtu64_mask64(m), w[k], h);
    }
  }
};

// Q1_0: its sign bits' masks as bytes u = 2 bit (offset 1: the weights u - 1 = +-1).
struct PQ1 : PackedQuants<64> {
  static constexpr GgmlType kType = GgmlType::Q1_0;
  static constexpr size_t kBytes = 64;
  static constexpr int kOffset = 1;
  static constexpr bool kDecode = true;  // prefill expands the bits once per call
  static void load(const uint8_t* q, __m512i* w) {
    for (int k = 0; k < 8; ++k) {
      uint64_t m;
      __builtin_memcpy(&m, q + 8 * k, 8);
      w[k] = _mm512_maskz_mov_epi8(_cvtu64_mask64(m), _mm512_set1_epi8(2));
    }
  }
};

// Q2_0: its 2-bit q (offset 1) from two vectors of fields, chunk k at bits 2 (k % 4) of vector k / 4.
struct PQ2 : PackedQuants<128> {
  static constexpr GgmlType kType = GgmlType::Q2_0;
  static constexpr size_t kBytes = 128;
  static constexpr int kOffset = 1;
  static constexpr bool kDecode = true;  // prefill takes the fields apart once per call
  static void load(const uint8_t* q, __m512i* w) {
    const __m512i m3 = _mm512_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
      const __m512i v = _mm512_load_si512(q + 64 * h);
      w[4 * h] = _mm512_and_si512(v, m3);
      w[4 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 2), m3);
      w[4 * h + 2] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m3);
      w[4 * h + 3] = _mm512_and_si512(_mm512_srli_epi16(v, 6), m3);
    }
  }
};

// Q4_1, Q5_1: Q4_0's and Q5_0's quants as they are (0..15, 0..31: offset 0); their blocks' mins
// sit beside the scales (repack.h), and the kernels add m x s per block.
template <class P0, GgmlType T>
struct PMins : PackedQuants<P0::kBytes, packed_head_bytes(T)> {
  static constexpr GgmlType kType = T;
  static constexpr size_t kBytes = P0::kBytes;
  static constexpr int kOffset = 0;
  static constexpr bool kDecode = P0::kDecode;
  static void load(const uint8_t* q, __m512i* w) { P0::load(q, w); }
};
using PQ41 = PMins<PQ4, GgmlType::Q4_1>;
using PQ51 = PMins<PQ5, GgmlType::Q5_1>;

// IQ4_NL, MXFP4, NVFP4: Q4_0's nibbles, each looked up in the type's table + its offset (IQ4_NL
// kvalues_iq4nl + 128, 1..241; the FP4 types kvalues_fp4 + 12, 0..24), unsigned for vpdpbusd,
// which sums its 4 products in int32 (AVX2's maddubs would saturate its int16 pairs on IQ4_NL's,
// so packed_256.h takes those signed, in sign form).
template <GgmlType T>
struct PLookup : PackedQuants<256> {
  static constexpr GgmlType kType = T;
  static constexpr size_t kBytes = 256;
  static constexpr int kOffset = T == GgmlType::IQ4_NL ? 128 : 12;
  static constexpr bool kDecode = true;  // prefill looks the values up once per call
  static void load(const uint8_t* q, __m512i* w) {
    const int8_t* values = T == GgmlType::IQ4_NL ? quant::kvalues_iq4nl : quant::kvalues_fp4;
    alignas(16) uint8_t v[16];
    for (int i = 0; i < 16; ++i) v[i] = uint8_t(values[i] + kOffset);
    const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(v)));
    PQ4::load(q, w);
    for (int k = 0; k < 8; ++k) w[k] = _mm512_shuffle_epi8(table, w[k]);
  }
};
using PIQ4 = PLookup<GgmlType::IQ4_NL>;
using PMX4 = PLookup<GgmlType::MXFP4>;
using PNV4 = PLookup<GgmlType::NVFP4>;

// The 16 rows' scales of a block from its scale line (F16; BF16 where packed_bf16_scales; the
// split types: UE4M3 codes of the block's first half, those of its second 16 bytes on).
template <GgmlType T>
inline __m512 row_scales(const uint8_t* sc) {
  if constexpr (packed_split_halves(T)) {
    const __m512i v = _mm512_slli_epi32(_mm512_cvtepu8_epi32(_mm_load_si128((const __m128i*)sc)), 20);
    return _mm512_mul_ps(_mm512_castsi512_ps(v), _mm512_set1_ps(kUe4m3Bias));
  }
  const __m256i h = _mm256_load_si256((const __m256i*)sc);
  if constexpr (packed_bf16_scales(T))
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  else
    return _mm512_cvtph_ps(h);
}

// A group's blocks as P::load() returns them (unsigned bytes, 512 a block), decoded once per
// prefill call into a panel and loaded as they are by every token tile (the scales stay in the
// group).
template <class P>
struct Decoded {
  static constexpr GgmlType kType = P::kType;
  static constexpr size_t kBytes = 512;
  static constexpr size_t kGroupBytes = P::kBytes;
  static constexpr size_t kHeadBytes = P::kHeadBytes;
  static constexpr int kOffset = P::kOffset;
  static const uint8_t* quants(const uint8_t*, const uint8_t* pan, int64_t b) { return pan + 512 * size_t(b); }
  static void load(const uint8_t* q, __m512i* w) { PQ8::load(q, w); }
  static void decode(const uint8_t* grp, int64_t nb, uint8_t* out) {
    for (int64_t b = 0; b < nb; ++b) {
      __m512i w[8];
      P::load(P::quants(grp, nullptr, b), w);
      for (int k = 0; k < 8; ++k) _mm512_store_si512(out + 512 * b + 64 * k, w[k]);
    }
  }
};

// T tokens (from t0, in activation tiles of TS) x one group grp: quants P::quants(grp, pan, b),
// scales in grp. Chunks outer, tokens inner: the T integer sums are T independent chains, so
// each vpdpbusd waits on one issued T instructions earlier, not on the one before it
// (token-outer, as two chains of 4 a token, with the activations in token-major rows: one core,
// Q8_0 3072 x 1024 x 128, 328 GOP/s; this order on the activation tiles: 473). prefetch: a
// one-token tile fetches the group's stream ahead (decode_prefetch).
template <class P, int T, int TS = kActTile>
inline void vnni_tile(const uint8_t* grp, const uint8_t* pan, int64_t nb, const PackedAct& x,
                      int64_t t0, float* y, int64_t ldy, bool prefetch = false) {
  static_assert(TS % T == 0);  // t0 is a multiple of T: the T tokens share a tile
  constexpr bool kSplit = packed_split_halves(P::kType);
  const size_t a0 = act_index(t0, 0, nb, TS);
  const uint8_t* xq = x.tq + 32 * a0;
  const float* xd = x.d + a0;
  const int32_t* xc = x.c + a0;
  __m512 acc[T];
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q = P::quants(grp, pan, b);
    const uint8_t* sc = grp + packed_scales_at(P::kGroupBytes, b, P::kHeadBytes);  // an even b's: its pair's start
    if constexpr (T == 1)  // decode: each pair of blocks fetches the group's stream that far ahead
      if (prefetch && b % 2 == 0 && !pan)
        for (size_t l = 0; l < packed_pair_bytes(P::kGroupBytes, P::kHeadBytes); l += 64)
          _mm_prefetch((const char*)(sc + packed_prefetch(P::kType) + l), _MM_HINT_T2);
    const __m512 dw = row_scales<P::kType>(sc);
    const uint8_t* xb = xq + 32 * TS * b;
    __m512i s[T], sh[T];  // sh: the split types' second half (chunks 4-7)
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) s[t] = _mm512_set1_epi32(xc[TS * b + t]);
    if constexpr (kSplit)
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) sh[t] = _mm512_set1_epi32(x.ch[a0 + TS * b + t]);
    if constexpr (T == 1 && (std::is_same_v<P, PQ4> || std::is_same_v<P, PQ41>)) {  // packed nibbles
      // Decode: the high nibbles in place into a second sum (dpbusd_nibbles).
      __m512i hi = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k)
        dpbusd_nibbles(s[0], hi, _mm512_load_si512(q + 64 * k), xb + 4 * k, xb + 16 + 4 * k);
      s[0] = _mm512_add_epi32(s[0], _mm512_srai_epi32(hi, 4));
    } else {
      __m512i w[8];
      P::load(q, w);
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k)
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) dpbusd_bcast(kSplit && k >= 4 ? sh[t] : s[t], w[k], xb + 32 * t + 4 * k);
    }
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t)
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[t]),
                               _mm512_mul_ps(dw, _mm512_set1_ps(xd[TS * b + t])), acc[t]);
    if constexpr (kSplit) {
      const __m512 dh = row_scales<P::kType>(sc + 16);
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t)
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sh[t]), _mm512_mul_ps(dh, _mm512_set1_ps(xd[TS * b + t])), acc[t]);
    }
    if constexpr (packed_has_mins(P::kType)) {  // + m x s
      const __m512 mw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(sc + 64)));
      const float* xm = x.s + a0;
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) acc[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(xm[TS * b + t]), acc[t]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + (t0 + t) * ldy, acc[t]);
}

// Two groups x T tokens of a plain layout (Q8_0's, or a decoded panel): each activation word is
// broadcast once into a register for both groups' vpdpbusd, where vnni_tile's 8 tokens x one
// group broadcast it from memory for each (89 loads per 80 vector-pipe uops a block, now 58 per
// 80); each output sums in vnni_tile's order. AMD Zen 5 one core, Gemm128Packed 3072 x 1024:
// Q4_0 538-551 -> 578-602 GOP/s, Q8_0 531-560 -> 571-607; qwen2.5-0.5b Q4_0 pp128 2 threads
// 1105-1149 -> 1138-1207 t/s, qwen3-0.6b Q8_0 769-852 -> 862-904.
template <class P, int T, int TS = kActTile>
inline void vnni_tile2(const uint8_t* g0, const uint8_t* g1, const uint8_t* p0, const uint8_t* p1, int64_t nb,
                       const PackedAct& x, int64_t t0, float* y0, float* y1, int64_t ldy) {
  constexpr bool kSplit = packed_split_halves(P::kType);
  const size_t a0 = act_index(t0, 0, nb, TS);
  const uint8_t* xq = x.tq + 32 * a0;
  const float* xd = x.d + a0;
  const int32_t* xc = x.c + a0;
  __m512 acc0[T], acc1[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q0 = P::quants(g0, p0, b);
    const uint8_t* q1 = P::quants(g1, p1, b);
    const __m512 dw0 = row_scales<P::kType>(g0 + packed_scales_at(P::kGroupBytes, b, P::kHeadBytes));
    const __m512 dw1 = row_scales<P::kType>(g1 + packed_scales_at(P::kGroupBytes, b, P::kHeadBytes));
    const uint8_t* xb = xq + 32 * TS * b;
    __m512i s0[T], s1[T], h0[T], h1[T];  // h0, h1: the split types' second halves (chunks 4-7)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) s0[t] = s1[t] = _mm512_set1_epi32(xc[TS * b + t]);
    if constexpr (kSplit)
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) h0[t] = h1[t] = _mm512_set1_epi32(x.ch[a0 + TS * b + t]);
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const __m512i w0 = _mm512_load_si512(q0 + 64 * k), w1 = _mm512_load_si512(q1 + 64 * k);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m512i a = _mm512_set1_epi32(load_i32(xb + 32 * t + 4 * k));
        __m512i& u0 = kSplit && k >= 4 ? h0[t] : s0[t];
        __m512i& u1 = kSplit && k >= 4 ? h1[t] : s1[t];
        u0 = _mm512_dpbusd_epi32(u0, w0, a);
        u1 = _mm512_dpbusd_epi32(u1, w1, a);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m512 dx = _mm512_set1_ps(xd[TS * b + t]);
      acc0[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0[t]), _mm512_mul_ps(dw0, dx), acc0[t]);
      acc1[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1[t]), _mm512_mul_ps(dw1, dx), acc1[t]);
    }
    if constexpr (kSplit) {
      const __m512 dh0 = row_scales<P::kType>(g0 + packed_scales_at(P::kGroupBytes, b, P::kHeadBytes) + 16);
      const __m512 dh1 = row_scales<P::kType>(g1 + packed_scales_at(P::kGroupBytes, b, P::kHeadBytes) + 16);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m512 dx = _mm512_set1_ps(xd[TS * b + t]);
        acc0[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(h0[t]), _mm512_mul_ps(dh0, dx), acc0[t]);
        acc1[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(h1[t]), _mm512_mul_ps(dh1, dx), acc1[t]);
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    _mm512_storeu_ps(y0 + (t0 + t) * ldy, acc0[t]);
    _mm512_storeu_ps(y1 + (t0 + t) * ldy, acc1[t]);
  }
}

// The next groups of a decoded call (bytes at p; none when p is null), whose blocks their decode
// would otherwise wait for: fetched into L2 a slice before each of the current group's `tiles`
// token tiles.
class SlicedFetch {
 public:
  SlicedFetch(const uint8_t* p, size_t bytes, int64_t tiles)
      : p_(p), bytes_(p ? bytes : 0), slice_(p ? (bytes / size_t(tiles + 1) + 63) & ~size_t(63) : 0) {}
  void next_slice() {
    for (const size_t end = std::min(bytes_, done_ + slice_); done_ < end; done_ += 64)
      _mm_prefetch((const char*)(p_ + done_), _MM_HINT_T2);
  }

 private:
  const uint8_t* p_;
  size_t bytes_, slice_, done_ = 0;
};

// next (when not null): next_bytes fetched while the 8-token tiles run (SlicedFetch): the next
// group of a decoded call.
template <class P>
inline void vnni_group(const uint8_t* grp, const uint8_t* pan, int64_t nb, const PackedAct& x,
                       int64_t t0, int64_t nt, float* y, int64_t ldy, const uint8_t* next = nullptr,
                       size_t next_bytes = 0) {
  SlicedFetch fetch(next, next_bytes, (nt - t0) / (packed_split_halves(P::kType) ? 4 : 8));
  // (the split types' second sums would not leave 8 tokens' registers: 4 at a time)
  if constexpr (!packed_split_halves(P::kType))
    for (; t0 + 8 <= nt; t0 += 8) {
      fetch.next_slice();
      vnni_tile<P, 8>(grp, pan, nb, x, t0, y, ldy);
    }
  for (; t0 + 4 <= nt; t0 += 4) {
    if constexpr (packed_split_halves(P::kType)) fetch.next_slice();
    vnni_tile<P, 4>(grp, pan, nb, x, t0, y, ldy);
  }
  const bool prefetch = t0 < nt && decode_prefetch(DecodeStream::Blocks);
  for (; t0 < nt; ++t0)
    x.tile == 1 ? vnni_tile<P, 1, 1>(grp, pan, nb, x, t0, y, ldy, prefetch)
                : vnni_tile<P, 1>(grp, pan, nb, x, t0, y, ldy, prefetch);
}

// Groups g0 and g1 (y, y + 16) for all nt tokens: 4-token pair tiles, the rest one token a group.
// next: as vnni_group's, fetched a slice before each pair tile.
template <class P>
inline void vnni_pair(const uint8_t* g0, const uint8_t* g1, const uint8_t* p0, const uint8_t* p1, int64_t nb,
                      const PackedAct& x, int64_t nt, float* y, int64_t ldy, const uint8_t* next = nullptr,
                      size_t next_bytes = 0) {
  SlicedFetch fetch(next, next_bytes, nt / 4);
  int64_t t0 = 0;
  for (; t0 + 4 <= nt; t0 += 4) {
    fetch.next_slice();
    vnni_tile2<P, 4>(g0, g1, p0, p1, nb, x, t0, y, y + 16, ldy);
  }
  for (; t0 < nt; ++t0) {
    vnni_tile<P, 1>(g0, p0, nb, x, t0, y, ldy);
    vnni_tile<P, 1>(g1, p1, nb, x, t0, y + 16, ldy);
  }
}

// From this many tokens Q4_0's and Q5_0's blocks are decoded once per group (Decoded), not once
// per token tile: each 8-token tile then loads 8 zmm and spends no vector-port uops on the
// nibbles (12 of the tile's 100 per block for Q4_0, while the loads ports had room). One core,
// 3072 x 1024 x 128: Q5_0 269 -> 324 GOP/s, Q4_0 461 -> 474 (median of 6); 1024 x 3072 (the
// decoded group past L1): Q5_0 259 -> 298, Q4_0 unchanged.
constexpr int64_t kDecodeOnceTokens = 16;

// A decoded pair tile fetches the next pair's groups while it runs (vnni_pair's next), when they
// are at most this long, so that their decode does not wait on memory: AMD Zen 5, one core,
// Gemm128PackedCold Q4_0 GOP/s, 1152 x 896 528-554 -> 569-573, 896 x 896 520-544 -> 559-579,
// 4096 x 1024 545-553 -> 564-586, 9728 x 896 541-565 -> 569-577; 896 x 4864 (87 KiB a pair)
// 509-535 -> 497-525, so not there. Q8_0's pairs (read in place, no decode) measured slower
// with it (qwen3-0.6b Q8_0 pp128 -2 to -8 %).
constexpr size_t kPairPrefetchMax = 64 << 10;

template <class P>
void gemm_vnni(GgmlType, const uint8_t* wp, int64_t n_groups, int64_t nb, const PackedAct& x,
               int64_t nt, float* y, int64_t ldy) {
  const size_t gb = packed_group_bytes(P::kType, nb * 32);
  uint8_t* pan = nullptr;
  if (P::kDecode && nt >= kDecodeOnceTokens) pan = thread_scratch(ScratchSlot::PackedPanel, size_t(nb) * 512 * 2);  // (a pair)
  int64_t g = 0;
  // Pairs of groups where the blocks are plain bytes (the _1 types' mins keep the one-group tile).
  constexpr bool plain = std::is_same_v<P, PQ8>;
  if ((pan || plain) && !packed_has_mins(P::kType) && nt >= 4) {
    uint8_t* pan1 = pan ? pan + size_t(nb) * 512 : nullptr;
    for (; g + 1 < n_groups; g += 2) {
      const uint8_t* g0 = wp + size_t(g) * gb;
      if (pan) {
        // The groups after this pair (a pair, or the last one alone), fetched while it runs for
        // their decode, unless they are long rows (kPairPrefetchMax).
        const size_t next_bytes = std::min<int64_t>(2, n_groups - g - 2) * gb;
        const uint8_t* next = g + 2 < n_groups && next_bytes <= kPairPrefetchMax ? g0 + 2 * gb : nullptr;
        Decoded<P>::decode(g0, nb, pan);
        Decoded<P>::decode(g0 + gb, nb, pan1);
        vnni_pair<Decoded<P>>(g0, g0 + gb, pan, pan1, nb, x, nt, y + 16 * g, ldy, next, next_bytes);
      } else if constexpr (plain) {
        vnni_pair<P>(g0, g0 + gb, nullptr, nullptr, nb, x, nt, y + 16 * g, ldy);
      }
    }
  }
  for (; g < n_groups; ++g) {
    const uint8_t* grp = wp + size_t(g) * gb;
    if (pan) {
      Decoded<P>::decode(grp, nb, pan);
      vnni_group<Decoded<P>>(grp, pan, nb, x, 0, nt, y + 16 * g, ldy, g + 1 < n_groups ? grp + gb : nullptr, gb);
    } else {
      vnni_group<P>(grp, nullptr, nb, x, 0, nt, y + 16 * g, ldy);
    }
  }
}

// ---- AMX ------------------------------------------------------------------------------------
// Per 16-row group and 16-token tile, per block: one activation tile (16 tokens x 32 bytes), one
// weight tile (8 rows of 16 x 4 signed bytes), one product (TDPBSSD) into an int32 tile, stored
// and scaled into 16 float accumulators held in registers. Successive blocks rotate through
// four int32 tiles and two tiles of each operand, and block b's epilogue runs after block b + 2's
// product is issued, so no tile waits on the stores or loads of the block before it. (The tile
// unit and the 512-bit vector ops did not run at the same time on the AMX Xeon measured: what
// is saved is the epilogue's float accumulators kept in L1, 2 loads and a store a row, and the
// waits.)

// Tiles 0-3: int32 sums of block b at b % 4; 4, 5: activations, 6, 7: weights, at b % 2.
constexpr AmxTileConfig kTileConfig = {
    1, 0, {}, {64, 64, 64, 64, 32, 32, 64, 64}, {16, 16, 16, 16, 16, 16, 8, 8}};

// The group's quants as signed bytes in 512-byte blocks (AMX multiplies bytes; signed weights
// need no offset correction).
template <class P>
inline void signed_panel(const uint8_t* grp, int64_t nb, uint8_t* out) {
  for (int64_t b = 0; b < nb; ++b) {
    __m512i w[8];
    P::load(P::quants(grp, nullptr, b), w);
    const __m512i k = _mm512_set1_epi8(char(P::kOffset));  // u - 128 is u ^ 0x80 for Q8_0
    for (int i = 0; i < 8; ++i) _mm512_store_si512(out + 512 * b + 64 * i, _mm512_sub_epi8(w[i], k));
  }
}

// One 16-token tile (activation blocks xa, scales xd: 16 a block) x one group (signed quants
// at panel, scales at grp, qb quant bytes a block) into y. (The steps are lambdas over a local
// array, fully unrolled, so that the accumulators stay in registers.)
__attribute__((target(MINFER_ISA_AVX512VNNI ",amx-tile,amx-int8"))) void amx_tile(const uint8_t* panel, const uint8_t* grp,
                                                           size_t qb, int64_t nb, const uint8_t* xa,
                                                           const float* xd, int32_t* sums, float* y,
                                                           int64_t ldy) {
  __m512 acc[16];
#pragma GCC unroll 16
  for (int m = 0; m < 16; ++m) acc[m] = _mm512_setzero_ps();
  // acc[m] += float(sums of block b, token m) * (d_w * d_x[m]).
  const auto epilogue = [&](int64_t b) __attribute__((always_inline)) {
    const int32_t* s = sums + 256 * (b & 3);
    const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(grp + packed_scales_at(qb, b))));
#pragma GCC unroll 16
    for (int m = 0; m < 16; ++m) {
      const __m512 p = _mm512_cvtepi32_ps(_mm512_load_si512(s + 16 * m));
      acc[m] = _mm512_fmadd_ps(p, _mm512_mul_ps(dw, _mm512_set1_ps(xd[16 * b + m])), acc[m]);
    }
  };
  // Block b (b % 4 == C): its product into tile C, stored; then block b - 2's epilogue. (GCC's
  // tile intrinsics take their tile numbers as literals.)
#define MINFER_AMX_STEP(C, A, B, b)          \
  {                                          \
    _tile_loadd(A, xa + 512 * (b), 32);      \
    _tile_loadd(B, panel + 512 * (b), 64);   \
    _tile_zero(C);                           \
    _tile_dpbssd(C, A, B);                   \
    _tile_stored(C, sums + 256 * C, 64);     \
    if ((b) >= 2) epilogue((b) - 2);         \
  }
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    MINFER_AMX_STEP(0, 4, 6, b);
    MINFER_AMX_STEP(1, 5, 7, b + 1);
    MINFER_AMX_STEP(2, 4, 6, b + 2);
    MINFER_AMX_STEP(3, 5, 7, b + 3);
  }
  if (b < nb) MINFER_AMX_STEP(0, 4, 6, b);
  if (b + 1 < nb) MINFER_AMX_STEP(1, 5, 7, b + 1);
  if (b + 2 < nb) MINFER_AMX_STEP(2, 4, 6, b + 2);
#undef MINFER_AMX_STEP
  for (int64_t e = std::max<int64_t>(nb - 2, 0); e < nb; ++e) epilogue(e);
#pragma GCC unroll 16
  for (int m = 0; m < 16; ++m) _mm512_storeu_ps(y + m * ldy, acc[m]);
}

template <class P>
__attribute__((target(MINFER_ISA_AVX512VNNI ",amx-tile,amx-int8"))) void gemm_amx(GgmlType type, const uint8_t* wp,
                                                           int64_t n_groups, int64_t nb,
                                                           const PackedAct& x, int64_t nt,
                                                           float* y, int64_t ldy) {
  if (nt < 16) {
    gemm_vnni<P>(type, wp, n_groups, nb, x, nt, y, ldy);
    return;
  }
  _tile_loadconfig(&kTileConfig);
  alignas(64) int32_t sums[1024];
  const size_t gb = packed_group_bytes(P::kType, nb * 32);
  uint8_t* panel = thread_scratch(ScratchSlot::PackedPanel, size_t(nb) * 512);
  for (int64_t g = 0; g < n_groups; ++g) {
    const uint8_t* grp = wp + size_t(g) * gb;
    signed_panel<P>(grp, nb, panel);
    float* yg = y + 16 * g;
    int64_t t0 = 0;
    for (; t0 + 16 <= nt; t0 += 16) {
      const size_t a0 = act_index(t0, 0, nb, kActTile);  // block b of the tile at a0 + 16 b
      amx_tile(panel, grp, P::kBytes, nb, x.tq + 32 * a0, x.d + a0, sums, yg + t0 * ldy, ldy);
    }
    vnni_group<P>(grp, nullptr, nb, x, t0, nt, yg, ldy);
  }
  _tile_release();
}

}  // namespace

PackedGemmFn packed_gemm_avx512(GgmlType t) {
  if (t == GgmlType::Q8_0) return &gemm_vnni<PQ8>;
  if (t == GgmlType::Q4_0) return &gemm_vnni<PQ4>;
  if (t == GgmlType::Q5_0) return &gemm_vnni<PQ5>;
  if (t == GgmlType::IQ4_NL) return &gemm_vnni<PIQ4>;
  if (t == GgmlType::MXFP4) return &gemm_vnni<PMX4>;
  if (t == GgmlType::NVFP4) return &gemm_vnni<PNV4>;
  if (t == GgmlType::Q1_0) return &gemm_vnni<PQ1>;
  if (t == GgmlType::Q2_0) return &gemm_vnni<PQ2>;
  if (t == GgmlType::Q4_1) return &gemm_vnni<PQ41>;
  if (t == GgmlType::Q5_1) return &gemm_vnni<PQ51>;
  return packed_kq_gemm_avx512(t, false);
}

PackedGemmFn packed_gemm_amx(GgmlType t) {
  if (t == GgmlType::Q8_0) return &gemm_amx<PQ8>;
  if (t == GgmlType::Q4_0) return &gemm_amx<PQ4>;
  if (t == GgmlType::Q5_0) return &gemm_amx<PQ5>;
  if (t == GgmlType::IQ4_NL) return &gemm_amx<PIQ4>;
  // The _1 types: the AMX epilogue has no mins term; MXFP4, NVFP4: nor their scales (the VNNI
  // kernel); Q1_0, Q2_0: not measured on an AMX host.
  if (packed_has_mins(t) || packed_bf16_scales(t) || packed_split_halves(t) || t == GgmlType::Q1_0 ||
      t == GgmlType::Q2_0)
    return nullptr;
  return packed_kq_gemm_avx512(t, true);
}

}  // namespace minfer::cpu

MINFER_ISA_END()

#else  // not x86-64

namespace minfer::cpu {
PackedGemmFn packed_gemm_avx512(GgmlType) { return nullptr; }
PackedGemmFn packed_gemm_amx(GgmlType) { return nullptr; }
}  // namespace minfer::cpu

#endif
