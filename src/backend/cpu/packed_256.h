// The packed kernels (repack.h's x16 layouts) on 256-bit vectors, for CPUs without AVX-512:
// included by packed_avx2.cpp (AVX2) and packed_avxvnni.cpp (AVX2 + AVX-VNNI), each under its
// own target options with MINFER_PACKED_VNNI 0 or 1, so each defines its own copy (anonymous
// namespace). Each 64-byte chunk (4 columns x 16 rows) is two ymm of 8 rows.
//
// AVX-VNNI: a chunk times the token's 4 broadcast quants is one vpdpbusd, as on AVX-512 (Q8_0's
// quants go in as stored, w + 128, with the offset correction).
// AVX2: without vpdpbusd, it is maddubs + madd with ones, which gives the same int32 per row as
// long as maddubs' int16 pair sums cannot saturate: the quants of Q4_0, Q5_0 and the K-quants
// (at most 63 x 127 x 2) go in unsigned as stored; Q8_0's w + 128 would not fit (nor IQ4_NL's
// table + 128), so their quants are turned back into signed bytes and multiplied in sign form
// (|w| times x with w's sign, at most 128 x 127 x 2), which sums w * x directly, without the
// offset correction.
// Either way the integer sums are exact and the float steps are the scalar kernel's
// (packed_gemm.h): results are bit-identical to it.
#pragma once
#include <immintrin.h>
#include <type_traits>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/packed_gemm.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/scratch.h"
#include "quant/blocks.h"

#ifndef MINFER_PACKED_VNNI
#error "define MINFER_PACKED_VNNI (0 or 1) before including packed_256.h"
#endif

namespace minfer::cpu {
namespace {

constexpr bool kVnni = MINFER_PACKED_VNNI;

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// Per type: the quant bytes of a group block, the 8 chunks of half h (rows 8h..8h+7) as bytes
// ready for maddubs' unsigned operand (Q8_0: signed; see dot_block()), and how many chunks' maddubs
// results may be summed in int16 before one madd widens them (kGroup x 2 x max|w| x 127 must
// stay below 2^15): the multiply ports do one madd per group instead of one per chunk.
struct AQ8 : PackedQuants<512> {
  static constexpr GgmlType kType = GgmlType::Q8_0;
  static constexpr size_t kBytes = 512;
  static constexpr bool kSigned = !kVnni;  // vpdpbusd takes w + 128 as stored, as on AVX-512
  static constexpr int kGroup = 1;
  static constexpr bool kDecode = false;
  static __m256i chunk(const uint8_t* q, int h, int c) {
    const __m256i w = _mm256_load_si256((const __m256i*)(q + 64 * c + 32 * h));
    return kSigned ? _mm256_xor_si256(w, _mm256_set1_epi8(char(0x80))) : w;
  }
  static void load(const uint8_t* q, int h, __m256i* w) {
    for (int c = 0; c < 8; ++c) w[c] = chunk(q, h, c);
  }
};
struct AQ4 : PackedQuants<256> {
  static constexpr GgmlType kType = GgmlType::Q4_0;
  static constexpr size_t kBytes = 256;
  static constexpr bool kSigned = false;
  static constexpr int kGroup = 8;
  static constexpr bool kDecode = false;  // two ops a chunk: decoding once per call measured no faster
  static void load(const uint8_t* q, int h, __m256i* w) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {
      const __m256i v = _mm256_load_si256((const __m256i*)(q + 64 * c + 32 * h));
      w[c] = _mm256_and_si256(v, m4);
      w[c + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
  }
};

// IQ4_NL: Q4_0's nibbles looked up in its table, as signed values for AVX2's sign form (its
// values + 128 would saturate maddubs: 2 x 241 x 127 > 2^15), + 128 for vpdpbusd's offset form.
struct AIQ4 : PackedQuants<256> {
  static constexpr GgmlType kType = GgmlType::IQ4_NL;
  static constexpr size_t kBytes = 256;
  static constexpr bool kSigned = !kVnni;
  static constexpr int kGroup = 1;       // as Q8_0's sign form: 2 x 127 x 127 a maddubs lane
  static constexpr bool kDecode = true;  // the lookup and the nibbles, once per call
  static __m256i table() {
    alignas(16) uint8_t v[16];
    for (int i = 0; i < 16; ++i) v[i] = uint8_t(quant::kvalues_iq4nl[i] + (kSigned ? 0 : 128));
    return _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(v)));
  }
  static __m256i chunk(const uint8_t* q, int h, int c) {
    const __m256i v = _mm256_load_si256((const __m256i*)(q + 64 * (c % 4) + 32 * h));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    return _mm256_shuffle_epi8(table(), _mm256_and_si256(c < 4 ? v : _mm256_srli_epi16(v, 4), m4));
  }
  static void load(const uint8_t* q, int h, __m256i* w) {
    AQ4::load(q, h, w);
    const __m256i t = table();
    for (int c = 0; c < 8; ++c) w[c] = _mm256_shuffle_epi8(t, w[c]);
  }
};

// MXFP4, NVFP4: Q4_0's nibbles looked up in kvalues_fp4 + 12 (0..24: unsigned as they are,
// maddubs' int16 pairs summed over 4 chunks stay below 2^15).
template <GgmlType T>
struct AFp4 : PackedQuants<256> {
  static constexpr GgmlType kType = T;
  static constexpr size_t kBytes = 256;
  static constexpr bool kSigned = false;
  static constexpr int kGroup = 4;
  static constexpr bool kDecode = true;  // the lookup and the nibbles, once per call
  static void load(const uint8_t* q, int h, __m256i* w) {
    alignas(16) uint8_t v[16];
    for (int i = 0; i < 16; ++i) v[i] = uint8_t(quant::kvalues_fp4[i] + 12);
    const __m256i t = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(v)));
    AQ4::load(q, h, w);
    for (int c = 0; c < 8; ++c) w[c] = _mm256_shuffle_epi8(t, w[c]);
  }
};
using AMX4 = AFp4<GgmlType::MXFP4>;
using ANV4 = AFp4<GgmlType::NVFP4>;

// Half h's 8 row scales of a block from its scale line sc (F16; BF16 where packed_bf16_scales;
// the split types: UE4M3 codes of the block's first column half, of its second from sc + 16).
template <GgmlType T>
inline __m256 row_scales(const uint8_t* sc, int h) {
  if constexpr (packed_split_halves(T)) {
    const __m256i v = _mm256_slli_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(sc + 8 * h))), 20);
    return _mm256_mul_ps(_mm256_castsi256_ps(v), _mm256_set1_ps(kUe4m3Bias));
  }
  const __m128i v = _mm_load_si128((const __m128i*)(sc + 16 * h));
  if constexpr (packed_bf16_scales(T))
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
  else
    return _mm256_cvtph_ps(v);
}

// Q2_0: its 2-bit q (offset 1), chunk c at bits 2 (c % 4) of field vector c / 4 (maddubs' pairs,
// at most 2 x 3 x 128, sum over all 8 chunks in int16).
struct AQ2 : PackedQuants<128> {
  static constexpr GgmlType kType = GgmlType::Q2_0;
  static constexpr size_t kBytes = 128;
  static constexpr bool kSigned = false;
  static constexpr int kGroup = 8;
  static constexpr bool kDecode = true;  // the fields taken apart once per call
  static void load(const uint8_t* q, int h, __m256i* w) {
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int v = 0; v < 2; ++v) {
      const __m256i f = _mm256_load_si256((const __m256i*)(q + 64 * v + 32 * h));
      w[4 * v] = _mm256_and_si256(f, m3);
      w[4 * v + 1] = _mm256_and_si256(_mm256_srli_epi16(f, 2), m3);
      w[4 * v + 2] = _mm256_and_si256(_mm256_srli_epi16(f, 4), m3);
      w[4 * v + 3] = _mm256_and_si256(_mm256_srli_epi16(f, 6), m3);
    }
  }
};

// v in byte lane b where bit b of the 32-bit mask at p is set (a half of a 64-bit fifth-bit or
// Q1_0 sign mask), else 0: broadcast, spread byte b / 8 to lane b, test bit b % 8.
inline __m256i mask_bytes(const uint8_t* p, char v) {
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
                                          2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bits = _mm256_set1_epi64x(int64_t(0x8040201008040201ULL));
  const __m256i m = _mm256_shuffle_epi8(_mm256_set1_epi32(load_i32(p)), spread);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(m, bits), bits), _mm256_set1_epi8(v));
}
inline __m256i fifth_bits(const uint8_t* p) { return mask_bytes(p, 0x10); }

// Q1_0: its sign masks as bytes u = 2 bit (offset 1); maddubs' pairs (at most 2 x 2 x 128) sum
// over all 8 chunks in int16.
struct AQ1 : PackedQuants<64> {
  static constexpr GgmlType kType = GgmlType::Q1_0;
  static constexpr size_t kBytes = 64;
  static constexpr bool kSigned = false;
  static constexpr int kGroup = 8;
  static constexpr bool kDecode = true;  // the bits expanded once per call
  static void load(const uint8_t* q, int h, __m256i* w) {
    for (int c = 0; c < 8; ++c) w[c] = mask_bytes(q + 8 * c + 4 * h, 2);
  }
};

struct AQ5 : PackedQuants<320> {
  static constexpr GgmlType kType = GgmlType::Q5_0;
  static constexpr size_t kBytes = 320;
  static constexpr bool kSigned = false;
  static constexpr int kGroup = 4;
  static constexpr bool kDecode = true;  // the fifth bits cost 5 ops a chunk: decode once per call
  static void load(const uint8_t* q, int h, __m256i* w) {
    AQ4::load(q, h, w);
    for (int c = 0; c < 8; ++c) w[c] = _mm256_or_si256(w[c], fifth_bits(q + 256 + 8 * c + 4 * h));
  }
};
// Q4_1, Q5_1: Q4_0's and Q5_0's quants as they are (offset 0); their mins sit beside the scales
// (repack.h) and the kernels add m x s per block.
template <class P0, GgmlType T>
struct AMins : PackedQuants<P0::kBytes, packed_head_bytes(T)> {
  static constexpr GgmlType kType = T;
  static constexpr size_t kBytes = P0::kBytes;
  static constexpr bool kSigned = false;
  static constexpr int kGroup = P0::kGroup;
  static constexpr bool kDecode = P0::kDecode;
  static void load(const uint8_t* q, int h, __m256i* w) { P0::load(q, h, w); }
};
using AQ41 = AMins<AQ4, GgmlType::Q4_1>;
using AQ51 = AMins<AQ5, GgmlType::Q5_1>;

// vpdpbusd's sums for 8 rows over chunks K0..K1-1 of a block (all 8 by default): s + per row
// the dot of those columns with the token's quants xb.
template <class P, int K0 = 0, int K1 = 8>
inline __m256i dot_block(__m256i s, const __m256i* w, const uint8_t* xb) {
#if MINFER_PACKED_VNNI
  __m256i s1 = _mm256_setzero_si256();  // two dependency chains
  for (int k = K0; k < K1; k += 2) {
    s = _mm256_dpbusd_avx_epi32(s, w[k], _mm256_set1_epi32(load_i32(xb + 4 * k)));
    s1 = _mm256_dpbusd_avx_epi32(s1, w[k + 1], _mm256_set1_epi32(load_i32(xb + 4 * k + 4)));
  }
  s = _mm256_add_epi32(s, s1);
#else
  static_assert((K1 - K0) % P::kGroup == 0);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int k0 = K0; k0 < K1; k0 += P::kGroup) {
    __m256i p = _mm256_setzero_si256();  // set by k == k0 (GCC's sanitizer builds cannot see it)
    for (int k = k0; k < k0 + P::kGroup; ++k) {
      const __m256i x4 = _mm256_set1_epi32(load_i32(xb + 4 * k));
      const __m256i q = P::kSigned ? _mm256_maddubs_epi16(_mm256_abs_epi8(w[k]), _mm256_sign_epi8(x4, w[k]))
                                   : _mm256_maddubs_epi16(w[k], x4);
      p = k == k0 ? q : _mm256_add_epi16(p, q);
    }
    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, ones));
  }
#endif
  return s;
}

// The split types' block for one token (packed_split_halves): columns 0-15 from the correction c
// and scales dw, then 16-31 from ch and dh, each its own float step into acc.
template <class P>
inline __m256 split_block(__m256 acc, const __m256i* w, const uint8_t* xb, int32_t c, int32_t ch, __m256 dw,
                          __m256 dh, float xd) {
  const __m256i s = dot_block<P, 0, 4>(_mm256_set1_epi32(c), w, xb);
  const __m256i sh = dot_block<P, 4, 8>(_mm256_set1_epi32(ch), w, xb);
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(xd)), acc);
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sh), _mm256_mul_ps(dh, _mm256_set1_ps(xd)), acc);
}

