// Sampler stages against hand-computed distributions.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "common/error.h"
#include "runtime/sampler.h"
#include "runtime/sampler_dry.h"

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

// ---- llama.cpp's other samplers, against the cases of its test-sampling.cpp (probabilities in,
// logits = ln p) and hand-computed values ----

namespace {

std::vector<Candidate> from_probs(const std::vector<float>& p) {
  std::vector<float> logits;
  for (float x : p) logits.push_back(std::log(x));
  return make_candidates(logits);
}

// id -> probability after a final softmax (0 for the tokens left out or at -inf).
std::map<int32_t, double> final_probs(std::vector<Candidate> c, size_t n) {
  std::map<int32_t, double> out;
  for (size_t i = 0; i < n; ++i) out[int32_t(i)] = 0;
  softmax(c);
  for (const auto& x : c) out[x.id] = x.p;
  return out;
}

}  // namespace

TEST(Sampler, TypicalKeepsTheTokensNearestTheEntropy) {
  auto c = from_probs({0.97f, 0.01f, 0.01f, 0.01f});
  apply_typical(c, 0.5f);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0}));
  EXPECT_NEAR(c[0].p, 0.97, 1e-5);
  c = from_probs({0.4f, 0.2f, 0.2f, 0.2f});
  apply_typical(c, 0.5f);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 2, 3}));  // the 0.4 token is the atypical one
  c = from_probs({0.4f, 0.2f, 0.2f, 0.2f});
  apply_typical(c, 1.0f);
  EXPECT_EQ(c.size(), 4u);
}

TEST(Sampler, TopNSigmaMasksBelowMaxMinusNStd) {
  auto c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
  apply_top_n_sigma(c, 1.0f);
  auto p = final_probs(c, 4);
  EXPECT_NEAR(p[0], 0.0, 1e-6);
  EXPECT_NEAR(p[1], 0.0, 1e-6);
  EXPECT_NEAR(p[2], 0.428571, 1e-5);
  EXPECT_NEAR(p[3], 0.571429, 1e-5);
  for (float n : {0.0f, 3.0f}) {  // 0: off; 3: nothing that far below
    c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    apply_top_n_sigma(c, n);
    p = final_probs(c, 4);
    EXPECT_NEAR(p[0], 0.1, 1e-5) << n;
    EXPECT_NEAR(p[3], 0.4, 1e-5) << n;
  }
}

TEST(Sampler, XtcRemovesTheLikelyButTheLeastOfThem) {
  const std::vector<float> probs{0.4f, 0.3f, 0.2f, 0.1f};
  const std::pair<float, std::vector<int32_t>> cases[] = {
      {0.09f, {3}}, {0.19f, {2, 3}}, {0.29f, {1, 2, 3}}, {0.39f, {0, 1, 2, 3}}};
  for (const auto& [threshold, left] : cases) {
    auto c = from_probs(probs);
    apply_xtc(c, 0.99f, threshold, 1, 0.5);
    EXPECT_EQ(ids(c), left) << threshold;
  }
  auto c = from_probs(probs);
  apply_xtc(c, 0.5f, 0.09f, 1, 0.7);  // the draw says not this time
  EXPECT_EQ(c.size(), 4u);
  c = from_probs(probs);
  apply_xtc(c, 0.99f, 0.09f, 2, 0.0);  // one left would be fewer than min_keep
  EXPECT_EQ(c.size(), 4u);
}

