// Activation quantizers against hand-computed blocks: the rounding mode (half to even, which
// ggml's x86 path uses, not roundf's half away from zero), the 127/amax multiplier, Q8_1's
// sum term and Q8_K's signed scale.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backend/cpu/act_quant.h"
#include "common/fp16.h"

namespace minfer::cpu {
namespace {

TEST(ActQuant, Q8_0RoundsHalfToEvenWithScaleFromAmax) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // amax 127: d = 1, multiplier exactly 1
  x[1] = 2.5f;    // -> 2 (half to even), roundf would give 3
  x[2] = 3.5f;    // -> 4
  x[3] = -2.5f;   // -> -2
  x[4] = -126.6f; // -> -127
  x[5] = 0.49f;   // -> 0
  quant::block_q8_0 b;
  quantize_act_q8_0(x.data(), &b, 32);
  EXPECT_EQ(fp16_to_fp32(b.d), 1.0f);
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 2);
  EXPECT_EQ(b.qs[2], 4);
  EXPECT_EQ(b.qs[3], -2);
  EXPECT_EQ(b.qs[4], -127);
  EXPECT_EQ(b.qs[5], 0);
  EXPECT_EQ(b.qs[31], 0);
}

TEST(ActQuant, Q8_0StoresTheScaleAsF16) {
  // amax = 1.0: d = 1/127 is stored rounded to F16; the quants use 127/amax = 127.
  std::vector<float> x(32, 0.0f);
  x[0] = -1.0f;
  x[1] = 0.5f;  // 63.5 -> 64 (half to even)
  quant::block_q8_0 b;
  quantize_act_q8_0(x.data(), &b, 32);
  EXPECT_EQ(b.d, fp32_to_fp16(1.0f / 127.0f));
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 64);
}

TEST(ActQuant, Q8_0AllZeroBlock) {
  std::vector<float> x(64, 0.0f);
  x[40] = 1.0f;
  quant::block_q8_0 b[2];
  quantize_act_q8_0(x.data(), b, 64);
  EXPECT_EQ(fp16_to_fp32(b[0].d), 0.0f);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(b[0].qs[i], 0);
  EXPECT_EQ(b[1].qs[8], 127);
}

TEST(ActQuant, Q8_1StoresScaledSum) {
  std::vector<float> x(32, 1.0f);
  x[0] = 2.0f;  // amax 2: q = 127 for x[0], 63.5 -> 64 for the rest
  quant::block_q8_1 b;
  quantize_act_q8_1(x.data(), &b, 32);
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 64);
  const float d = 2.0f / 127.0f;
  EXPECT_EQ(b.d, fp32_to_fp16(d));
  EXPECT_EQ(b.s, fp32_to_fp16(d * float(127 + 31 * 64)));
}

TEST(ActQuant, Q8_KScaleTakesTheSignOfTheLargestValue) {
  std::vector<float> x(256, 0.0f);
  x[0] = -254.0f;  // iscale = -127 / -254 = 0.5
  x[1] = 5.0f;     // 2.5 -> 2
  x[2] = 7.0f;     // 3.5 -> 4
  x[17] = -3.0f;   // -1.5 -> -2
  quant::block_q8_K b;
  quantize_act_q8_K(x.data(), &b, 256);
  EXPECT_EQ(b.d, 2.0f);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 2);
  EXPECT_EQ(b.qs[2], 4);
  EXPECT_EQ(b.qs[17], -2);
  EXPECT_EQ(b.bsums[0], -127 + 2 + 4);
  EXPECT_EQ(b.bsums[1], -2);
  EXPECT_EQ(b.bsums[2], 0);

  x[0] = 254.0f;  // positive max: iscale = -0.5, every quant flips sign, d = -2
  quantize_act_q8_K(x.data(), &b, 256);
  EXPECT_EQ(b.d, -2.0f);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], -2);
  EXPECT_EQ(b.qs[2], -4);
  EXPECT_EQ(b.qs[17], 2);
}

TEST(ActQuant, FloatConversions) {
  const float x[3] = {1.0f / 3.0f, -65504.0f, 1e-8f};
  uint16_t h[3];
  quantize_act(GgmlType::F16, x, h, 3);
  EXPECT_EQ(h[0], 0x3555);
  EXPECT_EQ(h[1], 0xFBFF);
  EXPECT_EQ(h[2], 0x0000);
  quantize_act(GgmlType::BF16, x, h, 3);
  EXPECT_EQ(h[0], 0x3EAB);
  EXPECT_EQ(h[1], 0xC780);
}

}  // namespace
}  // namespace minfer::cpu

#include <random>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/packed_gemm.h"
#include "kernels/random_weights.h"