// A group's blocks as P::load() returns them, decoded once per call for prefill into a panel:
// bytes c of half h of block b at 512 b + 64 c + 32 h, loaded as they are by every token tile
// (the scales stay in the group).
template <class P>
struct Decoded {
  static constexpr GgmlType kType = P::kType;
  static constexpr size_t kBytes = 512;
  static constexpr size_t kGroupBytes = P::kBytes;
  static constexpr size_t kHeadBytes = P::kHeadBytes;
  static const uint8_t* quants(const uint8_t*, const uint8_t* pan, int64_t b) { return pan + 512 * size_t(b); }
  static constexpr bool kSigned = P::kSigned;
  static constexpr int kGroup = P::kGroup;
  static __m256i chunk(const uint8_t* q, int h, int c) {
    return _mm256_load_si256((const __m256i*)(q + 64 * c + 32 * h));
  }
  static void load(const uint8_t* q, int h, __m256i* w) {
    for (int c = 0; c < 8; ++c) w[c] = chunk(q, h, c);
  }
  static void decode(const uint8_t* grp, int64_t nb, uint8_t* out) {
    for (int64_t b = 0; b < nb; ++b)
      for (int h = 0; h < 2; ++h) {
        __m256i w[8];
        P::load(P::quants(grp, nullptr, b), h, w);
        for (int c = 0; c < 8; ++c) _mm256_store_si256((__m256i*)(out + 512 * b + 64 * c + 32 * h), w[c]);
      }
  }
};

// One token's sum for half h of a Q4_0 block (AVX-VNNI decode): c (the offset correction) plus
// the low nibbles' products, plus the high nibbles' taken in place (v & 0xF0, 16 x their value:
// one AND a chunk instead of a shift and an AND), that sum shifted right by 4 (exact, < 2^19).
#if MINFER_PACKED_VNNI
inline __m256i q4_decode_dot(const uint8_t* q, int h, int32_t c, const uint8_t* xb) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m4h = _mm256_set1_epi8(char(0xF0));
  __m256i s = _mm256_set1_epi32(c), hi = _mm256_setzero_si256();
  for (int k = 0; k < 4; ++k) {
    const __m256i v = _mm256_load_si256((const __m256i*)(q + 64 * k + 32 * h));
    s = _mm256_dpbusd_avx_epi32(s, _mm256_and_si256(v, m4), _mm256_set1_epi32(load_i32(xb + 4 * k)));
    hi = _mm256_dpbusd_avx_epi32(hi, _mm256_and_si256(v, m4h), _mm256_set1_epi32(load_i32(xb + 16 + 4 * k)));
  }
  return _mm256_add_epi32(s, _mm256_srai_epi32(hi, 4));
}
#endif

#if !MINFER_PACKED_VNNI
// Q4_0 on plain AVX2, 4 tokens (activations 32 bytes apart from x), half h of one block (q: its
// first 32 bytes of rows 8h..8h+7): the 8 chunks' maddubs of each token summed in int16 into p
// (8 x 2 x 15 x 127 < 2^15, as dot_block's), the low nibbles' chunks first, then the high ones',
// 4 chunks in registers at a time. Assembly: with all 8 chunks, the 4 tokens' sums and their
// float steps in C++, GCC spilled.
__attribute__((always_inline)) inline void q4_0_half4(__m256i (&p)[4], const uint8_t* q, const uint8_t* x) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256i w0, w1, w2, w3, xa, xb, xc, xd;
  asm(
      "vmovdqa 0(%[q]), %[w0]\n\t"
      "vpand %[m4], %[w0], %[w0]\n\t"
      "vmovdqa 64(%[q]), %[w1]\n\t"
      "vpand %[m4], %[w1], %[w1]\n\t"
      "vmovdqa 128(%[q]), %[w2]\n\t"
      "vpand %[m4], %[w2], %[w2]\n\t"
      "vmovdqa 192(%[q]), %[w3]\n\t"
      "vpand %[m4], %[w3], %[w3]\n\t"
      "vpbroadcastd 0(%[x]), %[xa]\n\t"
      "vpmaddubsw %[xa], %[w0], %[xa]\n\t"
      "vmovdqa %[xa], %[p0]\n\t"
      "vpbroadcastd 4(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w1], %[xb]\n\t"
      "vpaddw %[xb], %[p0], %[p0]\n\t"
      "vpbroadcastd 8(%[x]), %[xa]\n\t"
      "vpmaddubsw %[xa], %[w2], %[xa]\n\t"
      "vpaddw %[xa], %[p0], %[p0]\n\t"
      "vpbroadcastd 12(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w3], %[xb]\n\t"
      "vpaddw %[xb], %[p0], %[p0]\n\t"
      "vpbroadcastd 32(%[x]), %[xc]\n\t"
      "vpmaddubsw %[xc], %[w0], %[xc]\n\t"
      "vmovdqa %[xc], %[p1]\n\t"
      "vpbroadcastd 36(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w1], %[xd]\n\t"
      "vpaddw %[xd], %[p1], %[p1]\n\t"
      "vpbroadcastd 40(%[x]), %[xc]\n\t"
      "vpmaddubsw %[xc], %[w2], %[xc]\n\t"
      "vpaddw %[xc], %[p1], %[p1]\n\t"
      "vpbroadcastd 44(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w3], %[xd]\n\t"
      "vpaddw %[xd], %[p1], %[p1]\n\t"
      "vpbroadcastd 64(%[x]), %[xa]\n\t"
      "vpmaddubsw %[xa], %[w0], %[xa]\n\t"
      "vmovdqa %[xa], %[p2]\n\t"
      "vpbroadcastd 68(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w1], %[xb]\n\t"
      "vpaddw %[xb], %[p2], %[p2]\n\t"
      "vpbroadcastd 72(%[x]), %[xa]\n\t"
      "vpmaddubsw %[xa], %[w2], %[xa]\n\t"
      "vpaddw %[xa], %[p2], %[p2]\n\t"
      "vpbroadcastd 76(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w3], %[xb]\n\t"
      "vpaddw %[xb], %[p2], %[p2]\n\t"
      "vpbroadcastd 96(%[x]), %[xc]\n\t"
      "vpmaddubsw %[xc], %[w0], %[xc]\n\t"
      "vmovdqa %[xc], %[p3]\n\t"
      "vpbroadcastd 100(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w1], %[xd]\n\t"
      "vpaddw %[xd], %[p3], %[p3]\n\t"
      "vpbroadcastd 104(%[x]), %[xc]\n\t"
      "vpmaddubsw %[xc], %[w2], %[xc]\n\t"
      "vpaddw %[xc], %[p3], %[p3]\n\t"
      "vpbroadcastd 108(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w3], %[xd]\n\t"
      "vpaddw %[xd], %[p3], %[p3]\n\t"
      "vmovdqa 0(%[q]), %[w0]\n\t"
      "vpsrlw $4, %[w0], %[w0]\n\t"
      "vpand %[m4], %[w0], %[w0]\n\t"
      "vmovdqa 64(%[q]), %[w1]\n\t"
      "vpsrlw $4, %[w1], %[w1]\n\t"
      "vpand %[m4], %[w1], %[w1]\n\t"
      "vmovdqa 128(%[q]), %[w2]\n\t"
      "vpsrlw $4, %[w2], %[w2]\n\t"
      "vpand %[m4], %[w2], %[w2]\n\t"
      "vmovdqa 192(%[q]), %[w3]\n\t"
      "vpsrlw $4, %[w3], %[w3]\n\t"
      "vpand %[m4], %[w3], %[w3]\n\t"
      "vpbroadcastd 16(%[x]), %[xa]\n\t"
      "vpmaddubsw %[xa], %[w0], %[xa]\n\t"
      "vpaddw %[xa], %[p0], %[p0]\n\t"
      "vpbroadcastd 20(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w1], %[xb]\n\t"
      "vpaddw %[xb], %[p0], %[p0]\n\t"
      "vpbroadcastd 24(%[x]), %[xa]\n\t"
      "vpmaddubsw %[xa], %[w2], %[xa]\n\t"
      "vpaddw %[xa], %[p0], %[p0]\n\t"
      "vpbroadcastd 28(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w3], %[xb]\n\t"
      "vpaddw %[xb], %[p0], %[p0]\n\t"
      "vpbroadcastd 48(%[x]), %[xc]\n\t"
      "vpmaddubsw %[xc], %[w0], %[xc]\n\t"
      "vpaddw %[xc], %[p1], %[p1]\n\t"
      "vpbroadcastd 52(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w1], %[xd]\n\t"
      "vpaddw %[xd], %[p1], %[p1]\n\t"
      "vpbroadcastd 56(%[x]), %[xc]\n\t"
      "vpmaddubsw %[xc], %[w2], %[xc]\n\t"
      "vpaddw %[xc], %[p1], %[p1]\n\t"
      "vpbroadcastd 60(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w3], %[xd]\n\t"
      "vpaddw %[xd], %[p1], %[p1]\n\t"
      "vpbroadcastd 80(%[x]), %[xa]\n\t"
      "vpmaddubsw %[xa], %[w0], %[xa]\n\t"
      "vpaddw %[xa], %[p2], %[p2]\n\t"
      "vpbroadcastd 84(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w1], %[xb]\n\t"
      "vpaddw %[xb], %[p2], %[p2]\n\t"
      "vpbroadcastd 88(%[x]), %[xa]\n\t"
      "vpmaddubsw %[xa], %[w2], %[xa]\n\t"
      "vpaddw %[xa], %[p2], %[p2]\n\t"
      "vpbroadcastd 92(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w3], %[xb]\n\t"
      "vpaddw %[xb], %[p2], %[p2]\n\t"
      "vpbroadcastd 112(%[x]), %[xc]\n\t"
      "vpmaddubsw %[xc], %[w0], %[xc]\n\t"
      "vpaddw %[xc], %[p3], %[p3]\n\t"
      "vpbroadcastd 116(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w1], %[xd]\n\t"
      "vpaddw %[xd], %[p3], %[p3]\n\t"
      "vpbroadcastd 120(%[x]), %[xc]\n\t"
      "vpmaddubsw %[xc], %[w2], %[xc]\n\t"
      "vpaddw %[xc], %[p3], %[p3]\n\t"
      "vpbroadcastd 124(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w3], %[xd]\n\t"
      "vpaddw %[xd], %[p3], %[p3]"
      : [p0] "=&x"(p[0]), [p1] "=&x"(p[1]), [p2] "=&x"(p[2]), [p3] "=&x"(p[3]), [w0] "=&x"(w0), [w1] "=&x"(w1),
        [w2] "=&x"(w2), [w3] "=&x"(w3), [xa] "=&x"(xa), [xb] "=&x"(xb), [xc] "=&x"(xc), [xd] "=&x"(xd)
      : [q] "r"(q), [x] "r"(x), [m4] "x"(m4)
      : "memory");
}

// Q5_0 on plain AVX2, 4 tokens (activations 32 bytes apart from x), half h of one decoded block
// (q: its chunk 0 of rows 8h..8h+7, values 0..31) into the tokens' integer sums s: per 4 chunks
// in registers, per token the 4 maddubs summed in int16 (4 x 2 x 31 x 127 < 2^15, as
// dot_block's) and widened by one madd. Assembly for the reason of q4_0_half4.
__attribute__((always_inline)) inline void q5_0_half4(__m256i (&s)[4], const uint8_t* q, const uint8_t* x) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i w0, w1, w2, w3, xa, xb, xc, xd;
  asm(
      "vmovdqa 0(%[q]), %[w0]\n\t"
      "vmovdqa 64(%[q]), %[w1]\n\t"
      "vmovdqa 128(%[q]), %[w2]\n\t"
      "vmovdqa 192(%[q]), %[w3]\n\t"
      "vpbroadcastd 0(%[x]), %[xa]\n\t"
      "vpbroadcastd 4(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[w0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[w1], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 8(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w2], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 12(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w3], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpmaddwd %[ones], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[s0], %[s0]\n\t"
      "vpbroadcastd 32(%[x]), %[xc]\n\t"
      "vpbroadcastd 36(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xc], %[w0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[w1], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 40(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w2], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 44(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w3], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpmaddwd %[ones], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[s1], %[s1]\n\t"
      "vpbroadcastd 64(%[x]), %[xa]\n\t"
      "vpbroadcastd 68(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[w0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[w1], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 72(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w2], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 76(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w3], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpmaddwd %[ones], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[s2], %[s2]\n\t"
      "vpbroadcastd 96(%[x]), %[xc]\n\t"
      "vpbroadcastd 100(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xc], %[w0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[w1], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 104(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w2], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 108(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w3], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpmaddwd %[ones], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[s3], %[s3]\n\t"
      "vmovdqa 256(%[q]), %[w0]\n\t"
      "vmovdqa 320(%[q]), %[w1]\n\t"
      "vmovdqa 384(%[q]), %[w2]\n\t"
      "vmovdqa 448(%[q]), %[w3]\n\t"
      "vpbroadcastd 16(%[x]), %[xa]\n\t"
      "vpbroadcastd 20(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[w0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[w1], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 24(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w2], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 28(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w3], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpmaddwd %[ones], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[s0], %[s0]\n\t"
      "vpbroadcastd 48(%[x]), %[xc]\n\t"
      "vpbroadcastd 52(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xc], %[w0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[w1], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 56(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w2], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 60(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w3], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpmaddwd %[ones], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[s1], %[s1]\n\t"
      "vpbroadcastd 80(%[x]), %[xa]\n\t"
      "vpbroadcastd 84(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[w0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[w1], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 88(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w2], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 92(%[x]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w3], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpmaddwd %[ones], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[s2], %[s2]\n\t"
      "vpbroadcastd 112(%[x]), %[xc]\n\t"
      "vpbroadcastd 116(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xc], %[w0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[w1], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 120(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w2], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 124(%[x]), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w3], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpmaddwd %[ones], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[s3], %[s3]"
      : [s0] "+x"(s[0]), [s1] "+x"(s[1]), [s2] "+x"(s[2]), [s3] "+x"(s[3]), [w0] "=&x"(w0), [w1] "=&x"(w1),
        [w2] "=&x"(w2), [w3] "=&x"(w3), [xa] "=&x"(xa), [xb] "=&x"(xb), [xc] "=&x"(xc), [xd] "=&x"(xd)
      : [q] "r"(q), [x] "r"(x), [ones] "x"(ones)
      : "memory");
}

