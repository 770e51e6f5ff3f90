// matmul and get_rows against an independent reference: weights dequantized by the quant
// module, activations rounded to the vec_dot type, dot products in double. The kernels must
// agree up to float summation order: the tolerance is a few ulps per accumulated block of the
// sum of |terms|, far below what one wrong quant (or a wrong scale) would change.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "backend/cpu/act_quant.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/repack.h"
#include "common/error.h"
#include "kernels/random_weights.h"
#include "quant/quant.h"

namespace minfer::cpu {
namespace {

using test::matmul_types;
using test::random_weights;

// The activation format ggml's CPU backend uses for each weight type (ggml-cpu type traits).
GgmlType expected_vec_dot_type(GgmlType w) {
  switch (w) {
    case GgmlType::F32: return GgmlType::F32;
    case GgmlType::F16: return GgmlType::F16;
    case GgmlType::BF16: return GgmlType::BF16;
    case GgmlType::Q4_1:
    case GgmlType::Q5_1: return GgmlType::Q8_1;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_XS:
    case GgmlType::IQ2_XXS:
    case GgmlType::IQ2_XS:
    case GgmlType::IQ2_S:
    case GgmlType::IQ3_XXS:
    case GgmlType::IQ3_S:
    case GgmlType::IQ1_S:
    case GgmlType::IQ1_M:
    case GgmlType::TQ1_0:
    case GgmlType::TQ2_0: return GgmlType::Q8_K;
    default: return GgmlType::Q8_0;
  }
}

struct RoundedAct {
  std::vector<float> x;       // the activation values the kernel effectively multiplies
  std::vector<float> s_corr;  // Q8_1 only: per block, s - d*sum(q) (s is stored rounded)
};

RoundedAct round_act(GgmlType vdt, const float* x, int64_t n) {
  RoundedAct r;
  r.x.resize(size_t(n));
  std::vector<uint8_t> buf(row_size(vdt, n));
  quantize_act(vdt, x, buf.data(), n);
  switch (vdt) {
    case GgmlType::F32: r.x.assign(x, x + n); break;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) r.x[i] = fp16_to_fp32(((uint16_t*)buf.data())[i]);
      break;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) r.x[i] = bf16_to_fp32(((uint16_t*)buf.data())[i]);
      break;
    case GgmlType::Q8_0: {
      auto* b = (quant::block_q8_0*)buf.data();
      for (int64_t i = 0; i < n; ++i) r.x[i] = fp16_to_fp32(b[i / 32].d) * b[i / 32].qs[i % 32];
      break;
    }
    case GgmlType::Q8_1: {
      auto* b = (quant::block_q8_1*)buf.data();
      for (int64_t j = 0; j < n / 32; ++j) {
        const float d = fp16_to_fp32(b[j].d);
        double sum = 0;
        for (int i = 0; i < 32; ++i) {
          r.x[j * 32 + i] = d * b[j].qs[i];
          sum += double(d) * b[j].qs[i];
        }
        r.s_corr.push_back(float(fp16_to_fp32(b[j].s) - sum));
      }
      break;
    }
    case GgmlType::Q8_K: {
      auto* b = (quant::block_q8_K*)buf.data();
      for (int64_t i = 0; i < n; ++i) r.x[i] = b[i / 256].d * b[i / 256].qs[i % 256];
      break;
    }
    default: ADD_FAILURE() << "unexpected vec_dot type";
  }
  return r;
}

// The "min" of a _1 block (second F16 field of q4_1 and q5_1).
float block_min(GgmlType t, const uint8_t* row, int64_t b) {
  const size_t ts = type_traits(t).type_size;
  return fp16_to_fp32(*(const uint16_t*)(row + size_t(b) * ts + 2));
}

struct Case {
  int64_t rows, cols, nt;
};

