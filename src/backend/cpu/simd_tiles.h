// SIMD tile kernels shared by the AVX2 and the AVX-512 translation units. Each of those files
// includes <immintrin.h> and every other header first, then switches the target ISA with
// `MINFER_ISA_BEGIN` (isa_target.h), defines `I8Ops` (the int8 dot-product primitive of its ISA) and
// includes this file. Everything here has internal linkage, so each ISA gets its own copy and
// no out-of-line AVX code can leak into the baseline build through a shared inline symbol.
// No standard-library templates are used below for the same reason.
//
// Tiles: R weight rows x T activation rows share every load: a weight block is decoded once
// and multiplied with T activation blocks; an activation block is loaded once for R rows.
#ifndef MINFER_SIMD_TILES_BODY
#define MINFER_SIMD_TILES_BODY

namespace minfer::cpu {
namespace {

struct Tile {
  int64_t n;
  const uint8_t* w;
  size_t ws;
  const uint8_t* x;
  size_t xs;
  float* y;
  int64_t ldy;
};

inline float f16(const uint8_t* p) {
  uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// ---- Q8_0-activation types: 32 signed weights and one F16 scale per block -------------------

// The 16 bytes broadcast by the load itself, then the high half shifted and blended: no
// 128-bit insert (a shuffle-port uop, the bottleneck of the decode loops).
inline __m256i nibbles(const uint8_t* qs) {
  const __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m256i v = _mm256_blend_epi32(t, _mm256_srli_epi16(t, 4), 0xF0);
  return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}

// q(b): the 32 signed weights of block b. u(b): the same as unsigned bytes w + kOffset, for
// the offset form of the dot product (see q8_tile); kSmall: u < 32, so that maddubs' i16 pair
// sums cannot saturate.
struct DecQ8_0 {
  static constexpr size_t kBytes = 34;
  static constexpr int kOffset = 128;
  static constexpr bool kSmall = false;
  static __m256i q(const uint8_t* b) { return _mm256_loadu_si256((const __m256i*)(b + 2)); }
  static __m256i u(const uint8_t* b) { return _mm256_xor_si256(q(b), _mm256_set1_epi8(char(0x80))); }
};
struct DecQ4_0 {
  static constexpr size_t kBytes = 18;
  static constexpr int kOffset = 8;
  static constexpr bool kSmall = true;
  static __m256i q(const uint8_t* b) { return _mm256_sub_epi8(u(b), _mm256_set1_epi8(8)); }
  static __m256i u(const uint8_t* b) { return nibbles(b + 2); }
};
struct DecIQ4NL {
  static constexpr size_t kBytes = 18;
  static constexpr int kOffset = 128;
  static constexpr bool kSmall = false;
  static __m256i q(const uint8_t* b) {
    const __m256i table = _mm256_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25,
                                           38, 53, 69, 89, 113, -127, -104, -83, -65, -49, -35,
                                           -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
    return _mm256_shuffle_epi8(table, nibbles(b + 2));
  }
  static __m256i u(const uint8_t* b) { return _mm256_xor_si256(q(b), _mm256_set1_epi8(char(0x80))); }
};
// Bit j of qh is the fifth bit of element j: spread the 32 bits over 32 bytes.
inline __m256i q5_high(const uint8_t* qhp) {
  uint32_t qh;
  __builtin_memcpy(&qh, qhp, 4);
  const __m256i rep = _mm256_shuffle_epi8(
      _mm256_set1_epi32(int(qh)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                       3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(rep, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}
struct DecQ5_0 {
  static constexpr size_t kBytes = 22;
  static constexpr int kOffset = 16;
  static constexpr bool kSmall = true;
  static __m256i q(const uint8_t* b) { return _mm256_sub_epi8(u(b), _mm256_set1_epi8(16)); }
  static __m256i u(const uint8_t* b) { return _mm256_or_si256(nibbles(b + 6), q5_high(b + 2)); }
};

// Formats whose blocks of 32 weights share a scale with their neighbours, or hold it in
// another form (`kGrouped`): a row's block b is read through at(row, b) (its storage block, for
// the prefetch), scale(row, b) and u/q(row, b). The products and sums are then q8_tile's.
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}
// Q1_0: 128 weights +-d per F16 scale; block b's 32 sign bits are bytes 4 (b % 4) of its group's
// bits. u = 2 bit (0 or 2), so that w = u - 1.
struct DecQ1_0 {
  static constexpr bool kGrouped = true;
  static constexpr int kDecodeRows = 4;  // see compute_tiles
  static constexpr int kOffset = 1;
  static constexpr bool kSmall = true;
  static const uint8_t* at(const uint8_t* row, int64_t b) { return row + size_t(b / 4) * 18; }
  static float scale(const uint8_t* row, int64_t b) { return f16(at(row, b)); }
  static __m256i u(const uint8_t* row, int64_t b) {
    const __m256i rep = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(load_u32(at(row, b) + 2 + 4 * (b % 4)))),
        _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3,
                         3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(rep, bit), bit), _mm256_set1_epi8(2));
  }
  static __m256i q(const uint8_t* row, int64_t b) { return _mm256_sub_epi8(u(row, b), _mm256_set1_epi8(1)); }
};
// Q2_0: 64 weights per F16 scale, 2-bit q (element j at bits 2 (j % 4) of byte j / 4), w = q - 1.
// Each 32-bit lane takes one source byte four times; 16-bit shifts by 0, 2, 4, 6 bring the
// right pair of bits to the bottom of each of its bytes (the bits shifted in from the next byte
// land above bit 1 and are masked off).
struct DecQ2_0 {
  static constexpr bool kGrouped = true;
  static constexpr int kDecodeRows = 4;  // see compute_tiles
  static constexpr int kOffset = 1;
  static constexpr bool kSmall = true;
  static const uint8_t* at(const uint8_t* row, int64_t b) { return row + size_t(b / 2) * 18; }
  static float scale(const uint8_t* row, int64_t b) { return f16(at(row, b)); }
  static __m256i u(const uint8_t* row, int64_t b) {
    uint64_t bits;
    __builtin_memcpy(&bits, at(row, b) + 2 + 8 * (b % 2), 8);
    const __m256i v = _mm256_shuffle_epi8(
        _mm256_set1_epi64x((long long)bits),
        _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7,
                         7, 7, 7));
    const __m256i m = _mm256_set1_epi32(0x03);
    __m256i r = _mm256_and_si256(v, m);
    r = _mm256_or_si256(r, _mm256_and_si256(_mm256_srli_epi16(v, 2), _mm256_slli_epi32(m, 8)));
    r = _mm256_or_si256(r, _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_slli_epi32(m, 16)));
    return _mm256_or_si256(r, _mm256_and_si256(_mm256_srli_epi16(v, 6), _mm256_slli_epi32(m, 24)));
  }
  static __m256i q(const uint8_t* row, int64_t b) { return _mm256_sub_epi8(u(row, b), _mm256_set1_epi8(1)); }
};
// MXFP4: 32 E2M1 codes (IQ4_NL's nibble layout) looked up as doubled integers (+-12 at most),
// the E8M0 scale halved.
struct DecMXFP4 {
  static constexpr bool kGrouped = true;
  static constexpr int kOffset = 128;
  static constexpr bool kSmall = false;
  static const uint8_t* at(const uint8_t* row, int64_t b) { return row + size_t(b) * 17; }
  static float scale(const uint8_t* row, int64_t b) { return quant::e8m0_to_fp32_half(*at(row, b)); }
  static __m256i q(const uint8_t* row, int64_t b) {
    const __m256i table = _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12, 0, 1, 2,
                                           3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
    return _mm256_shuffle_epi8(table, nibbles(at(row, b) + 1));
  }
  static __m256i u(const uint8_t* row, int64_t b) {
    return _mm256_xor_si256(q(row, b), _mm256_set1_epi8(char(0x80)));
  }
};
// NVFP4: blocks of 64 in four sub-blocks of 16, each with its own UE4M3 scale, so a block of 32
// has two scales: scales() gives them as a vector, the first for int32 lanes 0-3 (weights 0-15),
// the second for lanes 4-7. A sub-block's 16 codes are 8 bytes, low nibbles then high ones:
// 16-bit shifts and two 64-bit unpacks lay them out in order before the lookup.
struct DecNVFP4 {
  static constexpr bool kGrouped = true;
  static constexpr int kOffset = 128;
  static constexpr bool kSmall = false;
  static const uint8_t* at(const uint8_t* row, int64_t b) { return row + size_t(b / 2) * 36; }
  struct Ue4m3Table {  // quant::ue4m3_to_fp32 of every code (it calls ldexp)
    float v[256];
    Ue4m3Table() {
      for (int i = 0; i < 256; ++i) v[i] = quant::ue4m3_to_fp32(uint8_t(i));
    }
  };
  static __m256 scales(const uint8_t* row, int64_t b) {
    static const Ue4m3Table kUe4m3;
    const uint8_t* d = at(row, b) + 2 * (b % 2);
    return _mm256_setr_m128(_mm_set1_ps(kUe4m3.v[d[0]]), _mm_set1_ps(kUe4m3.v[d[1]]));
  }
  static __m256i q(const uint8_t* row, int64_t b) {
    const __m256i v =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at(row, b) + 4 + 16 * (b % 2))));
    const __m256i m = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_and_si256(v, m), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
    const __m256i codes = _mm256_blend_epi32(_mm256_unpacklo_epi64(lo, hi), _mm256_unpackhi_epi64(lo, hi), 0xF0);
    const __m256i table = _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12, 0, 1, 2,
                                           3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
    return _mm256_shuffle_epi8(table, codes);
  }
  static __m256i u(const uint8_t* row, int64_t b) {
    return _mm256_xor_si256(q(row, b), _mm256_set1_epi8(char(0x80)));
  }
};
template <class Dec>
constexpr bool kGroupedDec = requires { Dec::kGrouped; };
template <class Dec>
constexpr bool kVectorScaleDec = requires(const uint8_t* row) { Dec::scales(row, int64_t(0)); };

