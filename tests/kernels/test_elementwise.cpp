// rms_norm, silu, swiglu, add, mul against direct double-precision formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels.h"
#include "kernels/random_weights.h"

namespace minfer::cpu {
namespace {

TEST(RmsNorm, MatchesFormulaPerRow) {
  std::mt19937 rng(1);
  for (int64_t d : {1, 7, 64, 896}) {
    const int64_t nt = 3;
    auto x = test::random_floats(size_t(nt * d), rng, 3.0f);
    auto w = test::random_floats(size_t(d), rng);
    std::vector<float> out(x.size()), out_nw(x.size());
    const float eps = 1e-6f;
    rms_norm(x.data(), w.data(), nt, d, eps, out.data());
    rms_norm(x.data(), nullptr, nt, d, eps, out_nw.data());
    for (int64_t t = 0; t < nt; ++t) {
      double ss = 0;
      for (int64_t i = 0; i < d; ++i) ss += double(x[t * d + i]) * x[t * d + i];
      const double scale = 1.0 / std::sqrt(ss / double(d) + eps);
      for (int64_t i = 0; i < d; ++i) {
        const double e = x[t * d + i] * scale;
        EXPECT_NEAR(out_nw[t * d + i], e, 2e-6 * std::fabs(e) + 1e-30);
        EXPECT_NEAR(out[t * d + i], e * w[i], 3e-6 * std::fabs(e * w[i]) + 1e-30);
      }
    }
  }
}

TEST(RmsNorm, EpsilonKeepsZeroRowsFinite) {
  std::vector<float> x(8, 0.0f), out(8, 1.0f);
  rms_norm(x.data(), nullptr, 1, 8, 1e-5f, out.data());
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

// Every ISA path (the SIMD ones evaluate exp with a polynomial) within a few ulps of double.
TEST(Activations, SiluAndSwigluMatchFormulaOnEveryIsaPath) {
  std::mt19937 rng(3);
  std::vector<float> x = {-1000.0f, -100.0f, -87.5f, -20.0f, -1.5f, -0.0f, 0.0f, 1e-3f,
                          0.7f,     3.0f,    30.0f,  88.9f,  100.0f, 1000.0f};
  const auto r = test::random_floats(1000, rng, 8.0f);
  x.insert(x.end(), r.begin(), r.end());
  std::vector<float> up(x.size());
  for (size_t i = 0; i < x.size(); ++i) up[i] = 0.5f - float(i % 7);
  for (Isa isa : supported_isas()) {
    force_isa(isa);
    std::vector<float> s(x.size()), g(x.size());
    silu(x.data(), s.data(), int64_t(x.size()));
    swiglu(x.data(), up.data(), g.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const double e = double(x[i]) / (1.0 + std::exp(-double(x[i])));
      ASSERT_NEAR(s[i], e, 1e-6 * std::fabs(e) + 1e-40) << x[i] << " isa " << isa_name(isa);
      ASSERT_NEAR(g[i], e * up[i], 2e-6 * std::fabs(e * up[i]) + 1e-40) << x[i] << " isa " << isa_name(isa);
    }
    EXPECT_EQ(s[0], 0.0f);  // x/(1+inf) for very negative inputs: zero, not NaN
    EXPECT_EQ(s[13], 1000.0f);
  }
  reset_isa();
}

TEST(Elementwise, AddAndMulAreExact) {
  const float a[5] = {1.5f, -2.0f, 0.1f, 1e30f, -0.0f};
  const float b[5] = {0.25f, 4.0f, 0.2f, 1e30f, 0.0f};
  float o[5];
  add(a, b, o, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(o[i], a[i] + b[i]);
  mul(a, b, o, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(o[i], a[i] * b[i]);
  add(a, b, const_cast<float*>(a), 0);  // n = 0 touches nothing
}

TEST(Threads, SetAndGet) {
  set_threads(3);
  EXPECT_EQ(threads(), 3);
  set_threads(0);
  EXPECT_GE(threads(), 1);
}

}  // namespace
}  // namespace minfer::cpu