#endif

// T tokens (from t0, in tiles of kActTile) x half h of one group grp: quants P::quants(grp, pan,
// b), scales in grp.
template <class P, int T>
inline void avx2_tile(const uint8_t* grp, const uint8_t* pan, int64_t nb, int h, const PackedAct& x,
                      int64_t t0, float* y, int64_t ldy) {
  static_assert(kActTile % T == 0);  // t0 is a multiple of T: the T tokens share a tile
  const size_t a0 = act_index(t0, 0, nb, kActTile);
  const float* xd = x.d + a0;
  const int32_t* xc = x.c + a0;
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  // Block b's sums and float steps (each path returns when done), then the _1 types' m x s.
  auto block = [&](int64_t b, const uint8_t* sc) {
    const uint8_t* q = P::quants(grp, pan, b);
    const __m256 dw = row_scales<P::kType>(sc, h);
    const uint8_t* xb = x.tq + 32 * (a0 + kActTile * b);
    if constexpr (P::kSigned && T > 1) {
      // AVX2 Q8_0, IQ4_NL (sign form): chunk outer, tokens inner, so that one chunk and its magnitudes
      // are live at a time (all 8 chunks and their magnitudes took the 16 registers and the
      // accumulators went to the stack), with the same integer sums, chunk by chunk.
      const __m256i ones = _mm256_set1_epi16(1);
      __m256i s[T];
      for (int t = 0; t < T; ++t) s[t] = _mm256_setzero_si256();
      // Not unrolled: unrolled, GCC hoists the chunks' loads and spills again (one core,
      // 3072 x 1024 x 128: 114-120 GOP/s unrolled, 123-124 not).
#pragma GCC unroll 1
      for (int c = 0; c < 8; ++c) {
        const __m256i w = P::chunk(q, h, c), aw = _mm256_abs_epi8(w);
        for (int t = 0; t < T; ++t) {
          const __m256i x4 = _mm256_set1_epi32(load_i32(xb + 32 * t + 4 * c));
          s[t] = _mm256_add_epi32(s[t], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(x4, w)), ones));
        }
      }
      for (int t = 0; t < T; ++t)
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), _mm256_mul_ps(dw, _mm256_set1_ps(xd[kActTile * b + t])), acc[t]);
      return;
    }
#if !MINFER_PACKED_VNNI
    if constexpr ((std::is_same_v<P, AQ4> || std::is_same_v<P, AQ41>) && T == 4) {
      __m256i p[4];
      q4_0_half4(p, q + 32 * h, xb);
      const __m256i ones = _mm256_set1_epi16(1);
      for (int t = 0; t < 4; ++t) {
        const size_t i = kActTile * b + t;
        const __m256i s = _mm256_add_epi32(_mm256_set1_epi32(xc[i]), _mm256_madd_epi16(p[t], ones));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(xd[i])), acc[t]);
      }
      return;
    }
    if constexpr ((std::is_same_v<P, Decoded<AQ5>> || std::is_same_v<P, Decoded<AQ51>>) && T == 4) {
      __m256i s[4];
      for (int t = 0; t < 4; ++t) s[t] = _mm256_set1_epi32(xc[kActTile * b + t]);
      q5_0_half4(s, q + 32 * h, xb);
      for (int t = 0; t < 4; ++t) {
        const __m256 prod = _mm256_mul_ps(dw, _mm256_set1_ps(xd[kActTile * b + t]));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), prod, acc[t]);
      }
      return;
    }
#endif
    __m256i w[8];
    P::load(q, h, w);
    if constexpr (packed_split_halves(P::kType)) {  // columns 0-15, then 16-31
      const __m256 dh = row_scales<P::kType>(sc + 16, h);
      for (int t = 0; t < T; ++t) {
        const size_t i = kActTile * b + t;
        acc[t] = split_block<P>(acc[t], w, xb + 32 * t, xc[i], x.ch[a0 + i], dw, dh, xd[i]);
      }
      return;
    }
    for (int t = 0; t < T; ++t) {
      const size_t i = kActTile * b + t;
      const __m256i s = dot_block<P>(P::kSigned ? _mm256_setzero_si256() : _mm256_set1_epi32(xc[i]), w, xb + 32 * t);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(xd[i])), acc[t]);
    }
  };
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* sc = grp + packed_scales_at(P::kGroupBytes, b, P::kHeadBytes);
    block(b, sc);
    if constexpr (packed_has_mins(P::kType)) {  // + m x s
      const __m256 mw = _mm256_cvtph_ps(_mm_load_si128((const __m128i*)(sc + 64 + 16 * h)));
      for (int t = 0; t < T; ++t) acc[t] = _mm256_fmadd_ps(mw, _mm256_set1_ps(x.s[a0 + kActTile * b + t]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (t0 + t) * ldy + 8 * h, acc[t]);
}

#if !MINFER_PACKED_VNNI
// ---- Q8_0 prompts on plain AVX2, in int16 --------------------------------------------------
// Without vpdpbusd, Q8_0's signed quants go through maddubs in sign form: sign, maddubs and madd,
// three multiply-port ops per 32 products (vpsignb takes those ports on AMD Zen 4). Widened to
// int16 (the weights once per group and call into a panel, the activations once per matmul:
// PackedAct::tw), one vpmaddwd takes 16 products and its vpaddd runs on another port. The sums
// are the same exact integers, so the float steps and results are the sign form's, bit for bit.
// Loops of the inner steps alone, AMD Zen 4 one core: sign form (4 tokens x 16 rows) 137 GOP/s,
// this form 187. The kernel, ISA=avx2 one core, 3072 x 1024 x 128: 122 -> 139-141 GOP/s (the
// panel's widening is 8 % of it); qwen2.5-0.5b Q8_0 pp128 on 2 threads 325 -> 357 t/s.

// A chunk's signed bytes (8 rows, row r's 4 columns at 4r) as the int16 pairs of its two column
// pairs, row r in dword lane r, at out (the first pair) and out + 32 (the second); kScaled: each
// int16 times f (the row's factor in both int16 of its lane).
template <bool kScaled>
inline void wide_chunk_pairs(__m256i v, __m256i f, int16_t* out) {
  const __m256 a = _mm256_castsi256_ps(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(v)));       // rows 0-3
  const __m256 e = _mm256_castsi256_ps(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(v, 1)));  // rows 4-7
  // Dword lanes of a: (row 0, pair 0), (0, 1), (1, 0), (1, 1) | (2, 0) ... : the even lanes of
  // a and e are pair 0 in row order 0 1 4 5 | 2 3 6 7, which vpermq puts back in order.
  const __m256i p0 = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(a, e, 0x88)), 0xD8);
  const __m256i p1 = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(a, e, 0xDD)), 0xD8);
  _mm256_store_si256((__m256i*)out, kScaled ? _mm256_mullo_epi16(p0, f) : p0);
  _mm256_store_si256((__m256i*)(out + 32), kScaled ? _mm256_mullo_epi16(p1, f) : p1);
}

// Panel of one group: block b, column pair p (columns 2p, 2p + 1), half h: the 8 rows' int16
// pairs, row r in dword lane r, at int16 offset 512 b + 32 p + 16 h. P: a type whose chunks are
// signed bytes (AQ8, AIQ4), as its sign form reads them.
template <class P>
inline void q8_wide_panel(const uint8_t* grp, int64_t b0, int64_t b1, int16_t* pan) {
  static_assert(P::kSigned);
  for (int64_t b = 0; b < b1 - b0; ++b) {
    const uint8_t* q = P::quants(grp, nullptr, b0 + b);
    for (int c = 0; c < 8; ++c)
      for (int h = 0; h < 2; ++h)  // rows 8h..8h+7, columns 4c..4c+3: pairs 2c and 2c + 1
        wide_chunk_pairs<false>(P::chunk(q, h, c), __m256i{}, pan + 512 * b + 32 * (2 * c) + 16 * h);
  }
}

// Column pair p's products for T tokens (their pairs 32 int16 apart from x) added into s: the
// pair's two panel vectors (w), then per token a broadcast, two vpmaddwd and two vpaddd. Four
// tokens in assembly: GCC gathered the 8 products before their adds and spilled accumulators
// (3072 x 1024 x 128 unrolled 80 GOP/s; a loop of one pair, with register copies and reloads,
// 132; this, both products before their adds and two registers per token pair, 139).
template <int T>
__attribute__((always_inline)) inline void q8_wide_pair(__m256i (&s)[T][2], const int16_t* w, const int16_t* x) {
  if constexpr (T == 4) {
    __m256i w0, w1, xa, xb, ta, tb;
    asm("vmovdqa (%[w]), %[w0]\n\t"
        "vmovdqa 32(%[w]), %[w1]\n\t"
        "vpbroadcastd (%[x]), %[xa]\n\t"
        "vpmaddwd %[w0], %[xa], %[ta]\n\t"
        "vpmaddwd %[w1], %[xa], %[xa]\n\t"
        "vpaddd %[ta], %[s00], %[s00]\n\t"
        "vpaddd %[xa], %[s01], %[s01]\n\t"
        "vpbroadcastd 64(%[x]), %[xb]\n\t"
        "vpmaddwd %[w0], %[xb], %[tb]\n\t"
        "vpmaddwd %[w1], %[xb], %[xb]\n\t"
        "vpaddd %[tb], %[s10], %[s10]\n\t"
        "vpaddd %[xb], %[s11], %[s11]\n\t"
        "vpbroadcastd 128(%[x]), %[xa]\n\t"
        "vpmaddwd %[w0], %[xa], %[ta]\n\t"
        "vpmaddwd %[w1], %[xa], %[xa]\n\t"
        "vpaddd %[ta], %[s20], %[s20]\n\t"
        "vpaddd %[xa], %[s21], %[s21]\n\t"
        "vpbroadcastd 192(%[x]), %[xb]\n\t"
        "vpmaddwd %[w0], %[xb], %[tb]\n\t"
        "vpmaddwd %[w1], %[xb], %[xb]\n\t"
        "vpaddd %[tb], %[s30], %[s30]\n\t"
        "vpaddd %[xb], %[s31], %[s31]"
        : [s00] "+x"(s[0][0]), [s01] "+x"(s[0][1]), [s10] "+x"(s[1][0]), [s11] "+x"(s[1][1]),
          [s20] "+x"(s[2][0]), [s21] "+x"(s[2][1]), [s30] "+x"(s[3][0]), [s31] "+x"(s[3][1]),
          [w0] "=&x"(w0), [w1] "=&x"(w1), [xa] "=&x"(xa), [xb] "=&x"(xb), [ta] "=&x"(ta), [tb] "=&x"(tb)
        : [w] "r"(w), [x] "r"(x)
        : "memory");
  } else {
    const __m256i w0 = _mm256_load_si256((const __m256i*)w), w1 = _mm256_load_si256((const __m256i*)(w + 16));
    for (int t = 0; t < T; ++t) {
      const __m256i xp = _mm256_set1_epi32(load_i32(reinterpret_cast<const uint8_t*>(x + 32 * t)));
      s[t][0] = _mm256_add_epi32(s[t][0], _mm256_madd_epi16(w0, xp));
      s[t][1] = _mm256_add_epi32(s[t][1], _mm256_madd_epi16(w1, xp));
    }
  }
}

// The int16 tiles' float sums of T tokens x 16 rows, kept in L1 (T x 2 more registers would not
// fit the 16): zero, or continued from the outputs (a row's later panels); stored back at the end.
template <int T>
inline void wide_acc_load(float (&acc)[T][16], bool continued, const float* y, int64_t t0, int64_t ldy) {
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < 2; ++h)
      _mm256_store_ps(acc[t] + 8 * h, continued ? _mm256_loadu_ps(y + (t0 + t) * ldy + 8 * h) : _mm256_setzero_ps());
}
template <int T>
inline void wide_acc_store(const float (&acc)[T][16], float* y, int64_t t0, int64_t ldy) {
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(y + (t0 + t) * ldy + 8 * h, _mm256_load_ps(acc[t] + 8 * h));
}

