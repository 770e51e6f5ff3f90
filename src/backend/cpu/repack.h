// Load-time repacking of matmul weights into a row-interleaved layout ("x16"), the one the
// packed kernels (packed_gemm.h) stream: per group of 16 output rows, per 32-element block,
// 4 bytes of each of the 16 rows side by side (64 bytes per 4 columns), so that one vpdpbusd
// multiplies 4 columns of 16 rows by 4 activation bytes broadcast to every lane, and the same
// bytes are an AMX B tile (K/4 rows of 16 x 4 bytes). Quants are unsigned (Q8_0: w + 128,
// Q4_0: its nibbles q = w + 8 as stored, Q5_0: w + 16, IQ4_NL: kvalues_iq4nl[q] + 128 from its
// nibbles, which are stored as Q4_0's, MXFP4: kvalues_fp4[q] + 12 likewise); the kernels subtract
// offset * sum(x) per block. The _1 types' quants are their q (x = d q + m): the kernels add
// m * s (Q8_1's sum) per block.
//
// Group layout (64-byte aligned, packed_group_bytes apart), in pairs of blocks: 64 bytes of
// F16 row scales (the 16 rows' d of the pair's first block, then of its second; MXFP4's as BF16,
// packed_bf16_scales; NVFP4's as UE4M3 codes, packed_split_halves; the _1 types: then 64 bytes of their m likewise), then the two blocks'
// quants (Q8_0: 512 bytes each; Q4_0, Q4_1, IQ4_NL, MXFP4 and NVFP4: 256 bytes whose low nibbles are
// columns 0-15 of the block and high nibbles
// 16-31, exactly as in the GGUF block; Q5_0, Q5_1: those 256 bytes, then
// per chunk of 4 columns a 64-bit mask of the fifth bits, bit 4 r + j for column j of row r;
// Q1_0: only such masks, of its sign bits, 64 bytes, u = 2 bit with offset 1, and each block's
// scale the d of its group of 128; Q2_0: as Q2_K's sub-blocks (below), two 64-byte vectors of its
// 2-bit q, byte 4 r + i of vector h holding columns 16 h + 4 c + i at bits 2 c, offset 1, each
// block's scale the d of its group of 64);
// an odd last block leaves its pair's second half unused. Decode streams each group front to
// back: one sequential stream per thread instead of 16 row streams, its scales in the stream
// beside their quants (packed_quants_at() below says why).
//
// The GGUF mapping stays the source of truth (get_rows and the scalar paths read it); the
// packed copy is owned by whoever loads the model.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/cpu/aligned_buffer.h"
#include "backend/cpu/kernels.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace minfer::cpu {

constexpr int64_t kPackRows = 16;

// Whether weights of this type and shape have a packed layout: Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4, NVFP4, Q1_0, Q2_0 (rows of
// whole 32-blocks) and Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, IQ3_S, IQ3_XXS (whole 256-blocks) with at least 16 rows. Only whole
// groups are packed (rows / 16 of them); matmul computes the last rows % 16 rows from the GGUF
// layout.
bool packable(GgmlType type, int64_t rows, int64_t cols);