// Two forms of the int8 block dot product. Sign form: |w| (u8) times x carrying w's sign (s8),
// the only one maddubs allows for full-range weights. Offset form (VNNI, or small weights):
// (w + k) (u8) times x, minus k * sum(x), the correction computed once per token and block and
// shared by the R rows; it saves the two sign operations per row and token.
// A grouped decoder's single row and token (MXFP4's and NVFP4's decode) takes the sign form: the
// correction would serve that one row only. The integer sums are the same either way.
template <class Dec, int R, int T>
inline void q8_tile(const Tile& a, int64_t r0, int64_t t0) {
  constexpr bool kOffsetForm = (I8Ops::kVnni || Dec::kSmall) && !(kGroupedDec<Dec> && R == 1 && T == 1);
  __m256 acc[R][T];
  const uint8_t* wr[R];
  const uint8_t* xr[T];
  for (int r = 0; r < R; ++r) wr[r] = a.w + size_t(r0 + r) * a.ws;
  for (int t = 0; t < T; ++t) xr[t] = a.x + size_t(t0 + t) * a.xs;
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const int64_t nb = a.n / 32;
  for (int64_t b = 0; b < nb; ++b) {
    __m256i xq[T], corr[T];
    float dx[T];
    for (int t = 0; t < T; ++t) {
      const uint8_t* xb = xr[t] + b * 34;
      dx[t] = f16(xb);
      xq[t] = _mm256_loadu_si256((const __m256i*)(xb + 2));
      if constexpr (kOffsetForm)
        corr[t] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                   I8Ops::dot(_mm256_set1_epi8(char(Dec::kOffset)), xq[t]));
    }
    for (int r = 0; r < R; ++r) {
      const uint8_t* wb;
      float dw = 0.0f;
      __m256 dwv = _mm256_setzero_ps();  // per-lane scales (kVectorScaleDec)
      if constexpr (kVectorScaleDec<Dec>) {
        wb = Dec::at(wr[r], b);
        dwv = Dec::scales(wr[r], b);
      } else if constexpr (kGroupedDec<Dec>) {
        wb = Dec::at(wr[r], b);
        dw = Dec::scale(wr[r], b);
      } else {
        wb = wr[r] + b * Dec::kBytes;
        dw = f16(wb);
      }
      // Decode streams R rows from memory once: fetch ahead of the hardware prefetcher.
      if constexpr (T == 1) _mm_prefetch((const char*)(wb + 512), _MM_HINT_T0);
      auto dec_u = [&] {
        if constexpr (kGroupedDec<Dec>) return Dec::u(wr[r], b);
        else return Dec::u(wb);
      };
      auto dec_q = [&] {
        if constexpr (kGroupedDec<Dec>) return Dec::q(wr[r], b);
        else return Dec::q(wb);
      };
      auto scale = [&](int t) {
        if constexpr (kVectorScaleDec<Dec>) return _mm256_mul_ps(dwv, _mm256_set1_ps(dx[t]));
        else return _mm256_set1_ps(dw * dx[t]);
      };
      if constexpr (kOffsetForm) {
        const __m256i u = dec_u();
        for (int t = 0; t < T; ++t) {
          const __m256 p = _mm256_cvtepi32_ps(I8Ops::dot_acc(corr[t], u, xq[t]));
          acc[r][t] = _mm256_fmadd_ps(scale(t), p, acc[r][t]);
        }
      } else {
        const __m256i q = dec_q();
        const __m256i aq = _mm256_sign_epi8(q, q);
        for (int t = 0; t < T; ++t) {
          const __m256i sx = _mm256_sign_epi8(xq[t], q);
          const __m256 p = _mm256_cvtepi32_ps(I8Ops::dot(aq, sx));
          acc[r][t] = _mm256_fmadd_ps(scale(t), p, acc[r][t]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r0 + r] = hsum(acc[r][t]);
}

// ---- Q8_1-activation types (q4_1, q5_1): unsigned weights, x = d*q + m ----------------------
// Per block: d_w*d_x*sum(q*x_q) + m_w*s_x, with s_x = d_x*sum(x_q) precomputed in the Q8_1 block.

struct DecQ4_1 {
  static constexpr size_t kBytes = 20;
  static __m256i q(const uint8_t* b) { return nibbles(b + 4); }
};
struct DecQ5_1 {
  static constexpr size_t kBytes = 24;
  static __m256i q(const uint8_t* b) { return _mm256_or_si256(nibbles(b + 8), q5_high(b + 4)); }
};

template <class Dec, int R, int T>
inline void q81_tile(const Tile& a, int64_t r0, int64_t t0) {
  __m256 acc[R][T];
  float sm[R][T];
  const uint8_t* wr[R];
  const uint8_t* xr[T];
  for (int r = 0; r < R; ++r) wr[r] = a.w + size_t(r0 + r) * a.ws;
  for (int t = 0; t < T; ++t) xr[t] = a.x + size_t(t0 + t) * a.xs;
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) {
      acc[r][t] = _mm256_setzero_ps();
      sm[r][t] = 0.0f;
    }
  const int64_t nb = a.n / 32;
  for (int64_t b = 0; b < nb; ++b) {
    __m256i xq[T];
    float dx[T], sx[T];
    for (int t = 0; t < T; ++t) {
      const uint8_t* xb = xr[t] + b * 36;
      dx[t] = f16(xb);
      sx[t] = f16(xb + 2);
      xq[t] = _mm256_loadu_si256((const __m256i*)(xb + 4));
    }
    for (int r = 0; r < R; ++r) {
      const uint8_t* wb = wr[r] + b * Dec::kBytes;
      const __m256i q = Dec::q(wb);
      const float dw = f16(wb), mw = f16(wb + 2);
      for (int t = 0; t < T; ++t) {
        const __m256 p = _mm256_cvtepi32_ps(I8Ops::dot(q, xq[t]));
        acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * dx[t]), p, acc[r][t]);
        sm[r][t] += mw * sx[t];
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r0 + r] = hsum(acc[r][t]) + sm[r][t];
}

// ---- F32 / F16 -------------------------------------------------------------------------------

struct LoadF32 {
  static __m256 v(const uint8_t* p, int64_t i) { return _mm256_loadu_ps((const float*)p + i); }
  static float s(const uint8_t* p, int64_t i) { return ((const float*)p)[i]; }
};
struct LoadF16 {
  static __m256 v(const uint8_t* p, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)((const uint16_t*)p + i)));
  }
  static float s(const uint8_t* p, int64_t i) { return f16(p + 2 * i); }
};

// Q8_0 rows (the attention's V cache): element i is d x q[i] of its block of 32, as
// dequantize_row gives it. A vector of 8 never straddles blocks (i is a multiple of 8).
struct LoadQ8_0 {
  static const quant::block_q8_0* block(const uint8_t* p, int64_t i) {
    return reinterpret_cast<const quant::block_q8_0*>(p) + i / 32;
  }
  static __m256 v(const uint8_t* p, int64_t i) {
    const quant::block_q8_0* b = block(p, i);
    const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(b->qs + i % 32))));
    return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b->d)), q);
  }
  static float s(const uint8_t* p, int64_t i) {
    const quant::block_q8_0* b = block(p, i);
    return fp16_to_fp32(b->d) * float(b->qs[i % 32]);
  }
};

// bf16 is the high half of an f32: widen and shift.
struct LoadBF16 {
  static __m256 v(const uint8_t* p, int64_t i) {
    const __m128i h = _mm_loadu_si128((const __m128i*)((const uint16_t*)p + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static float s(const uint8_t* p, int64_t i) {
    uint16_t h;
    __builtin_memcpy(&h, p + 2 * i, 2);
    const uint32_t u = uint32_t(h) << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
  }
};

// C sums per output (1 or 4), column 8 c of every 8 C into sum c (the rest of the vectors into
// sum 0), added as (s0 + s1) + (s2 + s3): a one-token row in one chain waits on the FMA's
// latency (see f_tiles).
template <class L, int R, int T, int C = 1>
inline void f_tile(const Tile& a, int64_t r0, int64_t t0) {
  static_assert(C == 1 || C == 4);
  __m256 acc[R][T][C];
  const uint8_t* wr[R];
  const uint8_t* xr[T];
  for (int r = 0; r < R; ++r) wr[r] = a.w + size_t(r0 + r) * a.ws;
  for (int t = 0; t < T; ++t) xr[t] = a.x + size_t(t0 + t) * a.xs;
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c) acc[r][t][c] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 * C <= a.n; i += 8 * C)
    for (int c = 0; c < C; ++c) {
      __m256 xv[T];
      for (int t = 0; t < T; ++t) xv[t] = L::v(xr[t], i + 8 * c);
      for (int r = 0; r < R; ++r) {
        const __m256 wv = L::v(wr[r], i + 8 * c);
        for (int t = 0; t < T; ++t) acc[r][t][c] = _mm256_fmadd_ps(wv, xv[t], acc[r][t][c]);
      }
    }
  for (; i + 8 <= a.n; i += 8) {
    __m256 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = L::v(xr[t], i);
    for (int r = 0; r < R; ++r) {
      const __m256 wv = L::v(wr[r], i);
      for (int t = 0; t < T; ++t) acc[r][t][0] = _mm256_fmadd_ps(wv, xv[t], acc[r][t][0]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) {
      __m256 v = acc[r][t][0];
      if constexpr (C == 4)
        v = _mm256_add_ps(_mm256_add_ps(acc[r][t][0], acc[r][t][1]), _mm256_add_ps(acc[r][t][2], acc[r][t][3]));
      float s = hsum(v);
      for (int64_t j = i; j < a.n; ++j) s += L::s(wr[r], j) * L::s(xr[t], j);
      a.y[(t0 + t) * a.ldy + r0 + r] = s;
    }
}

// ---- K-quants x Q8_K: integer sums per super-block, then the scalar path's float steps, so
// the result is bit-identical to the scalar kernel. ---------------------------------------------

constexpr size_t kQ8KBytes = 292;  // float d, 256 qs, 16 int16 bsums

inline float q8k_d(const uint8_t* b) {
  float d;
  __builtin_memcpy(&d, b, 4);
  return d;
}
inline const int8_t* q8k_qs(const uint8_t* b) { return (const int8_t*)(b + 4); }
inline int q8k_bsum(const uint8_t* b, int j) {
  int16_t s;
  __builtin_memcpy(&s, b + 260 + 2 * j, 2);
  return s;
}
// The sum of all 256 quants of a Q8_K block (its 16 block sums).
inline int q8k_sum(const uint8_t* b) {
  int s = 0;
  for (int j = 0; j < 16; ++j) s += q8k_bsum(b, j);
  return s;
}

inline void scale_min_k4(int j, const uint8_t* q, int* d, int* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// q4_K / q5_K (block: d, dmin, scales[12], [qh[32]], qs[128]).
template <bool kHigh, int T>
inline void q45k_tile(const Tile& a, int64_t r, int64_t t0) {
  constexpr size_t kBytes = kHigh ? 176 : 144;
  constexpr size_t kQs = kHigh ? 48 : 16;
  const uint8_t* wr = a.w + size_t(r) * a.ws;
  float s[T];
  for (int t = 0; t < T; ++t) s[t] = 0.0f;
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < a.n / 256; ++b) {
    const uint8_t* wb = wr + b * kBytes;
    int sc[8], mn[8];
    for (int j = 0; j < 8; ++j) scale_min_k4(j, wb + 4, &sc[j], &mn[j]);
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    __m256i qh = _mm256_setzero_si256();
    if (kHigh) qh = _mm256_loadu_si256((const __m256i*)(wb + 16));
    for (int j = 0; j < 8; ++j) {
      const __m256i raw = _mm256_loadu_si256((const __m256i*)(wb + kQs + 32 * (j / 2)));
      __m256i q = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(raw, 4) : raw, m4);
      if (kHigh) {
        const __m256i bit = _mm256_set1_epi8(char(1 << j));
        const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit);
        q = _mm256_or_si256(q, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
      }
      const __m256i scv = _mm256_set1_epi16(short(sc[j]));
      for (int t = 0; t < T; ++t) {
        const uint8_t* xb = a.x + size_t(t0 + t) * a.xs + b * kQ8KBytes;
        const __m256i x8 = _mm256_loadu_si256((const __m256i*)(q8k_qs(xb) + 32 * j));
        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q, x8), scv));
      }
    }
    const float d = f16(wb), dmin = f16(wb + 2);
    for (int t = 0; t < T; ++t) {
      const uint8_t* xb = a.x + size_t(t0 + t) * a.xs + b * kQ8KBytes;
      int summs = 0;
      for (int j = 0; j < 8; ++j) summs += mn[j] * (q8k_bsum(xb, 2 * j) + q8k_bsum(xb, 2 * j + 1));
      const float xd = q8k_d(xb);
      s[t] += (d * xd) * float(hsum_i32(isum[t])) - (dmin * xd) * float(summs);
    }
  }
  for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = s[t];
}

