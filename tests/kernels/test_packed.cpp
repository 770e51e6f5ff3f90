// The x16 repacked layout and its kernels (repack.h, packed_gemm.h): the scalar packed kernel
// against a plain dot product of the GGUF blocks, every SIMD path (AVX2, AVX-512 VNNI, AMX) bit for
// bit against the scalar packed kernel, and matmul with a packed copy against matmul without.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/act_quant.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernel_info.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_gemm.h"
#include "backend/cpu/repack.h"
#include "common/error.h"
#include "common/fp16.h"
#include "backend/cpu/kernels_dot.h"
#include "quant/iq_grids.h"
#include "quant/quant.h"
#include "kernels/random_weights.h"

namespace minfer::cpu {
namespace {

using test::random_floats;
using test::random_weights;

struct Packed {
  std::vector<uint8_t> w;
  AlignedBuffer p;
  WeightView view;
};

Packed make_packed(GgmlType t, int64_t rows, int64_t cols, std::mt19937& rng) {
  Packed k;
  k.w = random_weights(t, rows, cols, rng);
  k.view = WeightView{t, k.w.data(), rows, cols, row_size(t, cols)};
  k.p = aligned_buffer(packed_bytes(t, rows, cols));
  pack_weight(k.view, k.p.get());
  return k;
}

// make_packed's weight, with its packed copy in the view where the type and shape have one.
Packed make_weight(GgmlType t, int64_t rows, int64_t cols, std::mt19937& rng) {
  if (packable(t, rows, cols)) {
    Packed k = make_packed(t, rows, cols, rng);
    k.view.packed = k.p.get();
    return k;
  }
  Packed k;
  k.w = random_weights(t, rows, cols, rng);
  k.view = WeightView{t, k.w.data(), rows, cols, row_size(t, cols)};
  return k;
}

struct Acts {
  std::vector<uint8_t> q, tq;
  std::vector<float> d, s;  // s: the _1 types' Q8_1 block sums
  std::vector<int32_t> c, ch;  // ch: the split types' second-half corrections
  std::vector<int16_t> tw;  // tq widened (PackedAct::tw)
  std::vector<Q8KSums> ks;
  size_t stride = 0;
  int64_t tile = kActTile;  // act_tile of the token count, as matmul lays them out
  PackedAct view(bool wide = false) const {
    return {q.data(), stride,      ks.data(), tq.data(), d.data(), c.data(), tile, wide ? tw.data() : nullptr,
            s.empty() ? nullptr : s.data(), ch.empty() ? nullptr : ch.data()};
  }
};

Acts make_acts(GgmlType wt, const std::vector<float>& x, int64_t nt, int64_t cols) {
  Acts a;
  const int64_t nb = cols / 32;
  const GgmlType at = packed_act_type(wt);
  a.stride = row_size(at, cols);
  a.q.resize(a.stride * size_t(nt));
  if (at == GgmlType::Q8_K) {  // the K-quant kernels read the Q8_K rows and their sums
    const int64_t nsb = cols / 256;
    a.ks.resize(size_t(nt * nsb));
    for (int64_t t = 0; t < nt; ++t) {
      quantize_act(at, x.data() + t * cols, a.q.data() + size_t(t) * a.stride, cols);
      q8k_sums(a.q.data() + size_t(t) * a.stride, nsb, a.ks.data() + t * nsb);
    }
    // The rows' quants widened to int16 in tiles of act_tile(nt) tokens, 32 columns a block
    // (AVX2's int16 IQ4_XS prompt kernel; the other K-quant kernels must ignore them).
    a.tile = act_tile(nt);
    const int64_t nb32 = cols / 32;
    a.tw.assign(size_t(32 * act_tokens_padded(nt) * nb32), 0);
    for (int64_t t = 0; t < nt; ++t)
      for (int64_t b = 0; b < nb32; ++b)
        for (int e = 0; e < 32; ++e) {
          const auto* blk = reinterpret_cast<const quant::block_q8_K*>(a.q.data() + size_t(t) * a.stride) + b / 8;
          a.tw[32 * act_index(t, b, nb32, a.tile) + size_t(e)] = blk->qs[32 * (b % 8) + e];
        }
    return a;
  }
  a.tile = act_tile(nt);
  const size_t n_act = size_t(act_tokens_padded(nt) * nb);
  a.tq.resize(32 * n_act);
  a.d.resize(n_act);
  a.c.resize(n_act);
  const bool q81 = at == GgmlType::Q8_1;  // the _1 types: d, s, then the quants
  if (q81) a.s.resize(n_act);
  const bool split = packed_split_halves(wt);
  if (split) a.ch.resize(n_act);
  // The tiles from the Q8_0 (Q8_1) rows, as packed_gemm.h describes them.
  for (int64_t t = 0; t < nt; ++t) {
    const uint8_t* row = a.q.data() + size_t(t) * a.stride;
    quantize_act(at, x.data() + t * cols, a.q.data() + size_t(t) * a.stride, cols);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = row + (q81 ? 36 : 34) * b;
      const uint8_t* qs = blk + (q81 ? 4 : 2);
      const size_t i = act_index(t, b, nb, a.tile);
      uint16_t h;
      std::memcpy(&h, blk, 2);
      a.d[i] = fp16_to_fp32(h);
      if (q81) {
        std::memcpy(&h, blk + 2, 2);
        a.s[i] = fp16_to_fp32(h);
      }
      int32_t s = 0, sh = 0;
      for (int j = 0; j < 32; ++j) (split && j >= 16 ? sh : s) += int8_t(qs[j]);
      a.c[i] = -packed_offset(wt) * s;
      if (split) a.ch[i] = -packed_offset(wt) * sh;
      std::memcpy(a.tq.data() + 32 * i, qs, 32);
    }
  }
  a.tw.assign(a.tq.begin(), a.tq.end());
  for (size_t e = 0; e < a.tw.size(); ++e) a.tw[e] = int8_t(a.tq[e]);
  return a;
}

// Weight element k of row r, as its integer quant, the block scale and (the _1 types) min.
void weight_quant(GgmlType t, const uint8_t* row, int64_t k, int* q, float* d, float* m) {
  if (t == GgmlType::Q1_0) {  // blocks of 128: d, then bit j of qs[j / 8]: +1 or -1
    const auto& b = reinterpret_cast<const quant::block_q1_0*>(row)[k / 128];
    const int j = int(k % 128);
    *d = fp16_to_fp32(b.d);
    *m = 0.0f;
    *q = (b.qs[j / 8] >> (j % 8)) & 1 ? 1 : -1;
    return;
  }
  if (t == GgmlType::Q2_0) {  // blocks of 64: d, then bits 2 (j % 4) of qs[j / 4]: q - 1
    const auto& b = reinterpret_cast<const quant::block_q2_0*>(row)[k / 64];
    const int j = int(k % 64);
    *d = fp16_to_fp32(b.d);
    *m = 0.0f;
    *q = ((b.qs[j / 4] >> (2 * (j % 4))) & 3) - 1;
    return;
  }
  if (t == GgmlType::NVFP4) {  // blocks of 64: d[4] (UE4M3 per 16), qs[32] (8 a sub-block)
    const auto& b = reinterpret_cast<const quant::block_nvfp4*>(row)[k / 64];
    const int e = int(k % 64), sb = e / 16, j = e % 16;
    *d = quant::ue4m3_to_fp32(b.d[sb]);
    *m = 0.0f;
    *q = quant::kvalues_fp4[j < 8 ? (b.qs[8 * sb + j] & 0x0F) : (b.qs[8 * sb + j - 8] >> 4)];
    return;
  }
  const size_t bb = type_traits(t).type_size;
  const uint8_t* blk = row + size_t(k / 32) * bb;
  uint16_t h;
  std::memcpy(&h, blk, 2);
  *d = fp16_to_fp32(h);
  *m = 0.0f;
  const int j = int(k % 32);
  if (t == GgmlType::MXFP4) {  // e, qs[16]: 2^(e - 128) x the doubled E2M1 value
    *d = quant::e8m0_to_fp32_half(blk[0]);
    *q = quant::kvalues_fp4[j < 16 ? (blk[1 + j] & 0x0F) : (blk[1 + j - 16] >> 4)];
    return;
  }
  if (packed_has_mins(t)) {  // Q4_1: d, m, qs[16]; Q5_1: d, m, qh[4], qs[16]
    std::memcpy(&h, blk + 2, 2);
    *m = fp16_to_fp32(h);
    const bool q5 = t == GgmlType::Q5_1;
    const uint8_t* qs = blk + (q5 ? 8 : 4);
    *q = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
    if (q5) {
      uint32_t qh;
      std::memcpy(&qh, blk + 4, 4);
      *q |= int((qh >> j) & 1) << 4;
    }
  } else if (t == GgmlType::Q8_0) {
    *q = int8_t(blk[2 + j]);
  } else if (t == GgmlType::Q4_0) {
    *q = (j < 16 ? (blk[2 + j] & 0x0F) : (blk[2 + j - 16] >> 4)) - 8;
  } else if (t == GgmlType::IQ4_NL) {
    *q = quant::kvalues_iq4nl[j < 16 ? (blk[2 + j] & 0x0F) : (blk[2 + j - 16] >> 4)];
  } else {  // Q5_0: d, qh[4], qs[16]
    uint32_t qh;
    std::memcpy(&qh, blk + 2, 4);
    const int lo = j < 16 ? (blk[6 + j] & 0x0F) : (blk[6 + j - 16] >> 4);
    *q = (lo | int(((qh >> j) & 1) << 4)) - 16;
  }
}

class PackedTest : public testing::TestWithParam<GgmlType> {};

// The scalar packed kernel is the plain sum over blocks of d_w * d_x * (integer dot), done in
// double here: the layout and the offset corrections must be exact.
TEST_P(PackedTest, ScalarKernelMatchesThePlainDotProduct) {
  const GgmlType t = GetParam();
  if (packed_kquant(t)) GTEST_SKIP() << "K-quants: see KQuantScalarKernelMatchesTheDequantizedDot";
  std::mt19937 rng(7);
  for (int64_t cols : t == GgmlType::Q1_0 ? std::vector<int64_t>{128, 384} : std::vector<int64_t>{64, 192, 256}) {
    const int64_t rows = 32, nt = 19, nb = cols / 32;  // a whole activation tile and part of one
    Packed k = make_packed(t, rows, cols, rng);
    const auto x = random_floats(size_t(nt * cols), rng);
    const Acts a = make_acts(t, x, nt, cols);
    std::vector<float> y(size_t(nt * rows));
    packed_gemm_scalar(t, k.p.get(), rows / 16, nb, a.view(), nt, y.data(), rows);
    for (int64_t tt = 0; tt < nt; ++tt)
      for (int64_t r = 0; r < rows; ++r) {
        double ref = 0.0;
        const bool q81 = packed_has_mins(t);  // Q8_1 activations: d, s, quants
        const size_t xb = q81 ? 36 : 34, xo = q81 ? 4 : 2;
        for (int64_t b = 0; b < nb; ++b) {
          const uint8_t* xblk = &a.q[size_t(tt) * a.stride + xb * size_t(b)];
          uint16_t hx;  // the activation block's own scale (and sum), as quantize_act wrote them
          std::memcpy(&hx, xblk, 2);
          float dw = 0, mw = 0;
          for (int half = 0; half < 2; ++half) {  // (NVFP4 scales each 16 apart)
            long isum = 0;
            for (int j = 16 * half; j < 16 * half + 16; ++j) {
              int q;
              weight_quant(t, k.w.data() + size_t(r) * k.view.row_bytes, 32 * b + j, &q, &dw, &mw);
              isum += long(q) * int8_t(a.q[size_t(tt) * a.stride + xb * size_t(b) + xo + size_t(j)]);
            }
            ref += double(dw) * double(fp16_to_fp32(hx)) * double(isum);
          }
          if (q81) {
            std::memcpy(&hx, xblk + 2, 2);
            ref += double(mw) * double(fp16_to_fp32(hx));
          }
        }
        EXPECT_NEAR(y[size_t(tt * rows + r)], ref, 1e-5 * (1.0 + std::fabs(ref)))
            << type_name(t) << " cols " << cols << " token " << tt << " row " << r;
      }
  }
}

// The K-quants: against the dequantized weights times the dequantized Q8_K activations in
// double (independent of the layout and of the integer factoring), and bit for bit against the
// GGUF-layout scalar kernel, whose integer sums and float steps it repeats.
TEST_P(PackedTest, KQuantScalarKernelMatchesTheDequantizedDot) {
  const GgmlType t = GetParam();
  if (!packed_kquant(t)) GTEST_SKIP() << "the _0 types: see ScalarKernelMatchesThePlainDotProduct";
  std::mt19937 rng(7);
  for (int64_t cols : {256, 768}) {
    const int64_t rows = 32, nt = 3, nb = cols / 256;
    Packed k = make_packed(t, rows, cols, rng);
    const auto x = random_floats(size_t(nt * cols), rng);
    const Acts a = make_acts(t, x, nt, cols);
    std::vector<float> y(size_t(nt * rows)), gguf(y.size());
    packed_gemm_scalar(t, k.p.get(), rows / 16, nb, a.view(), nt, y.data(), rows);
    dot_tile(t, Isa::Scalar)(t, cols, k.w.data(), k.view.row_bytes, rows, a.q.data(), a.stride, nt,
                             gguf.data(), rows);
    EXPECT_EQ(y, gguf) << type_name(t) << " cols " << cols;
    std::vector<float> wrow(static_cast<size_t>(cols)), xrow(static_cast<size_t>(cols));
    for (int64_t tt = 0; tt < nt; ++tt) {
      quant::dequantize_row(GgmlType::Q8_K, a.q.data() + size_t(tt) * a.stride, xrow.data(), cols);
      for (int64_t r = 0; r < rows; ++r) {
        quant::dequantize_row(t, k.w.data() + size_t(r) * k.view.row_bytes, wrow.data(), cols);
        double ref = 0.0, mag = 0.0;
        for (int64_t e = 0; e < cols; ++e) {
          ref += double(wrow[size_t(e)]) * double(xrow[size_t(e)]);
          mag += std::fabs(double(wrow[size_t(e)]) * double(xrow[size_t(e)]));
        }
        EXPECT_NEAR(y[size_t(tt * rows + r)], ref, 1e-5 * (1.0 + mag))
            << type_name(t) << " cols " << cols << " token " << tt << " row " << r;
      }
    }
  }
}

// AVX2, VNNI and AMX run the same integer sums and the same float steps: bit-identical results,
// for token counts around the 16-token AMX tiles and the 8/4/1 VNNI (4/1 AVX2) tiles, with and
// without the widened activations (AVX2's int16 Q8_0, IQ4_NL and IQ4_XS prompt kernels; IQ4_XS's
// panels hold 2 super-blocks, so its 3 continue the float sums across two), on rows of 1, 2, 5, 7 and
// 21 blocks (the int16 kernel's panels hold 16 blocks: one panel, and two with the float sums
// continued across them; the AMX tile steps blocks in fours and scales each two blocks later:
// every remainder, and rows shorter than that lag).
TEST_P(PackedTest, SimdPathsAreBitIdenticalToScalar) {
  const GgmlType t = GetParam();
  std::mt19937 rng(11);
  int tested = 0, wide = 0;
  std::vector<int64_t> widths = {32, 64, 160, 224, 672};
  if (packed_kquant(t)) widths = {768};
  if (t == GgmlType::NVFP4 || t == GgmlType::Q2_0) widths = {64, 128, 192, 320, 704};  // whole blocks of 64
  if (t == GgmlType::Q1_0) widths = {128, 256, 640, 896};          // of 128
  for (int64_t cols : widths) {
    const int64_t rows = 48, nb = cols / packed_block_cols(t);
    Packed k = make_packed(t, rows, cols, rng);
    for (Isa isa : supported_isas()) {
      if (isa == Isa::Scalar) continue;
      const PackedGemmFn f = packed_gemm(t, isa);
      if (!f && packed_iq4_layout(t) && isa == Isa::AvxVnni) continue;  // (no AVX-VNNI kernel)
      ASSERT_NE(f, nullptr) << isa_name(isa);
      for (int64_t nt : {1, 2, 3, 4, 5, 8, 9, 15, 16, 17, 18, 19, 31, 32, 33, 34, 47}) {
        const auto x = random_floats(size_t(nt * cols), rng);
        const Acts a = make_acts(t, x, nt, cols);
        std::vector<float> ref(size_t(nt * rows));
        packed_gemm_scalar(t, k.p.get(), rows / 16, nb, a.view(), nt, ref.data(), rows);
        for (bool w : {false, true}) {
          if (w && a.tw.empty()) continue;
          std::vector<float> got(ref.size(), -1.0f);
          f(t, k.p.get(), rows / 16, nb, a.view(w), nt, got.data(), rows);
          ASSERT_EQ(got, ref) << type_name(t) << " cols " << cols << " nt " << nt << " on " << isa_name(isa)
                              << (w ? " with widened activations" : "");
          ++tested;
          wide += w && packed_wide_act(t, isa, nt);
        }
      }
    }
  }
  if (tested == 0) GTEST_SKIP() << "no packed SIMD kernel for " << type_name(t) << " on this CPU";
  if ((t == GgmlType::Q8_0 || t == GgmlType::IQ4_NL || t == GgmlType::IQ4_XS) && isa_supported(Isa::Avx2)) {
    EXPECT_GT(wide, 0) << "the int16 kernel never ran";
  }
}

// AVX-VNNI is not implied by AVX-512 (Ice Lake, Zen 4 have one without the other): the Avx512
// and Amx levels must never dispatch to the AVX-VNNI kernels, whatever this CPU has (packed_gemm
// only picks pointers, so this runs anywhere).
TEST_P(PackedTest, AvxVnniKernelsOnlyAtTheirOwnLevel) {
  const GgmlType t = GetParam();
  const PackedGemmFn vnni = packed_gemm_avxvnni(t);
  if (!vnni) GTEST_SKIP() << "no AVX-VNNI kernel for " << type_name(t) << " in this build";
  EXPECT_EQ(packed_gemm(t, Isa::AvxVnni), vnni);
  EXPECT_EQ(matmul_isa(t, Isa::AvxVnni), Isa::AvxVnni);
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Amx}) {
    EXPECT_NE(packed_gemm(t, isa), vnni) << isa_name(isa);
    EXPECT_NE(matmul_isa(t, isa), Isa::AvxVnni) << isa_name(isa);
  }
}

