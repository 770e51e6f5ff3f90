// Sampler stages against hand-computed distributions.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "common/error.h"
#include "runtime/sampler.h"

using namespace minfer::runtime;

static std::vector<Candidate> cands(std::vector<float> logits) { return make_candidates(logits); }

static std::vector<int32_t> ids(const std::vector<Candidate>& c) {
  std::vector<int32_t> r;
  for (auto& x : c) r.push_back(x.id);
  return r;
}

TEST(Sampler, PenaltiesFollowLlamaCppSemantics) {
  auto c = cands({2.0f, -1.0f, 0.5f, 3.0f, 0.0f});
  // token 0 twice, token 1 once, token 4 once; repeat 2: 2 -> 1, -1 -> -2, 0 -> 0 (0 * 2).
  const std::vector<int32_t> recent{0, 1, 0, 4};
  apply_penalties(c, recent, 2.0f, 0.5f, 0.25f);
  EXPECT_FLOAT_EQ(c[0].logit, 2.0f / 2 - 2 * 0.5f - 0.25f);   // -0.25
  EXPECT_FLOAT_EQ(c[1].logit, -1.0f * 2 - 1 * 0.5f - 0.25f);  // -2.75
  EXPECT_FLOAT_EQ(c[2].logit, 0.5f);                          // not in the window
  EXPECT_FLOAT_EQ(c[3].logit, 3.0f);
  EXPECT_FLOAT_EQ(c[4].logit, 0.0f - 0.5f - 0.25f);
}

TEST(Sampler, PenaltiesIgnoreOutOfRangeIds) {
  auto c = cands({1.0f, 1.0f});
  const std::vector<int32_t> recent{-3, 7};
  apply_penalties(c, recent, 2.0f, 1.0f, 1.0f);
  EXPECT_FLOAT_EQ(c[0].logit, 1.0f);
  EXPECT_FLOAT_EQ(c[1].logit, 1.0f);
}

TEST(Sampler, TopKKeepsHighestWithLowIdTieBreak) {
  auto c = cands({1.0f, 3.0f, 3.0f, 2.0f, 0.0f});
  apply_top_k(c, 3);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 2, 3}));
  auto d = cands({1.0f, 2.0f});
  apply_top_k(d, 0);  // off: everything kept, sorted
  EXPECT_EQ(ids(d), (std::vector<int32_t>{1, 0}));
}

TEST(Sampler, SoftmaxMatchesHandComputedValues) {
  auto c = cands({0.0f, std::log(3.0f), std::log(6.0f)});  // weights 1 : 3 : 6
  softmax(c);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{2, 1, 0}));
  EXPECT_NEAR(c[0].p, 0.6, 1e-6);
  EXPECT_NEAR(c[1].p, 0.3, 1e-6);
  EXPECT_NEAR(c[2].p, 0.1, 1e-6);
}

TEST(Sampler, TopPKeepsSmallestPrefixReachingP) {
  // probabilities 0.5, 0.25, 0.125, 0.125
  auto make = [] { return cands({std::log(4.0f), std::log(2.0f), 0.0f, 0.0f}); };
  auto c = make();
  apply_top_p(c, 0.7f);  // 0.5 < 0.7 <= 0.75
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0, 1}));
  c = make();
  apply_top_p(c, 0.5f);  // reached by the first alone
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0}));
  c = make();
  apply_top_p(c, 0.8f);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0, 1, 2}));
  c = make();
  apply_top_p(c, 1.0f);  // off
  EXPECT_EQ(c.size(), 4u);
  c = make();
  apply_top_p(c, 0.1f, 3);  // min_keep wins
  EXPECT_EQ(c.size(), 3u);
}

TEST(Sampler, MinPIsRelativeToTheTopProbability) {
  // probabilities proportional to 8, 4, 2, 1: relative 1, 0.5, 0.25, 0.125
  auto make = [] { return cands({std::log(1.0f), std::log(8.0f), std::log(2.0f), std::log(4.0f)}); };
  auto c = make();
  apply_min_p(c, 0.3f);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 3}));
  c = make();
  apply_min_p(c, 0.2f);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 3, 2}));
  c = make();
  apply_min_p(c, 0.0f);
  EXPECT_EQ(c.size(), 4u);
}