void check_matmul(GgmlType t, const Case& c, uint32_t seed) {
  SCOPED_TRACE(testing::Message() << type_name(t) << " rows=" << c.rows << " cols=" << c.cols
                                  << " nt=" << c.nt << " isa=" << isa_name(active_isa()));
  std::mt19937 rng(seed);
  const auto wbuf = random_weights(t, c.rows, c.cols, rng);
  auto x = test::random_floats(size_t(c.nt * c.cols), rng);
  x[3] = 9.5f;  // an outlier sets a block's scale
  const auto bias = test::random_floats(size_t(c.rows), rng);
  WeightView w{t, wbuf.data(), c.rows, c.cols, row_size(t, c.cols)};

  ASSERT_EQ(vec_dot_type(t), expected_vec_dot_type(t));
  const GgmlType vdt = expected_vec_dot_type(t);
  std::vector<float> wd(size_t(c.rows * c.cols));
  for (int64_t r = 0; r < c.rows; ++r)
    quant::dequantize_row(t, wbuf.data() + r * w.row_bytes, wd.data() + r * c.cols, c.cols);

  std::vector<float> y(size_t(c.nt * c.rows)), yb(y.size());
  matmul(w, x.data(), c.nt, y.data(), nullptr);
  matmul(w, x.data(), c.nt, yb.data(), bias.data());

  const int64_t nblk = c.cols / 32 + 1;
  for (int64_t tt = 0; tt < c.nt; ++tt) {
    const RoundedAct a = round_act(vdt, x.data() + tt * c.cols, c.cols);
    for (int64_t r = 0; r < c.rows; ++r) {
      const float* wr = wd.data() + r * c.cols;
      double ref = 0, mag = 0;
      for (int64_t b0 = 0; b0 < c.cols; b0 += 32) {
        // Block scales, mins and K-quant min terms can each exceed |w|: bound them by the
        // block's largest |w| so the tolerance covers cancellation between them.
        double bmax = 0;
        const int64_t b1 = std::min(b0 + 32, c.cols);  // (float rows need not be whole blocks)
        for (int64_t i = b0; i < b1; ++i) bmax = std::max(bmax, std::fabs(double(wr[i])));
        for (int64_t i = b0; i < b1; ++i) {
          ref += double(wr[i]) * a.x[i];
          mag += std::fabs(double(a.x[i])) * (std::fabs(double(wr[i])) + bmax);
        }
      }
      for (size_t b = 0; b < a.s_corr.size(); ++b)
        ref += double(block_min(t, wbuf.data() + r * w.row_bytes, int64_t(b))) * a.s_corr[b];
      const double tol = 3e-7 * double(nblk + 8) * mag + 1e-30;
      const float got = y[tt * c.rows + r];
      ASSERT_NEAR(got, ref, tol) << "row " << r << " token " << tt;
      ASSERT_NEAR(yb[tt * c.rows + r], got + bias[r], 1e-6 * (std::fabs(got) + std::fabs(bias[r])))
          << "bias, row " << r << " token " << tt;
    }
  }
}

std::vector<Isa> isas() { return supported_isas(); }

class MatmulTest : public testing::TestWithParam<GgmlType> {
 protected:
  void TearDown() override { reset_isa(); set_threads(0); }
};

TEST_P(MatmulTest, MatchesDequantizedReferenceOnEveryIsaPath) {
  const GgmlType t = GetParam();
  const int64_t bs = type_traits(t).block_size;
  std::vector<Case> cases =
      bs == 256  ? std::vector<Case>{{1, 256, 1}, {7, 256, 3}, {33, 512, 17}, {67, 1024, 1}, {5, 256, 70}}
      : bs > 32  ? std::vector<Case>{{1, 128, 1}, {7, 384, 3}, {33, 256, 17}, {67, 896, 1}, {13, 2048, 2}, {5, 128, 70}}
                 : std::vector<Case>{{1, 32, 1},   {7, 96, 3},   {33, 256, 17},
                                     {67, 896, 1}, {13, 2048, 2}, {5, 64, 70}};
  if (type_traits(t).block_size == 1) {  // rows ending in a partial vector, prompts and decode
    cases.push_back({19, 45, 13});
    cases.push_back({19, 45, 3});
    cases.push_back({6, 173, 1});
  }
  for (Isa isa : isas()) {
    force_isa(isa);
    uint32_t seed = 1;
    for (const Case& c : cases) check_matmul(t, c, seed++);
  }
}

