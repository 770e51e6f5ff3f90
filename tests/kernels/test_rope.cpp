// rope against the direct formula theta_i = pos * base^(-2i/n_rot) * freq_scale / ff_i (with
// YaRN: the ramp between the scaled and unscaled angles, and the magnitude factor), in double. The kernel builds theta by repeated float multiplication (as ggml does), so the
// angles drift by ~i ulps of theta: positions are kept small enough for a 2e-4 tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/kernels.h"
#include "kernels/random_weights.h"

namespace minfer::cpu {
namespace {

// YaRN's parameters for check_rope (ext_factor 0: none).
struct Yarn {
  float ext_factor = 0.0f, attn_factor = 1.0f, beta_fast = 32.0f, beta_slow = 1.0f;
  int64_t n_ctx_orig = 0;
};

void check_rope(RopeStyle style, int64_t head_dim, int64_t n_rot, const float* ff,
                float freq_scale, const Yarn& y = {}) {
  SCOPED_TRACE(testing::Message() << "style=" << int(style) << " head_dim=" << head_dim
                                  << " n_rot=" << n_rot);
  std::mt19937 rng(5);
  const int64_t n_head = 3, nt = 4;
  const std::vector<int32_t> pos = {0, 1, 17, 40};
  auto x = test::random_floats(size_t(nt * n_head * head_dim), rng);
  const auto x0 = x;
  RopeParams p;
  p.style = style;
  p.n_rot = n_rot;
  p.freq_base = 10000.0f;
  p.freq_scale = freq_scale;
  p.freq_factors = ff;
  p.ext_factor = y.ext_factor;
  p.attn_factor = y.attn_factor;
  p.beta_fast = y.beta_fast;
  p.beta_slow = y.beta_slow;
  p.n_ctx_orig = y.n_ctx_orig;
  rope(x.data(), pos.data(), nt, n_head, head_dim, p);
  // The YaRN ramp runs over the pairs between the dimensions that turn beta_fast and beta_slow
  // times in n_ctx_orig positions (rounded outwards).
  auto corr = [&](double turns) {
    return double(n_rot) * std::log(double(y.n_ctx_orig) / (turns * 2 * M_PI)) / (2 * std::log(10000.0));
  };
  const double low = std::max(0.0, std::floor(corr(y.beta_fast)));
  const double high = std::min(double(n_rot - 1), std::ceil(corr(y.beta_slow)));
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t h = 0; h < n_head; ++h) {
      const float* in = x0.data() + (t * n_head + h) * head_dim;
      const float* out = x.data() + (t * n_head + h) * head_dim;
      std::vector<double> e(in, in + head_dim);
      for (int64_t i = 0; i < n_rot / 2; ++i) {
        double extrap = pos[t] * std::pow(10000.0, -2.0 * double(i) / double(n_rot));
        if (ff) extrap /= ff[i];
        double th = extrap * freq_scale, m = y.attn_factor;
        if (y.ext_factor != 0.0f) {
          const double ramp = (1 - std::clamp((double(i) - low) / std::max(0.001, high - low), 0.0, 1.0)) * y.ext_factor;
          th = th * (1 - ramp) + extrap * ramp;
          m *= 1 + 0.1 * std::log(1.0 / freq_scale);
        }
        const int64_t a = style == RopeStyle::NeoX ? i : 2 * i;
        const int64_t b = style == RopeStyle::NeoX ? i + n_rot / 2 : 2 * i + 1;
        e[a] = (in[a] * std::cos(th) - in[b] * std::sin(th)) * m;
        e[b] = (in[a] * std::sin(th) + in[b] * std::cos(th)) * m;
      }
      for (int64_t i = 0; i < head_dim; ++i) {
        if (i >= n_rot)
          ASSERT_EQ(out[i], in[i]) << "pass-through dim " << i;
        else
          ASSERT_NEAR(out[i], e[i], 2e-4) << "t=" << t << " h=" << h << " i=" << i;
      }
    }
}

TEST(Rope, NormalStyle) { check_rope(RopeStyle::Normal, 64, 64, nullptr, 1.0f); }
TEST(Rope, NeoXStyle) { check_rope(RopeStyle::NeoX, 64, 64, nullptr, 1.0f); }
TEST(Rope, PartialRotationPassesTheRestThrough) {
  check_rope(RopeStyle::Normal, 64, 32, nullptr, 1.0f);
  check_rope(RopeStyle::NeoX, 80, 48, nullptr, 1.0f);
}
TEST(Rope, FreqScaleAndFactors) {
  std::vector<float> ff(16);
  for (size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + float(i) * 0.5f;
  check_rope(RopeStyle::Normal, 32, 32, ff.data(), 0.25f);
  check_rope(RopeStyle::NeoX, 32, 32, ff.data(), 1.0f);
}

// YaRN with Qwen's published setting (factor 4 over a 4096-token original context; the ramp
// then runs over pairs 10 to 23 of 32, away from a rounding edge), on both pair layouts and with
// frequency factors; and the magnitude factor alone, as rope.scaling.attn_factor gives it.
TEST(Rope, YarnRampAndMagnitude) {
  const Yarn yarn{1.0f, 1.0f / (1.0f + 0.1f * std::log(4.0f)) * (1.0f + 0.1f * std::log(4.0f)), 32.0f, 1.0f, 4096};
  check_rope(RopeStyle::NeoX, 64, 64, nullptr, 0.25f, yarn);
  check_rope(RopeStyle::Normal, 64, 64, nullptr, 0.25f, yarn);
  std::vector<float> ff(32);
  for (size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + float(i) * 0.25f;
  check_rope(RopeStyle::Normal, 64, 64, ff.data(), 0.25f, yarn);
  check_rope(RopeStyle::NeoX, 64, 64, nullptr, 0.5f, Yarn{0.0f, 1.3f, 32.0f, 1.0f, 0});
}

TEST(Rope, PositionZeroIsIdentity) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  const auto x0 = x;
  const int32_t pos = 0;
  RopeParams p;
  p.n_rot = 8;
  rope(x.data(), &pos, 1, 1, 8, p);
  EXPECT_EQ(x, x0);
}

TEST(Rope, FirstPairTurnsByPosRadians) {
  // Pair 0 always has theta = pos: a hand-checkable rotation of (1, 0) by 2 rad.
  std::vector<float> x = {1, 0, 0, 0};
  const int32_t pos = 2;
  RopeParams p;
  p.n_rot = 4;
  rope(x.data(), &pos, 1, 1, 4, p);
  EXPECT_FLOAT_EQ(x[0], std::cos(2.0f));
  EXPECT_FLOAT_EQ(x[1], std::sin(2.0f));
}

}  // namespace
}  // namespace minfer::cpu