// T tokens (from t0, in tiles of kActTile) x the 16 rows of a group over blocks [b0, b1) (the
// panel's), the float sums continued from y unless b0 is 0: per block the T x 2 integer sums in
// registers (one panel pair and one token's broadcast pair live beside them), the float sums in
// memory (T x 2 more would not fit the 16 registers).
template <class P, int T>
inline void q8_wide_tile(const uint8_t* grp, const int16_t* pan, int64_t nb, int64_t b0, int64_t b1,
                         const PackedAct& x, int64_t t0, float* y, int64_t ldy) {
  static_assert(T <= 4 && kActTile % 4 == 0);  // t0 is a multiple of 4: the T tokens share a tile
  const size_t a0 = act_index(t0, 0, nb, kActTile);
  const float* xd = x.d + a0;
  alignas(32) float acc[T][16];
  wide_acc_load<T>(acc, b0 > 0, y, t0, ldy);
  for (int64_t b = b0; b < b1; ++b) {
    const int16_t* pb = pan + 512 * (b - b0);
    const int16_t* xb = x.tw + 32 * (a0 + kActTile * b);
    __m256i s[T][2];
    for (int t = 0; t < T; ++t) s[t][0] = s[t][1] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int p = 0; p < 16; ++p) q8_wide_pair<T>(s, pb + 32 * p, xb + 2 * p);
    const uint8_t* sc = grp + packed_scales_at(P::kGroupBytes, b);
    for (int h = 0; h < 2; ++h) {
      const __m256 dw = row_scales<P::kType>(sc, h);
      for (int t = 0; t < T; ++t) {
        const __m256 prod = _mm256_mul_ps(dw, _mm256_set1_ps(xd[kActTile * b + t]));
        _mm256_store_ps(acc[t] + 8 * h, _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t][h]), prod, _mm256_load_ps(acc[t] + 8 * h)));
      }
    }
  }
  wide_acc_store<T>(acc, y, t0, ldy);
}

// Blocks per panel (16 KiB of int16): each group's row is done in panels of this many blocks,
// every token tile over one panel before the next (the float sums continue from y), so that a
// tile's activations come from a span of the row, not the whole of it (one core, cold 896 x 4864,
// qwen2.5's ffn_down: 115 GOP/s before, whole-row panels 115, 16 blocks 120; 8 blocks slower).
constexpr int64_t kWideBlocks = 16;

#endif

// One token (a decode step: activations in a tile of 1) x one group, block by block with both
// halves (rows 0-7, 8-15) of a block before the next, so the group is read in one pass (a half
// at a time read each line twice), with avx2_tile's sums and float steps. No software prefetch
// (unlike the AVX-512 decode): with the scales in the quants' stream, AMD Zen 4 decoded faster
// without it, qwen2.5-0.5b tg64 (ISA=avx2) one thread Q8_0 25.3 -> 32.1 t/s, Q4_0 36.9 -> 48.2,
// Q4_K_M 26.9 -> 32.8, two threads Q4_0 68.5 -> 79.2 (on Sapphire Rapids, with the old layout,
// it had saved 3 % of a Q5_0-heavy AVX-VNNI step).
template <class P>
inline void avx2_gemv(const uint8_t* grp, int64_t nb, const PackedAct& x, float* y) {
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q = P::quants(grp, nullptr, b);
    const uint8_t* sc = grp + packed_scales_at(P::kGroupBytes, b, P::kHeadBytes);
    const uint8_t* xb = x.tq + 32 * b;
    for (int h = 0; h < 2; ++h) {
      const __m256 dw = row_scales<P::kType>(sc, h);
      __m256i s;
#if MINFER_PACKED_VNNI  // AVX2's maddubs would saturate on 16 x the nibbles
      if constexpr (P::kType == GgmlType::Q4_0 || P::kType == GgmlType::Q4_1) {
        s = q4_decode_dot(q, h, x.c[b], xb);
      } else
#endif
      if constexpr (packed_split_halves(P::kType)) {  // columns 0-15, then 16-31
        __m256i w[8];
        P::load(q, h, w);
        acc[h] = split_block<P>(acc[h], w, xb, x.c[b], x.ch[b], dw, row_scales<P::kType>(sc + 16, h), x.d[b]);
        continue;
      } else {
        __m256i w[8];
        P::load(q, h, w);
        s = dot_block<P>(P::kSigned ? _mm256_setzero_si256() : _mm256_set1_epi32(x.c[b]), w, xb);
      }
      acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(x.d[b])), acc[h]);
      if constexpr (packed_has_mins(P::kType))  // + m x s
        acc[h] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_load_si128((const __m128i*)(sc + 64 + 16 * h))),
                                 _mm256_set1_ps(x.s[b]), acc[h]);
    }
  }
  _mm256_storeu_ps(y, acc[0]);
  _mm256_storeu_ps(y + 8, acc[1]);
}

// Every group of the call, both halves, its tokens in tiles of W then singly: f(Width<w>, group,
// half, first token, the group's outputs).
template <int N>
struct Width {
  static constexpr int value = N;
};
template <int W, class F>
inline void each_half_tile(const uint8_t* wp, int64_t n_groups, size_t gb, int64_t nt, float* y, F&& f) {
  for (int64_t g = 0; g < n_groups; ++g)
    for (int h = 0; h < 2; ++h) {
      int64_t t0 = 0;
      for (; t0 + W <= nt; t0 += W) f(Width<W>{}, wp + size_t(g) * gb, h, t0, y + 16 * g);
      for (; t0 < nt; ++t0) f(Width<1>{}, wp + size_t(g) * gb, h, t0, y + 16 * g);
    }
}

#if !MINFER_PACKED_VNNI
// The int16 prompt kernels' loop (q8_wide_gemm, iq4xs_wide_gemm): per group, panels of `per`
// units of n (blocks, super-blocks), each widened once (panel) and run by every token tile of up
// to 4 (tile; the float sums continue across a row's panels from the output).
template <class Panel, class Tile>
inline void wide_panels(const uint8_t* wp, int64_t n_groups, size_t gb, int64_t n, int64_t per, int64_t nt,
                        float* y, Panel&& panel, Tile&& tile) {
  int16_t* pan = thread_scratch_array<int16_t>(ScratchSlot::PackedPanel, size_t(kWideBlocks) * 512);
  for (int64_t g = 0; g < n_groups; ++g) {
    const uint8_t* grp = wp + size_t(g) * gb;
    float* yg = y + 16 * g;
    for (int64_t u0 = 0; u0 < n; u0 += per) {
      const int64_t u1 = std::min(n, u0 + per);
      panel(grp, u0, u1, pan);
      int64_t t0 = 0;
      for (; t0 + 4 <= nt; t0 += 4) tile(Width<4>{}, grp, pan, u0, u1, t0, yg);
      if (nt - t0 == 3) tile(Width<3>{}, grp, pan, u0, u1, t0, yg);
      if (nt - t0 == 2) tile(Width<2>{}, grp, pan, u0, u1, t0, yg);
      if (nt - t0 == 1) tile(Width<1>{}, grp, pan, u0, u1, t0, yg);
    }
  }
}

template <class P>
inline void q8_wide_gemm(const uint8_t* wp, int64_t n_groups, size_t gb, int64_t nb, const PackedAct& x,
                         int64_t nt, float* y, int64_t ldy) {
  wide_panels(
      wp, n_groups, gb, nb, kWideBlocks, nt, y,
      [](const uint8_t* grp, int64_t b0, int64_t b1, int16_t* pan) { q8_wide_panel<P>(grp, b0, b1, pan); },
      [&](auto w, const uint8_t* grp, const int16_t* pan, int64_t b0, int64_t b1, int64_t t0, float* yg) {
        q8_wide_tile<P, decltype(w)::value>(grp, pan, nb, b0, b1, x, t0, yg, ldy);
      });
}
#endif

// From this many tokens Q5_0's blocks are decoded once per group (Decoded) rather than once per
// token tile (one core, 3072 x 1024 x 128: AVX-VNNI 148 -> 220 GOP/s, AVX2 119 -> 175; Q4_0,
// whose decode is two ops a chunk, measured 2-10 % slower that way).
constexpr int64_t kDecodeOnceTokens = 8;

template <class P>
void gemm_256(GgmlType, const uint8_t* wp, int64_t n_groups, int64_t nb, const PackedAct& x,
              int64_t nt, float* y, int64_t ldy) {
  const size_t gb = packed_group_bytes(P::kType, nb * 32);
  if (x.tile == 1) {  // a decode step (a prompt's last token block of one token is in a tile of 16)
    for (int64_t g = 0; g < n_groups; ++g) avx2_gemv<P>(wp + size_t(g) * gb, nb, x, y + 16 * g);
    return;
  }
#if !MINFER_PACKED_VNNI
  if constexpr (P::kSigned)  // Q8_0, IQ4_NL
    if (x.tw && packed_wide_act(P::kType, Isa::Avx2, nt)) {  // (a short last token block: sign form)
      q8_wide_gemm<P>(wp, n_groups, gb, nb, x, nt, y, ldy);
      return;
    }
#endif
  if constexpr (P::kDecode)
    if (nt >= kDecodeOnceTokens) {
      uint8_t* pan = thread_scratch(ScratchSlot::PackedPanel, size_t(nb) * 512);
      for (int64_t g = 0; g < n_groups; ++g) {
        const uint8_t* grp = wp + size_t(g) * gb;
        Decoded<P>::decode(grp, nb, pan);
        each_half_tile<4>(pan, 1, 0, nt, y + 16 * g, [&](auto w, const uint8_t*, int h, int64_t t0, float* yg) {
          avx2_tile<Decoded<P>, decltype(w)::value>(grp, pan, nb, h, x, t0, yg, ldy);
        });
      }
      return;
    }
  each_half_tile<4>(wp, n_groups, gb, nt, y, [&](auto w, const uint8_t* grp, int h, int64_t t0, float* yg) {
    avx2_tile<P, decltype(w)::value>(grp, nullptr, nb, h, x, t0, yg, ldy);
  });
}

// ---- K-quants: the same halves of repack.h's K layout, integer sums per super-block, then the
// scalar kernels' float steps (as the AVX-512 kp_gemv). Their quants are at most 63: unsigned
// maddubs never saturates.

// On plain AVX2 the IQ3 types' codes are looked up + 32 (1..63: repack.h), unsigned for maddubs as
// Q6_K's quants, with Q6_K's offset term: they run Q6_K's steps, scaled per 32 columns.
template <GgmlType T>
constexpr bool kAkQ6Form = T == GgmlType::Q6_K || (!kVnni && (T == GgmlType::IQ3_S || T == GgmlType::IQ3_XXS));

template <GgmlType T>
struct AK {
  // as the _0 types' kGroup (Q2_K, Q3_K: at most 7; IQ4_XS in sign form: 2 x 127 x 127 a lane)
  static constexpr int kGroup = T == GgmlType::IQ4_XS ? 1 : kAkQ6Form<T> ? 2 : 4;
  static constexpr size_t kBlock = packed_kq_block_bytes(T);
  static constexpr size_t kPar = packed_kq_scales(T);
  // Prefill decodes the super-blocks once per call (ak_decode), except Q4_K's nibbles on
  // AVX-VNNI, measured no faster that way (one core, 3072 x 1024 x 128, GOP/s: Q5_K VNNI 139 ->
  // 220, Q6_K VNNI 143 -> 182, AVX2 92 -> 126, Q4_K AVX2 127 -> 147, Q4_K VNNI 192 -> 199).
  static constexpr bool kDecode = T != GgmlType::Q4_K || !kVnni;
};

// Scales per 16-column sub-block (Q6_K, Q3_K, Q2_K): a sub-block's two halves are scaled apart.
template <GgmlType T>
constexpr bool kAkSub16 = T == GgmlType::Q6_K || T == GgmlType::Q3_K || T == GgmlType::Q2_K;

// Where a 16-column sub-block k's sum starts: -offset x its activations' sum for the types stored
// with an offset (Q6_K q + 32, Q3_K q + 4; on AVX-VNNI the packed_iq4_layout types, looked up + 128,
// whose scales are per 32 columns: the whole correction in the first half's sum), else 0.
template <GgmlType T>
__attribute__((always_inline)) inline __m256i ak_offset(const Q8KSums& ks, int k) {
  if constexpr (kAkQ6Form<T>) return _mm256_set1_epi32(ks.q6c[k]);
  if constexpr (T == GgmlType::Q3_K) return _mm256_set1_epi32(-4 * ks.bsum[k]);
  if constexpr (packed_iq4_layout(T) && kVnni)
    return k % 2 == 0 ? _mm256_set1_epi32(ks.off128_32[k / 2]) : _mm256_setzero_si256();
  return _mm256_setzero_si256();
}