// q6_K (block: ql[128], qh[64], scales[16] int8, d): q = u - 32 with u in [0, 64) unsigned, so
// dot(q, x) = dot(u, x) - 32 * sum(x), and sum(x) per 16 is Q8_K's bsums.
template <int T>
inline void q6k_tile(const Tile& a, int64_t r, int64_t t0) {
  const uint8_t* wr = a.w + size_t(r) * a.ws;
  float s[T];
  for (int t = 0; t < T; ++t) s[t] = 0.0f;
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
  for (int64_t b = 0; b < a.n / 256; ++b) {
    const uint8_t* wb = wr + b * 210;
    const int8_t* sc = (const int8_t*)(wb + 192);
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int k = 0; k < 2; ++k) {
      const uint8_t* ql = wb + 64 * k;
      const __m256i qh = _mm256_loadu_si256((const __m256i*)(wb + 128 + 32 * k));
      for (int rr = 0; rr < 4; ++rr) {
        const __m256i l = _mm256_loadu_si256((const __m256i*)(ql + 32 * (rr & 1)));
        const __m256i lo = _mm256_and_si256(rr >> 1 ? _mm256_srli_epi16(l, 4) : l, m4);
        const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * rr)), m2), 4);
        const __m256i u = _mm256_or_si256(lo, hi);
        const int si = 8 * k + 2 * rr;
        const __m256i scv = _mm256_set_m128i(_mm_set1_epi16(sc[si + 1]), _mm_set1_epi16(sc[si]));
        for (int t = 0; t < T; ++t) {
          const uint8_t* xb = a.x + size_t(t0 + t) * a.xs + b * kQ8KBytes;
          const __m256i x8 = _mm256_loadu_si256((const __m256i*)(q8k_qs(xb) + 128 * k + 32 * rr));
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(u, x8), scv));
        }
      }
    }
    const float d = f16(wb + 208);
    for (int t = 0; t < T; ++t) {
      const uint8_t* xb = a.x + size_t(t0 + t) * a.xs + b * kQ8KBytes;
      int corr = 0;
      for (int j = 0; j < 16; ++j) corr += sc[j] * q8k_bsum(xb, j);
      s[t] += (d * q8k_d(xb)) * float(hsum_i32(isum[t]) - 32 * corr);
    }
  }
  for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = s[t];
}

// The signed scale of block j of an iq4_xs super-block (d, scales_h, scales_l[4], qs[128]):
// quant::iq4_xs_scale's bits, here so that no inline function is shared across the ISA units.
inline int iq4xs_scale(const uint8_t* wb, int j) {
  const int sh = wb[2] | (wb[3] << 8);
  return (((wb[4 + j / 2] >> (4 * (j % 2))) & 0xf) | (((sh >> (2 * j)) & 3) << 4)) - 32;
}

// ---- The lattice i-quants x Q8_K (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) ----------
// Per block of 32: its values' magnitudes as unsigned bytes (IQ2 8..43, IQ3 1..62), a vector
// whose byte signs are theirs (never 0: sign_epi8 moves them onto the activations), its scales
// (2s + 1, per 16 columns as int16 lanes). maddubs' pair sums stay below 2 x 62 x 127, madd by
// the scales: the integer sums are dot_iq*'s. IQ1's values are 8 x grid +- 1 (the group's
// shift), so its one sum is dot_iq1_*'s 8 sumi + sumi1 and its final factor 1/8: its float steps
// then round as the scalar path's. Bit-identical to scalar in every case.

inline __m256i iq_grid64(const uint64_t* grid, int i0, int i1, int i2, int i3) {
  return _mm256_set_epi64x(int64_t(grid[i3]), int64_t(grid[i2]), int64_t(grid[i1]), int64_t(grid[i0]));
}

// -1 in byte i where bit i of sg is set, else +1: byte i takes sign byte i / 8 (a shuffle within
// each 128-bit half of the four bytes broadcast), then its bit i % 8.
inline __m256i iq_signer(uint32_t sg) {
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2,
                                          2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bits = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
  const __m256i neg =
      _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(int(sg)), spread), bits), bits);
  return _mm256_or_si256(neg, _mm256_set1_epi8(1));
}
// Eight 4-byte grid entries (IQ3) by inserts (an 8-element vector initializer compiles to
// masked broadcasts from general registers under AVX-512, much slower).
inline __m256i iq_grid32(const uint32_t* g, int i0, int i1, int i2, int i3, int i4, int i5, int i6, int i7) {
  __m128i lo = _mm_cvtsi32_si128(int(g[i0])), hi = _mm_cvtsi32_si128(int(g[i4]));
  lo = _mm_insert_epi32(lo, int(g[i1]), 1);
  hi = _mm_insert_epi32(hi, int(g[i5]), 1);
  lo = _mm_insert_epi32(lo, int(g[i2]), 2);
  hi = _mm_insert_epi32(hi, int(g[i6]), 2);
  lo = _mm_insert_epi32(lo, int(g[i3]), 3);
  hi = _mm_insert_epi32(hi, int(g[i7]), 3);
  return _mm256_set_m128i(hi, lo);
}
inline __m256i iq_scales(int lo, int hi) {  // int16 lanes: columns 0-15, then 16-31
  return _mm256_set_m128i(_mm_set1_epi16(short(hi)), _mm_set1_epi16(short(lo)));
}

struct IqSub {
  __m256i u;       // |value| of the 32 columns
  __m256i signer;  // the values' signs, as nonzero bytes
  __m256i scale;
};

// A lattice super-block decoded with vector steps once: its 32 grid indexes (IQ1: with the
// shift sign as bit 11), 4 per 64-bit word, moved to general registers (a load of a word of a
// vector just stored waits for the store: IQ1_M 200 -> 241 us a 3072 x 1024 row set with
// per-index loads), and its 16 scales (2 s + 1 per 16 columns). A block then costs its four
// grid loads, one broadcast and one byte shuffle for its scales, and the dot: the per-block
// scalar bit arithmetic of indexes and scales had made IQ1_M and IQ1_S the slowest types.
struct LatSb {
  uint64_t q[8];              // block ib's 4 grid indexes, 16 bits each
  alignas(32) int16_t sc[16];  // scale of columns 16 h .. 16 h + 15
  alignas(32) uint8_t sg[32];  // group g's 8 signs (IQ2_XXS, IQ2_XS, IQ3_XXS)
  // i0: groups 0-7 | 16-23 and i1: 8-15 | 24-31 as 16-bit indexes (unpack order).
  void indexes(__m256i i0, __m256i i1) {
    const __m128i a0 = _mm256_castsi256_si128(i0), a1 = _mm256_castsi256_si128(i1);
    const __m128i b0 = _mm256_extracti128_si256(i0, 1), b1 = _mm256_extracti128_si256(i1, 1);
    q[0] = uint64_t(_mm_cvtsi128_si64(a0));
    q[1] = uint64_t(_mm_extract_epi64(a0, 1));
    q[2] = uint64_t(_mm_cvtsi128_si64(a1));
    q[3] = uint64_t(_mm_extract_epi64(a1, 1));
    q[4] = uint64_t(_mm_cvtsi128_si64(b0));
    q[5] = uint64_t(_mm_extract_epi64(b0, 1));
    q[6] = uint64_t(_mm_cvtsi128_si64(b1));
    q[7] = uint64_t(_mm_extract_epi64(b1, 1));
  }
  // w0: groups 0-15, w1: 16-31 (natural order).
  void indexes_natural(__m256i w0, __m256i w1) {
    indexes(_mm256_permute2x128_si256(w0, w1, 0x20), _mm256_permute2x128_si256(w0, w1, 0x31));
  }
  // 32 7-bit sign fields (a byte per group, in order) with the parity bit that makes each byte's
  // count of negatives even (ggml's ksigns_iq2xs bytes), for signer(): one broadcast and byte
  // shuffle a block, where a table of 128 +-1 vectors took four loads and inserts.
  void signs7(__m256i f) {
    const __m256i par = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0, 0,
                                         -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i p = _mm256_xor_si256(_mm256_shuffle_epi8(par, _mm256_and_si256(f, m4)),
                                       _mm256_shuffle_epi8(par, _mm256_and_si256(_mm256_srli_epi16(f, 4), m4)));
    _mm256_store_si256((__m256i*)sg, _mm256_or_si256(f, p));
  }
  // The 7-bit fields at bits 0, 7, 14, 21 of 8 words (a block's each) as bytes in group order.
  static __m256i fields7(__m256i a) {
    const __m256i m = _mm256_set1_epi32(127);
    const __m256i f01 = _mm256_or_si256(_mm256_and_si256(a, m), _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(a, 7), m), 8));
    const __m256i f2 = _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(a, 14), m), 16);
    const __m256i f3 = _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(a, 21), m), 24);
    return _mm256_or_si256(_mm256_or_si256(f01, f2), f3);
  }
  // Per-block scales from the top 4 bits of 8 words (IQ2_XXS, IQ3_XXS): 2 s + 1 for both halves.
  void word_scales(__m256i a) {
    const __m256i s = _mm256_srli_epi32(a, 28);
    const __m256i s2 = _mm256_add_epi32(_mm256_add_epi32(s, s), _mm256_set1_epi32(1));
    _mm256_store_si256((__m256i*)sc, _mm256_or_si256(s2, _mm256_slli_epi32(s2, 16)));
  }
  __m256i signer(int ib) const { return iq_signer(load_u32(sg + 4 * ib)); }
  uint32_t neg(const uint8_t*, int ib) const { return load_u32(sg + 4 * ib); }  // bit i: column i negative
  // Per-block nibble scales (IQ2_XS, IQ2_S: byte ib, low nibble columns 0-15, high 16-31).
  void nibble_scales(const uint8_t* p) {
    const __m128i b = _mm_loadl_epi64((const __m128i*)p), m4 = _mm_set1_epi8(0x0F);
    const __m128i n = _mm_unpacklo_epi8(_mm_and_si128(b, m4), _mm_and_si128(_mm_srli_epi16(b, 4), m4));
    const __m256i s = _mm256_cvtepu8_epi16(n);
    _mm256_store_si256((__m256i*)sc, _mm256_add_epi16(_mm256_add_epi16(s, s), _mm256_set1_epi16(1)));
  }
  // 3-bit fields: lane j of w (16-bit lanes) shifted right by 3 (j % 4), its low 3 bits (a multiply
  // brings them to bits 9-11: AVX2 has no per-lane 16-bit shift).
  static __m256i fields3(__m256i w) {
    const __m256i m = _mm256_setr_epi16(512, 64, 8, 1, 512, 64, 8, 1, 512, 64, 8, 1, 512, 64, 8, 1);
    return _mm256_and_si256(_mm256_srli_epi16(_mm256_mullo_epi16(w, m), 9), _mm256_set1_epi16(7));
  }
  template <class G>
  static __m256i grid(const G& g, uint64_t k) {
    return iq_grid64(g.v, int(k & 0xFFFF), int((k >> 16) & 0xFFFF), int((k >> 32) & 0xFFFF), int(k >> 48));
  }
  __m256i scale(int ib) const {  // scales 2 ib, 2 ib + 1 (one dword) to the two 16-column halves
    const __m256i halves = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2,
                                            3, 2, 3, 2, 3, 2, 3);
    return _mm256_shuffle_epi8(_mm256_set1_epi32(int(load_u32((const uint8_t*)(sc + 2 * ib)))), halves);
  }
};