// matmul() with the packed copy against matmul() on the GGUF layout (the dot_tile kernels,
// whose float order differs): close, with the bias, over the thread split, token blocks (129: a
// last block of one token, in tiles of 16) and the rows past the last whole group.
TEST_P(PackedTest, MatmulWithPackedCopyMatchesGgufLayout) {
  const GgmlType t = GetParam();
  std::mt19937 rng(5);
  const int64_t rows = 70, cols = 512;  // 4 groups and 6 rows past them
  Packed k = make_packed(t, rows, cols, rng);
  const auto bias = random_floats(size_t(rows), rng);
  int tested = 0;
  for (Isa isa : supported_isas()) {
    if (isa == Isa::Scalar || !packed_gemm(t, isa)) continue;
    force_isa(isa);
    for (int64_t nt : {1, 7, 129, 130}) {
      const auto x = random_floats(size_t(nt * cols), rng);
      std::vector<float> ref(size_t(nt * rows)), got(ref.size());
      matmul(k.view, x.data(), nt, ref.data(), bias.data());
      WeightView pv = k.view;
      pv.packed = k.p.get();
      matmul(pv, x.data(), nt, got.data(), bias.data());
      for (size_t i = 0; i < ref.size(); ++i)
        ASSERT_NEAR(got[i], ref[i], 1e-4f * (1.0f + std::fabs(ref[i])))
            << isa_name(isa) << " nt " << nt << " i " << i;
    }
    reset_isa();
    ++tested;
  }
  if (tested == 0) GTEST_SKIP() << "no packed kernel for " << type_name(t) << " on this CPU";
}