TEST_P(MatmulTest, SameResultWithAnyThreadCount) {
  const GgmlType t = GetParam();
  std::mt19937 rng(7);
  const int64_t rows = 45, cols = 512, nt = 5;
  const auto wbuf = random_weights(t, rows, cols, rng);
  const auto x = test::random_floats(size_t(nt * cols), rng);
  WeightView w{t, wbuf.data(), rows, cols, row_size(t, cols)};
  std::vector<float> y1(size_t(rows * nt)), y2(y1.size());
  set_threads(1);
  matmul(w, x.data(), nt, y1.data(), nullptr);
  set_threads(2);
  matmul(w, x.data(), nt, y2.data(), nullptr);
  EXPECT_EQ(y1, y2);
}

TEST_P(MatmulTest, GetRowsDequantizesTheRequestedRows) {
  const GgmlType t = GetParam();
  std::mt19937 rng(3);
  const int64_t rows = 9, cols = 512;
  const auto wbuf = random_weights(t, rows, cols, rng);
  WeightView w{t, wbuf.data(), rows, cols, row_size(t, cols)};
  const std::vector<int32_t> ids = {8, 0, 3, 3};
  std::vector<float> out(ids.size() * cols), ref(cols);
  get_rows(w, ids.data(), int64_t(ids.size()), out.data());
  for (size_t i = 0; i < ids.size(); ++i) {
    quant::dequantize_row(t, wbuf.data() + ids[i] * w.row_bytes, ref.data(), cols);
    for (int64_t j = 0; j < cols; ++j) ASSERT_EQ(out[i * cols + j], ref[j]) << i << "," << j;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTest, testing::ValuesIn(matmul_types()),
                         [](const auto& info) { return std::string(type_name(info.param)); });

TEST(Matmul, RejectsTypesWithoutKernel) {
  std::vector<uint8_t> buf(256);
  WeightView w{GgmlType::I8, buf.data(), 1, 256, 256};
  std::vector<float> x(256), y(1);
  EXPECT_THROW(matmul(w, x.data(), 1, y.data(), nullptr), Error);
}

}  // namespace
}  // namespace minfer::cpu

namespace minfer::cpu {
namespace {

// The K-quant, 256-block i-quant and ternary SIMD tiles sum integers per super-block and then take the
// scalar kernel's float steps in the same order: their results must be bit-identical, not
// merely close.
TEST(MatmulIsa, KQuantFastPathsAreBitIdenticalToScalar) {
  // 1 token: the decode GEMV; 2: the 256-bit tiles; 6: VNNI tiles; 35: two 16-token AMX tiles
  // (on AMX) and a tail; 130: matmul's two token blocks (kTokenBlock 128) of the GGUF-layout tiles.
  for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                     GgmlType::IQ4_XS, GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,
                     GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::TQ1_0,
                     GgmlType::TQ2_0})
   for (int64_t nt : {1, 2, 6, 35, 130}) {
    std::mt19937 rng(21);
    const int64_t rows = 19, cols = 768;
    const auto wbuf = random_weights(t, rows, cols, rng);
    const auto x = test::random_floats(size_t(nt * cols), rng);
    WeightView w{t, wbuf.data(), rows, cols, row_size(t, cols)};
    std::vector<float> ref(size_t(rows * nt)), got(ref.size());
    force_isa(Isa::Scalar);
    matmul(w, x.data(), nt, ref.data(), nullptr);
    for (Isa isa : supported_isas()) {
      force_isa(isa);
      matmul(w, x.data(), nt, got.data(), nullptr);
      EXPECT_EQ(got, ref) << type_name(t) << " nt " << nt << " on " << isa_name(isa);
    }
    reset_isa();
  }
}