struct DecIq2xxs {  // d, qs[32] (uint16): per block 4 index bytes, then 4 x 7 sign bits and the scale
  static constexpr size_t kBytes = 66;
  static constexpr float kFinal = 0.125f;
  static constexpr int kMaxAbs = 43;  // largest |value|
  static float d(const uint8_t* wb) { return f16(wb); }
  struct Sb : LatSb {
    explicit Sb(const uint8_t* wb) {
      // The blocks' second words (dwords 1, 3, ... of the 64 bytes), in block order.
      const __m256 v0 = _mm256_loadu_ps((const float*)(wb + 2)), v1 = _mm256_loadu_ps((const float*)(wb + 34));
      const __m256i a1 = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(v0, v1, _MM_SHUFFLE(3, 1, 3, 1))),
                                                  _MM_SHUFFLE(3, 1, 2, 0));
      signs7(fields7(a1));
      word_scales(a1);
    }
    IqSub sub(const uint8_t* wb, int ib) const {
      const uint8_t* i = wb + 2 + 8 * ib;
      return {iq_grid64(quant::kIq2xxsGrid.v, i[0], i[1], i[2], i[3]), signer(ib), scale(ib)};
    }
  };
};
struct DecIq2xs {  // d, qs[32] (9-bit index | 7 sign bits << 9), scales[8]
  static constexpr size_t kBytes = 74;
  static constexpr float kFinal = 0.125f;
  static constexpr int kMaxAbs = 43;  // largest |value|
  static float d(const uint8_t* wb) { return f16(wb); }
  struct Sb : LatSb {
    explicit Sb(const uint8_t* wb) {
      const __m256i v0 = _mm256_loadu_si256((const __m256i*)(wb + 2)), v1 = _mm256_loadu_si256((const __m256i*)(wb + 34));
      const __m256i m9 = _mm256_set1_epi16(511);
      indexes_natural(_mm256_and_si256(v0, m9), _mm256_and_si256(v1, m9));
      // packus interleaves the 128-bit lanes: groups 0-7, 16-23 | 8-15, 24-31 -> in order
      signs7(_mm256_permute4x64_epi64(_mm256_packus_epi16(_mm256_srli_epi16(v0, 9), _mm256_srli_epi16(v1, 9)),
                                      _MM_SHUFFLE(3, 1, 2, 0)));
      nibble_scales(wb + 66);
    }
    IqSub sub(const uint8_t*, int ib) const { return {grid(quant::kIq2xsGrid, q[ib]), signer(ib), scale(ib)}; }
  };
};
struct DecIq2s {  // d, qs[32], signs[32], qh[8], scales[8]
  static constexpr size_t kBytes = 82;
  static constexpr float kFinal = 0.125f;
  static constexpr int kMaxAbs = 43;  // largest |value|
  static float d(const uint8_t* wb) { return f16(wb); }
  struct Sb : LatSb {
    explicit Sb(const uint8_t* wb) {
      // Group 4 ib + l: qs byte | bits 2 l, 2 l + 1 of qh[ib] as bits 8, 9. Lanes in indexes()'
      // unpack order; the picked qh byte is the low byte of each 16-bit lane.
      const __m256i qs = _mm256_loadu_si256((const __m256i*)(wb + 2)), zero = _mm256_setzero_si256();
      const __m256i qh = _mm256_broadcastsi128_si256(_mm_loadl_epi64((const __m128i*)(wb + 66)));
      const __m256i pick0 = _mm256_setr_epi8(0, -1, 0, -1, 0, -1, 0, -1, 1, -1, 1, -1, 1, -1, 1, -1, 4, -1, 4, -1, 4,
                                             -1, 4, -1, 5, -1, 5, -1, 5, -1, 5, -1);
      const __m256i pick1 = _mm256_setr_epi8(2, -1, 2, -1, 2, -1, 2, -1, 3, -1, 3, -1, 3, -1, 3, -1, 6, -1, 6, -1, 6,
                                             -1, 6, -1, 7, -1, 7, -1, 7, -1, 7, -1);
      const __m256i mul = _mm256_setr_epi16(256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4);
      const __m256i m = _mm256_set1_epi16(0x300);
      indexes(_mm256_or_si256(_mm256_unpacklo_epi8(qs, zero),
                              _mm256_and_si256(_mm256_mullo_epi16(_mm256_shuffle_epi8(qh, pick0), mul), m)),
              _mm256_or_si256(_mm256_unpackhi_epi8(qs, zero),
                              _mm256_and_si256(_mm256_mullo_epi16(_mm256_shuffle_epi8(qh, pick1), mul), m)));
      nibble_scales(wb + 74);
    }
    IqSub sub(const uint8_t* wb, int ib) const {
      return {grid(quant::kIq2sGrid, q[ib]), iq_signer(load_u32(wb + 34 + 4 * ib)), scale(ib)};
    }
    uint32_t neg(const uint8_t* wb, int ib) const { return load_u32(wb + 34 + 4 * ib); }
  };
};
struct DecIq3xxs {  // d, qs[64] (8-bit indexes of 4 values), then per 32 a word of signs and scale
  static constexpr size_t kBytes = 98;
  static constexpr float kFinal = 0.25f;
  static constexpr int kMaxAbs = 62;  // largest |value|
  static float d(const uint8_t* wb) { return f16(wb); }
  struct Sb : LatSb {
    explicit Sb(const uint8_t* wb) {
      const __m256i a = _mm256_loadu_si256((const __m256i*)(wb + 66));
      signs7(fields7(a));
      word_scales(a);
    }
    IqSub sub(const uint8_t* wb, int ib) const {
      const uint8_t* q8 = wb + 2 + 8 * ib;
      const uint32_t* g = quant::kIq3xxsGrid.v;
      return {iq_grid32(g, q8[0], q8[1], q8[2], q8[3], q8[4], q8[5], q8[6], q8[7]),
              signer(ib), scale(ib)};
    }
  };
};
struct DecIq3s {  // d, qs[64], qh[8], signs[32], scales[4]
  static constexpr size_t kBytes = 110;
  static constexpr float kFinal = 1.0f;
  static constexpr int kMaxAbs = 15;  // largest |value|
  static float d(const uint8_t* wb) { return f16(wb); }
  struct Sb : LatSb {
    uint64_t q2[16];  // block ib's 8 indexes in q2[2 ib], q2[2 ib + 1], 16 bits each
    explicit Sb(const uint8_t* wb) {
      // index k: byte k of qs, bit k % 8 of qh[k / 8] as its ninth bit
      const __m256i mul = _mm256_setr_epi16(256, 128, 64, 32, 16, 8, 4, 2, 256, 128, 64, 32, 16, 8, 4, 2);
      for (int h = 0; h < 4; ++h) {  // blocks 2 h, 2 h + 1
        const __m256i qs = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i*)(wb + 2 + 16 * h)));
        const __m256i qh = _mm256_set_m128i(_mm_set1_epi16(short(wb[67 + 2 * h])), _mm_set1_epi16(short(wb[66 + 2 * h])));
        const __m256i i = _mm256_or_si256(qs, _mm256_and_si256(_mm256_mullo_epi16(qh, mul), _mm256_set1_epi16(256)));
        const __m128i a0 = _mm256_castsi256_si128(i), a1 = _mm256_extracti128_si256(i, 1);
        q2[4 * h] = uint64_t(_mm_cvtsi128_si64(a0));
        q2[4 * h + 1] = uint64_t(_mm_extract_epi64(a0, 1));
        q2[4 * h + 2] = uint64_t(_mm_cvtsi128_si64(a1));
        q2[4 * h + 3] = uint64_t(_mm_extract_epi64(a1, 1));
      }
      // scales: nibble ib of bytes 106-109, for both halves of block ib
      const __m256i n = _mm256_and_si256(
          _mm256_srlv_epi32(_mm256_set1_epi32(int(load_u32(wb + 106))), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
          _mm256_set1_epi32(15));
      const __m256i s2 = _mm256_add_epi32(_mm256_add_epi32(n, n), _mm256_set1_epi32(1));
      _mm256_store_si256((__m256i*)sc, _mm256_or_si256(s2, _mm256_slli_epi32(s2, 16)));
    }
    IqSub sub(const uint8_t* wb, int ib) const {
      const uint32_t* g = quant::kIq3sGrid.v;
      const uint64_t a = q2[2 * ib], b = q2[2 * ib + 1];
      const __m256i u = iq_grid32(g, int(a & 0xFFFF), int((a >> 16) & 0xFFFF), int((a >> 32) & 0xFFFF), int(a >> 48),
                                  int(b & 0xFFFF), int((b >> 16) & 0xFFFF), int((b >> 32) & 0xFFFF), int(b >> 48));
      return {u, iq_signer(load_u32(wb + 74 + 4 * ib)), scale(ib)};
    }
    uint32_t neg(const uint8_t* wb, int ib) const { return load_u32(wb + 74 + 4 * ib); }
  };
};
// IQ1: values 8 x grid ({-1, 0, 1} bytes) + the group's shift (+-1), odd hence never 0. One
// table holds them for every index and shift sign (bit 11 set: shift -1), 32 KiB.
struct Iq1Values {
  uint64_t v[4096];
  constexpr Iq1Values() : v{} {
    for (int e = 0; e < 4096; ++e) {
      const uint64_t g = quant::kIq1sGrid.v[e & 2047];
      uint64_t x = 0;
      for (int i = 0; i < 8; ++i)
        x |= uint64_t(uint8_t(8 * int8_t(uint8_t(g >> (8 * i))) + (e >= 2048 ? -1 : 1))) << (8 * i);
      v[e] = x;
    }
  }
};
constexpr Iq1Values kIq1Values;

// IQ1's blocks from a LatSb: its indexes select 8 x grid + shift in kIq1Values.
struct Iq1Sb : LatSb {
  IqSub sub(const uint8_t*, int ib) const {
    const __m256i v = grid(kIq1Values, q[ib]);
    return {_mm256_abs_epi8(v), v, scale(ib)};
  }
};