TEST(Sampler, DynamicTemperatureFollowsTheEntropy) {
  const std::vector<float> logits{2.0f, 1.0f, 0.5f, -1.0f};
  auto c = make_candidates(logits);
  apply_dynamic_temperature(c, 1.0f, 0.5f, 2.0f);
  // By hand: entropy of softmax(logits) over ln 4, squared, maps [0.5, 1.5].
  double z = 0, h = 0;
  for (float l : logits) z += std::exp(double(l));
  for (float l : logits) {
    const double q = std::exp(double(l)) / z;
    h -= q * std::log(q);
  }
  const double t = 0.5 + 1.0 * std::pow(h / std::log(4.0), 2.0);
  double zt = 0;
  for (float l : logits) zt += std::exp(double(l) / t);
  for (const auto& x : c) EXPECT_NEAR(x.p, std::exp(double(logits[size_t(x.id)]) / t) / zt, 1e-6) << x.id;
  // A range of 0 is the plain temperature; temperature 0 keeps the best.
  c = make_candidates(logits);
  apply_dynamic_temperature(c, 2.0f, 0.0f, 1.0f);
  EXPECT_FLOAT_EQ(c[0].logit, 1.0f);
  c = make_candidates(logits);
  apply_temperature(c, 0.0f);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0}));
}

TEST(Sampler, SamplerOrderNamesAndLetters) {
  using S = SamplerStage;
  EXPECT_EQ(parse_sampler_names("penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature"),
            default_sampler_order());
  EXPECT_EQ(parse_sampler_letters("edskypmxt"), default_sampler_order());
  EXPECT_EQ(parse_sampler_names("temp;top-k;nucleus;typical"),
            (std::vector<S>{S::Temperature, S::TopK, S::TopP, S::TypicalP}));
  EXPECT_THROW(parse_sampler_names("top_k;mirostat"), minfer::Error);
  EXPECT_THROW(parse_sampler_letters("kz"), minfer::Error);
}

TEST(Sampler, ChainStagesInTheirOrder) {
  // Greedy after typical-p: the best of what typical keeps (ties -> lowest id), not the argmax.
  SamplerParams p;
  p.temp = 0;
  p.typical_p = 0.5f;
  Sampler s(p);
  std::vector<float> logits{std::log(0.4f), std::log(0.2f), std::log(0.2f), std::log(0.2f)};
  EXPECT_EQ(s.sample(logits), 1);
  // Temperature first, then top-k 1: the argmax whatever the temperature.
  p = SamplerParams{};
  p.temp = 5.0f;
  p.top_k = 1;
  p.order = parse_sampler_names("temperature;top_k");
  Sampler t(p);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(t.sample(logits), 0);
  p = SamplerParams{};
  p.mirostat = 3;
  EXPECT_THROW(p.validate(), minfer::Error);
  p.mirostat = 0;
  p.dry_multiplier = -1;
  EXPECT_THROW(p.validate(), minfer::Error);
}

// Mirostat 2: only the tokens of surprise <= mu are drawn (mu starts at 2 tau), and mu moves by
// eta times the drawn token's surprise (after renormalizing) minus tau.
TEST(Sampler, MirostatV2TruncatesBySurpriseAndLearns) {
  SamplerParams p;
  p.temp = 1.0f;
  p.mirostat = 2;
  p.mirostat_tau = 1.0f;
  p.mirostat_eta = 0.1f;
  const std::vector<float> logits{std::log(0.5f), std::log(0.25f), std::log(0.125f), std::log(0.125f)};
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    p.seed = seed;
    Sampler s(p);
    const int32_t id = s.sample(logits);
    ASSERT_TRUE(id == 0 || id == 1) << id;  // -log2 p <= 2
    const double surprise = -std::log2(id == 0 ? 2.0 / 3 : 1.0 / 3);
    EXPECT_NEAR(s.mirostat_mu(), 2.0 - 0.1 * (surprise - 1.0), 1e-5);
  }
}

// Mirostat 1 on a Zipf distribution (p_i ~ 1 / i^1.5): its estimate of the exponent is exact,
// so k = ((s - 1) 2^mu / (1 - n^(1 - s)))^(1 / s) and the draw is among the first k.
TEST(Sampler, MirostatV1DrawsFromItsTopK) {
  const int n = 1000;
  const double s_exp = 1.5;
  std::vector<float> logits(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) logits[size_t(i)] = float(-s_exp * std::log(double(i + 1)));
  SamplerParams p;
  p.temp = 1.0f;
  p.mirostat = 1;
  p.mirostat_tau = 3.0f;
  const double mu = 6.0;
  const double k = std::pow((s_exp - 1) * std::pow(2.0, mu) / (1 - std::pow(double(n), 1 - s_exp)), 1 / s_exp);
  std::set<int32_t> seen;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    p.seed = seed;
    Sampler sm(p);
    const int32_t id = sm.sample(logits);
    EXPECT_LT(id, int32_t(k)) << "k " << k;
    seen.insert(id);
  }
  EXPECT_GT(seen.size(), 3u);
}