// The packed_iq4_layout types' codes looked up: on AVX2 IQ4_XS's as its signed values, multiplied
// in sign form (its values + 128 would saturate maddubs, as IQ4_NL's: AIQ4), the IQ3 types' + 32
// (kAkQ6Form); on AVX-VNNI as the values + 128 for vpdpbusd, each sub-block's sum started from
// -128 x its activations' sum (ak_offset), as the AVX-512 kp_gemv.
struct AkIq4Table {
  alignas(16) uint8_t v[16];
  explicit constexpr AkIq4Table(GgmlType t) : v{} {
    const int offset = kVnni ? 128 : t == GgmlType::IQ4_XS ? 0 : 32;
    for (int i = 0; i < 16; ++i) v[i] = uint8_t(packed_iq4_values(t).v[i] + offset);
  }
};
template <GgmlType T>
constexpr AkIq4Table kAkIq4{T};

// Chunk c of sub-block j, half h: columns 4c..4c+3 (lo) and 16+4c..16+4c+3 (hi), 8 rows.
template <GgmlType T>
inline void ak_chunk(const uint8_t* o, int j, int c, int h, __m256i* lo, __m256i* hi) {
  if constexpr (T == GgmlType::Q2_K || T == GgmlType::Q3_K) {  // 2 bits at 2c (and Q3_K's third bit)
    const __m256i m2 = _mm256_set1_epi8(0x03);
    const __m256i vl = _mm256_load_si256((const __m256i*)(o + packed_kq_quants(T, j, 0) + 32 * h));
    const __m256i vh = _mm256_load_si256((const __m256i*)(o + packed_kq_quants(T, j, 1) + 32 * h));
    *lo = _mm256_and_si256(_mm256_srli_epi16(vl, 2 * c), m2);
    *hi = _mm256_and_si256(_mm256_srli_epi16(vh, 2 * c), m2);
    if constexpr (T == GgmlType::Q3_K) {  // bits c and 4 + c of the third vector, to bit 2
      const __m256i v3 = _mm256_load_si256((const __m256i*)(o + packed_kq_extra(T, j) + 32 * h));
      const __m256i b2 = _mm256_set1_epi8(0x04);
      const __m256i t = c < 2 ? _mm256_slli_epi16(v3, 2 - c) : _mm256_srli_epi16(v3, c - 2);
      *lo = _mm256_or_si256(*lo, _mm256_and_si256(t, b2));
      *hi = _mm256_or_si256(*hi, _mm256_and_si256(_mm256_srli_epi16(v3, c + 2), b2));
    }
    return;
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i v = _mm256_load_si256((const __m256i*)(o + packed_kq_quants(T, j, c) + 32 * h));
  *lo = _mm256_and_si256(v, m4);
  *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  if constexpr (packed_iq4_layout(T)) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i*)kAkIq4<T>.v));
    *lo = _mm256_shuffle_epi8(table, *lo);
    *hi = _mm256_shuffle_epi8(table, *hi);
  }
  if constexpr (T == GgmlType::Q5_K) {
    *lo = _mm256_or_si256(*lo, fifth_bits(o + packed_kq_extra(T, j) + 16 * c + 4 * h));
    *hi = _mm256_or_si256(*hi, fifth_bits(o + packed_kq_extra(T, j) + 16 * c + 8 + 4 * h));
  }
  if constexpr (T == GgmlType::Q6_K) {
    const __m256i hv = _mm256_load_si256((const __m256i*)(o + packed_kq_extra(T, j) + 64 * (c / 2) + 32 * h));
    const __m256i m = _mm256_set1_epi8(0x30);
    const __m256i a = c % 2 == 0 ? _mm256_slli_epi16(hv, 4) : hv;
    const __m256i b = c % 2 == 0 ? _mm256_slli_epi16(hv, 2) : _mm256_srli_epi16(hv, 2);
    *lo = _mm256_or_si256(*lo, _mm256_and_si256(a, m));
    *hi = _mm256_or_si256(*hi, _mm256_and_si256(b, m));
  }
}

// Q4_K on AVX2: the rows' sub-block scales (0..63) as both int16 of each lane, so that the one
// madd of a sub-block's int16 pair sums (its 4 chunks, both halves: ak_accumulate) applies the
// scale instead of ones (exact: the pairs are the integer sums' parts). Q5_K keeps madd by ones
// and vpmulld: the scaled madd measured no faster for it (one core, 3072 x 1024 x 128: 3-6 %
// slower in one sitting, equal in the next).
template <GgmlType T>
constexpr bool kAkScaledMadd = T == GgmlType::Q4_K && !kVnni;

// Chunk c of a sub-block (lo: its first 16 columns' part, hi: the second's) times one token's
// broadcast quants x0, x1, into that token's sums. VNNI: s0 += lo.x0, s1 += hi.x1. AVX2: maddubs
// results summed in int16 (p0, p1) over kGroup chunks, then widened into s0, s1; Q4_K
// (kAkScaledMadd): both halves in the one int16 sum p0 over the sub-block's 4 chunks (8 maddubs
// lanes of at most 2 x 15 x 128: 30720 < 2^15), for the one madd by the scale.
template <GgmlType T>
__attribute__((always_inline)) inline void ak_accumulate(__m256i lo, __m256i hi, __m256i x0, __m256i x1, int c,
                                                         __m256i& s0, __m256i& s1, __m256i& p0, __m256i& p1) {
#if MINFER_PACKED_VNNI
  s0 = _mm256_dpbusd_avx_epi32(s0, lo, x0);
  s1 = _mm256_dpbusd_avx_epi32(s1, hi, x1);
#else
  const __m256i q0 = T == GgmlType::IQ4_XS ? _mm256_maddubs_epi16(_mm256_sign_epi8(lo, lo), _mm256_sign_epi8(x0, lo))
                                           : _mm256_maddubs_epi16(lo, x0);
  const __m256i q1 = T == GgmlType::IQ4_XS ? _mm256_maddubs_epi16(_mm256_sign_epi8(hi, hi), _mm256_sign_epi8(x1, hi))
                                           : _mm256_maddubs_epi16(hi, x1);
  if constexpr (kAkScaledMadd<T>) {
    static_assert(AK<T>::kGroup == 4, "one madd a sub-block carries the scale");
    const __m256i q01 = _mm256_add_epi16(q0, q1);
    p0 = c == 0 ? q01 : _mm256_add_epi16(p0, q01);
    return;
  }
  constexpr int g = AK<T>::kGroup;
  p0 = c % g == 0 ? q0 : _mm256_add_epi16(p0, q0);
  p1 = c % g == 0 ? q1 : _mm256_add_epi16(p1, q1);
  if (c % g == g - 1) {
    const __m256i ones = _mm256_set1_epi16(1);
    s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(p0, ones));
    s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(p1, ones));
  }
#endif
}

// Sub-block j's scales for the rows of half h, as ak_apply multiplies them: Q6_K, Q3_K the int8
// scales of its two 16-column halves (a, b), Q2_K their 4-bit ones; Q4_K on AVX2 the scale as both
// int16 of each lane (a); otherwise the scale (a).
struct AkScales {
  __m256i a, b;
};
template <GgmlType T>
__attribute__((always_inline)) inline AkScales ak_scales(const uint8_t* par, int j, int h) {
  if constexpr (T == GgmlType::Q6_K || T == GgmlType::Q3_K)
    return {_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(par + 32 * j + 8 * h))),
            _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(par + 32 * j + 16 + 8 * h)))};
  if constexpr (T == GgmlType::Q2_K) {  // lane r: the scale | min << 4 bytes of 2j, 2j + 1
    const __m256i sm = _mm256_cvtepu8_epi16(_mm_load_si128((const __m128i*)(par + 32 * j + 16 * h)));
    const __m256i m4 = _mm256_set1_epi32(0x0F);
    return {_mm256_and_si256(sm, m4), _mm256_and_si256(_mm256_srli_epi32(sm, 16), m4)};
  }
  if constexpr (packed_iq4_layout(T)) {  // int8 scales (IQ4_XS's less 32)
    const __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(par + 16 * j + 8 * h)));
    return {sc, sc};
  }
  const __m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(par + 16 * j + 8 * h)));
  if constexpr (kAkScaledMadd<T>) return {_mm256_or_si256(sc, _mm256_slli_epi32(sc, 16)), sc};
  return {sc, sc};
}

// isum plus one token's sums of a sub-block (ak_accumulate's s0, s1, or p0) times its scales.
template <GgmlType T>
__attribute__((always_inline)) inline __m256i ak_apply(const AkScales& sc, __m256i s0, __m256i s1, __m256i p0,
                                                       __m256i isum) {
  if constexpr (kAkSub16<T>)
    return _mm256_add_epi32(isum, _mm256_add_epi32(_mm256_mullo_epi32(s0, sc.a), _mm256_mullo_epi32(s1, sc.b)));
  if constexpr (kAkScaledMadd<T>) return _mm256_add_epi32(isum, _mm256_madd_epi16(p0, sc.a));
#if MINFER_PACKED_VNNI
  if constexpr (T == GgmlType::Q4_K)  // each half below 2^15 (16 x 15 x 128): vpdpwssd
    return _mm256_dpwssd_avx_epi32(_mm256_dpwssd_avx_epi32(isum, s0, sc.a), s1, sc.a);
#endif
  return _mm256_add_epi32(isum, _mm256_mullo_epi32(_mm256_add_epi32(s0, s1), sc.a));
}

// A super-block's float step for the rows of half h and one token (activation scale and sums
// ks): d x d_x x isum, minus (Q4_K, Q5_K, Q2_K) dmin x d_x x the mins against the sums.
template <GgmlType T>
__attribute__((always_inline)) inline __m256 ak_term(const uint8_t* par, int h, __m256i isum, const Q8KSums& ks) {
  const __m256 xd = _mm256_set1_ps(ks.d);
  __m256 d = _mm256_cvtph_ps(_mm_load_si128((const __m128i*)(par + kKqD + 16 * h)));
  if constexpr (packed_iq4_final(T) != 1.0f) d = _mm256_mul_ps(d, _mm256_set1_ps(packed_iq4_final(T)));
  __m256 term = _mm256_mul_ps(_mm256_mul_ps(d, xd), _mm256_cvtepi32_ps(isum));
  if constexpr (T != GgmlType::Q6_K && T != GgmlType::Q3_K && !packed_iq4_layout(T)) {
    __m256i msum = _mm256_setzero_si256();
    if constexpr (T == GgmlType::Q2_K) {  // the min pairs (2j, 2j + 1) against the bsum pairs
      for (int j = 0; j < 8; ++j) {
        const __m256i sm = _mm256_cvtepu8_epi16(_mm_load_si128((const __m128i*)(par + 32 * j + 16 * h)));
        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(_mm256_srli_epi16(sm, 4), _mm256_set1_epi32(ks.bsum16[j])));
      }
    } else {
      for (int q = 0; q < 4; ++q) {
        const __m256i pp = _mm256_set1_epi32(ks.pair16[q]);
        const __m256i mn = _mm256_cvtepu8_epi16(_mm_load_si128((const __m128i*)(par + kKqMins + 32 * q + 16 * h)));
        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mn, pp));
      }
    }
    const __m256 dm = _mm256_cvtph_ps(_mm_load_si128((const __m128i*)(par + kKqDmin + 16 * h)));
    term = _mm256_sub_ps(term, _mm256_mul_ps(_mm256_mul_ps(dm, xd), _mm256_cvtepi32_ps(msum)));
  }
  return term;
}