struct DecIq1s {  // d, qs[32], qh[8] (uint16: 3 index bits per group, 3-bit scale, shift sign)
  static constexpr size_t kBytes = 50;
  static constexpr float kFinal = 0.125f;
  static constexpr int kMaxAbs = 9;  // largest |value|
  static float d(const uint8_t* wb) { return f16(wb); }
  struct Sb : Iq1Sb {
    explicit Sb(const uint8_t* wb) {
      // Group 4 ib + l: word ib of qh, bits 3 l .. 3 l + 2; the block's shift sign is bit 15. Lanes
      // in indexes()' unpack order: groups 0-7 | 16-23, then 8-15 | 24-31.
      const __m256i qh = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(wb + 34)));
      const __m256i qs = _mm256_loadu_si256((const __m256i*)(wb + 2)), zero = _mm256_setzero_si256();
      const __m256i pick0 = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 8, 9, 8, 9, 8, 9, 8, 9, 10,
                                             11, 10, 11, 10, 11, 10, 11);
      const __m256i pick1 = _mm256_add_epi8(pick0, _mm256_set1_epi8(4));
      __m256i i[2] = {_mm256_unpacklo_epi8(qs, zero), _mm256_unpackhi_epi8(qs, zero)};
      for (int h = 0; h < 2; ++h) {
        const __m256i w = _mm256_shuffle_epi8(qh, h ? pick1 : pick0);
        const __m256i hi = _mm256_or_si256(fields3(w), _mm256_slli_epi16(_mm256_srli_epi16(w, 15), 3));
        i[h] = _mm256_or_si256(i[h], _mm256_slli_epi16(hi, 8));
      }
      indexes(i[0], i[1]);
      const __m128i s = _mm_and_si128(_mm_srli_epi16(_mm256_castsi256_si128(qh), 12), _mm_set1_epi16(7));
      const __m128i s2 = _mm_add_epi16(_mm_add_epi16(s, s), _mm_set1_epi16(1));
      _mm_store_si128((__m128i*)sc, _mm_unpacklo_epi16(s2, s2));
      _mm_store_si128((__m128i*)(sc + 8), _mm_unpackhi_epi16(s2, s2));
    }
  };
};

struct DecIq1m {  // qs[32], qh[16] (per group 3 index bits and the shift's sign), scales[8] (+ d)
  static constexpr size_t kBytes = 56;
  static constexpr float kFinal = 0.125f;
  static constexpr int kMaxAbs = 9;  // largest |value|
  static float d(const uint8_t* wb) {  // quant::iq1_m_d's bits (no inline function shared across ISAs)
    uint16_t sc[4];
    __builtin_memcpy(sc, wb + 48, 8);
    return _cvtsh_ss(uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000)));
  }
  struct Sb : Iq1Sb {
    explicit Sb(const uint8_t* wb) {
      // qh byte k: group 2 k in its low nibble, 2 k + 1 in its high one (3 index bits, then the
      // shift sign: the table index's bits 8-11 as they are).
      const __m128i qh = _mm_loadu_si128((const __m128i*)(wb + 32)), m4 = _mm_set1_epi8(0x0F);
      const __m128i lo = _mm_and_si128(qh, m4), hi = _mm_and_si128(_mm_srli_epi16(qh, 4), m4);
      const __m256i nib = _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
      const __m256i qs = _mm256_loadu_si256((const __m256i*)wb);
      indexes(_mm256_unpacklo_epi8(qs, nib), _mm256_unpackhi_epi8(qs, nib));
      // scale h: bits 3 (h % 4) .. + 2 of word h / 4
      uint64_t w4;
      __builtin_memcpy(&w4, wb + 48, 8);
      const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 6,
                                            7, 6, 7, 6, 7, 6, 7);
      const __m256i s = fields3(_mm256_shuffle_epi8(_mm256_set1_epi64x(int64_t(w4)), pick));
      _mm256_store_si256((__m256i*)sc, _mm256_add_epi16(_mm256_add_epi16(s, s), _mm256_set1_epi16(1)));
    }
  };
};

// IQ4_XS in the same terms: IQ4_NL's nibbles looked up in kvalues_iq4nl (no zero among them),
// their magnitudes and signs (sign form, as q8_tile's: maddubs' pair sums of the values + 128
// would saturate), the block's scale less 32.
struct DecIq4xs {  // d, scales_h, scales_l[4], qs[128]
  static constexpr size_t kBytes = 136;
  static constexpr float kFinal = 1.0f;
  static constexpr int kMaxAbs = 127;  // largest |value|
  static float d(const uint8_t* wb) { return f16(wb); }
  static IqSub sub(const uint8_t* wb, int ib) {
    const __m256i q = DecIQ4NL::q(wb + 6 + 16 * ib);  // (q() reads a block's nibbles at + 2)
    const int s = iq4xs_scale(wb, ib);
    return {_mm256_sign_epi8(q, q), q, iq_scales(s, s)};
  }
};

// The ternary types in the same terms: values t - 1 (-1, 0, 1; TQ2_0's unused code 3 reads as 2,
// as in ggml), no scales (1), kFinal 1: the scalar float step (d_w x d_x) x isum per super-block.
struct DecTq2 {  // qs[64]: element 128 j + 32 l + m at bits 2 l of qs[32 j + m]; then d
  static constexpr size_t kBytes = 66;
  static constexpr float kFinal = 1.0f;
  static constexpr int kMaxAbs = 2;
  static float d(const uint8_t* wb) { return f16(wb + 64); }
  static IqSub sub(const uint8_t* wb, int ib) {
    const __m256i q = _mm256_loadu_si256((const __m256i*)(wb + 32 * (ib / 4)));
    const __m256i t = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * (ib % 4))), _mm256_set1_epi8(3));
    const __m256i v = _mm256_sub_epi8(t, _mm256_set1_epi8(1));
    return {_mm256_sign_epi8(v, v), v, _mm256_set1_epi16(1)};
  }
};
// TQ1_0: qs[48], qh[4], d. Trit n of a byte q is (uint8(q 3^n) x 3) >> 8 (quant::tq1_trit):
// elements 0-159 are trit n of qs[0..31] (block n), 160-239 trit n of qs[32..47] (16 a trit),
// 240-255 trit n of qh[0..3] (4 a trit). q 3^n by byte adds and masked shifts (9 q = (8 q & 0xF8
// a byte) + q), then the top two bits of 3/4 of it by two byte averages (ggml's steps; equal to
// the formula for every byte, checked exhaustively).
struct DecTq1 {
  static constexpr size_t kBytes = 54;
  static constexpr float kFinal = 1.0f;
  static constexpr int kMaxAbs = 1;
  static float d(const uint8_t* wb) { return f16(wb + 52); }
  static __m256i x3(__m256i q) { return _mm256_add_epi8(q, _mm256_add_epi8(q, q)); }
  static __m256i x9(__m256i q) {
    return _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16(q, 3), _mm256_set1_epi8(char(0xF8))), q);
  }
  static __m256i pow3(__m256i q, int n) {  // q 3^n, a byte at a time (mod 256)
    switch (n) {
      case 0: return q;
      case 1: return x3(q);
      case 2: return x9(q);
      case 3: return x9(x3(q));
      default: return x9(x9(q));
    }
  }
  static __m256i trit(__m256i p) {  // (p x 3) >> 8 a byte
    const __m256i a = _mm256_subs_epu8(p, _mm256_set1_epi8(1));
    const __m256i c = _mm256_avg_epu8(a, _mm256_avg_epu8(a, _mm256_setzero_si256()));
    return _mm256_and_si256(_mm256_srli_epi16(c, 6), _mm256_set1_epi8(3));
  }
  static IqSub sub(const uint8_t* wb, int ib) {
    __m256i p;
    if (ib < 5) {
      p = pow3(_mm256_loadu_si256((const __m256i*)wb), ib);
    } else {
      const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(wb + 32)));
      if (ib < 7) {
        p = _mm256_blend_epi32(pow3(b, 2 * (ib - 5)), pow3(b, 2 * (ib - 5) + 1), 0xF0);
      } else {  // trit 4 of qs[32..47], then byte k: qh[k % 4] 3^(k / 4)
        int32_t qh;
        __builtin_memcpy(&qh, wb + 48, 4);
        const __m128i h = _mm_set1_epi32(qh), c = _mm_setr_epi16(1, 1, 3, 3, 9, 9, 27, 27);
        const __m128i lo = _mm_and_si128(_mm_mullo_epi16(h, c), _mm_set1_epi16(0x00FF));
        const __m128i hi = _mm_mullo_epi16(_mm_and_si128(h, _mm_set1_epi16(short(0xFF00))), c);
        p = _mm256_set_m128i(_mm_or_si128(lo, hi), _mm256_castsi256_si128(pow3(b, 4)));
      }
    }
    const __m256i v = _mm256_sub_epi8(trit(p), _mm256_set1_epi8(1));
    return {_mm256_sign_epi8(v, v), v, _mm256_set1_epi16(1)};
  }
};

// A super-block's decoder: D::Sb where the type prepares its super-blocks, else D::sub per block.
template <class D>
struct PlainSb {
  explicit PlainSb(const uint8_t*) {}
  IqSub sub(const uint8_t* wb, int ib) const { return D::sub(wb, ib); }
};
template <class D>
struct SbOf {
  using type = PlainSb<D>;
};
template <class D>
  requires requires { typename D::Sb; }
struct SbOf<D> {
  using type = typename D::Sb;
};

// A row's super-blocks as the tiles read them: decoded from the GGUF layout as they come
// (GgufRow), or decoded once per call into scratch (DecodedRow, iqlat_gemm's prompts).
template <class D>
struct GgufRow {
  const uint8_t* wr;
  struct Block {
    const uint8_t* wb;
    typename SbOf<D>::type sb;
    explicit Block(const uint8_t* p) : wb(p), sb(p) {}
    IqSub sub(int ib) const { return sb.sub(wb, ib); }
    uint32_t neg(int ib) const { return sb.neg(wb, ib); }  // (the types whose signs are bits)
    float d() const { return D::d(wb); }
  };
  Block block(int64_t b) const { return Block(wr + b * D::kBytes); }
};
struct DecodedRow {
  const IqSub* dec;  // 8 blocks a super-block
  const float* dsb;  // d per super-block
  struct Block {
    const IqSub* q;
    float dv;
    const IqSub& sub(int ib) const { return q[ib]; }
    float d() const { return dv; }
  };
  Block block(int64_t b) const { return {dec + 8 * b, dsb[b]}; }
};

// One row of a 256-block i-quant x T tokens: per block sign_epi8 of the activations, maddubs,
// madd by the scales; the integer sum per super-block, then its float step. kMasked (AVX-512
// only): the signs from the block's sign bits by a masked subtract, its sign vector unused.
template <class D, int T, class Row, bool kMasked = false>
inline void iqlat_row_tile(const Row& row, const Tile& a, int64_t r, int64_t t0) {
  float s[T];
  for (int t = 0; t < T; ++t) s[t] = 0.0f;
  for (int64_t b = 0; b < a.n / 256; ++b) {
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    const auto blk = row.block(b);
    for (int ib = 0; ib < 8; ++ib) {
      // (a reference: a copy of a decoded block went through 16-byte halves on the stack, whose
      // 32-byte reload waits for the stores: IQ4_XS prompts 95 -> 13 GOP/s)
      const IqSub& q = blk.sub(ib);
      for (int t = 0; t < T; ++t) {
        const uint8_t* xb = a.x + size_t(t0 + t) * a.xs + b * kQ8KBytes;
        const __m256i x8 = _mm256_loadu_si256((const __m256i*)(q8k_qs(xb) + 32 * ib));
        __m256i xs;
        if constexpr (kMasked)
          xs = _mm256_mask_sub_epi8(x8, _cvtu32_mask32(blk.neg(ib)), _mm256_setzero_si256(), x8);
        else
          xs = _mm256_sign_epi8(x8, q.signer);
        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q.u, xs), q.scale));
      }
    }
    const float d = blk.d();
    for (int t = 0; t < T; ++t) {
      const uint8_t* xb = a.x + size_t(t0 + t) * a.xs + b * kQ8KBytes;
      s[t] += (d * q8k_d(xb)) * float(hsum_i32(isum[t]));
    }
  }
  for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = D::kFinal * s[t];
}
template <class D, int T>
inline void iqlat_tile(const Tile& a, int64_t r, int64_t t0) {
  iqlat_row_tile<D, T>(GgufRow<D>{a.w + size_t(r) * a.ws}, a, r, t0);
}

