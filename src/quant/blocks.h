// ggml's quantized block layouts (ggml-common.h), byte for byte: GGUF tensor data is an array
// of these, so every field, order and size must match. F16 fields are raw IEEE half bits
// (convert with minfer::fp16_to_fp32 / fp32_to_fp16 from common/fp16.h).
#pragma once
#include <cstdint>

namespace minfer::quant {

constexpr int QK4_0 = 32;
constexpr int QK4_1 = 32;
constexpr int QK5_0 = 32;
constexpr int QK5_1 = 32;
constexpr int QK8_0 = 32;
constexpr int QK8_1 = 32;
constexpr int QK4_NL = 32;
constexpr int QK_K = 256;
constexpr int K_SCALE_SIZE = 12;

// x = d * (q - 8), q in [0,16): element j in low nibble of qs[j], element j+16 in high nibble.
struct block_q4_0 {
  uint16_t d;
  uint8_t qs[QK4_0 / 2];
};
static_assert(sizeof(block_q4_0) == 18);

// x = d * q + m, same nibble layout as q4_0.
struct block_q4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[QK4_1 / 2];
};
static_assert(sizeof(block_q4_1) == 20);

// x = d * (q - 16); bit 4 of element j is bit j of qh (little-endian uint32).
struct block_q5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[QK5_0 / 2];
};
static_assert(sizeof(block_q5_0) == 22);

struct block_q5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[QK5_1 / 2];
};
static_assert(sizeof(block_q5_1) == 24);

struct block_q8_0 {
  uint16_t d;
  int8_t qs[QK8_0];
};
static_assert(sizeof(block_q8_0) == 34);

// s = d * sum(qs), precomputed for the q4_1/q5_1 dot products.
struct block_q8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[QK8_1];
};
static_assert(sizeof(block_q8_1) == 36);