#if !MINFER_PACKED_VNNI
// Q4_K on plain AVX2, 4 tokens, one sub-block of the decoded panel (d: its chunk 0, half h)
// into the tokens' integer sums i: per chunk the two halves' quants, per token two broadcasts,
// two maddubs and the int16 sum p (as ak_accumulate), then per token one madd by the scale pairs
// sc (as ak_apply). The tokens' quants are x rows apart from b0 (tokens 0, 1) and b2
// (tokens 2, 3). In assembly: at 4 tokens GCC's allocation spilled (the sums, the broadcasts and
// the chunk's two halves take 15 of the 16 registers); 2 tokens, in C++, are bound by the loads
// (a broadcast per maddubs, 2 loads a cycle on AMD Zen 4).
__attribute__((always_inline)) inline void ak_q4k_sub4(__m256i (&i)[4], const uint8_t* d, const uint8_t* b0,
                                                       const uint8_t* b2, int64_t s, __m256i sc) {
  __m256i lo, hi, xa, xb, xc, xd, p0, p1, p2, p3;
  asm(
      "vmovdqa 0(%[d]), %[lo]\n\t"
      "vmovdqa 64(%[d]), %[hi]\n\t"
      "vpbroadcastd 0(%[b0]), %[xa]\n\t"
      "vpbroadcastd 16(%[b0]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[lo], %[xa]\n\t"
      "vpmaddubsw %[xb], %[hi], %[xb]\n\t"
      "vpaddw %[xa], %[xb], %[p0]\n\t"
      "vpbroadcastd 0(%[b0],%[s],1), %[xc]\n\t"
      "vpbroadcastd 16(%[b0],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[lo], %[xc]\n\t"
      "vpmaddubsw %[xd], %[hi], %[xd]\n\t"
      "vpaddw %[xc], %[xd], %[p1]\n\t"
      "vpbroadcastd 0(%[b2]), %[xa]\n\t"
      "vpbroadcastd 16(%[b2]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[lo], %[xa]\n\t"
      "vpmaddubsw %[xb], %[hi], %[xb]\n\t"
      "vpaddw %[xa], %[xb], %[p2]\n\t"
      "vpbroadcastd 0(%[b2],%[s],1), %[xc]\n\t"
      "vpbroadcastd 16(%[b2],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[lo], %[xc]\n\t"
      "vpmaddubsw %[xd], %[hi], %[xd]\n\t"
      "vpaddw %[xc], %[xd], %[p3]\n\t"
      "vmovdqa 128(%[d]), %[lo]\n\t"
      "vmovdqa 192(%[d]), %[hi]\n\t"
      "vpbroadcastd 4(%[b0]), %[xa]\n\t"
      "vpbroadcastd 20(%[b0]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[lo], %[xa]\n\t"
      "vpmaddubsw %[xb], %[hi], %[xb]\n\t"
      "vpaddw %[xa], %[p0], %[p0]\n\t"
      "vpaddw %[xb], %[p0], %[p0]\n\t"
      "vpbroadcastd 4(%[b0],%[s],1), %[xc]\n\t"
      "vpbroadcastd 20(%[b0],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[lo], %[xc]\n\t"
      "vpmaddubsw %[xd], %[hi], %[xd]\n\t"
      "vpaddw %[xc], %[p1], %[p1]\n\t"
      "vpaddw %[xd], %[p1], %[p1]\n\t"
      "vpbroadcastd 4(%[b2]), %[xa]\n\t"
      "vpbroadcastd 20(%[b2]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[lo], %[xa]\n\t"
      "vpmaddubsw %[xb], %[hi], %[xb]\n\t"
      "vpaddw %[xa], %[p2], %[p2]\n\t"
      "vpaddw %[xb], %[p2], %[p2]\n\t"
      "vpbroadcastd 4(%[b2],%[s],1), %[xc]\n\t"
      "vpbroadcastd 20(%[b2],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[lo], %[xc]\n\t"
      "vpmaddubsw %[xd], %[hi], %[xd]\n\t"
      "vpaddw %[xc], %[p3], %[p3]\n\t"
      "vpaddw %[xd], %[p3], %[p3]\n\t"
      "vmovdqa 256(%[d]), %[lo]\n\t"
      "vmovdqa 320(%[d]), %[hi]\n\t"
      "vpbroadcastd 8(%[b0]), %[xa]\n\t"
      "vpbroadcastd 24(%[b0]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[lo], %[xa]\n\t"
      "vpmaddubsw %[xb], %[hi], %[xb]\n\t"
      "vpaddw %[xa], %[p0], %[p0]\n\t"
      "vpaddw %[xb], %[p0], %[p0]\n\t"
      "vpbroadcastd 8(%[b0],%[s],1), %[xc]\n\t"
      "vpbroadcastd 24(%[b0],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[lo], %[xc]\n\t"
      "vpmaddubsw %[xd], %[hi], %[xd]\n\t"
      "vpaddw %[xc], %[p1], %[p1]\n\t"
      "vpaddw %[xd], %[p1], %[p1]\n\t"
      "vpbroadcastd 8(%[b2]), %[xa]\n\t"
      "vpbroadcastd 24(%[b2]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[lo], %[xa]\n\t"
      "vpmaddubsw %[xb], %[hi], %[xb]\n\t"
      "vpaddw %[xa], %[p2], %[p2]\n\t"
      "vpaddw %[xb], %[p2], %[p2]\n\t"
      "vpbroadcastd 8(%[b2],%[s],1), %[xc]\n\t"
      "vpbroadcastd 24(%[b2],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[lo], %[xc]\n\t"
      "vpmaddubsw %[xd], %[hi], %[xd]\n\t"
      "vpaddw %[xc], %[p3], %[p3]\n\t"
      "vpaddw %[xd], %[p3], %[p3]\n\t"
      "vmovdqa 384(%[d]), %[lo]\n\t"
      "vmovdqa 448(%[d]), %[hi]\n\t"
      "vpbroadcastd 12(%[b0]), %[xa]\n\t"
      "vpbroadcastd 28(%[b0]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[lo], %[xa]\n\t"
      "vpmaddubsw %[xb], %[hi], %[xb]\n\t"
      "vpaddw %[xa], %[p0], %[p0]\n\t"
      "vpaddw %[xb], %[p0], %[p0]\n\t"
      "vpbroadcastd 12(%[b0],%[s],1), %[xc]\n\t"
      "vpbroadcastd 28(%[b0],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[lo], %[xc]\n\t"
      "vpmaddubsw %[xd], %[hi], %[xd]\n\t"
      "vpaddw %[xc], %[p1], %[p1]\n\t"
      "vpaddw %[xd], %[p1], %[p1]\n\t"
      "vpbroadcastd 12(%[b2]), %[xa]\n\t"
      "vpbroadcastd 28(%[b2]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[lo], %[xa]\n\t"
      "vpmaddubsw %[xb], %[hi], %[xb]\n\t"
      "vpaddw %[xa], %[p2], %[p2]\n\t"
      "vpaddw %[xb], %[p2], %[p2]\n\t"
      "vpbroadcastd 12(%[b2],%[s],1), %[xc]\n\t"
      "vpbroadcastd 28(%[b2],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[lo], %[xc]\n\t"
      "vpmaddubsw %[xd], %[hi], %[xd]\n\t"
      "vpaddw %[xc], %[p3], %[p3]\n\t"
      "vpaddw %[xd], %[p3], %[p3]\n\t"
      "vpmaddwd %[sc], %[p0], %[p0]\n\t"
      "vpaddd %[p0], %[i0], %[i0]\n\t"
      "vpmaddwd %[sc], %[p1], %[p1]\n\t"
      "vpaddd %[p1], %[i1], %[i1]\n\t"
      "vpmaddwd %[sc], %[p2], %[p2]\n\t"
      "vpaddd %[p2], %[i2], %[i2]\n\t"
      "vpmaddwd %[sc], %[p3], %[p3]\n\t"
      "vpaddd %[p3], %[i3], %[i3]"
      : [i0] "+x"(i[0]), [i1] "+x"(i[1]), [i2] "+x"(i[2]), [i3] "+x"(i[3]), [lo] "=&x"(lo), [hi] "=&x"(hi),
        [xa] "=&x"(xa), [xb] "=&x"(xb), [xc] "=&x"(xc), [xd] "=&x"(xd), [p0] "=&x"(p0), [p1] "=&x"(p1), [p2] "=&x"(p2), [p3] "=&x"(p3)
      : [d] "r"(d), [b0] "r"(b0), [b2] "r"(b2), [s] "r"(s), [sc] "x"(sc)
      : "memory");
}
// Q6_K on plain AVX2, 4 tokens, one sub-block of the decoded panel (d: its chunk 0, half h):
// per pair of chunks the 4 halves' quants, per token and 16-column half two broadcasts, two
// maddubs summed in int16 (2 x 2 x 63 x 127 < 2^15) and one madd by that half's scale as both
// int16 of each lane (sa, sb: no vpmulld; exact, |sum| < 2^31), into the tokens' integer sums i.
// The tokens' quants are x rows apart from b0 (tokens 0, 1) and b2 (2, 3). Assembly for the same
// reason as ak_q4k_sub4 (15 of the 16 registers); the offset term is the caller's.
__attribute__((always_inline)) inline void ak_q6k_sub4(__m256i (&i)[4], const uint8_t* d, const uint8_t* b0,
                                                       const uint8_t* b2, int64_t s, __m256i sa, __m256i sb) {
  __m256i l0, l1, h0, h1, xa, xb, xc, xd;
  asm(
      "vmovdqa 0(%[d]), %[l0]\n\t"
      "vmovdqa 128(%[d]), %[l1]\n\t"
      "vmovdqa 64(%[d]), %[h0]\n\t"
      "vmovdqa 192(%[d]), %[h1]\n\t"
      "vpbroadcastd 0(%[b0]), %[xa]\n\t"
      "vpbroadcastd 4(%[b0]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[l0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[l1], %[xb]\n\t"
      "vpaddw %[xa], %[xb], %[xa]\n\t"
      "vpmaddwd %[sa], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[i0], %[i0]\n\t"
      "vpbroadcastd 16(%[b0]), %[xc]\n\t"
      "vpbroadcastd 20(%[b0]), %[xd]\n\t"
      "vpmaddubsw %[xc], %[h0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[h1], %[xd]\n\t"
      "vpaddw %[xc], %[xd], %[xc]\n\t"
      "vpmaddwd %[sb], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[i0], %[i0]\n\t"
      "vpbroadcastd 0(%[b0],%[s],1), %[xa]\n\t"
      "vpbroadcastd 4(%[b0],%[s],1), %[xb]\n\t"
      "vpmaddubsw %[xa], %[l0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[l1], %[xb]\n\t"
      "vpaddw %[xa], %[xb], %[xa]\n\t"
      "vpmaddwd %[sa], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[i1], %[i1]\n\t"
      "vpbroadcastd 16(%[b0],%[s],1), %[xc]\n\t"
      "vpbroadcastd 20(%[b0],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[h0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[h1], %[xd]\n\t"
      "vpaddw %[xc], %[xd], %[xc]\n\t"
      "vpmaddwd %[sb], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[i1], %[i1]\n\t"
      "vpbroadcastd 0(%[b2]), %[xa]\n\t"
      "vpbroadcastd 4(%[b2]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[l0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[l1], %[xb]\n\t"
      "vpaddw %[xa], %[xb], %[xa]\n\t"
      "vpmaddwd %[sa], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[i2], %[i2]\n\t"
      "vpbroadcastd 16(%[b2]), %[xc]\n\t"
      "vpbroadcastd 20(%[b2]), %[xd]\n\t"
      "vpmaddubsw %[xc], %[h0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[h1], %[xd]\n\t"
      "vpaddw %[xc], %[xd], %[xc]\n\t"
      "vpmaddwd %[sb], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[i2], %[i2]\n\t"
      "vpbroadcastd 0(%[b2],%[s],1), %[xa]\n\t"
      "vpbroadcastd 4(%[b2],%[s],1), %[xb]\n\t"
      "vpmaddubsw %[xa], %[l0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[l1], %[xb]\n\t"
      "vpaddw %[xa], %[xb], %[xa]\n\t"
      "vpmaddwd %[sa], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[i3], %[i3]\n\t"
      "vpbroadcastd 16(%[b2],%[s],1), %[xc]\n\t"
      "vpbroadcastd 20(%[b2],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[h0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[h1], %[xd]\n\t"
      "vpaddw %[xc], %[xd], %[xc]\n\t"
      "vpmaddwd %[sb], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[i3], %[i3]\n\t"
      "vmovdqa 256(%[d]), %[l0]\n\t"
      "vmovdqa 384(%[d]), %[l1]\n\t"
      "vmovdqa 320(%[d]), %[h0]\n\t"
      "vmovdqa 448(%[d]), %[h1]\n\t"
      "vpbroadcastd 8(%[b0]), %[xa]\n\t"
      "vpbroadcastd 12(%[b0]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[l0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[l1], %[xb]\n\t"
      "vpaddw %[xa], %[xb], %[xa]\n\t"
      "vpmaddwd %[sa], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[i0], %[i0]\n\t"
      "vpbroadcastd 24(%[b0]), %[xc]\n\t"
      "vpbroadcastd 28(%[b0]), %[xd]\n\t"
      "vpmaddubsw %[xc], %[h0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[h1], %[xd]\n\t"
      "vpaddw %[xc], %[xd], %[xc]\n\t"
      "vpmaddwd %[sb], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[i0], %[i0]\n\t"
      "vpbroadcastd 8(%[b0],%[s],1), %[xa]\n\t"
      "vpbroadcastd 12(%[b0],%[s],1), %[xb]\n\t"
      "vpmaddubsw %[xa], %[l0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[l1], %[xb]\n\t"
      "vpaddw %[xa], %[xb], %[xa]\n\t"
      "vpmaddwd %[sa], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[i1], %[i1]\n\t"
      "vpbroadcastd 24(%[b0],%[s],1), %[xc]\n\t"
      "vpbroadcastd 28(%[b0],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[h0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[h1], %[xd]\n\t"
      "vpaddw %[xc], %[xd], %[xc]\n\t"
      "vpmaddwd %[sb], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[i1], %[i1]\n\t"
      "vpbroadcastd 8(%[b2]), %[xa]\n\t"
      "vpbroadcastd 12(%[b2]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[l0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[l1], %[xb]\n\t"
      "vpaddw %[xa], %[xb], %[xa]\n\t"
      "vpmaddwd %[sa], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[i2], %[i2]\n\t"
      "vpbroadcastd 24(%[b2]), %[xc]\n\t"
      "vpbroadcastd 28(%[b2]), %[xd]\n\t"
      "vpmaddubsw %[xc], %[h0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[h1], %[xd]\n\t"
      "vpaddw %[xc], %[xd], %[xc]\n\t"
      "vpmaddwd %[sb], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[i2], %[i2]\n\t"
      "vpbroadcastd 8(%[b2],%[s],1), %[xa]\n\t"
      "vpbroadcastd 12(%[b2],%[s],1), %[xb]\n\t"
      "vpmaddubsw %[xa], %[l0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[l1], %[xb]\n\t"
      "vpaddw %[xa], %[xb], %[xa]\n\t"
      "vpmaddwd %[sa], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[i3], %[i3]\n\t"
      "vpbroadcastd 24(%[b2],%[s],1), %[xc]\n\t"
      "vpbroadcastd 28(%[b2],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[h0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[h1], %[xd]\n\t"
      "vpaddw %[xc], %[xd], %[xc]\n\t"
      "vpmaddwd %[sb], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[i3], %[i3]"
      : [i0] "+x"(i[0]), [i1] "+x"(i[1]), [i2] "+x"(i[2]), [i3] "+x"(i[3]), [l0] "=&x"(l0), [l1] "=&x"(l1),
        [h0] "=&x"(h0), [h1] "=&x"(h1), [xa] "=&x"(xa), [xb] "=&x"(xb), [xc] "=&x"(xc), [xd] "=&x"(xd)
      : [d] "r"(d), [b0] "r"(b0), [b2] "r"(b2), [s] "r"(s), [sa] "x"(sa), [sb] "x"(sb)
      : "memory");
}