namespace minfer::cpu {
namespace {

// The SIMD quantizers must produce the scalar ones' bytes exactly (same float operations).
TEST(ActQuant, EveryIsaPathGivesTheScalarBytes) {
  std::mt19937 rng(9);
  auto x = test::random_floats(32 * 40, rng, 3.0f);
  for (int i = 0; i < 32; ++i) x[32 * 5 + i] = 0.0f;            // an all-zero block
  for (int i = 0; i < 32; ++i) x[32 * 6 + i] = float(i) - 15.5f;  // exact halves
  const int64_t n = int64_t(x.size());
  std::vector<quant::block_q8_0> r0(size_t(n / 32)), g0(r0.size());
  std::vector<quant::block_q8_1> r1(size_t(n / 32)), g1(r1.size());
  // Q8_K: 5 blocks; block 1 all zero, block 2 with +-amax ties (the first one sets the sign),
  // block 3 with exact halves after scaling, block 4 with its largest value positive.
  auto xk = test::random_floats(256 * 5, rng, 2.0f);
  for (int i = 0; i < 256; ++i) xk[256 + i] = 0.0f;
  xk[512 + 17] = -9.0f, xk[512 + 21] = 9.0f, xk[512 + 200] = 9.0f;  // ties within 8 lanes
  for (int i = 0; i < 256; ++i) xk[768 + i] = float(i % 64) - 31.5f;
  xk[768 + 3] = -127.0f;
  xk[1024 + 50] = 11.0f;
  const int64_t nk = int64_t(xk.size());
  std::vector<quant::block_q8_K> rk(size_t(nk / 256)), gk(rk.size());
  force_isa(Isa::Scalar);
  quantize_act_q8_0(x.data(), r0.data(), n);
  quantize_act_q8_1(x.data(), r1.data(), n);
  quantize_act_q8_K(xk.data(), rk.data(), nk);
  EXPECT_GT(rk[2].d, 0.0f);  // d = -max / 127 with the first of the ties, -9
  for (Isa isa : supported_isas()) {
    force_isa(isa);
    quantize_act_q8_0(x.data(), g0.data(), n);
    quantize_act_q8_1(x.data(), g1.data(), n);
    quantize_act_q8_K(xk.data(), gk.data(), nk);
    EXPECT_EQ(0, std::memcmp(r0.data(), g0.data(), r0.size() * sizeof(r0[0]))) << isa_name(isa);
    EXPECT_EQ(0, std::memcmp(r1.data(), g1.data(), r1.size() * sizeof(r1[0]))) << isa_name(isa);
    EXPECT_EQ(0, std::memcmp(rk.data(), gk.data(), rk.size() * sizeof(rk[0]))) << isa_name(isa);
  }
  reset_isa();
}

// The packed K-quant kernels' activations: the Q8_K row and its Q8KSums in one pass must be the
// scalar row and q8k_sums of it, on every ISA (the sums' fields are each read by some kernel).
TEST(ActQuant, Q8KRowWithSumsIsTheRowAndItsSums) {
  std::mt19937 rng(11);
  auto x = test::random_floats(256 * 4, rng, 4.0f);
  for (int i = 0; i < 256; ++i) x[256 + i] = 0.0f;  // an all-zero super-block
  x[512 + 100] = 40.0f;                             // a positive largest value
  for (int i = 0; i < 256; ++i) x[768 + i] = float((i * 37) % 255) - 127.0f;  // bsums far from 0
  constexpr int64_t kSb = 4;
  std::vector<quant::block_q8_K> want_row(kSb), row(kSb);
  std::vector<Q8KSums> want(kSb), got(kSb);
  force_isa(Isa::Scalar);
  quantize_act_q8_K(x.data(), want_row.data(), 256 * kSb);
  q8k_sums(reinterpret_cast<const uint8_t*>(want_row.data()), kSb, want.data());
  EXPECT_EQ(want[3].bsum[0], want_row[3].bsums[0]);
  EXPECT_NE(want[3].pair16[0], 0);
  for (Isa isa : supported_isas()) {
    force_isa(isa);
    std::memset(got.data(), 0x5A, got.size() * sizeof(got[0]));  // every field must be written
    packed_act_quantize_k(x.data(), kSb, reinterpret_cast<uint8_t*>(row.data()), got.data());
    EXPECT_EQ(0, std::memcmp(want_row.data(), row.data(), row.size() * sizeof(row[0]))) << isa_name(isa);
    for (int64_t b = 0; b < kSb; ++b)
      EXPECT_EQ(0, std::memcmp(&want[size_t(b)], &got[size_t(b)], sizeof(Q8KSums))) << isa_name(isa) << " block " << b;
  }
  reset_isa();
}

}  // namespace
}  // namespace minfer::cpu