// 16 sub-blocks of 16; scales[i] = scale (low 4 bits) | min (high 4 bits).
struct block_q2_K {
  uint8_t scales[QK_K / 16];
  uint8_t qs[QK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
static_assert(sizeof(block_q2_K) == 84);

// 16 sub-blocks of 16 with 6-bit signed scales packed in 12 bytes; hmask holds the third bit.
struct block_q3_K {
  uint8_t hmask[QK_K / 8];
  uint8_t qs[QK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(block_q3_K) == 110);

// 8 sub-blocks of 32; 6-bit scales and mins packed in 12 bytes (see get_scale_min_k4).
struct block_q4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qs[QK_K / 2];
};
static_assert(sizeof(block_q4_K) == 144);

struct block_q5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qh[QK_K / 8];
  uint8_t qs[QK_K / 2];
};
static_assert(sizeof(block_q5_K) == 176);

// 16 sub-blocks of 16 with int8 scales; quants are 4 low bits (ql) + 2 high bits (qh), minus 32.
struct block_q6_K {
  uint8_t ql[QK_K / 2];
  uint8_t qh[QK_K / 4];
  int8_t scales[QK_K / 16];
  uint16_t d;
};
static_assert(sizeof(block_q6_K) == 210);

// Activation format of the K-quant dot products: float scale, bsums = sums of 16 quants.
struct block_q8_K {
  float d;
  int8_t qs[QK_K];
  int16_t bsums[QK_K / 16];
};
static_assert(sizeof(block_q8_K) == 292);

// Like q4_0 but each nibble indexes kvalues_iq4nl: x = d * kvalues_iq4nl[q].
struct block_iq4_nl {
  uint16_t d;
  uint8_t qs[QK4_NL / 2];
};
static_assert(sizeof(block_iq4_nl) == 18);

// IQ4_NL's table in super-blocks of 256: an f16 d, and per block of 32 a 6-bit scale (4 low
// bits in scales_l, 2 high bits in scales_h) less 32: x = d * (scale - 32) * kvalues_iq4nl[q].
// qs holds each block of 32 as IQ4_NL does (element j low nibble, j + 16 high, of byte j).
struct block_iq4_xs {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[QK_K / 64];
  uint8_t qs[QK_K / 2];
};
static_assert(sizeof(block_iq4_xs) == 136);

// The lattice i-quants (groups of 8 or 4 values from a fixed grid, quant/iq_grids.h, with sign
// bits), super-blocks of 256. Only dequantization and dot products: ggml's quantizers for them
// need an importance matrix and lattice searches that minfer does not implement.
struct block_iq2_xxs {  // per 32: 4 grid indexes (8 bits), then 4 x 7 sign bits and a 4-bit scale
  uint16_t d;
  uint16_t qs[QK_K / 8];
};
static_assert(sizeof(block_iq2_xxs) == 66);
struct block_iq2_xs {  // per 8: 9-bit grid index | 7 sign bits << 9; a 4-bit scale per 16
  uint16_t d;
  uint16_t qs[QK_K / 8];
  uint8_t scales[QK_K / 32];
};
static_assert(sizeof(block_iq2_xs) == 74);
struct block_iq2_s {  // per 8: grid index low 8 bits (qs) + 2 high bits (qh), a sign byte
  uint16_t d;
  uint8_t qs[QK_K / 4];  // 32 index bytes, then 32 sign bytes
  uint8_t qh[QK_K / 32];
  uint8_t scales[QK_K / 32];
};
static_assert(sizeof(block_iq2_s) == 82);
struct block_iq3_xxs {  // per 4: an 8-bit grid index; per 32: 4 x 7 sign bits and a 4-bit scale
  uint16_t d;
  uint8_t qs[3 * QK_K / 8];
};
static_assert(sizeof(block_iq3_xxs) == 98);
struct block_iq3_s {  // per 4: 9-bit grid index (qs + a qh bit); sign bytes; 4-bit scales per 32
  uint16_t d;
  uint8_t qs[QK_K / 4];
  uint8_t qh[QK_K / 32];
  uint8_t signs[QK_K / 8];
  uint8_t scales[QK_K / 64];
};
static_assert(sizeof(block_iq3_s) == 110);
struct block_iq1_s {  // per 8: 11-bit index into the {-1, 0, 1} grid; per 32: 3-bit scale, delta sign
  uint16_t d;
  uint8_t qs[QK_K / 8];
  uint16_t qh[QK_K / 32];
};
static_assert(sizeof(block_iq1_s) == 50);
struct block_iq1_m {  // as iq1_s with a delta sign per 8, 3-bit scales per 16; d in the scales' top nibbles
  uint8_t qs[QK_K / 8];
  uint8_t qh[QK_K / 16];
  uint8_t scales[QK_K / 32];
};
static_assert(sizeof(block_iq1_m) == 56);
inline constexpr float kIq1Delta = 0.125f;  // IQ1S_DELTA, IQ1M_DELTA

// IQ1_M's f16 d: the top nibbles of its four 16-bit scale words.
inline uint16_t iq1_m_d(const block_iq1_m& b) {
  uint16_t sc[4];
  __builtin_memcpy(sc, b.scales, 8);
  return uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
}

// The low-bit and FP4 formats of ggml v0.4.0 (llama.cpp's 2025-2026 additions).
constexpr int QK1_0 = 128;
constexpr int QK2_0 = 64;
constexpr int QK_MXFP4 = 32;
constexpr int QK_NVFP4 = 64;
constexpr int QK_NVFP4_SUB = 16;

// x = d * (bit ? +1 : -1): element j is bit j % 8 of qs[j / 8].
struct block_q1_0 {
  uint16_t d;
  uint8_t qs[QK1_0 / 8];
};
static_assert(sizeof(block_q1_0) == 18);

// x = d * (q - 1), q in 0..3: element j is bits 2 (j % 4) of qs[j / 4].
struct block_q2_0 {
  uint16_t d;
  uint8_t qs[QK2_0 / 4];
};
static_assert(sizeof(block_q2_0) == 18);

// x = e8m0_half(e) * kvalues_fp4[q]: element j in the low nibble of qs[j], j + 16 in the high.
struct block_mxfp4 {
  uint8_t e;
  uint8_t qs[QK_MXFP4 / 2];
};
static_assert(sizeof(block_mxfp4) == 17);

// Four sub-blocks of 16, each with a UE4M3 scale: x = ue4m3(d[s]) * kvalues_fp4[q], sub-block s
// laid out as an MXFP4 block of 16 (element j low nibble of qs[8 s + j], j + 8 the high one).
struct block_nvfp4 {
  uint8_t d[QK_NVFP4 / QK_NVFP4_SUB];
  uint8_t qs[QK_NVFP4 / 2];
};
static_assert(sizeof(block_nvfp4) == 36);

// Ternary, x = d * (t - 1), t in 0..2 (BitNet b1.58, TriLMs). TQ1_0: five trits a byte as a
// base-3 fixed-point fraction of 256 (trit n of a byte = (uint8_t(q * 3^n) * 3) >> 8), 48 bytes
// for 240 elements (32 bytes x 5 of them, then 16 x 5), and four trits a byte in qh for the last 16.
struct block_tq1_0 {
  uint8_t qs[(QK_K - 4 * QK_K / 64) / 5];
  uint8_t qh[QK_K / 64];
  uint16_t d;
};
static_assert(sizeof(block_tq1_0) == 54);

// TQ2_0: two bits a trit, element 128 j + 32 l + m at bits 2 l of qs[32 j + m].
struct block_tq2_0 {
  uint8_t qs[QK_K / 4];
  uint16_t d;
};
static_assert(sizeof(block_tq2_0) == 66);

// Weight j of a block as the integer its scale multiplies (shared by the dequantizers and the
// scalar dot products).
inline int q1_0_value(const block_q1_0& b, int j) { return (b.qs[j / 8] >> (j % 8)) & 1 ? 1 : -1; }
inline int q2_0_value(const block_q2_0& b, int j) { return ((b.qs[j / 4] >> (2 * (j % 4))) & 3) - 1; }
// Trit n (0..4) of a TQ1_0 byte, 0..2: the byte is ceil(v * 256 / 243) for the base-3 number v
// of its trits, so multiplying by 3^n (mod 256) brings trit n to the top and * 3 >> 8 reads it.
inline int tq1_trit(uint8_t q, int n) {
  constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  return int((uint16_t(uint8_t(q * kPow3[n])) * 3) >> 8);
}

// Calls f(element, value) for the 256 ternary weights (-1, 0, 1) of a TQ1_0 block, in storage
// order: 32 bytes x 5 trits (elements 160 g + 32 n + m), 16 bytes x 5, then qh's 4 trits a byte.
template <class F>
inline void tq1_0_for_each(const block_tq1_0& b, F f) {
  constexpr int kQs = int(sizeof(b.qs)), kQh = int(sizeof(b.qh)), kWide = kQs - kQs % 32;
  for (int j = 0; j < kWide; j += 32)
    for (int n = 0; n < 5; ++n)
      for (int m = 0; m < 32; ++m) f(j * 5 + n * 32 + m, tq1_trit(b.qs[j + m], n) - 1);
  for (int j = kWide; j < kQs; j += 16)
    for (int n = 0; n < 5; ++n)
      for (int m = 0; m < 16; ++m) f(j * 5 + n * 16 + m, tq1_trit(b.qs[j + m], n) - 1);
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < kQh; ++j) f(kQs * 5 + n * kQh + j, tq1_trit(b.qh[j], n) - 1);
}
// TQ2_0's weight e (-1..2): bits 2 l of qs[32 j + m] for e = 128 j + 32 l + m.
inline int tq2_0_value(const block_tq2_0& b, int e) {
  return ((b.qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3) - 1;
}

// E2M1 values doubled, shared by MXFP4 and NVFP4 (their scales carry the halving).
inline constexpr int8_t kvalues_fp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// ggml_e8m0_to_fp32_half: 2^(e - 128), by its bits.
inline float e8m0_to_fp32_half(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t(0x00200000) << e : uint32_t(e - 1) << 23;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

// ggml_ue4m3_to_fp32: an unsigned E4M3 scale, halved (0 and 0x7F are zero).
float ue4m3_to_fp32(uint8_t x);
// ggml_fp32_to_ue4m3.
uint8_t fp32_to_ue4m3(float x);

inline constexpr int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                             1,    13,   25,  38,  53,  69,  89,  113};

// The signed scale (6 bits less 32) of block ib (0..7) of an IQ4_XS super-block.
inline int iq4_xs_scale(const block_iq4_xs& b, int ib) {
  return (((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((b.scales_h >> (2 * ib)) & 3) << 4)) - 32;
}

// The signed scale (6 bits less 32) of 16-column sub-block j (0..15) from q3_K's 12 scale bytes.
inline int8_t get_scale_q3_K(int j, const uint8_t* s) {
  const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
  return int8_t((lo | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
}

// Unpacks the 6-bit scale d and min m of sub-block j (0..7) from q4_K/q5_K's 12 scale bytes.
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

}  // namespace minfer::quant