// Q5_K on plain AVX2, 4 tokens, one sub-block of the decoded panel (d: its chunk 0, half h): the
// 16-column halves one after the other (a half's 4 chunks in registers), per token its 4
// broadcasts and maddubs summed in int16 (4 x 2 x 31 x 128 < 2^15) and one madd by the scale as
// both int16 of each lane (sa), into the tokens' integer sums i (the halves cannot share one
// int16 sum as Q4_K's do). The tokens' quants are x rows apart from b0 (tokens 0, 1) and b2 (2,
// 3). Assembly for the same reason as ak_q4k_sub4.
__attribute__((always_inline)) inline void ak_q5k_sub4(__m256i (&i)[4], const uint8_t* d, const uint8_t* b0,
                                                       const uint8_t* b2, int64_t s, __m256i sa) {
  __m256i w0, w1, w2, w3, xa, xb, xc, xd;
  asm(
      "vmovdqa 0(%[d]), %[w0]\n\t"
      "vmovdqa 128(%[d]), %[w1]\n\t"
      "vmovdqa 256(%[d]), %[w2]\n\t"
      "vmovdqa 384(%[d]), %[w3]\n\t"
      "vpbroadcastd 0(%[b0]), %[xa]\n\t"
      "vpbroadcastd 4(%[b0]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[w0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[w1], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 8(%[b0]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w2], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 12(%[b0]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w3], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpmaddwd %[sa], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[i0], %[i0]\n\t"
      "vpbroadcastd 0(%[b0],%[s],1), %[xc]\n\t"
      "vpbroadcastd 4(%[b0],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[w0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[w1], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 8(%[b0],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w2], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 12(%[b0],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w3], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpmaddwd %[sa], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[i1], %[i1]\n\t"
      "vpbroadcastd 0(%[b2]), %[xa]\n\t"
      "vpbroadcastd 4(%[b2]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[w0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[w1], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 8(%[b2]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w2], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 12(%[b2]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w3], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpmaddwd %[sa], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[i2], %[i2]\n\t"
      "vpbroadcastd 0(%[b2],%[s],1), %[xc]\n\t"
      "vpbroadcastd 4(%[b2],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[w0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[w1], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 8(%[b2],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w2], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 12(%[b2],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w3], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpmaddwd %[sa], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[i3], %[i3]\n\t"
      "vmovdqa 64(%[d]), %[w0]\n\t"
      "vmovdqa 192(%[d]), %[w1]\n\t"
      "vmovdqa 320(%[d]), %[w2]\n\t"
      "vmovdqa 448(%[d]), %[w3]\n\t"
      "vpbroadcastd 16(%[b0]), %[xa]\n\t"
      "vpbroadcastd 20(%[b0]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[w0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[w1], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 24(%[b0]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w2], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 28(%[b0]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w3], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpmaddwd %[sa], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[i0], %[i0]\n\t"
      "vpbroadcastd 16(%[b0],%[s],1), %[xc]\n\t"
      "vpbroadcastd 20(%[b0],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[w0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[w1], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 24(%[b0],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w2], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 28(%[b0],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w3], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpmaddwd %[sa], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[i1], %[i1]\n\t"
      "vpbroadcastd 16(%[b2]), %[xa]\n\t"
      "vpbroadcastd 20(%[b2]), %[xb]\n\t"
      "vpmaddubsw %[xa], %[w0], %[xa]\n\t"
      "vpmaddubsw %[xb], %[w1], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 24(%[b2]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w2], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpbroadcastd 28(%[b2]), %[xb]\n\t"
      "vpmaddubsw %[xb], %[w3], %[xb]\n\t"
      "vpaddw %[xb], %[xa], %[xa]\n\t"
      "vpmaddwd %[sa], %[xa], %[xa]\n\t"
      "vpaddd %[xa], %[i2], %[i2]\n\t"
      "vpbroadcastd 16(%[b2],%[s],1), %[xc]\n\t"
      "vpbroadcastd 20(%[b2],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xc], %[w0], %[xc]\n\t"
      "vpmaddubsw %[xd], %[w1], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 24(%[b2],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w2], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpbroadcastd 28(%[b2],%[s],1), %[xd]\n\t"
      "vpmaddubsw %[xd], %[w3], %[xd]\n\t"
      "vpaddw %[xd], %[xc], %[xc]\n\t"
      "vpmaddwd %[sa], %[xc], %[xc]\n\t"
      "vpaddd %[xc], %[i3], %[i3]"
      : [i0] "+x"(i[0]), [i1] "+x"(i[1]), [i2] "+x"(i[2]), [i3] "+x"(i[3]), [w0] "=&x"(w0), [w1] "=&x"(w1),
        [w2] "=&x"(w2), [w3] "=&x"(w3), [xa] "=&x"(xa), [xb] "=&x"(xb), [xc] "=&x"(xc), [xd] "=&x"(xd)
      : [d] "r"(d), [b0] "r"(b0), [b2] "r"(b2), [s] "r"(s), [sa] "x"(sa)
      : "memory");
}
#endif

template <GgmlType T, int NT>
inline void ak_tile(const uint8_t* grp, const uint8_t* decoded, int64_t nsb, int h, const PackedAct& x,
                    int64_t t0, float* y, int64_t ldy) {
  using P = AK<T>;
  __m256 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* o = grp + size_t(b) * P::kBlock;
    const uint8_t* par = o + P::kPar;
    const quant::block_q8_K* xb[NT];
    const Q8KSums* ks[NT];
    for (int t = 0; t < NT; ++t) {
      xb[t] = reinterpret_cast<const quant::block_q8_K*>(x.q + size_t(t0 + t) * x.stride) + b;
      ks[t] = x.ks + (t0 + t) * nsb + b;
    }
    // Each sub-block's scales are applied as it ends (its chunks come from L1/L2 here: one token
    // alone, a decode step, is ak_gemv's).
    __m256i isum[NT];
    for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
#if !MINFER_PACKED_VNNI
      if constexpr (NT == 4 && T != GgmlType::IQ4_XS)  // (IQ4_XS: the C++ loop below, sign form)
        if (decoded) {
          const uint8_t* x0 = reinterpret_cast<const uint8_t*>(xb[0]->qs) + 32 * j;
          const uint8_t* d = decoded + 4096 * b + 512 * j + 32 * h;
          const AkScales sc = ak_scales<T>(par, j, h);
          if constexpr (T == GgmlType::Q4_K) {
            ak_q4k_sub4(isum, d, x0, x0 + 2 * x.stride, int64_t(x.stride), sc.a);
          } else if constexpr (T == GgmlType::Q5_K) {
            const __m256i sa = _mm256_or_si256(sc.a, _mm256_slli_epi32(sc.a, 16));  // 0..63: no sign
            ak_q5k_sub4(isum, d, x0, x0 + 2 * x.stride, int64_t(x.stride), sa);
          } else {
            // Scales as int16 pairs; the offset term -k x bsum x scale of both halves (Q6_K and the
            // IQ3 types k = 32, Q3_K 4, Q2_K none) is one madd of the bsum pair against the pair
            // (-k sa, -k sb).
            const __m256i m16 = _mm256_set1_epi32(0xFFFF);
            const __m256i sa = _mm256_or_si256(_mm256_and_si256(sc.a, m16), _mm256_slli_epi32(sc.a, 16));
            const __m256i sb = _mm256_or_si256(_mm256_and_si256(sc.b, m16), _mm256_slli_epi32(sc.b, 16));
            if constexpr (T != GgmlType::Q2_K) {
              constexpr int lg = kAkQ6Form<T> ? 5 : 2;  // log2 k
              const __m256i off = _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi32(sc.a, lg), m16),
                                                  _mm256_slli_epi32(sc.b, 16 + lg));  // k sa | k sb << 16
              for (int t = 0; t < 4; ++t)
                isum[t] = _mm256_sub_epi32(isum[t], _mm256_madd_epi16(_mm256_set1_epi32(ks[t]->bsum16[j]), off));
            }
            ak_q6k_sub4(isum, d, x0, x0 + 2 * x.stride, int64_t(x.stride), sa, sb);
          }
          continue;
        }
#endif
      __m256i s0[NT], s1[NT];
      for (int t = 0; t < NT; ++t) {
        s0[t] = ak_offset<T>(*ks[t], 2 * j);
        s1[t] = ak_offset<T>(*ks[t], 2 * j + 1);
      }
      [[maybe_unused]] __m256i p0[NT] = {}, p1[NT] = {};  // AVX2: maddubs sums of up to kGroup chunks
      for (int c = 0; c < 4; ++c) {
        __m256i lo, hi;
        if (decoded) {
          const uint8_t* dc = decoded + 4096 * b + 512 * j + 128 * c + 32 * h;
          lo = _mm256_load_si256((const __m256i*)dc);
          hi = _mm256_load_si256((const __m256i*)(dc + 64));
        } else {
          ak_chunk<T>(o, j, c, h, &lo, &hi);
        }
        for (int t = 0; t < NT; ++t) {
          const uint8_t* xq = reinterpret_cast<const uint8_t*>(xb[t]->qs) + 32 * j + 4 * c;
          ak_accumulate<T>(lo, hi, _mm256_set1_epi32(load_i32(xq)), _mm256_set1_epi32(load_i32(xq + 16)), c,
                           s0[t], s1[t], p0[t], p1[t]);
        }
      }
      const AkScales sc = ak_scales<T>(par, j, h);
      for (int t = 0; t < NT; ++t) isum[t] = ak_apply<T>(sc, s0[t], s1[t], p0[t], isum[t]);
    }
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_add_ps(acc[t], ak_term<T>(par, h, isum[t], *ks[t]));
  }
  for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + (t0 + t) * ldy + 8 * h, acc[t]);
}

// A group's super-blocks as ak_chunk() returns them: lo and hi of chunk c of sub-block j, half
// h, at 4096 b + 512 j + 128 c + 64 (hi) + 32 h.
template <GgmlType T>
void ak_decode(const uint8_t* grp, int64_t nsb, uint8_t* out) {
  for (int64_t b = 0; b < nsb; ++b)
    for (int j = 0; j < 8; ++j)
      for (int c = 0; c < 4; ++c)
        for (int h = 0; h < 2; ++h) {
          __m256i lo, hi;
          ak_chunk<T>(grp + size_t(b) * AK<T>::kBlock, j, c, h, &lo, &hi);
          uint8_t* dc = out + 4096 * b + 512 * j + 128 * c + 32 * h;
          _mm256_store_si256((__m256i*)dc, lo);
          _mm256_store_si256((__m256i*)(dc + 64), hi);
        }
}