// IQ4_XS's layout also holds IQ3_S and IQ3_XXS, exactly: each of their values (a grid byte
// times its sign) is a 4-bit code of the type's 16 values (packed_iq4_values: IQ3_S's grid bytes
// are the odd 1..15, IQ3_XXS's eight even ones 4..62, held halved, each with either sign), each
// 32-column sub-block's odd scale 2s + 1 is the int8 scale, d is the block's, and the final
// factor (IQ3_XXS's 1/4, times 2 for the halving: powers of two, so the products round alike) is
// applied with d (packed_iq4_final). All values within +-31, as Q6_K's less 32, so AVX2 multiplies
// them + 32 as Q6_K's quants. Their grid lookups bound their GGUF-layout kernels (session 17);
// the codes cost 24 % (IQ3_S) and 39 % (IQ3_XXS) more bytes.
constexpr bool packed_iq4_layout(GgmlType type) {
  return type == GgmlType::IQ4_XS || type == GgmlType::IQ3_S || type == GgmlType::IQ3_XXS;
}
struct PackedIq4Values {
  int8_t v[16];
};
// Codes 0-7 are the grid's byte values negated (largest first), 8-15 the values (IQ3_XXS's halved).
constexpr int packed_iq4_grid_divisor(GgmlType type) { return type == GgmlType::IQ3_XXS ? 2 : 1; }
constexpr PackedIq4Values packed_iq4_values(GgmlType type) {
  PackedIq4Values t{};
  const uint8_t* grid = type == GgmlType::IQ3_S ? quant::iq_grid_detail::kIq3sValues : quant::iq_grid_detail::kIq3xxsValues;
  const int div = packed_iq4_grid_divisor(type);
  for (int q = 0; q < 16; ++q)
    t.v[q] = type == GgmlType::IQ4_XS ? quant::kvalues_iq4nl[q] : int8_t(q < 8 ? -grid[7 - q] / div : grid[q - 8] / div);
  return t;
}
constexpr float packed_iq4_final(GgmlType type) { return type == GgmlType::IQ3_XXS ? 0.5f : 1.0f; }

constexpr bool packed_kquant(GgmlType type) {
  return type == GgmlType::Q2_K || type == GgmlType::Q3_K || type == GgmlType::Q4_K || type == GgmlType::Q5_K ||
         type == GgmlType::Q6_K || packed_iq4_layout(type);
}
// Columns per packed block: 32, or 256 for the K-quants.
constexpr int64_t packed_block_cols(GgmlType type) { return packed_kquant(type) ? 256 : 32; }

// Quant bytes per block of one group (Q8_0 512, Q4_0, Q4_1, IQ4_NL, MXFP4 and NVFP4 256, Q5_0
// and Q5_1 320, Q1_0 64, Q2_0 128); 0 when not packable.
constexpr size_t packed_quant_bytes(GgmlType type) {
  return type == GgmlType::Q8_0   ? 512
         : type == GgmlType::Q1_0 ? 64
         : type == GgmlType::Q2_0 ? 128
         : type == GgmlType::Q4_0 || type == GgmlType::Q4_1 || type == GgmlType::IQ4_NL || type == GgmlType::MXFP4 ||
                 type == GgmlType::NVFP4
             ? 256
         : type == GgmlType::Q5_0 || type == GgmlType::Q5_1 ? 320
                                                            : 0;
}
// MXFP4's scales are powers of two, 2^(e - 128) for its E8M0 byte e: beyond F16's range, each
// exact in BF16 (2^-128 and 2^-127 as its subnormals), whose conversion to F32 is a 16-bit shift.
constexpr bool packed_bf16_scales(GgmlType type) { return type == GgmlType::MXFP4; }
// NVFP4: a scale per 16 columns, so a 32-column block is two halves, each with its own scale
// and its own offset correction (PackedAct::ch). Its pair's scale line holds the 4 sub-blocks'
// UE4M3 codes as bytes [sub-block][row] (their low 7 bits, as ggml reads them; 0x7F, which it
// reads as 0, stored as 0); as an F32's
// bits shifted left by 20 a code is its value times 2^-119 (subnormal codes too), so the kernels
// widen, shift and multiply by 2^119 (exact: a power of two).
constexpr bool packed_split_halves(GgmlType type) { return type == GgmlType::NVFP4; }
constexpr float kUe4m3Bias = 0x1p119f;
// The _1 types (a min per block: x = d q + m) carry their blocks' mins beside the scales.
constexpr bool packed_has_mins(GgmlType type) { return type == GgmlType::Q4_1 || type == GgmlType::Q5_1; }
// Bytes of a pair's scale line(s): the two blocks' d (F16 x 16 rows each), then for the _1
// types their m likewise.
constexpr size_t packed_head_bytes(GgmlType type) { return packed_has_mins(type) ? 128 : 64; }