// q2_K (block: scales[16], qs[64], d, dmin): 2-bit planes, 16 sub-blocks of 16.
template <int T>
inline void q2k_tile(const Tile& a, int64_t r, int64_t t0) {
  const uint8_t* wr = a.w + size_t(r) * a.ws;
  float s[T];
  for (int t = 0; t < T; ++t) s[t] = 0.0f;
  const __m256i m2 = _mm256_set1_epi8(0x03);
  for (int64_t b = 0; b < a.n / 256; ++b) {
    const uint8_t* wb = wr + b * 84;
    const uint8_t* sc = wb;
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int k = 0; k < 2; ++k) {
      const __m256i q2 = _mm256_loadu_si256((const __m256i*)(wb + 16 + 32 * k));
      for (int j = 0; j < 4; ++j) {
        const __m256i q = _mm256_and_si256(_mm256_srl_epi16(q2, _mm_cvtsi32_si128(2 * j)), m2);
        const int si = 8 * k + 2 * j;
        const __m256i scv =
            _mm256_set_m128i(_mm_set1_epi16(sc[si + 1] & 0xF), _mm_set1_epi16(sc[si] & 0xF));
        for (int t = 0; t < T; ++t) {
          const uint8_t* xb = a.x + size_t(t0 + t) * a.xs + b * kQ8KBytes;
          const __m256i x8 = _mm256_loadu_si256((const __m256i*)(q8k_qs(xb) + 128 * k + 32 * j));
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q, x8), scv));
        }
      }
    }
    const float d = f16(wb + 80), dmin = f16(wb + 82);
    for (int t = 0; t < T; ++t) {
      const uint8_t* xb = a.x + size_t(t0 + t) * a.xs + b * kQ8KBytes;
      int summs = 0;
      for (int j = 0; j < 16; ++j) summs += q8k_bsum(xb, j) * (sc[j] >> 4);
      const float xd = q8k_d(xb);
      s[t] += (xd * d) * float(hsum_i32(isum[t])) - (xd * dmin) * float(summs);
    }
  }
  for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = s[t];
}

// q3_K (block: hmask[32], qs[64], scales[12], d): q = u - 4 with u = low 2 bits + 4 * hmask bit,
// so dot(q, x) = dot(u, x) - 4 * sum(x), sum(x) per 16 being Q8_K's bsums.

// u of columns 128k + 32j + (0..31) of a block: q3 the 32 bytes of qs[32k..], hm the hmask.
inline __m256i q3k_quarter(__m256i q3, __m256i hm, int k, int j) {
  const __m256i lo = _mm256_and_si256(_mm256_srl_epi16(q3, _mm_cvtsi32_si128(2 * j)), _mm256_set1_epi8(0x03));
  const __m256i bit = _mm256_set1_epi8(char(1 << (4 * k + j)));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit);
  return _mm256_or_si256(lo, _mm256_and_si256(set, _mm256_set1_epi8(4)));
}

// A block's 16 scales as int8 (less 32): low 4 bits from bytes 96-103 (sub-blocks 0-7 the low
// nibbles, 8-15 the high ones), high 2 bits from bytes 104-107 (sub-block j: byte 104 + j % 4,
// bits 2 (j / 4)).
inline __m128i q3k_scales(const uint8_t* wb) {
  uint64_t lo8;
  __builtin_memcpy(&lo8, wb + 96, 8);
  int32_t hi4;
  __builtin_memcpy(&hi4, wb + 104, 4);
  const __m128i lv = _mm_cvtsi64_si128(int64_t(lo8));
  const __m128i lo = _mm_unpacklo_epi64(_mm_and_si128(lv, _mm_set1_epi8(0x0F)),
                                        _mm_and_si128(_mm_srli_epi16(lv, 4), _mm_set1_epi8(0x0F)));
  const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(hi4), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(0x03));
  return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

template <int T>
inline void q3k_tile(const Tile& a, int64_t r, int64_t t0) {
  const uint8_t* wr = a.w + size_t(r) * a.ws;
  float s[T];
  for (int t = 0; t < T; ++t) s[t] = 0.0f;
  for (int64_t b = 0; b < a.n / 256; ++b) {
    const uint8_t* wb = wr + b * 110;
    // The scales as ints one by one: q3k_scales' vector, stored and read back a byte a time here,
    // measured 11 % slower in this one-row tile (ISA=avx2 Gemv_Q3_K 27.7 -> 24.7 GB/s).
    int sc[16];
    for (int j = 0; j < 16; ++j) {
      const int lo = j < 8 ? (wb[96 + j] & 0x0F) : (wb[96 + j - 8] >> 4);
      const int hi = (wb[96 + 8 + (j % 4)] >> (2 * (j / 4))) & 3;
      sc[j] = (lo | (hi << 4)) - 32;
    }
    const __m256i hm = _mm256_loadu_si256((const __m256i*)wb);
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int k = 0; k < 2; ++k) {
      const __m256i q3 = _mm256_loadu_si256((const __m256i*)(wb + 32 + 32 * k));
      for (int j = 0; j < 4; ++j) {
        const __m256i u = q3k_quarter(q3, hm, k, j);
        const int si = 8 * k + 2 * j;
        const __m256i scv = _mm256_set_m128i(_mm_set1_epi16(short(sc[si + 1])), _mm_set1_epi16(short(sc[si])));
        for (int t = 0; t < T; ++t) {
          const uint8_t* xb = a.x + size_t(t0 + t) * a.xs + b * kQ8KBytes;
          const __m256i x8 = _mm256_loadu_si256((const __m256i*)(q8k_qs(xb) + 128 * k + 32 * j));
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(u, x8), scv));
        }
      }
    }
    const float d = f16(wb + 108);
    for (int t = 0; t < T; ++t) {
      const uint8_t* xb = a.x + size_t(t0 + t) * a.xs + b * kQ8KBytes;
      int corr = 0;
      for (int j = 0; j < 16; ++j) corr += sc[j] * q8k_bsum(xb, j);
      s[t] += (d * q8k_d(xb)) * float(hsum_i32(isum[t]) - 4 * corr);
    }
  }
  for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = s[t];
}

// ---- Weighted row sums (attention's V accumulation) -------------------------------------------
// 32 columns x up to 3 weight vectors stay in 12 registers while the rows stream by.

template <class L, int G>
inline void vsum_block(int64_t n, const float* w, const uint8_t* v, size_t vs, int64_t c,
                       float* out, int64_t d) {
  __m256 acc[G][4];
  for (int g = 0; g < G; ++g)
    for (int k = 0; k < 4; ++k) acc[g][k] = _mm256_setzero_ps();
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* row = v + size_t(j) * vs;
    __m256 x[4];
    for (int k = 0; k < 4; ++k) x[k] = L::v(row, c + 8 * k);
    for (int g = 0; g < G; ++g) {
      const __m256 a = _mm256_set1_ps(w[g * n + j]);
      for (int k = 0; k < 4; ++k) acc[g][k] = _mm256_fmadd_ps(a, x[k], acc[g][k]);
    }
  }
  for (int g = 0; g < G; ++g)
    for (int k = 0; k < 4; ++k) _mm256_storeu_ps(out + g * d + c + 8 * k, acc[g][k]);
}

template <class L>
inline void vsum_typed(int64_t n, int64_t G, const float* w, const uint8_t* v, size_t vs,
                       int64_t d, float* out) {
  int64_t c = 0;
  for (; c + 32 <= d; c += 32) {
    int64_t g = 0;
    for (; g + 3 <= G; g += 3) vsum_block<L, 3>(n, w + g * n, v, vs, c, out + g * d, d);
    if (G - g == 2) vsum_block<L, 2>(n, w + g * n, v, vs, c, out + g * d, d);
    if (G - g == 1) vsum_block<L, 1>(n, w + g * n, v, vs, c, out + g * d, d);
  }
  for (int64_t g = 0; g < G; ++g)
    for (int64_t i = c; i < d; ++i) {
      float s = 0.0f;
      for (int64_t j = 0; j < n; ++j) s += w[g * n + j] * L::s(v + size_t(j) * vs, i);
      out[g * d + i] = s;
    }
}

inline void vsum_simd(int64_t n, int64_t G, const float* w, const uint8_t* v, size_t vs,
                      GgmlType vt, int64_t d, float* out) {
  if (vt == GgmlType::F16)
    vsum_typed<LoadF16>(n, G, w, v, vs, d, out);
  else if (vt == GgmlType::Q8_0)
    vsum_typed<LoadQ8_0>(n, G, w, v, vs, d, out);
  else
    vsum_typed<LoadF32>(n, G, w, v, vs, d, out);
}

// ---- softmax with a vectorized exp ------------------------------------------------------------

// exp(x): x = n*ln2 + r with |r| <= ln2/2, e^r by Cephes' expf polynomial, times 2^n; below
// -87.3 (where expf is subnormal or 0) the result is 0, above 88.7 it is inf.
inline __m256 exp_neg(__m256 x) {
  const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(tiny, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

inline void softmax_simd(int64_t n, float* s, float scale) {
  const __m256 sc = _mm256_set1_ps(scale);
  __m256 mv = _mm256_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(s + j), sc);
    _mm256_storeu_ps(s + j, v);
    mv = _mm256_max_ps(mv, v);
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mv), _mm256_extractf128_ps(mv, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  float mx = _mm_cvtss_f32(m4);
  for (int64_t i = j; i < n; ++i) {
    s[i] *= scale;
    mx = s[i] > mx ? s[i] : mx;
  }
  const __m256 mxv = _mm256_set1_ps(mx);
  double sum = 0.0;
  j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = exp_neg(_mm256_sub_ps(_mm256_loadu_ps(s + j), mxv));
    _mm256_storeu_ps(s + j, e);
    sum += double(hsum(e));
  }
  for (int64_t i = j; i < n; ++i) {
    s[i] = expf(s[i] - mx);
    sum += double(s[i]);
  }
  const __m256 inv = _mm256_set1_ps(float(1.0 / sum));
  j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(s + j, _mm256_mul_ps(_mm256_loadu_ps(s + j), inv));
  for (int64_t i = j; i < n; ++i) s[i] *= float(1.0 / sum);
}

// The tail runs the vector formula on masked lanes: an element's result does not depend on
// where it sits in the call (matmul_swiglu applies this to pieces of rows).
inline void swiglu_simd(const float* gate, const float* up, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t m = n - i < 8 ? n - i : 8;
    const __m256i k = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(m)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 g = m == 8 ? _mm256_loadu_ps(gate + i) : _mm256_maskload_ps(gate + i, k);
    __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, exp_neg(_mm256_sub_ps(zero, g))));
    if (up) s = _mm256_mul_ps(s, m == 8 ? _mm256_loadu_ps(up + i) : _mm256_maskload_ps(up + i, k));
    if (m == 8)
      _mm256_storeu_ps(out + i, s);
    else
      _mm256_maskstore_ps(out + i, k, s);
  }
}