TEST(Sampler, TemperatureScalesLogits) {
  auto c = cands({0.0f, std::log(4.0f)});
  apply_temperature(c, 2.0f);  // weights 1 : 4 -> 1 : 2
  softmax(c);
  EXPECT_NEAR(c[0].p, 2.0 / 3, 1e-6);
  EXPECT_NEAR(c[1].p, 1.0 / 3, 1e-6);
}

TEST(Sampler, DrawUsesCumulativeBuckets) {
  auto c = cands({std::log(6.0f), std::log(3.0f), 0.0f});  // 0.6, 0.3, 0.1
  softmax(c);
  EXPECT_EQ(draw(c, 0.0), 0);
  EXPECT_EQ(draw(c, 0.59), 0);
  EXPECT_EQ(draw(c, 0.61), 1);
  EXPECT_EQ(draw(c, 0.89), 1);
  EXPECT_EQ(draw(c, 0.91), 2);
  EXPECT_EQ(draw(c, 0.999999), 2);
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
  SamplerParams p;
  p.temp = 0;
  Sampler s(p);
  std::vector<float> l{0.1f, 5.0f, -2.0f, 5.0f};
  EXPECT_EQ(s.sample(l), 1);
  EXPECT_EQ(argmax(l), 1);
}

TEST(Sampler, GreedyStillAppliesPenalties) {
  SamplerParams p;
  p.temp = 0;
  p.repeat_penalty = 2.0f;
  Sampler s(p);
  s.accept(1);
  std::vector<float> l{3.0f, 4.0f, 1.0f};  // token 1 -> 2.0 < 3.0
  EXPECT_EQ(s.sample(l), 0);
}

TEST(Sampler, LogitBiasComesFirstAndCanBan) {
  auto c = cands({1.0f, 2.0f, 3.0f});
  const LogitBias b[] = {{0, 2.5f}, {2, -INFINITY}};
  apply_logit_bias(c, b);
  EXPECT_FLOAT_EQ(c[0].logit, 3.5f);
  EXPECT_FLOAT_EQ(c[1].logit, 2.0f);
  EXPECT_EQ(c[2].logit, -INFINITY);
  const LogitBias outside[] = {{3, 1.0f}};
  EXPECT_THROW(apply_logit_bias(c, outside), minfer::Error);

  SamplerParams p;
  p.temp = 0;
  p.logit_bias = {{2, -INFINITY}};
  EXPECT_EQ(Sampler(p).sample(std::vector<float>{1.0f, 2.0f, 3.0f}), 1);  // greedy, token 2 banned
  // Before the penalties, as llama.cpp's chain: token 1's (2 + 2) / 2 = 2 < 2.5 (the penalty
  // first would give 2 / 2 + 2 = 3 > 2.5).
  p.logit_bias = {{1, 2.0f}};
  p.repeat_penalty = 2.0f;
  Sampler s(p);
  s.accept(1);
  EXPECT_EQ(s.sample(std::vector<float>{2.5f, 2.0f, 0.0f}), 0);
  // Sampled at a temperature, a banned token never comes out.
  p = SamplerParams{};
  p.logit_bias = {{0, -INFINITY}};
  p.seed = 7;
  p.top_k = 0;
  p.top_p = 1;
  p.min_p = 0;
  Sampler hot(p);
  for (int i = 0; i < 200; ++i) EXPECT_NE(hot.sample(std::vector<float>{5.0f, 0.0f, 0.0f}), 0);
}

TEST(Sampler, RepeatWindowForgetsOldTokens) {
  SamplerParams p;
  p.temp = 0;
  p.repeat_penalty = 100.0f;
  p.repeat_last_n = 2;
  Sampler s(p);
  s.accept(1);
  s.accept(0);
  s.accept(0);  // 1 has left the window
  std::vector<float> l{3.0f, 4.0f, 1.0f};
  EXPECT_EQ(s.sample(l), 1);
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDiffers) {
  std::vector<float> l(50);
  for (size_t i = 0; i < l.size(); ++i) l[i] = float(i % 7) * 0.3f;
  auto run = [&](uint64_t seed) {
    SamplerParams p;
    p.seed = seed;
    p.temp = 1.5f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    Sampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.sample(l));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, DrawFrequenciesFollowTheDistribution) {
  // logits ln 1, ln 3 at temp 1: P(1) = 0.75. 20000 draws: 3 sigma is about 0.009.
  SamplerParams p;
  p.seed = 7;
  p.temp = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  Sampler s(p);
  std::vector<float> l{0.0f, std::log(3.0f)};
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ones += s.sample(l) == 1;
  EXPECT_NEAR(double(ones) / n, 0.75, 0.015);
}