// DRY against llama.cpp's test-sampling cases (multiplier, base, allowed length, window, token
// breakers): a token that would extend an earlier repeat of at least the allowed length loses
// multiplier * base^(length - allowed); a breaker token is never penalized.
TEST(Sampler, DryPenalizesWhatWouldExtendARepeat) {
  struct Case {
    std::vector<float> probs;
    std::vector<int32_t> history;
    std::vector<double> want;
    float multiplier, base;
    int32_t allowed;
    std::vector<std::vector<int32_t>> breakers;  // head token, then its tail
  };
  const Case cases[] = {
      {{0.25f, 0.25f, 0.25f, 0.25f}, {0, 1}, {0.25, 0.25, 0.25, 0.25}, 1.0f, 1.1f, 2, {}},
      {{0.25f, 0.25f, 0.25f, 0.25f}, {0, 1, 2, 0, 1}, {0.296923, 0.296923, 0.109232, 0.296923}, 1.0f, 1.1f, 2, {}},
      {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0, 1, 3, 4, 0, 1}, {0.2, 0.2, 0.2, 0.2, 0.2}, 1.0f, 1.1f, 2, {{3}}},
      {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0, 1, 2, 0, 1}, {0.241818, 0.241818, 0.032727, 0.241818, 0.241818}, 2.0f, 1.1f, 2, {}},
      {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0, 1, 2, 3, 4, 0, 1}, {0.2, 0.2, 0.2, 0.2, 0.2}, 1.0f, 1.1f, 4, {}},
  };
  for (const Case& k : cases) {
    DryBreakers b;
    for (const auto& seq : k.breakers) b.by_head.emplace(seq[0], std::vector<int32_t>(seq.begin() + 1, seq.end()));
    auto c = from_probs(k.probs);
    apply_dry(c, k.history, k.multiplier, k.base, k.allowed, b);
    const auto p = final_probs(c, k.probs.size());
    for (size_t i = 0; i < k.want.size(); ++i) EXPECT_NEAR(p.at(int32_t(i)), k.want[i], 1e-5) << i;
  }
  // A longer repeat: a b c d ... a b c -> d extends a repeat of 3: base^(3 - 2) = 1.75.
  auto c = make_candidates(std::vector<float>(6, 0.0f));
  apply_dry(c, std::vector<int32_t>{0, 1, 2, 3, 5, 0, 1, 2}, 1.0f, 1.75f, 2, DryBreakers{});
  EXPECT_NEAR(c[3].logit, -1.75f, 1e-6);
  EXPECT_EQ(c[5].logit, 0.0f);  // 5 followed "3", not the end's repeat
  // A two-token breaker (4 then 5): "4 5 2 3" repeats, but a repeat reaches back only to the
  // latest breaker, so the one 4 would extend counts 2 (base^0); without the breaker, 4 (base^2).
  DryBreakers two;
  two.by_head.emplace(4, std::vector<int32_t>{5});
  const std::vector<int32_t> text{4, 5, 2, 3, 4, 5, 2, 3};
  c = make_candidates(std::vector<float>(6, 0.0f));
  apply_dry(c, text, 1.0f, 1.75f, 2, two);
  EXPECT_NEAR(c[4].logit, -1.0f, 1e-6);
  c = make_candidates(std::vector<float>(6, 0.0f));
  apply_dry(c, text, 1.0f, 1.75f, 2, DryBreakers{});
  EXPECT_NEAR(c[4].logit, -1.75f * 1.75f, 1e-5);
}