INSTANTIATE_TEST_SUITE_P(Types, PackedTest,
                         testing::Values(GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::IQ4_NL,
                                         GgmlType::MXFP4, GgmlType::NVFP4, GgmlType::Q1_0, GgmlType::Q2_0,
                                         GgmlType::Q4_1,
                                         GgmlType::Q5_1,
                                         GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                                         GgmlType::IQ4_XS, GgmlType::IQ3_S, GgmlType::IQ3_XXS),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// matmul_multi runs packed jobs together (one quantization, one parallel_for) when they share a
// row length and an activation format (one type, or mixed K-quants, as Q4_K_M's Q4_K q/k and
// Q6_K v): the same results as one matmul per job, bit for bit, with the bias, the tail rows
// and the mixed _0 types that must run apart.
// packed_act_quantize on every ISA (AVX-512: 16 blocks reduced at once, a partial last group)
// gives make_acts' tiles and rows byte for byte, and leaves the row alone unless asked to keep it;
// a single token (tiles of 1) gets its blocks in order, 32 bytes apart.
TEST(Packed, ActivationTilesOnEveryIsaMatchTheRows) {
  std::mt19937 rng(21);
  std::vector<std::pair<int64_t, int64_t>> tokens_x_blocks;
  for (int64_t nt : {35, 1})
    for (int64_t nb : {1, 16, 17, 28, 40}) tokens_x_blocks.emplace_back(nt, nb);
  for (GgmlType wt : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::IQ4_NL, GgmlType::MXFP4,
                      GgmlType::NVFP4, GgmlType::Q1_0, GgmlType::Q2_0, GgmlType::Q4_1}) {
    for (const auto& [nt, nb] : tokens_x_blocks) {
      const int64_t cols = 32 * nb;
      auto x = random_floats(size_t(nt * cols), rng, 4.0f);
      const int64_t zt = nt > 3 ? 3 : 0, ht = nt > 4 ? 4 : 0;
      for (int j = 0; j < 32; ++j) x[size_t(zt * cols + j)] = 0.0f;  // an all-zero block
      for (int j = 0; j < 32 && nb > 1; ++j) x[size_t(ht * cols + 32 + j)] = float(j) - 15.5f;  // exact halves
      force_isa(Isa::Scalar);
      const Acts ref = make_acts(wt, x, nt, cols);
      for (Isa isa : supported_isas()) {
        force_isa(isa);
        Acts a = ref;
        std::fill(a.tq.begin(), a.tq.end(), uint8_t(0x5A));
        std::fill(a.d.begin(), a.d.end(), -1.0f);
        std::fill(a.c.begin(), a.c.end(), 7);
        std::fill(a.s.begin(), a.s.end(), -2.0f);
        std::fill(a.ch.begin(), a.ch.end(), 9);
        std::vector<uint8_t> row(ref.stride);
        for (int64_t t = 0; t < nt; ++t) {
          const bool keep = t % 2 == 0;
          std::memset(row.data(), 0xA5, row.size());
          packed_act_quantize(wt, x.data() + t * cols, nb, t, a.tile, row.data(), keep, a.tq.data(), a.d.data(),
                              a.c.data(), nullptr, a.s.empty() ? nullptr : a.s.data(),
                              a.ch.empty() ? nullptr : a.ch.data());
          if (keep || isa < Isa::Avx512 || packed_has_mins(wt))  // (the _1 types' row is always made)
            EXPECT_EQ(0, std::memcmp(row.data(), ref.q.data() + size_t(t) * ref.stride, ref.stride))
                << isa_name(isa) << " nb " << nb << " t " << t;
          else
            EXPECT_EQ(0xA5, reinterpret_cast<const uint8_t*>(row.data())[0]) << isa_name(isa);
        }
        // Tokens past nt (the padding of the last tile) are not written by anyone: compare the
        // tokens that exist.
        for (int64_t t = 0; t < nt; ++t)
          for (int64_t b = 0; b < nb; ++b) {
            const size_t i = act_index(t, b, nb, a.tile);
            if (nt == 1) {
              ASSERT_EQ(i, size_t(b));
            }
            ASSERT_EQ(0, std::memcmp(a.tq.data() + 32 * i, ref.tq.data() + 32 * i, 32))
                << isa_name(isa) << " " << type_name(wt) << " nb " << nb << " t " << t << " b " << b;
            ASSERT_EQ(a.d[i], ref.d[i]) << isa_name(isa) << " nb " << nb << " t " << t << " b " << b;
            ASSERT_EQ(a.c[i], ref.c[i]) << isa_name(isa) << " nb " << nb << " t " << t << " b " << b;
            if (!ref.s.empty()) {
              ASSERT_EQ(a.s[i], ref.s[i]) << isa_name(isa) << " nb " << nb << " t " << t;
            }
            if (!ref.ch.empty()) {
              ASSERT_EQ(a.ch[i], ref.ch[i]) << isa_name(isa) << " nb " << nb << " t " << t;
            }
          }
      }
      reset_isa();
    }
  }
}

