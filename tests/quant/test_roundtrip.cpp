// Round trips on random and adversarial data: error bounds per type (documented in
// docs/QUANT.md), no NaN/Inf ever produced, zeros stay zeros, bad input is an Error, and the
// row/matrix entry points agree.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/error.h"
#include "quant/quant.h"

using namespace minfer;
using namespace minfer::quant;

namespace {

struct Bound {
  GgmlType type;
  double max_rel_rmse;  // RMSE of the round trip / RMS of the data, N(0,1) input
};

// Measured on 64 rows x 4096 N(0,1) values (seed 42) and rounded up by ~15%; see QUANT.md.
const Bound kBounds[] = {
    {GgmlType::F32, 0.0},     {GgmlType::F16, 0.00024},  {GgmlType::BF16, 0.0019},
    {GgmlType::Q8_0, 0.0062}, {GgmlType::Q8_1, 0.0062},  {GgmlType::Q8_K, 0.0081},
    {GgmlType::Q6_K, 0.0205}, {GgmlType::Q5_1, 0.044},   {GgmlType::Q5_0, 0.049},
    {GgmlType::Q5_K, 0.042},  {GgmlType::Q4_1, 0.090},   {GgmlType::Q4_0, 0.099},
    {GgmlType::Q4_K, 0.082},  {GgmlType::IQ4_NL, 0.088}, {GgmlType::Q3_K, 0.174},
    {GgmlType::Q2_K, 0.342},  {GgmlType::IQ4_XS, 0.088},
};

std::vector<float> normal(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<float> round_trip(GgmlType t, const std::vector<float>& x, int64_t n_per_row,
                              const float* imatrix = nullptr) {
  const int64_t nrows = int64_t(x.size()) / n_per_row;
  std::vector<uint8_t> q(row_size(t, n_per_row) * size_t(nrows));
  quantize_rows(t, x.data(), q.data(), nrows, n_per_row, imatrix);
  std::vector<float> y(x.size());
  const size_t rs = row_size(t, n_per_row);
  for (int64_t r = 0; r < nrows; ++r)
    dequantize_row(t, q.data() + size_t(r) * rs, y.data() + r * n_per_row, n_per_row);
  return y;
}

double rel_rmse(const std::vector<float>& x, const std::vector<float>& y) {
  double se = 0, ss = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    se += double(x[i] - y[i]) * double(x[i] - y[i]);
    ss += double(x[i]) * double(x[i]);
  }
  return std::sqrt(se / ss);
}

bool all_finite(const std::vector<float>& y) {
  for (float v : y)
    if (!std::isfinite(v)) return false;
  return true;
}

int64_t block_of(GgmlType t) { return type_traits(t).block_size; }

}  // namespace

class QuantRoundTrip : public ::testing::TestWithParam<Bound> {};

TEST_P(QuantRoundTrip, NormalDataWithinBound) {
  const Bound b = GetParam();
  const auto x = normal(64 * 4096, 42);
  const auto y = round_trip(b.type, x, 4096);
  const double e = rel_rmse(x, y);
  RecordProperty("rel_rmse", std::to_string(e));
  EXPECT_LE(e, b.max_rel_rmse) << type_name(b.type);
  EXPECT_TRUE(all_finite(y));
}

TEST_P(QuantRoundTrip, ScaleInvariantUpToHalfPrecision) {
  // Multiplying the data by 2^k multiplies every scale by 2^k: the error stays relative.
  const Bound b = GetParam();
  const auto x = normal(16 * 1024, 7, 1e-3f);
  EXPECT_LE(rel_rmse(x, round_trip(b.type, x, 1024)), b.max_rel_rmse * 1.5 + 1e-6);
}

TEST_P(QuantRoundTrip, ImatrixWithinBound) {
  const Bound b = GetParam();
  const auto x = normal(16 * 1024, 9);
  std::vector<float> imatrix(1024);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.1f, 4.0f);
  for (auto& w : imatrix) w = u(rng);
  const auto y = round_trip(b.type, x, 1024, imatrix.data());
  EXPECT_LE(rel_rmse(x, y), b.max_rel_rmse * 1.3 + 1e-6) << type_name(b.type);
  EXPECT_TRUE(all_finite(y));
}