// Where block b's quants and scales lie in a group of the _0 types (qb = packed_quant_bytes).
// The scales sit in the quants' stream, a line per pair of blocks, because a kernel reading two
// streams a group apart is slower: on AMD Zen 4 (an EPYC VM with 2 vCPUs, a 512 MiB
// buffer read as Q8_0 decode reads it) one core streamed 15.8 GB/s with all of a group's scales
// after its quants against 30.3 in pairs like this (2 threads 25.5 -> 33.4, a plain read loop
// 30-33 and 35-36); the scales before the group's quants measured as slow as after them.
// hb: packed_head_bytes (the mins of block b, for the _1 types, at packed_scales_at + 64).
constexpr size_t packed_pair_bytes(size_t qb, size_t hb = 64) { return hb + 2 * qb; }
constexpr size_t packed_quants_at(size_t qb, int64_t b, size_t hb = 64) {
  return size_t(b >> 1) * packed_pair_bytes(qb, hb) + hb + size_t(b & 1) * qb;
}
constexpr size_t packed_scales_at(size_t qb, int64_t b, size_t hb = 64) {
  return size_t(b >> 1) * packed_pair_bytes(qb, hb) + 32 * size_t(b & 1);
}
// The kernels' packed _0 and _1 types derive from this (QB = packed_quant_bytes, HB =
// packed_head_bytes): block b's quants in group grp. A decoded panel type (the kernels' Decoded)
// has the same members, reading pan.
template <size_t QB, size_t HB = 64>
struct PackedQuants {
  static constexpr size_t kGroupBytes = QB;  // quant bytes per block in the group
  static constexpr size_t kHeadBytes = HB;
  static const uint8_t* quants(const uint8_t* grp, const uint8_t* /*pan*/, int64_t b) {
    return grp + packed_quants_at(QB, b, HB);
  }
};