TEST(Packed, MatmulMultiEqualsOneMatmulPerJob) {
  if (!packed_gemm(GgmlType::Q4_K, active_isa())) GTEST_SKIP() << "no packed kernels on " << isa_name(active_isa());
  std::mt19937 rng(21);
  const int64_t cols = 512;
  for (const std::vector<GgmlType>& types :
       {std::vector<GgmlType>{GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K},
        std::vector<GgmlType>{GgmlType::Q5_K, GgmlType::Q6_K},
        std::vector<GgmlType>{GgmlType::Q3_K, GgmlType::Q3_K, GgmlType::Q4_K},
        std::vector<GgmlType>{GgmlType::Q2_K, GgmlType::Q3_K},
        std::vector<GgmlType>{GgmlType::Q5_0, GgmlType::Q5_0, GgmlType::Q8_0}}) {
    const int64_t rows[3] = {64, 37, 32};
    std::vector<Packed> w;
    std::vector<std::vector<float>> bias;
    for (size_t j = 0; j < types.size(); ++j) {
      w.push_back(make_packed(types[j], rows[j], cols, rng));
      w.back().view.packed = w.back().p.get();
      bias.push_back(random_floats(size_t(rows[j]), rng));
    }
    for (int64_t nt : {1, 5, 33}) {
      const auto x = random_floats(size_t(nt * cols), rng);
      std::vector<std::vector<float>> ref, got;
      MatmulJob jobs[3];
      for (size_t j = 0; j < types.size(); ++j) {
        ref.emplace_back(size_t(nt * rows[j]));
        got.emplace_back(size_t(nt * rows[j]), -1.0f);
        matmul(w[j].view, x.data(), nt, ref[j].data(), bias[j].data());
      }
      for (size_t j = 0; j < types.size(); ++j) jobs[j] = MatmulJob{w[j].view, bias[j].data(), got[j].data()};
      matmul_multi(jobs, int(types.size()), x.data(), nt);
      for (size_t j = 0; j < types.size(); ++j)
        EXPECT_EQ(got[j], ref[j]) << type_name(types[j]) << " job " << j << " nt " << nt;
    }
  }
}