TEST_P(QuantRoundTrip, ZerosStayZeros) {
  const Bound b = GetParam();
  const std::vector<float> x(2 * 512, 0.0f);
  const auto y = round_trip(b.type, x, 512);
  for (float v : y) ASSERT_EQ(v, 0.0f) << type_name(b.type);
}

TEST_P(QuantRoundTrip, ConstantRows) {
  const Bound b = GetParam();
  for (float c : {0.37f, -5.0f, 100.0f}) {
    const std::vector<float> x(512, c);
    const auto y = round_trip(b.type, x, 512);
    for (float v : y) ASSERT_NEAR(v, c, std::fabs(c) * 0.01) << type_name(b.type) << " c=" << c;
  }
}

TEST_P(QuantRoundTrip, TinyMagnitudesStayFiniteAndSmall) {
  const Bound b = GetParam();
  auto x = normal(512, 5, 1e-30f);
  const auto y = round_trip(b.type, x, 512);
  ASSERT_TRUE(all_finite(y));
  for (float v : y) ASSERT_LE(std::fabs(v), 1e-28f) << type_name(b.type);
}

TEST_P(QuantRoundTrip, SingleOutlier) {
  const Bound b = GetParam();
  auto x = normal(512, 11);
  x[300] = 100.0f;
  const auto y = round_trip(b.type, x, 512);
  ASSERT_TRUE(all_finite(y));
  EXPECT_NEAR(y[300], 100.0f, 100.0f * std::max(0.02, b.max_rel_rmse)) << type_name(b.type);
  EXPECT_LE(rel_rmse(x, y), std::max(3 * b.max_rel_rmse, 0.05)) << type_name(b.type);
}

TEST_P(QuantRoundTrip, AlternatingSigns) {
  const Bound b = GetParam();
  std::vector<float> x(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 2 ? -1.0f : 1.0f) * (1.0f + float(i % 7) / 8);
  const auto y = round_trip(b.type, x, 512);
  ASSERT_TRUE(all_finite(y));
  EXPECT_LE(rel_rmse(x, y), 1.5 * b.max_rel_rmse + 1e-6) << type_name(b.type);
}

TEST_P(QuantRoundTrip, NonFiniteInputIsAnError) {
  const Bound b = GetParam();
  if (b.type == GgmlType::F32) GTEST_SKIP() << "F32 stores values as given";
  std::vector<uint8_t> q(row_size(b.type, 256));
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    auto x = normal(256, 1);
    x[17] = bad;
    EXPECT_THROW(quantize_row(b.type, x.data(), q.data(), 256), Error) << type_name(b.type);
  }
}

TEST_P(QuantRoundTrip, HugeValuesErrorOrStayFinite) {
  // 1e30 overflows every f16 scale: an Error rather than ggml's silent inf. F32, BF16 and
  // Q8_K (float scale) can hold it.
  const Bound b = GetParam();
  auto x = normal(256, 2, 1e30f);
  std::vector<uint8_t> q(row_size(b.type, 256));
  const bool representable =
      b.type == GgmlType::F32 || b.type == GgmlType::BF16 || b.type == GgmlType::Q8_K;
  if (!representable) {
    EXPECT_THROW(quantize_row(b.type, x.data(), q.data(), 256), Error) << type_name(b.type);
    return;
  }
  const auto y = round_trip(b.type, x, 256);
  ASSERT_TRUE(all_finite(y));
  EXPECT_LE(rel_rmse(x, y), b.max_rel_rmse + 1e-6);
}