// One token x one group (decode), both halves in one pass: each 64-byte chunk is read once, its
// two ymm (rows 0-7 and 8-15) share the token's broadcast quants, and each sub-block's scales are
// applied as it ends. The integer sums and the float steps per half are ak_tile's, so the results
// are the same bit for bit. AMD Zen 4, ISA=avx2, GemvPackedCold GB/s, against ak_tile a half at
// a time (two passes over each group, sums staged, 2 KiB prefetch): one core Q4_K 6144 x 1024
// 13.5 -> 22.1, Q6_K 12.0 -> 21.4; two threads Q4_K 20.5 -> 26-31 (one pass with the 2 KiB
// prefetch: 13.7 one core; 4-16 KiB: 16-19). prefetch: decode_prefetch(SuperBlocks), the AVX-512
// kp_gemv's fetch kPackedPrefetch ahead. Zen 4 goes without it (above); on Zen 5 the hardware
// prefetchers alone left this kernel waiting on memory: GemvPackedCold 6144 x 1024, one core /
// two threads, ISA=avx2 Q4_K 14.0 / 25.5-26.8 -> 24.8-27.9 / 39-49, Q6_K 14.8-15.2 / 27.5-29.1
// -> 23.8-28.0 / 41-53; AVX-VNNI Q4_K 14.6-15.2 / 26.0-28.8 -> 22.7-24.7 / 43-46, Q6_K
// 18.5-19.6 / 32.0-36.4 -> 25.0-28.8 / 45-52 (4096 B ahead: the same within the noise).
template <GgmlType T>
inline void ak_gemv(const uint8_t* grp, int64_t nsb, const PackedAct& x, float* y, bool prefetch) {
  using P = AK<T>;
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  const auto* xrow = reinterpret_cast<const quant::block_q8_K*>(x.q);
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* o = grp + size_t(b) * P::kBlock;
    if (prefetch)
      MINFER_ROLLED_LOOP
      for (size_t l = 0; l < P::kBlock; l += 64) _mm_prefetch((const char*)(o + kPackedPrefetch + l), _MM_HINT_T2);
    const uint8_t* par = o + P::kPar;
    const uint8_t* xq0 = reinterpret_cast<const uint8_t*>(xrow[b].qs);
    const Q8KSums& ks = x.ks[b];
    __m256i isum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    // The sub-block loop is not unrolled: one core, ISA=avx2, GemvPackedCold GB/s unrolled -> not:
    // Q4_K 6144 x 1024 24.5 -> 27.7, Q6_K 22.1 -> 27.9, Q6_K 1024 x 3072 19.3 -> 25.2 (cache-hot
    // Q4_K 5 % slower, Q5_K and Q6_K 7-11 % faster).
#pragma GCC unroll 1
    for (int j = 0; j < 8; ++j) {
      __m256i s0[2], s1[2];
      [[maybe_unused]] __m256i p0[2], p1[2];
      for (int h = 0; h < 2; ++h) {
        s0[h] = ak_offset<T>(ks, 2 * j);
        s1[h] = ak_offset<T>(ks, 2 * j + 1);
      }
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m256i x0 = _mm256_set1_epi32(load_i32(xq0 + 32 * j + 4 * c));
        const __m256i x1 = _mm256_set1_epi32(load_i32(xq0 + 32 * j + 16 + 4 * c));
        for (int h = 0; h < 2; ++h) {
          __m256i lo, hi;
          ak_chunk<T>(o, j, c, h, &lo, &hi);
          ak_accumulate<T>(lo, hi, x0, x1, c, s0[h], s1[h], p0[h], p1[h]);
        }
      }
      for (int h = 0; h < 2; ++h) isum[h] = ak_apply<T>(ak_scales<T>(par, j, h), s0[h], s1[h], p0[h], isum[h]);
    }
    for (int h = 0; h < 2; ++h) acc[h] = _mm256_add_ps(acc[h], ak_term<T>(par, h, isum[h], ks));
  }
  _mm256_storeu_ps(y, acc[0]);
  _mm256_storeu_ps(y + 8, acc[1]);
}

#if !MINFER_PACKED_VNNI
// ---- IQ4_XS prompts on plain AVX2, in int16 ------------------------------------------------
// Its values (-127..113) would saturate maddubs as unsigned bytes, so ak_tile multiplies them in
// sign form (two vpsignb, a maddubs and a madd a chunk and token, and a vpmulld a sub-block for
// its scale). In int16 as Q8_0's prompts (q8_wide_gemm), the sub-block's scale (-32..31) goes into
// the weights once per group and call (|value x scale| <= 4064): one vpmaddwd takes 16 products,
// a super-block's 256 columns are one integer sum, and the float step (ak_term) is ak_tile's, on
// the same exact integer: results are bit-identical to it.

// Panel of super-blocks [sb0, sb1) of one group in q8_wide_panel's layout (block 8 (sb - sb0) + j
// for sub-block j), each value times its row's sub-block scale.
inline void iq4xs_wide_panel(const uint8_t* grp, int64_t sb0, int64_t sb1, int16_t* pan) {
  using P = AK<GgmlType::IQ4_XS>;
  const __m256i m16 = _mm256_set1_epi32(0xFFFF);
  for (int64_t sb = sb0; sb < sb1; ++sb) {
    const uint8_t* o = grp + size_t(sb) * P::kBlock;
    for (int j = 0; j < 8; ++j) {
      int16_t* blk = pan + 512 * (8 * (sb - sb0) + j);
      for (int h = 0; h < 2; ++h) {
        const __m256i sc = ak_scales<GgmlType::IQ4_XS>(o + P::kPar, j, h).a;  // int32 lanes
        const __m256i f = _mm256_or_si256(_mm256_and_si256(sc, m16), _mm256_slli_epi32(sc, 16));
        for (int c = 0; c < 4; ++c) {
          __m256i lo, hi;  // columns 4c.. (pairs 2c, 2c + 1) and 16 + 4c.. (pairs 8 + 2c, 9 + 2c)
          ak_chunk<GgmlType::IQ4_XS>(o, j, c, h, &lo, &hi);
          wide_chunk_pairs<true>(lo, f, blk + 32 * (2 * c) + 16 * h);
          wide_chunk_pairs<true>(hi, f, blk + 32 * (8 + 2 * c) + 16 * h);
        }
      }
    }
  }
}

// T tokens (from t0, in tiles of kActTile) x the 16 rows of a group over super-blocks [sb0, sb1)
// (the panel's), the float sums continued from y unless sb0 is 0.
template <int T>
inline void iq4xs_wide_tile(const uint8_t* grp, const int16_t* pan, int64_t nsb, int64_t sb0, int64_t sb1,
                            const PackedAct& x, int64_t t0, float* y, int64_t ldy) {
  static_assert(T <= 4 && kActTile % 4 == 0);  // t0 is a multiple of 4: the T tokens share a tile
  using P = AK<GgmlType::IQ4_XS>;
  const int64_t nb = 8 * nsb;  // blocks of 32 columns, as the widened activations count them
  const size_t a0 = act_index(t0, 0, nb, kActTile);
  alignas(32) float acc[T][16];
  wide_acc_load<T>(acc, sb0 > 0, y, t0, ldy);
  for (int64_t sb = sb0; sb < sb1; ++sb) {
    __m256i s[T][2];
    for (int t = 0; t < T; ++t) s[t][0] = s[t][1] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const int16_t* pb = pan + 512 * (8 * (sb - sb0) + j);
      const int16_t* xb = x.tw + 32 * (a0 + kActTile * (8 * sb + j));
#pragma GCC unroll 4
      for (int p = 0; p < 16; ++p) q8_wide_pair<T>(s, pb + 32 * p, xb + 2 * p);
    }
    const uint8_t* par = grp + size_t(sb) * P::kBlock + P::kPar;
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < T; ++t) {
        const __m256 term = ak_term<GgmlType::IQ4_XS>(par, h, s[t][h], x.ks[(t0 + t) * nsb + sb]);
        _mm256_store_ps(acc[t] + 8 * h, _mm256_add_ps(_mm256_load_ps(acc[t] + 8 * h), term));
      }
  }
  wide_acc_store<T>(acc, y, t0, ldy);
}

// Panels of 2 super-blocks: q8_wide_gemm's 16 KiB.
inline void iq4xs_wide_gemm(const uint8_t* wp, int64_t n_groups, int64_t nsb, const PackedAct& x, int64_t nt,
                            float* y, int64_t ldy) {
  wide_panels(
      wp, n_groups, packed_group_bytes(GgmlType::IQ4_XS, nsb * 256), nsb, kWideBlocks / 8, nt, y, &iq4xs_wide_panel,
      [&](auto w, const uint8_t* grp, const int16_t* pan, int64_t sb0, int64_t sb1, int64_t t0, float* yg) {
        iq4xs_wide_tile<decltype(w)::value>(grp, pan, nsb, sb0, sb1, x, t0, yg, ldy);
      });
}
#endif

// Tiles of 4 tokens: with vpdpbusd a chunk's decode is the larger cost, shared by more tokens (one
// core, 3072 x 1024 x 128, AVX-VNNI 2 -> 4 tokens: Q4_K 176 -> 201 GOP/s, Q6_K 125 -> 143); on
// AVX2 two tokens were bound by the loads and four, in C++, spilled: their sub-blocks are in
// assembly (ak_q4k_sub4, ak_q5k_sub4, ak_q6k_sub4). From kDecodeOnceTokens tokens the
// super-blocks are decoded once per group (ak_decode).
// Up to 7 tokens the one-token rows run once per token (a group's rows stay in L1 after the
// first): Zen 5, qwen3-0.6b Q4_K_M, 2 threads, ms a pass of 2 / 4 / 6 / 7 tokens, tiles -> rows:
// AVX2 16.6 / 24.0 / 29.4 / 31.6 -> 12.8 / 18.4 / 25.0 / 27.5, AVX-VNNI 14.8 / 20.1 / 25.0 / 28.6 ->
// 11.8 / 16.3 / 20.6 / 23.0; at 8 the tiles (two of four) are as fast or faster.
constexpr int64_t kAkTileMinTokens = 8;

template <GgmlType T>
void ak_gemm(GgmlType, const uint8_t* wp, int64_t n_groups, int64_t nsb, const PackedAct& x,
             int64_t nt, float* y, int64_t ldy) {
  const size_t gb = packed_group_bytes(T, nsb * 256);
  if (nt < kAkTileMinTokens) {
    const bool prefetch = decode_prefetch(DecodeStream::SuperBlocks);
    for (int64_t g = 0; g < n_groups; ++g)
      for (int64_t t = 0; t < nt; ++t) {
        PackedAct xt = x;  // token t's Q8_K row and sums
        xt.q = x.q + size_t(t) * x.stride;
        xt.ks = x.ks + t * nsb;
        ak_gemv<T>(wp + size_t(g) * gb, nsb, xt, y + t * ldy + 16 * g, prefetch);
      }
    return;
  }
#if !MINFER_PACKED_VNNI
  if constexpr (T == GgmlType::IQ4_XS)
    if (x.tw) {  // (packed_wide_act)
      iq4xs_wide_gemm(wp, n_groups, nsb, x, nt, y, ldy);
      return;
    }
#endif
  uint8_t* pan = nullptr;
  if (AK<T>::kDecode && nt >= kDecodeOnceTokens)
    pan = thread_scratch(ScratchSlot::PackedPanel, size_t(nsb) * 4096);
  for (int64_t g = 0; g < n_groups; ++g) {
    const uint8_t* grp = wp + size_t(g) * gb;
    if (pan) ak_decode<T>(grp, nsb, pan);
    each_half_tile<4>(grp, 1, 0, nt, y + 16 * g,
                                  [&](auto w, const uint8_t*, int h, int64_t t0, float* yg) {
                                    ak_tile<T, decltype(w)::value>(grp, pan, nsb, h, x, t0, yg, ldy);
                                  });
  }
}

PackedGemmFn packed_gemm_256(GgmlType t) {
  if (t == GgmlType::Q8_0) return &gemm_256<AQ8>;
  if (t == GgmlType::Q4_0) return &gemm_256<AQ4>;
  if (t == GgmlType::Q5_0) return &gemm_256<AQ5>;
  if (t == GgmlType::IQ4_NL) return &gemm_256<AIQ4>;
  if (t == GgmlType::MXFP4) return &gemm_256<AMX4>;
  if (t == GgmlType::NVFP4) return &gemm_256<ANV4>;
  if (t == GgmlType::Q1_0) return &gemm_256<AQ1>;
  if (t == GgmlType::Q2_0) return &gemm_256<AQ2>;
  if (t == GgmlType::Q4_1) return &gemm_256<AQ41>;
  if (t == GgmlType::Q5_1) return &gemm_256<AQ51>;
  if (t == GgmlType::Q4_K) return &ak_gemm<GgmlType::Q4_K>;
  if (t == GgmlType::Q5_K) return &ak_gemm<GgmlType::Q5_K>;
  if (t == GgmlType::Q6_K) return &ak_gemm<GgmlType::Q6_K>;
  if (t == GgmlType::Q3_K) return &ak_gemm<GgmlType::Q3_K>;
  if (t == GgmlType::Q2_K) return &ak_gemm<GgmlType::Q2_K>;
  if (t == GgmlType::IQ4_XS) return &ak_gemm<GgmlType::IQ4_XS>;
  if (t == GgmlType::IQ3_S) return &ak_gemm<GgmlType::IQ3_S>;
  if (t == GgmlType::IQ3_XXS) return &ak_gemm<GgmlType::IQ3_XXS>;
  return nullptr;
}

}  // namespace
}  // namespace minfer::cpu