// A decode step's work items (guided: long items first, short ones last, cut where a job ends)
// cover every row of every job exactly once, whatever the thread count (the jobs' tail rows
// together exceed a group): the packed jobs together
// give what the GGUF-layout kernel gives for each alone, and the same bits on any thread count.
TEST(Packed, DecodeWorkItemsCoverEveryRowOnAnyThreadCount) {
  if (!packed_gemm(GgmlType::Q8_0, active_isa())) GTEST_SKIP() << "no packed kernels on " << isa_name(active_isa());
  std::mt19937 rng(29);
  const int64_t cols = 256, rows[3] = {16 * 57 + 9, 16 * 8 + 9, 16 * 9};  // 2 tails > 1 group
  std::vector<Packed> w;
  std::vector<std::vector<float>> ref;
  const auto x = random_floats(size_t(cols), rng);
  for (int64_t r : rows) {
    w.push_back(make_packed(GgmlType::Q8_0, r, cols, rng));
    ref.emplace_back(size_t(r));
    matmul(w.back().view, x.data(), 1, ref.back().data(), nullptr);  // the GGUF layout
    w.back().view.packed = w.back().p.get();
  }
  std::vector<std::vector<float>> first;
  for (int th : {1, 2, 3, 4, 7}) {
    set_threads(th);
    std::vector<std::vector<float>> got;
    MatmulJob jobs[3];
    for (size_t j = 0; j < 3; ++j) {
      got.emplace_back(size_t(rows[j]), std::nanf(""));
      jobs[j] = MatmulJob{w[j].view, nullptr, got[j].data()};
    }
    matmul_multi(jobs, 3, x.data(), 1);
    for (size_t j = 0; j < 3; ++j)
      for (int64_t i = 0; i < rows[j]; ++i)
        ASSERT_NEAR(got[j][size_t(i)], ref[j][size_t(i)], 1e-4f * (1.0f + std::fabs(ref[j][size_t(i)])))
            << th << " threads, job " << j << " row " << i;
    if (first.empty()) first = got;
    EXPECT_EQ(got, first) << th << " threads";
  }
  set_threads(0);
}