TEST(Sampler, TopKOneIsDeterministicWhateverTheSeed) {
  std::vector<float> l{0.5f, 0.7f, 0.6f};
  for (uint64_t seed : {1, 2, 3}) {
    SamplerParams p;
    p.seed = seed;
    p.top_k = 1;
    Sampler s(p);
    EXPECT_EQ(s.sample(l), 1);
  }
}

TEST(Sampler, ChainOnlyDrawsFromSurvivors) {
  // top-k 3 then min-p 0.5 on weights e^(3,2.9,1,0,...) leaves {0, 1}.
  std::vector<float> l{3.0f, 2.9f, 1.0f, 0.0f, 0.0f};
  SamplerParams p;
  p.top_k = 3;
  p.top_p = 1.0f;
  p.min_p = 0.5f;
  p.temp = 1.0f;
  std::set<int32_t> seen;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    p.seed = seed;
    Sampler s(p);
    seen.insert(s.sample(l));
  }
  EXPECT_EQ(seen, (std::set<int32_t>{0, 1}));
}

TEST(Sampler, ValidateRejectsBadValues) {
  auto bad = [](auto mutate) {
    SamplerParams p;
    mutate(p);
    EXPECT_THROW(p.validate(), minfer::Error);
  };
  bad([](SamplerParams& p) { p.temp = -1; });
  bad([](SamplerParams& p) { p.temp = NAN; });
  bad([](SamplerParams& p) { p.top_k = -5; });
  bad([](SamplerParams& p) { p.top_p = 1.5f; });
  bad([](SamplerParams& p) { p.min_p = -0.1f; });
  bad([](SamplerParams& p) { p.repeat_penalty = 0; });
  bad([](SamplerParams& p) { p.repeat_last_n = -2; });
  bad([](SamplerParams& p) { p.logit_bias = {{-1, 1.0f}}; });
  bad([](SamplerParams& p) { p.logit_bias = {{1, NAN}}; });
  bad([](SamplerParams& p) { p.logit_bias = {{1, INFINITY}}; });
  SamplerParams ok;
  EXPECT_NO_THROW(ok.validate());
  try {
    SamplerParams p;
    p.top_p = 2;
    p.validate();
  } catch (const minfer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("top-p"), std::string::npos);
  }
}

// A grammar's filter: the top-k of the allowed tokens in the chain's order (ties to the lower
// id), as filtering everything and then taking top-k would give (the reference), whatever k and
// however much is allowed; -inf logits (banned) never survive.
TEST(Sampler, AllowedKeepsTheTopKOfWhatIsAllowed) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    const int n = 1 + int(rng() % 3000);
    std::vector<float> logits(static_cast<size_t>(n));
    for (float& l : logits) l = float(int(rng() % 50)) * 0.25f;  // many ties
    for (int b = 0; b < n / 20; ++b) logits[rng() % size_t(n)] = -INFINITY;
    const int every = 1 + int(rng() % 400);  // from all allowed to almost none
    auto allowed = [&](int32_t id) { return id % every == 0; };
    const int32_t k = std::vector<int32_t>{0, 1, 5, 40, 300, 5000}[rng() % 6];
    std::vector<Candidate> got = make_candidates(logits);
    apply_allowed(got, allowed, k);
    std::vector<Candidate> want = make_candidates(logits);
    std::erase_if(want, [&](const Candidate& c) { return !allowed(c.id) || !std::isfinite(c.logit); });
    apply_top_k(want, k);
    ASSERT_EQ(got.size(), want.size()) << "n " << n << " every " << every << " k " << k;
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].id, want[i].id) << i;
  }
}

TEST(Sampler, AllowedGreedyIsTheBestAllowedAndNoneIsMinusOne) {
  SamplerParams p;
  p.temp = 0;
  Sampler s(p);
  const std::vector<float> logits = {1.0f, 5.0f, 3.0f, 5.0f, 4.0f};
  EXPECT_EQ(s.sample(logits), 1);
  EXPECT_EQ(s.sample(logits, [](int32_t id) { return id != 1; }), 3);
  EXPECT_EQ(s.sample(logits, [](int32_t id) { return id % 2 == 0; }), 4);
  EXPECT_EQ(s.sample(logits, [](int32_t) { return false; }), -1);
  p.temp = 0.8f;
  Sampler t(p);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(t.sample(logits, [](int32_t id) { return id == 2; }), 2);
}