// ---- Activation quantization to Q8_0 / Q8_1, the scalar kernels' exact arithmetic ----------

// Returns d (unrounded); quants to qs[32]; *sum = sum of the quants when sum != nullptr.
inline float q8_block_simd(const float* x, int8_t* qs, int* sum) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 v[4];
  __m256 m = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_loadu_ps(x + 8 * k);
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[k]));
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  const float amax = _mm_cvtss_f32(m4);
  const float d = amax / 127.f;
  const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.f / amax : 0.0f);
  __m256i q[4];
  for (int k = 0; k < 4; ++k)
    q[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  if (sum) *sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
  // packs interleave 128-bit lanes: restore element order with one permute.
  const __m256i p16a = _mm256_packs_epi32(q[0], q[1]), p16b = _mm256_packs_epi32(q[2], q[3]);
  const __m256i p8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p16a, p16b),
                                                 _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), p8);
  return d;
}

inline void quantize_q8_0_simd(const float* x, quant::block_q8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b) y[b].d = fp32_to_fp16(q8_block_simd(x + 32 * b, y[b].qs, nullptr));
}

inline void quantize_q8_1_simd(const float* x, quant::block_q8_1* y, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b) {
    int sum = 0;
    const float d = q8_block_simd(x + 32 * b, y[b].qs, &sum);
    y[b].d = fp32_to_fp16(d);
    y[b].s = fp32_to_fp16(d * float(sum));
  }
}

// Q8_K: the scale from the value of largest magnitude (its first occurrence, as the scalar
// loop's strict >), quants round-half-even of x * iscale capped at 127, bsums per 16.
inline void quantize_q8_K_simd(const float* x, quant::block_q8_K* y, int64_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < n / 256; ++b, x += 256) {
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < 32; ++k) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    if (amax == 0.0f) {
      y[b].d = 0.0f;
      __builtin_memset(y[b].qs, 0, sizeof(y[b].qs));
      __builtin_memset(y[b].bsums, 0, sizeof(y[b].bsums));
      continue;
    }
    float max = 0.0f;
    const __m256 am = _mm256_set1_ps(amax);
    for (int k = 0; k < 32; ++k) {
      const __m256 v = _mm256_loadu_ps(x + 8 * k);
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, v), am, _CMP_EQ_OQ));
      if (hit) {
        max = x[8 * k + __builtin_ctz(unsigned(hit))];
        break;
      }
    }
    const float iscale = -127.f / max;
    const __m256 is = _mm256_set1_ps(iscale);
    const __m256i cap = _mm256_set1_epi32(127);
    for (int k = 0; k < 8; ++k) {  // 32 quants at a time
      __m256i q[4];
      for (int i = 0; i < 4; ++i)
        q[i] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * k + 8 * i), is)), cap);
      // bsums of the two 16-quant halves (before packing: the sums are plain int32 adds).
      y[b].bsums[2 * k] = int16_t(hsum_i32(_mm256_add_epi32(q[0], q[1])));
      y[b].bsums[2 * k + 1] = int16_t(hsum_i32(_mm256_add_epi32(q[2], q[3])));
      const __m256i p16a = _mm256_packs_epi32(q[0], q[1]), p16b = _mm256_packs_epi32(q[2], q[3]);
      const __m256i p8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p16a, p16b),
                                                     _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs + 32 * k), p8);
    }
    y[b].d = 1.0f / iscale;
  }
}

// ---- Drivers: full tiles first, then the row and token remainders --------------------------
// A kernel family K provides `template <int R, int T> static void run(tile, r0, t0)`.

template <class Dec>
struct Q8K {
  template <int R, int T>
  static void run(const Tile& a, int64_t r0, int64_t t0) { q8_tile<Dec, R, T>(a, r0, t0); }
};
template <class Dec>
struct Q81K {
  template <int R, int T>
  static void run(const Tile& a, int64_t r0, int64_t t0) { q81_tile<Dec, R, T>(a, r0, t0); }
};
template <class L, int C = 1>
struct FK {
  template <int R, int T>
  static void run(const Tile& a, int64_t r0, int64_t t0) { f_tile<L, R, T, C>(a, r0, t0); }
};
// The K-quant tiles are one row wide.
template <void (*F1)(const Tile&, int64_t, int64_t), void (*F2)(const Tile&, int64_t, int64_t),
          void (*F3)(const Tile&, int64_t, int64_t), void (*F4)(const Tile&, int64_t, int64_t)>
struct RowK {
  template <int R, int T>
  static void run(const Tile& a, int64_t r0, int64_t t0) {
    for (int r = 0; r < R; ++r) (T == 1 ? F1 : T == 2 ? F2 : T == 3 ? F3 : F4)(a, r0 + r, t0);
  }
};

template <class K, int R, int T>
inline void tile_rows(const Tile& a, int64_t nr, int64_t t0) {
  int64_t r0 = 0;
  for (; r0 + R <= nr; r0 += R) K::template run<R, T>(a, r0, t0);
  for (; r0 < nr; ++r0) K::template run<1, T>(a, r0, t0);
}

template <class K, int R, int T>
void run_tiles(GgmlType, int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x,
               size_t xs, int64_t nt, float* y, int64_t ldy) {
  static_assert(T >= 1 && T <= 4);
  const Tile a{n, w, ws, x, xs, y, ldy};
  int64_t t0 = 0;
  for (; t0 + T <= nt; t0 += T) tile_rows<K, R, T>(a, nr, t0);
  const int64_t rest = nt - t0;
  if constexpr (T > 3)
    if (rest == 3) tile_rows<K, R, 3>(a, nr, t0);
  if constexpr (T > 2)
    if (rest == 2) tile_rows<K, R, 2>(a, nr, t0);
  if constexpr (T > 1)
    if (rest == 1) tile_rows<K, R, 1>(a, nr, t0);
}

// The GGUF-layout row tiles: a one-token step takes its rows one at a time, so that each thread
// reads its rows as one sequential stream (R rows at a time were R interleaved streams, each as
// short as a row, 2 KiB for qwen3-0.6b's 1024 F16 columns, which the hardware prefetcher picked up
// again every tile: qwen3-0.6b F16 tg64 on AVX-512, 2 threads, 15.8 -> 25.2 t/s). Each row's sum
// is the same either way.
template <class K, int R, int T>
void row_stream_tiles(GgmlType t, int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, size_t xs,
                 int64_t nt, float* y, int64_t ldy) {
  if (nt == 1)
    run_tiles<K, 1, 1>(t, n, w, ws, nr, x, xs, nt, y, ldy);
  else
    run_tiles<K, R, T>(t, n, w, ws, nr, x, xs, nt, y, ldy);
}

// Q1_0's and Q2_0's blocks are 4.5 and 9 bytes a 32 weights: their one-token steps spend more on
// the bit expansion and the activation correction than on streaming, so they take R rows a tile
// too, each activation block and correction serving R rows (kDecodeRows; qwen3-0.6b, one thread,
// AMD Zen 4, tg32: Q1_0 35.4-36.1 -> 47.9-48.5 t/s, Q2_0 28.1-28.8 -> 31.1-31.4). MXFP4 and
// NVFP4, twice the bytes, run better one row at a time (MXFP4 34.2-34.6 -> 20.0-21.2 with 4 rows,
// 24.1-24.7 with 2; NVFP4 14.5-14.8 -> 15.0-15.1 with 2).
template <class K, int RD, int R, int T>
void compute_tiles(GgmlType t, int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, size_t xs,
                   int64_t nt, float* y, int64_t ldy) {
  if (nt == 1)
    run_tiles<K, RD, 1>(t, n, w, ws, nr, x, xs, nt, y, ldy);
  else
    run_tiles<K, R, T>(t, n, w, ws, nr, x, xs, nt, y, ldy);
}

template <class Dec, int R, int T>
constexpr DotTileFn q8_tiles_for() {
  if constexpr (requires { Dec::kDecodeRows; })
    return &compute_tiles<Q8K<Dec>, Dec::kDecodeRows, R, T>;
  else
    return &row_stream_tiles<Q8K<Dec>, R, T>;
}
template <class Dec, int R, int T>
constexpr DotTileFn q8_tiles = q8_tiles_for<Dec, R, T>();

template <class Dec, int R, int T>
constexpr DotTileFn q81_tiles = &row_stream_tiles<Q81K<Dec>, R, T>;

template <class L, int R, int T>
constexpr DotTileFn f_tiles = &row_stream_tiles<FK<L>, R, T>;

// F16 and BF16: calls under kFloatPanelTokens tokens (decode) in 4 sums per output, 2 rows x 1
// token tiles (8 sums in 16 registers), one token a row at a time; prompts in R x T tiles of one
// sum (their T x R independent sums cover the latency). A one-token row equals the same row of a
// call under kFloatPanelTokens tokens.
template <class L, int R, int T>
void half_tiles(GgmlType t, int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, size_t xs,
                int64_t nt, float* y, int64_t ldy) {
  if (nt < kFloatPanelTokens)
    row_stream_tiles<FK<L, 4>, 2, 1>(t, n, w, ws, nr, x, xs, nt, y, ldy);
  else
    run_tiles<FK<L>, R, T>(t, n, w, ws, nr, x, xs, nt, y, ldy);
}

template <bool kHigh>
constexpr DotTileFn q45k_tiles = &run_tiles<
    RowK<q45k_tile<kHigh, 1>, q45k_tile<kHigh, 2>, q45k_tile<kHigh, 3>, q45k_tile<kHigh, 4>>, 1, 4>;

constexpr DotTileFn q2k_tiles =
    &run_tiles<RowK<q2k_tile<1>, q2k_tile<2>, q2k_tile<3>, q2k_tile<4>>, 1, 4>;
constexpr DotTileFn q3k_tiles =
    &run_tiles<RowK<q3k_tile<1>, q3k_tile<2>, q3k_tile<3>, q3k_tile<4>>, 1, 4>;
template <class D>
constexpr DotTileFn iqlat_tiles =
    &run_tiles<RowK<iqlat_tile<D, 1>, iqlat_tile<D, 2>, iqlat_tile<D, 3>, iqlat_tile<D, 4>>, 1, 4>;

#if MINFER_TILES_AVX512
// One token on AVX-512 (VL, BW): the activations' signs flipped under a mask register read from
// the block's sign bits (kmov, masked subtract) instead of a sign vector built from them (five
// instructions) and vpsignb: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S (bench_kernels Gemv 3072 x
// 1024 one core, us: 228 -> 192, 229 -> 198, 220 -> 185, 264 -> 246, 315-337 -> 283-289).
// (iqlat_row_tile with kMasked: compiled only here, in the AVX-512 unit.)
template <class D>
void iqlat_gemv_masked(int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, float* y) {
  const Tile a{n, w, ws, x, 0, y, 0};
  for (int64_t r = 0; r < nr; ++r) iqlat_row_tile<D, 1, GgufRow<D>, true>(GgufRow<D>{w + size_t(r) * ws}, a, r, 0);
}
#endif