// matmul_swiglu (a work item multiplies the same rows of gate and up and combines them) gives
// what the two matmuls and swiglu give, bit for bit: packed types, mixed K-quants, a type with
// no packed kernel, rows past the last group, several token blocks, every ISA and 1-3 threads.
TEST(Packed, MatmulSwigluEqualsTheTwoMatmulsAndSwiglu) {
  std::mt19937 rng(31);
  const int64_t cols = 512, rows = 16 * 9 + 5;
  const std::pair<GgmlType, GgmlType> pairs[] = {{GgmlType::Q8_0, GgmlType::Q8_0},
                                                 {GgmlType::Q4_0, GgmlType::Q4_0},
                                                 {GgmlType::Q5_0, GgmlType::Q5_0},
                                                 {GgmlType::Q4_K, GgmlType::Q6_K},
                                                 {GgmlType::Q4_1, GgmlType::Q4_1}};
  for (auto [tg, tu] : pairs) {
    const Packed g = make_weight(tg, rows, cols, rng), u = make_weight(tu, rows, cols, rng);
    for (int64_t nt : {1, 7, 300}) {
      const auto x = random_floats(size_t(nt * cols), rng, 3.0f);
      for (Isa isa : supported_isas()) {
        force_isa(isa);
        for (int th : {1, 2, 3}) {
          set_threads(th);
          std::vector<float> yg(size_t(nt * rows)), yu(yg.size()), ref(yg.size()), got(yg.size(), std::nanf(""));
          matmul(g.view, x.data(), nt, yg.data(), nullptr);
          matmul(u.view, x.data(), nt, yu.data(), nullptr);
          swiglu(yg.data(), yu.data(), ref.data(), nt * rows);
          matmul_swiglu(g.view, u.view, x.data(), nt, got.data());
          ASSERT_EQ(0, std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)))
              << type_name(tg) << "/" << type_name(tu) << " nt " << nt << " " << isa_name(isa) << " " << th
              << " threads";
        }
      }
      reset_isa();
    }
  }
  set_threads(0);
  const Packed a = make_weight(GgmlType::Q8_0, 32, cols, rng), b = make_weight(GgmlType::Q8_0, 48, cols, rng);
  std::vector<float> x(static_cast<size_t>(cols)), y(48);
  EXPECT_THROW(matmul_swiglu(a.view, b.view, x.data(), 1, y.data()), Error);
}