TEST_P(QuantRoundTrip, RowsEqualPerRowResults) {
  const Bound b = GetParam();
  const int64_t n = 512, nrows = 5;
  const auto x = normal(size_t(n * nrows), 21);
  std::vector<float> imatrix(size_t(n), 1.5f);
  for (const float* im :
       {static_cast<const float*>(nullptr), static_cast<const float*>(imatrix.data())}) {
    const size_t rs = row_size(b.type, n);
    std::vector<uint8_t> all(rs * nrows), one(rs);
    EXPECT_EQ(quantize_rows(b.type, x.data(), all.data(), nrows, n, im), rs * nrows);
    for (int64_t r = 0; r < nrows; ++r) {
      EXPECT_EQ(quantize_row(b.type, x.data() + r * n, one.data(), n, im), rs);
      EXPECT_EQ(std::memcmp(one.data(), all.data() + r * rs, rs), 0) << "row " << r;
    }
  }
}

TEST_P(QuantRoundTrip, OddRowWidths) {
  // Multiples of the block size that are not multiples of 256 work for 32-blocks; a
  // length that is not a multiple of the block size is an Error.
  const Bound b = GetParam();
  const int64_t bs = block_of(b.type);
  const int64_t n = bs == 256 ? 3 * 256 : 896;  // 896 = Qwen2.5-0.5B's width
  const auto x = normal(size_t(n) * 3, 4);
  const auto y = round_trip(b.type, x, n);
  EXPECT_LE(rel_rmse(x, y), 1.3 * b.max_rel_rmse + 1e-6);
  if (bs > 1) {
    std::vector<uint8_t> q(row_size(b.type, 1024));
    std::vector<float> z(1024, 1.0f);
    EXPECT_THROW(quantize_row(b.type, z.data(), q.data(), bs == 256 ? 96 : 33), Error);
    EXPECT_THROW(dequantize_row(b.type, q.data(), z.data(), bs == 256 ? 96 : 33), Error);
  }
}

TEST_P(QuantRoundTrip, RequantizingIsStable) {
  // Quantize(dequantize(q)) changes nothing for Q8_0/Q4_0 (checked bit-exact against the
  // synthetic models in test_quant_models); for every type the second round trip must not
  // drift further than the first.
  const Bound b = GetParam();
  const auto x = normal(8 * 512, 13);
  const auto y1 = round_trip(b.type, x, 512);
  const auto y2 = round_trip(b.type, y1, 512);
  EXPECT_LE(rel_rmse(y1, y2), b.max_rel_rmse + 1e-6) << type_name(b.type);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantRoundTrip, ::testing::ValuesIn(kBounds),
                         [](const auto& info) { return std::string(type_name(info.param.type)); });

TEST(QuantImatrix, ImportantColumnsGetSmallerErrors) {
  // Types whose ggml quantizer takes an importance matrix: weighting the even columns 100x
  // must lower their error compared with the plain reference path.
  const int64_t n = 1024, nrows = 16;
  const auto x = normal(size_t(n * nrows), 17);
  std::vector<float> imatrix(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) imatrix[size_t(i)] = i % 2 == 0 ? 100.0f : 1.0f;
  for (GgmlType t :
       {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q2_K,
        GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL,
        GgmlType::IQ4_XS}) {
    const auto plain = round_trip(t, x, n);
    const auto weighted = round_trip(t, x, n, imatrix.data());
    double e_plain = 0, e_weighted = 0;
    for (size_t i = 0; i < x.size(); i += 2) {
      e_plain += double(x[i] - plain[i]) * (x[i] - plain[i]);
      e_weighted += double(x[i] - weighted[i]) * (x[i] - weighted[i]);
    }
    EXPECT_LT(e_weighted, e_plain) << type_name(t);
  }
}

TEST(QuantUnchecked, SameBytesAsChecked) {
  const auto x = normal(512, 23);
  for (const Bound& b : kBounds) {
    const size_t rs = row_size(b.type, 512);
    std::vector<uint8_t> a(rs), c(rs);
    quantize_row(b.type, x.data(), a.data(), 512);
    quantize_row_unchecked(b.type, x.data(), c.data(), 512);
    EXPECT_EQ(a, c) << type_name(b.type);
    std::vector<float> y1(512), y2(512);
    dequantize_row(b.type, a.data(), y1.data(), 512);
    dequantize_row_unchecked(b.type, a.data(), y2.data(), 512);
    EXPECT_EQ(y1, y2) << type_name(b.type);
  }
}