// Prompts of the 256-block i-quants on these tiles: each row's blocks decoded once per call
// (magnitudes, sign carriers, scales: 96 bytes a block, in this thread's scratch) and then
// multiplied with every token, 4 at a time, instead of decoded again for every 4 tokens (the
// decode is most of a block's work): iqlat_row_tile on a DecodedRow, the same integer sums and
// float steps, bit for bit.
//
// Where the values are small (|v| <= 62: every lattice type, not IQ4_XS), the rows are decoded
// to their signed values instead and multiplied with the activations + 128 (unsigned), maddubs'
// pair sums at most 2 x 255 x 62 < 2^15; sum(v x) = sum(v (x + 128)) - 128 sum(v), the second
// term a constant of the row and super-block (times the scales). No sign step per token, and
// two rows share each activation load: one core, ISA=avx2, Gemm128 IQ2_S 94 -> 118 GOP/s, IQ1_M
// 82 -> 118.
struct IqOffsetRow {
  uint8_t* v;      // per block: 32 signed values, then 16 int16 scales (64 bytes)
  int32_t* corr;   // per super-block: 128 x sum(v) x scale
  float* d;        // per super-block
};
template <class D>
inline void iqlat_decode_offset_row(const uint8_t* wr, int64_t nsb, const IqOffsetRow& o) {
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* wb = wr + size_t(b) * D::kBytes;
    const typename SbOf<D>::type sb(wb);
    __m256i c = _mm256_setzero_si256();
    for (int ib = 0; ib < 8; ++ib) {
      const IqSub q = sb.sub(wb, ib);
      const __m256i v = _mm256_sign_epi8(q.u, q.signer);
      uint8_t* e = o.v + 64 * (8 * b + ib);
      _mm256_store_si256((__m256i*)e, v);
      _mm256_store_si256((__m256i*)(e + 32), q.scale);
      c = _mm256_add_epi32(c, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, v), q.scale));
    }
    o.corr[b] = 128 * hsum_i32(c);
    o.d[b] = D::d(wb);
  }
}
// The ternary decoders' scales are all 1 and their values at most 2: a super-block's products sum
// in int16 (8 blocks x maddubs pairs of at most 2 x 255 x 2) before one madd.
template <class D>
constexpr bool kUnitScales = std::is_same_v<D, DecTq1> || std::is_same_v<D, DecTq2>;

// R rows x T tokens; xu: the tokens' quants + 128, n bytes a token.
template <class D, int R, int T>
inline void iqlat_offset_tile(const IqOffsetRow* rows, const Tile& a, const uint8_t* xu, int64_t r0, int64_t t0) {
  float s[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) s[r][t] = 0.0f;
  for (int64_t b = 0; b < a.n / 256; ++b) {
    __m256i isum[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) isum[r][t] = _mm256_setzero_si256();
    for (int ib = 0; ib < 8; ++ib) {
      __m256i xv[T];
      for (int t = 0; t < T; ++t)
        xv[t] = _mm256_loadu_si256((const __m256i*)(xu + size_t(t0 + t) * size_t(a.n) + 256 * b + 32 * ib));
      for (int r = 0; r < R; ++r) {
        const uint8_t* e = rows[r].v + 64 * (8 * b + ib);
        const __m256i v = _mm256_load_si256((const __m256i*)e), sc = _mm256_load_si256((const __m256i*)(e + 32));
        for (int t = 0; t < T; ++t)
          if constexpr (kUnitScales<D>)  // int16 sums (at most 8 x 2 x 255 x 2), widened per super-block
            isum[r][t] = ib == 0 ? _mm256_maddubs_epi16(xv[t], v) : _mm256_add_epi16(isum[r][t], _mm256_maddubs_epi16(xv[t], v));
          else
            isum[r][t] = _mm256_add_epi32(isum[r][t], _mm256_madd_epi16(_mm256_maddubs_epi16(xv[t], v), sc));
      }
    }
    if constexpr (kUnitScales<D>)
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) isum[r][t] = _mm256_madd_epi16(isum[r][t], _mm256_set1_epi16(1));
    for (int t = 0; t < T; ++t) {
      const float xd = q8k_d(a.x + size_t(t0 + t) * a.xs + b * kQ8KBytes);
      for (int r = 0; r < R; ++r) s[r][t] += (rows[r].d[b] * xd) * float(hsum_i32(isum[r][t]) - rows[r].corr[b]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r0 + r] = D::kFinal * s[r][t];
}
template <class D, int R>
inline void iqlat_offset_rows(const IqOffsetRow* rows, const Tile& a, const uint8_t* xu, int64_t r0, int64_t nt) {
  int64_t t0 = 0;
  for (; t0 + 4 <= nt; t0 += 4) iqlat_offset_tile<D, R, 4>(rows, a, xu, r0, t0);
  switch (nt - t0) {
    case 3: iqlat_offset_tile<D, R, 3>(rows, a, xu, r0, t0); break;
    case 2: iqlat_offset_tile<D, R, 2>(rows, a, xu, r0, t0); break;
    case 1: iqlat_offset_tile<D, R, 1>(rows, a, xu, r0, t0); break;
    default: break;
  }
}

// From this many tokens a row is decoded once per call (below, per 4 tokens as a decode step's).
constexpr int64_t kIqDecodeOnceTokens = 8;

template <class D>
void iqlat_gemm(GgmlType type, int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, size_t xs,
                int64_t nt, float* y, int64_t ldy) {
  if (nt < kIqDecodeOnceTokens) {
    iqlat_tiles<D>(type, n, w, ws, nr, x, xs, nt, y, ldy);
    return;
  }
  const int64_t nsb = n / 256;
  if constexpr (D::kMaxAbs <= 62) {
    // Two rows' values, corrections and d, then the tokens' quants + 128 (matmul hands the tiles
    // at most 128 tokens a call: at most 128 n bytes). Each call (a work item of 32 rows) makes
    // its own copy: about 3 instructions per token and block against the tiles' 7.5 per row pair
    // (2.5 %), where an xor in the tile would add 13 %.
    const size_t row_bytes = (size_t(nsb) * (8 * 64 + 8) + 63) / 64 * 64;  // (aligned stores)
    uint8_t* buf = thread_scratch(ScratchSlot::IqRows, 2 * row_bytes + size_t(nt * n));
    IqOffsetRow rows[2];
    for (int k = 0; k < 2; ++k) {
      uint8_t* base = buf + size_t(k) * row_bytes;
      rows[k] = {base, reinterpret_cast<int32_t*>(base + size_t(nsb) * 512),
                 reinterpret_cast<float*>(base + size_t(nsb) * 516)};
    }
    uint8_t* xu = buf + 2 * row_bytes;
    const __m256i k128 = _mm256_set1_epi8(char(0x80));
    for (int64_t t = 0; t < nt; ++t)
      for (int64_t b = 0; b < nsb; ++b)
        for (int k = 0; k < 8; ++k) {
          const int8_t* q = q8k_qs(x + size_t(t) * xs + b * kQ8KBytes) + 32 * k;
          _mm256_storeu_si256((__m256i*)(xu + size_t(t * n) + 256 * b + 32 * k),
                              _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)q), k128));
        }
    const Tile a{n, w, ws, x, xs, y, ldy};
    int64_t r = 0;
    for (; r + 2 <= nr; r += 2) {
      iqlat_decode_offset_row<D>(w + size_t(r) * ws, nsb, rows[0]);
      iqlat_decode_offset_row<D>(w + size_t(r + 1) * ws, nsb, rows[1]);
      iqlat_offset_rows<D, 2>(rows, a, xu, r, nt);
    }
    if (r < nr) {
      iqlat_decode_offset_row<D>(w + size_t(r) * ws, nsb, rows[0]);
      iqlat_offset_rows<D, 1>(rows, a, xu, r, nt);
    }
    return;
  }
  auto* dec = reinterpret_cast<IqSub*>(
      thread_scratch(ScratchSlot::IqRows, size_t(nsb) * (8 * sizeof(IqSub) + sizeof(float))));
  float* dsb = reinterpret_cast<float*>(dec + 8 * nsb);
  const Tile a{n, w, ws, x, xs, y, ldy};
  for (int64_t r = 0; r < nr; ++r) {
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* wb = w + size_t(r) * ws + size_t(b) * D::kBytes;
      const typename SbOf<D>::type sb(wb);
      for (int ib = 0; ib < 8; ++ib) dec[8 * b + ib] = sb.sub(wb, ib);
      dsb[b] = D::d(wb);
    }
    const DecodedRow row{dec, dsb};
    int64_t t0 = 0;
    for (; t0 + 4 <= nt; t0 += 4) iqlat_row_tile<D, 4>(row, a, r, t0);
    switch (nt - t0) {
      case 3: iqlat_row_tile<D, 3>(row, a, r, t0); break;
      case 2: iqlat_row_tile<D, 2>(row, a, r, t0); break;
      case 1: iqlat_row_tile<D, 1>(row, a, r, t0); break;
      default: break;
    }
  }
}
// TQ2_0, one token on 256-bit vectors: the values t (0..2) straight from the 2-bit fields, maddubs
// against the token's quants (pairs of at most 2 x 2 x 127, 8 blocks summed in int16 before one
// madd), sum(t x) - sum(x) the scalar kernel's integer sum (its values are t - 1), then its float
// step. Where the i-quant tile spends a sign step and a madd a block on signed values.
inline void tq2_gemv_256(int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, float* y) {
  const int64_t nsb = n / 256;
  int32_t* xsum = thread_scratch_array<int32_t>(ScratchSlot::IqRows, size_t(nsb));
  for (int64_t b = 0; b < nsb; ++b) xsum[b] = q8k_sum(x + b * kQ8KBytes);
  const __m256i m3 = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
  for (int64_t r = 0; r < nr; ++r) {
    const uint8_t* wr = w + size_t(r) * ws;
    float s = 0.0f;
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* wb = wr + size_t(b) * DecTq2::kBytes;
      const uint8_t* xb = x + b * kQ8KBytes;
      const int8_t* xq = q8k_qs(xb);
      __m256i p = _mm256_setzero_si256();
      for (int j = 0; j < 2; ++j) {
        __m256i q = _mm256_loadu_si256((const __m256i*)(wb + 32 * j));
        for (int l = 0; l < 4; ++l, q = _mm256_srli_epi16(q, 2)) {
          const __m256i xv = _mm256_loadu_si256((const __m256i*)(xq + 128 * j + 32 * l));
          p = _mm256_add_epi16(p, _mm256_maddubs_epi16(_mm256_and_si256(q, m3), xv));
        }
      }
      s += (DecTq2::d(wb) * q8k_d(xb)) * float(hsum_i32(_mm256_madd_epi16(p, ones)) - xsum[b]);
    }
    y[r] = DecTq2::kFinal * s;
  }
}
// The ternary types' matmul on these tiles: TQ2_0's one-token rows above, the rest iqlat_gemm.
template <class D>
void tq_gemm_256(GgmlType type, int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, size_t xs,
                 int64_t nt, float* y, int64_t ldy) {
  if constexpr (std::is_same_v<D, DecTq2>)
    if (nt == 1) {
      tq2_gemv_256(n, w, ws, nr, x, y);
      return;
    }
  iqlat_gemm<D>(type, n, w, ws, nr, x, xs, nt, y, ldy);
}

constexpr DotTileFn q6k_tiles =
    &run_tiles<RowK<q6k_tile<1>, q6k_tile<2>, q6k_tile<3>, q6k_tile<4>>, 1, 4>;

}  // namespace
}  // namespace minfer::cpu

#endif  // MINFER_SIMD_TILES_BODY
