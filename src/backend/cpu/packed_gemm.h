// Matmul kernels over weights in the row-interleaved x16 layout (repack.h). Internal to the CPU
// backend; kernels_matmul.cpp uses them when a weight has a packed copy.
//
// Every path computes, per output (row r, token t), the exact integer dot product of each
// 32-element block, corrects it for the weights' offset, and accumulates in block order
//   acc = fma(float(isum_b - offset * sum(x_b)), d_w[r][b] * d_x[t][b], acc)
// (NVFP4, packed_split_halves: the same step for the block's columns 0-15, then for 16-31, each
// with its own d_w)
// (the K-quants: per super-block the exact integer sums, then the float steps of their
// GGUF-layout kernels) so the scalar, AVX-512 VNNI and AMX kernels give bit-identical results.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/cpu/cpu_features.h"
#include "quant/blocks.h"
#include "quant/types.h"

namespace minfer::cpu {

// Activations in packed_act_type (quantize_act's output). The K-quants read Q8_K rows (292
// bytes per block) and, per (token, block), what their kernels need besides the quants: the
// scale, the 16 sums of 16 quants and the 8 sums of 32 (one per sub-block of the weights).
struct Q8KSums {
  float d;
  int32_t bsum[16];
  // Sub-blocks 2q and 2q + 1's pair sums (|sum| <= 32 x 128) as the low and high int16 of
  // pair16[q]: one vpdpwssd with the weights' mins, stored as the same int16 pairs.
  int32_t pair16[4];
  float pairf[8];  // the pairs as floats (exact), for the AMX path's float mins term
  // -32 x bsum[j]: Q6_K's offset correction (its quants are stored + 32) per 16-column
  // sub-block, ready to broadcast from memory (a multiply in a general register and a
  // broadcast from it took a vector-port uop per token and sub-block in the tiles).
  int32_t q6c[16];
  // bsum[2j] and bsum[2j + 1] (|bsum| <= 16 x 128) as the low and high int16 of bsum16[j]: the
  // 256-bit Q6_K tile's offset term, one madd against -32 x the two scales (ak_q6k_sub4).
  int32_t bsum16[8];
  // -128 x the 32- and the 16-column sums: the offset correction of the panels whose values are
  // stored + 128 (IQ4_XS and the lattice i-quants, by the width of their scales' blocks).
  int32_t off128_32[8];
  int32_t off128_16[16];
};
void q8k_sums(const uint8_t* row, int64_t nsb, Q8KSums* out);  // a Q8_K row's nsb blocks
// nsb super-blocks of activations quantized to a Q8_K row (quantize_act_q8_K) and its q8k_sums.
void packed_act_quantize_k(const float* x, int64_t nsb, uint8_t* row, Q8KSums* out);
// Token t's Q8_K row (nsb super-blocks) widened to int16 into PackedAct::tw's tiles (of `tile`
// tokens, 8 nsb blocks of 32 a row), for the kernels that packed_wide_act() names.
void widen_q8k_row(const uint8_t* row, int64_t nsb, int64_t t, int64_t tile, int16_t* tw);

// The _0 types read Q8_0 blocks re-laid block-major in tiles of `tile` tokens: the quants of
// token t's block b at tq + 32 * act_index(t, b, nb, tile), its scale (float) and offset
// correction (-offset * sum of its quants) at d and c[act_index(t, b, nb, tile)]. A tile's tokens
// sit side by side per block, so a kernel reaches all of them from one pointer with constant
// offsets (token-major rows cost the AVX-512 kernel a pointer register per token, and spills),
// and an AMX tile of 16 tokens x 32 quants is 512 contiguous bytes.
// A call of one token (a decode step) is one tile of 1 (act_tile): its blocks 32 bytes apart,
// not 512. At 512 a long row's blocks fell into an eighth of L1's sets and were evicted by the
// weights streaming past between two groups: qwen2.5-0.5b's ffn_down (4864 columns, Q4_0)
// streamed 16.8 GB/s on one core of AMD Zen 4 against 31 for its 896-column gate and up.
constexpr int64_t kActTile = 16;
inline int64_t act_tile(int64_t nt) { return nt == 1 ? 1 : kActTile; }
inline size_t act_index(int64_t t, int64_t b, int64_t nb, int64_t tile) {
  return size_t(((t / tile) * nb + b) * tile + t % tile);
}
inline int64_t act_tokens_padded(int64_t nt) {
  const int64_t tile = act_tile(nt);
  return (nt + tile - 1) / tile * tile;
}

struct PackedAct {
  // K-quants: row t at q + t * stride; ks[t * nb + b] (q8k_sums of the rows), computed once per
  // matmul rather than once per work item. The SIMD K-quant kernels need them; the scalar one
  // reads the rows.
  const uint8_t* q = nullptr;
  size_t stride = 0;
  const Q8KSums* ks = nullptr;
  // _0 types: the tiles (token 0 starts a tile) of `tile` tokens (act_tile of the call's).
  const uint8_t* tq = nullptr;
  const float* d = nullptr;
  const int32_t* c = nullptr;
  int64_t tile = kActTile;
  // The tiles' quants widened to int16, laid out as tq (32 a block; for the K-quant types the
  // Q8_K rows' quants in tiles of kActTile, 8 blocks a super-block): where packed_wide_act() asks
  // for them (AVX2's Q8_0, IQ4_NL and IQ4_XS prompt kernels); nullptr otherwise.
  const int16_t* tw = nullptr;
  // The _1 types (Q8_1 activations): each block's s (Q8_1's F16 d x sum(q), as a float), laid
  // out as d; nullptr otherwise.
  const float* s = nullptr;
  // The types of two 16-column halves a block (packed_split_halves): the offset correction of
  // each block's columns 16-31, laid out as c, whose own correction is then of columns 0-15 only;
  // nullptr otherwise.
  const int32_t* ch = nullptr;
};

GgmlType packed_act_type(GgmlType wtype);

// Decode streams each group front to back: where decode_prefetch() (cpu_features.h: on Intel, and
// for the super-blocks on AMD Zen 5) the AVX-512 kernels fetch this far ahead, into the outer cache
// levels, every line; of the 256-bit ones only the super-blocks' (ak_gemv; avx2_gemv never does). Measured on Sapphire
// Rapids at 2 threads, qwen2.5-0.5b Q8_0 tg64, one line per block: 2048 B into L1 38.0 t/s, 4096
// 39.2, 8192 into L3 40.5, 16384 39.6; then every line instead of one: a 524288 x 896 GEMV 10-25 %
// faster, Q4_0 and Q5_0 most; 4096 and hints T0/T1/NTA re-measured on 2 MiB pages: no better. Once
// decode chunks became long (kernels_matmul.cpp), 2048 B won: 2 threads, tg64 Q8_0 49.5 t/s (8192:
// 48.0 at 4096), qwen3-0.6b Q4_K_M 52.7 (8192: 47 with short chunks); one thread Q8_0 26.6 vs 25.7
// at 8192.
constexpr int kPackedPrefetch = 2048;  // Q8_0, Q4_0, the K-quants (see packed_prefetch)
// Q5_0 spends about twice Q4_0's vector ops per byte on its fifth bits, and its stream wants to be
// fetched further ahead: qwen2.5-0.5b Q4_K_M (Q5_0 gate, up, q, k, attn_output), 2 threads,
// MINFER_TRACE per decode step, 2048 -> 8192 B: gate + up 6.34 -> 5.90 ms, attn_output 0.71 ->
// 0.64, q/k/v 0.57 -> 0.51 (4096: halfway; 12288 and 16384: as 8192). Q4_0's and Q8_0's steps
// measured no faster at 4096 or 8192.
constexpr int packed_prefetch(GgmlType t) { return t == GgmlType::Q5_0 ? 8192 : kPackedPrefetch; }
// The AVX-512 K-quant decode fetches kPackedPrefetch ahead too. Q6_K (3392 B super-blocks) had
// 4096 B from AMD Zen 4, which no longer prefetches (decode_prefetch); on Intel (session 20, AMX
// Xeon, qwen3-0.6b Q4_K_M tg64, MINFER_TRACE per step) 2048 B took its Q6_K output matrix
// 5.31-5.57 -> 4.88-5.04 ms and ffn_down 2.60-2.76 -> 2.49-2.55 (1024: no better, 3072: between):
// tg64 2 threads 58.7-61.5 -> 61.6-62.4 t/s, 1 thread 30.4-30.9 -> 32.1-32.8. On Zen 5 (two
// threads, `GemvPackedCold` 6144 x 1024) Q6_K at 4096 measured within noise of 2048.

// Token t's activations (nb blocks of 32) quantized to Q8_0 (quantize_act_q8_0; the _1 types:
// Q8_1) into the tiles (of `tile` tokens) of PackedAct, for weights of `wtype`. The row
// (packed_act_type's) is left in `row` when keep_row (the GGUF-layout kernels read rows);
// otherwise `row` is scratch that the AVX-512 path does not touch.
// tw (when not null): the tile's quants also widened to int16 (PackedAct::tw); s: the _1 types'
// PackedAct::s; ch: the split types' PackedAct::ch (c then corrects columns 0-15).
void packed_act_quantize(GgmlType wtype, const float* x, int64_t nb, int64_t t, int64_t tile, uint8_t* row,
                         bool keep_row, uint8_t* tq, float* d, int32_t* c, int16_t* tw = nullptr,
                         float* s = nullptr, int32_t* ch = nullptr);
// Whether packed_gemm(wtype, isa)'s kernel wants PackedAct::tw for nt tokens.
bool packed_wide_act(GgmlType wtype, Isa isa, int64_t nt);

// y[t * ldy + 16 g + i] = row 16 g + i of the packed weight (groups from wp, group_bytes apart)
// times activation row t, for g < n_groups and t < nt; nb blocks (of packed_block_cols) a row.
using PackedGemmFn = void (*)(GgmlType wtype, const uint8_t* wp, int64_t n_groups, int64_t nb,
                              const PackedAct& x, int64_t nt, float* y, int64_t ldy);

// The best kernel up to `isa` (Amx: AMX tiles for whole 16-token tiles, AVX-512 VNNI for the
// rest); nullptr when there is none (scalar, a build without x86 SIMD). packed_gemm_isa: the
// level whose kernel that is (Scalar when none), which kernel_info reports.
PackedGemmFn packed_gemm(GgmlType wtype, Isa isa);
Isa packed_gemm_isa(GgmlType wtype, Isa isa);

// Plain C++ version of the same arithmetic: the tests' reference for the layout.
void packed_gemm_scalar(GgmlType wtype, const uint8_t* wp, int64_t n_groups, int64_t nb,
                        const PackedAct& x, int64_t nt, float* y, int64_t ldy);

// Per-ISA entry points (packed_avx512.cpp, packed_avx2.cpp, packed_avxvnni.cpp); nullptr where
// a type has none or the ISA is not compiled in.
PackedGemmFn packed_gemm_avx512(GgmlType wtype);
PackedGemmFn packed_gemm_amx(GgmlType wtype);  // the _1 types, IQ4_XS: none
PackedGemmFn packed_gemm_avxvnni(GgmlType wtype);
PackedGemmFn packed_gemm_avx2(GgmlType wtype);
// The K-quants' kernels (simd_avx512.cpp); amx: AMX tiles for Q4_K/Q5_K prefill.
PackedGemmFn packed_kq_gemm_avx512(GgmlType wtype, bool amx);

}  // namespace minfer::cpu