// K-quant super-blocks, 16 rows each, everything of one super-block together, in the order the
// decode kernels read it (a stream that jumps ahead and back is not followed by AMD Zen 4's
// prefetchers):
//   per 32-column sub-block j (packed_kq_sub_bytes apart):
//     quants: 4 chunks of 64 bytes, byte 4 r + i of chunk c holding columns 4 c + i (low
//       nibble) and 16 + 4 c + i (high nibble) of row r: Q4_0's layout;
//     then Q5_K: per chunk two 64-bit masks of the fifth bits (columns 4 c + i, then
//       16 + 4 c + i; bit 4 r + i);
//     or Q6_K: two 64-byte vectors of the high 2 bits, byte 4 r + i of vector p holding
//       columns 8 p + i, 16 + 8 p + i, 8 p + 4 + i, 20 + 8 p + i at bits 0, 2, 4, 6;
//   Q3_K instead (3 bits, u = q + 4 in 0..7): two 64-byte vectors of the low 2 bits, byte
//     4 r + i holding columns 4 c + i (first vector) or 16 + 4 c + i (second) at bits 2 c, for
//     c = 0..3; then a 64-byte vector of the third bits, byte 4 r + i holding columns 4 c + i at
//     bit c and 16 + 4 c + i at bit 4 + c;
//   Q2_K: only those two vectors of 2-bit fields;
//   IQ4_XS: Q4_K's quants (its nibbles as they are: the kernels look their values up in
//     kvalues_iq4nl), then its scales less 32 as int8 [j][r] and d[16] where Q4_K has them;
//     IQ3_S, IQ3_XXS likewise (packed_iq4_layout);
//   then Q4_K/Q5_K: the 6-bit scales as bytes [j][r], the mins as byte pairs [j / 2][r][j % 2],
//     then d[16] and dmin[16] (F16); Q6_K and Q3_K: the int8 scales of the 16-column
//     sub-blocks [k][r] (Q3_K's less 32, as it applies them), d[16]; Q2_K: its scale | min << 4
//     bytes as pairs [j][r][h] (16-column sub-block 2 j + h), then d[16] and dmin[16].
// Every block is whole 64-byte lines (Q2_K 21, Q3_K 29, Q4_K and IQ4_XS 37, Q5_K 45, Q6_K 53).
constexpr size_t packed_kq_block_bytes(GgmlType type) {
  return type == GgmlType::Q2_K ? 1024 + 256 + 64
       : type == GgmlType::Q3_K ? 1536 + 256 + 64  // d, then 32 bytes of padding
       : type == GgmlType::Q4_K || packed_iq4_layout(type) ? 2048 + 256 + 64
       : type == GgmlType::Q5_K ? 2048 + 512 + 256 + 64
       : type == GgmlType::Q6_K ? 2048 + 1024 + 256 + 64  // d, then 32 bytes of padding
                                : 0;
}
// Offsets inside one packed K-quant block: sub-block j's chunk c of quants (Q2_K, Q3_K: its
// vector c of 2-bit fields, c < 2) and its Q5_K masks, Q6_K high bits or Q3_K third bits (Q2_K
// has none), the scales, and from the scales the mins, d and dmin.
constexpr size_t packed_kq_sub_bytes(GgmlType type) {
  return type == GgmlType::Q5_K   ? 256 + 64
         : type == GgmlType::Q6_K ? 256 + 128
         : type == GgmlType::Q3_K ? 128 + 64
         : type == GgmlType::Q2_K ? 128
                                  : 256;
}
constexpr size_t packed_kq_quants(GgmlType type, int j, int c) {
  return packed_kq_sub_bytes(type) * size_t(j) + 64 * size_t(c);
}
constexpr size_t packed_kq_extra(GgmlType type, int j) {
  return packed_kq_sub_bytes(type) * size_t(j) + (type == GgmlType::Q3_K ? 128 : 256);
}
constexpr size_t packed_kq_scales(GgmlType type) { return 8 * packed_kq_sub_bytes(type); }
constexpr size_t kKqMins = 128, kKqD = 256, kKqDmin = 288;

// A group's quants and scales: whole 64-byte lines, so that every group starts aligned.
constexpr size_t packed_group_bytes(GgmlType type, int64_t cols) {
  const size_t nb = size_t(cols / packed_block_cols(type));
  return packed_kquant(type) ? nb * packed_kq_block_bytes(type)
                             : (nb + 1) / 2 * packed_pair_bytes(packed_quant_bytes(type), packed_head_bytes(type));
}
size_t packed_bytes(GgmlType type, int64_t rows, int64_t cols);

// Offset the packed quants of the _0 types carry (Q8_0 128, Q4_0 8, Q5_0 16, IQ4_NL 128, MXFP4
// and NVFP4 12: their tables' values + 128 (+ 12) once the kernels have looked them up); the _1
// types' quants are their values (0). The FP4 values + 12 (0..24) stay unsigned bytes whose
// maddubs pairs AVX2 may sum over 4 chunks in int16 (4 x 2 x 24 x 127 < 2^15).
int packed_offset(GgmlType type);

// Repacks the whole groups of w (packable) into out (packed_bytes, 64-byte aligned), spread
// over the threads.
void pack_weight(const WeightView& w, uint8_t* out);

// w's rows converted to type `to` (weights_converted_at_load: TQ1_0 to TQ2_0) into out
// (row_size(to, cols) a row), spread over the threads as pack_weight.
void convert_weight(const WeightView& w, GgmlType to, uint8_t* out);

// Copies n bytes of GGUF rows as they are (a weight without a packed layout), spread over the
// threads as pack_weight: each thread faults in its part of both mappings.
void copy_weight(const uint8_t* src, size_t n, uint8_t* out);

}  // namespace minfer::cpu