// matmul's same_x: a matmul after another one on the same x gives what it gives alone, whatever
// the two weights' formats (same or other offset, K-quants, a type without a packed kernel,
// rows past the last group after a call that kept no rows), on every ISA.
TEST(Packed, SameXGivesTheResultOfAFreshQuantization) {
  std::mt19937 rng(23);
  const int64_t cols = 512;
  const std::vector<std::pair<GgmlType, int64_t>> seq = {
      {GgmlType::Q4_0, 64}, {GgmlType::Q4_0, 32}, {GgmlType::Q8_0, 48}, {GgmlType::Q5_0, 37},
      {GgmlType::Q4_K, 32}, {GgmlType::Q6_K, 21}, {GgmlType::Q4_1, 16}, {GgmlType::Q8_0, 16},
      {GgmlType::Q8_0, 35}};
  std::vector<Packed> w;
  for (const auto& [t, rows] : seq) w.push_back(make_weight(t, rows, cols, rng));
  for (Isa isa : supported_isas()) {
    force_isa(isa);
    for (int64_t nt : {1, 7, 40}) {
      const auto x = random_floats(size_t(nt * cols), rng), x2 = random_floats(x.size(), rng);
      for (size_t j = 0; j < seq.size(); ++j) {
        const size_t before = j == 0 ? seq.size() - 1 : j - 1;
        std::vector<float> ref(size_t(nt * seq[j].second)), got(ref.size(), -1.0f),
            other(size_t(nt * seq[before].second));
        matmul(w[j].view, x.data(), nt, ref.data(), nullptr);
        // Other activations in every scratch buffer, then the previous weight of the sequence
        // quantizes x in its format; this one reuses what fits.
        matmul(w[j].view, x2.data(), nt, got.data(), nullptr);
        matmul(w[before].view, x.data(), nt, other.data(), nullptr);
        matmul(w[j].view, x.data(), nt, got.data(), nullptr, true);
        EXPECT_EQ(got, ref) << isa_name(isa) << " " << type_name(seq[j].first) << " after "
                            << type_name(seq[before].first) << " nt " << nt;
      }
    }
  }
  reset_isa();
}

// same_x is a promise the kernels act on: with it, a second matmul reads the activations the
// first one quantized, even if x has changed since (which is why the caller must know).
TEST(Packed, SameXReusesTheQuantizedActivations) {
  std::mt19937 rng(24);
  const int64_t cols = 256, rows = 32, nt = 9;
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q4_1}) {
    const Packed w = make_weight(t, rows, cols, rng);
    auto x = random_floats(size_t(nt * cols), rng);
    std::vector<float> first(size_t(nt * rows)), reused(first.size()), fresh(first.size());
    matmul(w.view, x.data(), nt, first.data(), nullptr);
    for (float& v : x) v = -2.0f * v;
    matmul(w.view, x.data(), nt, reused.data(), nullptr, true);
    EXPECT_EQ(reused, first) << type_name(t);
    matmul(w.view, x.data(), nt, fresh.data(), nullptr);
    EXPECT_NE(fresh, first) << type_name(t);
  }
}

// MXFP4's E8M0 scales 2^(e - 128) lie beyond F16's range; the packed layout holds them as BF16,
// which must give every one of the 256 back exactly (the subnormal 2^-128 and 2^-127 included).
TEST(Packed, MxFp4ScalesSurviveThePackedLayoutExactly) {
  const int64_t rows = 16, cols = 32 * 16;  // 256 blocks: block b of row r has e = 16 r + b % 16
  std::vector<uint8_t> w(size_t(rows) * row_size(GgmlType::MXFP4, cols));
  const size_t rb = row_size(GgmlType::MXFP4, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < cols / 32; ++b) w[size_t(r) * rb + 17 * size_t(b)] = uint8_t(16 * r + b);
  const WeightView v{GgmlType::MXFP4, w.data(), rows, cols, rb};
  AlignedBuffer p = aligned_buffer(packed_bytes(GgmlType::MXFP4, rows, cols));
  pack_weight(v, p.get());
  for (int64_t b = 0; b < cols / 32; ++b)
    for (int r = 0; r < 16; ++r) {
      uint16_t h;
      std::memcpy(&h, p.get() + packed_scales_at(256, b) + 2 * r, 2);
      const uint32_t bits = uint32_t(h) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      const int e = 16 * r + int(b);
      EXPECT_EQ(f, std::ldexp(1.0f, e - 128)) << "e " << e;
    }
}

// NVFP4's UE4M3 scale codes as ggml reads them (ue4m3_to_fp32: the low 7 bits, 0x7F as zero, so
// 0xFF as 240; subnormal codes): every one of the 256 through the packed layout and each kernel.
// Token i is one at column 16 i alone, so its output is row r's sub-block i (code i + 16 r) alone:
// 127 x (its scale x the activation's d), as one float product.
TEST(Packed, NvFp4ScalesOfEveryCodeAsGgmlReadsThem) {
  const GgmlType t = GgmlType::NVFP4;
  const int64_t rows = 16, cols = 4096, nt = 256;
  const size_t rb = row_size(t, cols);
  std::vector<uint8_t> w(size_t(rows) * rb);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = 0; p < cols / 64; ++p) {
      auto& b = reinterpret_cast<quant::block_nvfp4*>(w.data() + size_t(r) * rb)[p];
      for (int s = 0; s < 4; ++s) b.d[s] = uint8_t(4 * p + s + 16 * r);
      std::memset(b.qs, 0x11, sizeof(b.qs));  // every value kvalues_fp4[1] = 1
    }
  const WeightView v{t, w.data(), rows, cols, rb};
  AlignedBuffer p = aligned_buffer(packed_bytes(t, rows, cols));
  pack_weight(v, p.get());
  std::vector<float> x(size_t(nt * cols), 0.0f);
  for (int64_t i = 0; i < nt; ++i) x[size_t(i * cols + 16 * i)] = 1.0f;
  const Acts a = make_acts(t, x, nt, cols);
  std::vector<PackedGemmFn> kernels = {&packed_gemm_scalar};
  for (Isa isa : supported_isas())
    if (isa != Isa::Scalar && packed_gemm(t, isa)) kernels.push_back(packed_gemm(t, isa));
  for (PackedGemmFn f : kernels) {
    std::vector<float> y(size_t(nt * rows), -1.0f);
    f(t, p.get(), 1, cols / 32, a.view(), nt, y.data(), rows);
    for (int64_t i = 0; i < nt; ++i) {
      uint16_t hx;
      std::memcpy(&hx, a.q.data() + size_t(i) * a.stride + 34 * size_t(i / 2), 2);
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t code = uint8_t(i + 16 * r);
        ASSERT_EQ(y[size_t(i * rows + r)], 127.0f * (quant::ue4m3_to_fp32(code) * fp16_to_fp32(hx)))
            << "code " << int(code) << " kernel " << (f == kernels[0] ? 0 : 1);
      }
    }
  }
  ASSERT_GT(kernels.size(), 1u) << "no SIMD kernel ran";
}