// The integer sums at their largest: every quant at its maximum (Q2_K 3, Q3_K 3 - 4 + 4, Q4_K 15,
// Q5_K 31, Q6_K 63; 4-bit and 6-bit scales and mins at their maximum) against activations of one
// sign, which Q8_K rounds to 127 in magnitude. The kernels' narrow intermediates (the AVX-512 Q4_K tile multiplies each
// 16-column sum, up to 16 x 15 x 127, as an int16) must still give the scalar results, in the
// GGUF-layout tiles and in the packed ones. Q6_K also with its signed 8-bit scales at both ends
// (-128 and 127: the AMX path splits each into three digits).
TEST(MatmulIsa, KQuantLargestSumsAreBitIdenticalToScalar) {
  for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K})
    for (int variant = 0; variant < 4; ++variant)  // sign x (Q6_K only) extreme scales
      for (int64_t nt : {1, 8, 35}) {
        const float sign = variant % 2 ? -1.0f : 1.0f;
        const bool extreme_scales = variant >= 2;
        if (extreme_scales && t != GgmlType::Q6_K) continue;
        const int64_t rows = 35, cols = 512;
        const size_t rs = row_size(t, cols), bs = type_traits(t).type_size;
        std::vector<uint8_t> wbuf(rs * size_t(rows), 0xFF);
        // d (and dmin) first in Q4_K/Q5_K, last in Q3_K/Q6_K (d) and Q2_K (d, dmin).
        const bool d_last = t == GgmlType::Q3_K || t == GgmlType::Q6_K;
        const bool has_min = !d_last;
        const size_t d_at = d_last ? bs - 2 : t == GgmlType::Q2_K ? bs - 4 : 0;
        for (size_t b = 0; b < wbuf.size() / bs; ++b) {
          wbuf[b * bs + d_at] = 0x00, wbuf[b * bs + d_at + 1] = 0x3C;  // d = 1
          if (has_min) wbuf[b * bs + d_at + 2] = 0x00, wbuf[b * bs + d_at + 3] = 0x38;  // dmin = 0.5
          if (extreme_scales)  // Q6_K: ql[128], qh[64], scales[16], d
            for (int j = 0; j < 16; ++j) wbuf[b * bs + 192 + size_t(j)] = j % 2 ? 0x7F : 0x80;
        }
        std::vector<float> x(size_t(nt * cols));
        for (size_t i = 0; i < x.size(); ++i) x[i] = sign * (0.75f + 0.25f * float(i % 7 == 0));
        WeightView w{t, wbuf.data(), rows, cols, rs};
        AlignedBuffer packed;  // Q3_K has no packed layout: GGUF-layout tiles only
        std::vector<const uint8_t*> layouts = {nullptr};
        if (packable(t, rows, cols)) {
          packed = aligned_buffer(packed_bytes(t, rows, cols));
          pack_weight(w, packed.get());
          layouts.push_back(packed.get());
        }
        std::vector<float> ref(size_t(rows * nt)), got(ref.size());
        force_isa(Isa::Scalar);
        matmul(w, x.data(), nt, ref.data(), nullptr);
        for (Isa isa : supported_isas()) {
          force_isa(isa);
          for (const uint8_t* p : layouts) {
            WeightView wp = w;
            wp.packed = p;
            std::fill(got.begin(), got.end(), 0.0f);
            matmul(wp, x.data(), nt, got.data(), nullptr);
            EXPECT_EQ(got, ref) << type_name(t) << " sign " << sign << " nt " << nt << " on "
                                << isa_name(isa) << (p ? " (packed)" : "")
                                << (extreme_scales ? " (scales -128, 127)" : "");
          }
        }
        reset_isa();
      }
}

// The i-quants at their largest integer sums: every byte 0x00 or 0xFF but d (= 1, at offset 0),
// against activations of one sign (Q8_K: 127 in magnitude). IQ4_XS: every value -127 with scale
// -32, or 113 with scale 31 (the 256-bit tiles' sign-form pair sums reach 2 x 127 x 127, the
// AVX-512 kernels' offset-form lanes 8 x 241 x 127 before their scale); the lattice types: their
// last grid entries, all signs set, the largest scales.
TEST(MatmulIsa, IQuantLargestSumsAreBitIdenticalToScalar) {
  for (GgmlType t : {GgmlType::IQ4_XS, GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS,
                     GgmlType::IQ3_S, GgmlType::IQ1_S})
  for (uint8_t fill : {uint8_t(0x00), uint8_t(0xFF)})
    for (float sign : {1.0f, -1.0f})
      for (int64_t nt : {1, 2, 8, 35}) {
        const int64_t rows = 35, cols = 512;
        const size_t rs = row_size(t, cols);
        std::vector<uint8_t> wbuf(rs * size_t(rows), fill);
        const size_t bs = type_traits(t).type_size;
        for (size_t b = 0; b < wbuf.size() / bs; ++b) wbuf[b * bs] = 0x00, wbuf[b * bs + 1] = 0x3C;  // d = 1
        std::vector<float> x(size_t(nt * cols));
        for (size_t i = 0; i < x.size(); ++i) x[i] = sign * (0.75f + 0.25f * float(i % 7 == 0));
        WeightView w{t, wbuf.data(), rows, cols, rs};
        std::vector<float> ref(size_t(rows * nt)), got(ref.size());
        force_isa(Isa::Scalar);
        matmul(w, x.data(), nt, ref.data(), nullptr);
        for (Isa isa : supported_isas()) {
          force_isa(isa);
          std::fill(got.begin(), got.end(), 0.0f);
          matmul(w, x.data(), nt, got.data(), nullptr);
          EXPECT_EQ(got, ref) << type_name(t) << " fill " << int(fill) << " sign " << sign << " nt " << nt << " on " << isa_name(isa);
        }
        reset_isa();
      }
}