// IQ3_S and IQ3_XXS are held in IQ4_XS's layout as 4-bit codes (repack.h): every byte of their
// grids, with either sign, must be one of the type's 16 code values (IQ3_XXS's halved, exactly),
// each within +-31 (AVX2 multiplies them + 32 as unsigned bytes of at most 63).
TEST(Packed, Iq3GridValuesAreCodesOfTheIq4Layout) {
  auto covered = [](GgmlType t, int v) {
    const PackedIq4Values c = packed_iq4_values(t);
    const int div = packed_iq4_grid_divisor(t);
    int n = 0;
    for (int q = 0; q < 16; ++q) n += c.v[q] * div == v && c.v[q] >= -31 && c.v[q] <= 31;
    return n == 1;
  };
  for (uint32_t g : quant::kIq3sGrid.v)
    for (int k = 0; k < 4; ++k) {
      const int v = int((g >> (8 * k)) & 0xFF);
      ASSERT_TRUE(covered(GgmlType::IQ3_S, v) && covered(GgmlType::IQ3_S, -v)) << "IQ3_S grid byte " << v;
    }
  for (uint32_t g : quant::kIq3xxsGrid.v)
    for (int k = 0; k < 4; ++k) {
      const int v = int((g >> (8 * k)) & 0xFF);
      ASSERT_TRUE(covered(GgmlType::IQ3_XXS, v) && covered(GgmlType::IQ3_XXS, -v)) << "IQ3_XXS grid byte " << v;
    }
}

TEST(Packed, OnlyWholeGroupsOfSupportedTypes) {
  EXPECT_TRUE(packable(GgmlType::Q8_0, 16, 32));
  EXPECT_TRUE(packable(GgmlType::Q4_0, 4864, 896));
  EXPECT_TRUE(packable(GgmlType::IQ4_NL, 32, 64));
  EXPECT_TRUE(packable(GgmlType::MXFP4, 16, 2880));
  EXPECT_TRUE(packable(GgmlType::NVFP4, 16, 64));
  EXPECT_TRUE(packable(GgmlType::Q1_0, 16, 128));
  EXPECT_TRUE(packable(GgmlType::Q2_0, 16, 64));
  EXPECT_FALSE(packable(GgmlType::TQ2_0, 16, 256));
  EXPECT_TRUE(packable(GgmlType::Q8_0, 17, 32));  // one group packed, one row from the GGUF layout
  EXPECT_FALSE(packable(GgmlType::Q8_0, 15, 32));
  EXPECT_FALSE(packable(GgmlType::Q5_0, 16, 48));
  EXPECT_TRUE(packable(GgmlType::Q4_K, 16, 256));
  EXPECT_TRUE(packable(GgmlType::Q6_K, 4864, 1024));
  EXPECT_FALSE(packable(GgmlType::Q5_K, 16, 224));  // not whole super-blocks
  EXPECT_TRUE(packable(GgmlType::Q3_K, 16, 256));
  EXPECT_TRUE(packable(GgmlType::Q2_K, 32, 512));
  EXPECT_TRUE(packable(GgmlType::IQ4_XS, 16, 256));
  EXPECT_FALSE(packable(GgmlType::IQ4_XS, 16, 224));
  EXPECT_TRUE(packable(GgmlType::IQ3_S, 16, 256));
  EXPECT_TRUE(packable(GgmlType::IQ3_XXS, 32, 1024));
  EXPECT_FALSE(packable(GgmlType::IQ3_XXS, 15, 256));
  EXPECT_FALSE(packable(GgmlType::IQ2_S, 16, 256));
  EXPECT_TRUE(packable(GgmlType::Q4_1, 16, 256));
  EXPECT_TRUE(packable(GgmlType::Q5_1, 16, 32));
  EXPECT_FALSE(packable(GgmlType::BF16, 16, 256));
  EXPECT_FALSE(packable(GgmlType::F32, 16, 32));
  std::vector<uint8_t> w(row_size(GgmlType::Q8_0, 32) * 15);
  WeightView v{GgmlType::Q8_0, w.data(), 15, 32, row_size(GgmlType::Q8_0, 32)};
  std::vector<uint8_t> out(4096);
  EXPECT_THROW(pack_weight(v, out.data()), Error);
}

}  // namespace
}  // namespace minfer::cpu