// Decode (one token) has its own kernels; they must compute each row exactly as the
// multi-token tiles do, so a token's logits do not depend on whether it was decoded alone or
// in a batch. Row counts cover the 16/8/pair/odd groupings of the one-token path.
TEST(MatmulIsa, OneTokenPathEqualsBatchedTilesExactly) {
  for (GgmlType t : matmul_types()) {
    for (int64_t rows : {1, 2, 3, 15, 16, 17, 25, 40}) {
      std::mt19937 rng(uint32_t(31 + rows));
      const int64_t bs = type_traits(t).block_size;
      const int64_t cols = bs == 256 ? 512 : bs == 1 ? 200 : bs > 32 ? 3 * bs : 96;  // (floats: whole vectors and a part)
      const auto wbuf = random_weights(t, rows, cols, rng);
      const auto x1 = test::random_floats(size_t(cols), rng);
      std::vector<float> x2(x1);
      x2.insert(x2.end(), x1.begin(), x1.end());  // the same token twice
      WeightView w{t, wbuf.data(), rows, cols, row_size(t, cols)};
      for (Isa isa : isas()) {
        force_isa(isa);
        std::vector<float> y1(static_cast<size_t>(rows)), y2(static_cast<size_t>(2 * rows));
        matmul(w, x1.data(), 1, y1.data(), nullptr);
        matmul(w, x2.data(), 2, y2.data(), nullptr);
        for (int64_t r = 0; r < rows; ++r)
          ASSERT_EQ(y1[r], y2[r]) << type_name(t) << " rows " << rows << " row " << r << " on "
                                  << isa_name(isa);
      }
      reset_isa();
    }
  }
}

TEST(CpuFeatures, EnvironmentCapsThePath) {
  setenv("MINFER_ISA", "scalar", 1);
  reset_isa();
  EXPECT_EQ(active_isa(), Isa::Scalar);
  setenv("MINFER_ISA", "amx", 1);  // capped at what the CPU has
  reset_isa();
  EXPECT_EQ(active_isa(), detected_isa());
  setenv("MINFER_ISA", "avx512", 1);
  reset_isa();
  EXPECT_EQ(active_isa(), std::min(detected_isa(), Isa::Avx512));
  // AVX-VNNI is not implied by AVX-512 (Ice Lake, Zen 4): capped to the best level below.
  setenv("MINFER_ISA", "avxvnni", 1);
  reset_isa();
  EXPECT_EQ(active_isa(), isa_supported(Isa::AvxVnni) ? Isa::AvxVnni
                          : isa_supported(Isa::Avx2)  ? Isa::Avx2
                                                      : Isa::Scalar);
  setenv("MINFER_ISA", "bogus", 1);
  reset_isa();
  EXPECT_EQ(active_isa(), detected_isa());
  unsetenv("MINFER_ISA");
  reset_isa();
  EXPECT_EQ(active_isa(), detected_isa());
}

TEST(CpuFeatures, ForcingAnUnsupportedPathFails) {
  const std::vector<Isa> have = supported_isas();
  EXPECT_EQ(have.front(), Isa::Scalar);
  EXPECT_EQ(have.back(), detected_isa());
  if (have.size() == size_t(kIsaCount)) GTEST_SKIP() << "every path is supported here";
  for (int i = 0; i < kIsaCount; ++i) {
    if (isa_supported(Isa(i))) continue;
    EXPECT_THROW(force_isa(Isa(i)), Error) << isa_name(Isa(i));
  }
  reset_isa();
}

}  // namespace
}  // namespace minfer::cpu
