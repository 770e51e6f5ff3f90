// Speculative decoding: with a draft model, generate() gives the very tokens it gives without one
// (llama.cpp's greedy continuations of stories260K; sampled text with the same seed, penalties
// and biases; stop strings, token limits and a full context), leaves the cache holding exactly
// what it reports, and does so while guesses are both kept and dropped. The draft is stories260K
// itself quantized to Q4_0, so that its guesses are mostly, not always, the target's.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <fstream>

#include "common/error.h"
#include "common/test_data.h"
#include "runtime/context.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/speculative.h"
#include "tokenizer/tokenizer.h"
#include "tools/quantize.h"

using namespace minfer;

namespace {

runtime::ContextParams params(int64_t n_ctx = 256) {
  runtime::ContextParams p;
  p.n_ctx = n_ctx;
  p.n_threads = 1;
  p.kv_type = GgmlType::F32;
  return p;
}

struct Models {
  std::unique_ptr<runtime::Model> target, draft;
};

// stories260K and its Q4_0 copy (written once into the temp folder).
const Models& stories() {
  static const Models m = [] {
    Models r;
    const std::string src = test::shared_path("models/stories260K.gguf");
    const auto q4 = std::filesystem::temp_directory_path() / fmt::format("minfer-spec-{}.gguf", ::getpid());
    tools::quantize_model(src, q4.string(), "Q4_0", 1, {}, nullptr, nullptr);
    r.target = runtime::Model::load(src);
    r.draft = runtime::Model::load(q4.string());
    std::filesystem::remove(q4);
    return r;
  }();
  return m;
}

struct Outcome {
  runtime::GenerateResult res;
  std::vector<int32_t> kv;  // what the target's cache holds afterwards
};

Outcome run(std::span<const int32_t> prompt, const runtime::SamplerParams& sp, runtime::GenerateOptions go,
        const runtime::DraftParams* dp, int64_t n_ctx = 256) {
  const Models& m = stories();
  runtime::Context ctx(*m.target, params(n_ctx));
  runtime::Context dctx(*m.draft, params(n_ctx));
  std::optional<runtime::Drafter> drafter;
  if (dp) go.drafter = &drafter.emplace(dctx, *dp);
  runtime::Sampler sampler(sp);
  Outcome r;
  r.res = runtime::generate(ctx, m.target->tokenizer(), sampler, prompt, go, nullptr);
  r.kv.assign(ctx.tokens().begin(), ctx.tokens().end());
  // The cache holds the prompt and the sampled tokens that were decoded, nothing drafted beyond.
  std::vector<int32_t> expected(prompt.begin(), prompt.end());
  expected.insert(expected.end(), r.res.tokens.begin(), r.res.tokens.begin() + r.res.n_tokens_in_kv);
  EXPECT_EQ(r.kv, expected);
  EXPECT_EQ(ctx.n_past(), int64_t(expected.size()));
  return r;
}

runtime::SamplerParams greedy() {
  runtime::SamplerParams p;
  p.temp = 0;
  return p;
}

// Every step drafts (no probability floor), four tokens at most: both kept and dropped guesses.
runtime::DraftParams eager() {
  runtime::DraftParams d;
  d.n_max = 4;
  d.p_min = 0;
  return d;
}

std::vector<int32_t> encode(const std::string& s) {
  return stories().target->tokenizer().encode(s, true, false);
}

}  // namespace

TEST(Speculative, GreedyIsLlamaCppsGreedy) {
  MINFER_REQUIRE_SHARED();
  std::ifstream in(test::shared_path("golden/models/stories260K.greedy64.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  int64_t drafted = 0, accepted = 0;
  for (const runtime::DraftParams& dp : {eager(), runtime::DraftParams{}}) {
    for (const auto& c : j.at("cases")) {
      const auto prompt = c.at("prompt_ids").get<std::vector<int32_t>>();
      const auto expected = c.at("greedy").at("ids").get<std::vector<int32_t>>();
      runtime::GenerateOptions go;
      go.n_predict = int64_t(expected.size());
      go.ignore_eog = true;
      const Outcome r = run(prompt, greedy(), go, &dp);
      EXPECT_EQ(r.res.tokens, expected) << c.at("prompt_text").get<std::string>();
      EXPECT_TRUE(r.res.speculative);
      // Fewer target passes than tokens: the kept guesses cost nothing more.
      EXPECT_EQ(r.res.n_gen_evals + r.res.n_draft_accepted, r.res.n_tokens_in_kv);
      EXPECT_LT(r.res.n_gen_evals, int64_t(expected.size()) - 1);
      drafted += r.res.n_drafted;
      accepted += r.res.n_draft_accepted;
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);  // some guesses were dropped too
}

TEST(Speculative, SampledTextIsTheSameAsWithoutADraft) {
  MINFER_REQUIRE_SHARED();
  const auto prompt = encode("Once upon a time, there was a dog");
  int64_t drafted = 0, accepted = 0;
  for (uint64_t seed : {1u, 2u, 3u, 42u}) {
    runtime::SamplerParams sp;
    sp.seed = seed;
    if (seed == 3) {  // penalties and a bias change the rows the samples come from
      sp.repeat_penalty = 1.3f;
      sp.frequency_penalty = 0.2f;
      sp.logit_bias.push_back({stories().target->tokenizer().find_token("▁the").value_or(100), -2.0f});
    }
    runtime::GenerateOptions go;
    go.n_predict = 120;
    const runtime::DraftParams dp = eager();
    const Outcome plain = run(prompt, sp, go, nullptr);
    const Outcome spec = run(prompt, sp, go, &dp);
    EXPECT_EQ(spec.res.tokens, plain.res.tokens) << "seed " << seed;
    EXPECT_EQ(spec.res.text, plain.res.text) << "seed " << seed;
    EXPECT_EQ(spec.res.reason, plain.res.reason);
    EXPECT_FALSE(plain.res.speculative);
    EXPECT_EQ(plain.res.n_drafted, 0);
    drafted += spec.res.n_drafted;
    accepted += spec.res.n_draft_accepted;
  }
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);
}

TEST(Speculative, StopsWhereThePlainLoopStops) {
  MINFER_REQUIRE_SHARED();
  const auto prompt = encode("Once upon a time");
  const runtime::DraftParams dp = eager();
  runtime::GenerateOptions go;
  go.n_predict = 64;
  go.ignore_eog = true;
  const Outcome full = run(prompt, greedy(), go, nullptr);
  ASSERT_GE(full.res.text.size(), 60u);

  // A stop string in the middle of the text: the cache may not keep the guesses after it.
  go.stop = {full.res.text.substr(30, 6)};
  const Outcome a = run(prompt, greedy(), go, nullptr), b = run(prompt, greedy(), go, &dp);
  EXPECT_EQ(a.res.reason, runtime::StopReason::StopString);
  EXPECT_EQ(b.res.reason, a.res.reason);
  EXPECT_EQ(b.res.text, a.res.text);
  EXPECT_EQ(b.res.tokens, a.res.tokens);
  EXPECT_EQ(b.res.n_tokens_in_kv, a.res.n_tokens_in_kv);

  // Token limits of every size: drafts never run past them.
  go.stop.clear();
  for (int64_t n : {1, 2, 3, 5, 17}) {
    go.n_predict = n;
    const Outcome p = run(prompt, greedy(), go, nullptr), s = run(prompt, greedy(), go, &dp);
    EXPECT_EQ(s.res.tokens, p.res.tokens) << "n " << n;
    EXPECT_EQ(s.res.n_tokens_in_kv, p.res.n_tokens_in_kv) << "n " << n;
  }

  // A context that fills up: the same tokens, the same reason.
  go.n_predict = -1;
  const int64_t n_ctx = int64_t(prompt.size()) + 23;
  const Outcome p = run(prompt, greedy(), go, nullptr, n_ctx), s = run(prompt, greedy(), go, &dp, n_ctx);
  EXPECT_EQ(p.res.reason, runtime::StopReason::ContextFull);
  EXPECT_EQ(s.res.reason, p.res.reason);
  EXPECT_EQ(s.res.tokens, p.res.tokens);
  EXPECT_EQ(s.kv.size(), size_t(n_ctx));
}

TEST(Speculative, DrafterKeepsWhatItsCacheShares) {
  MINFER_REQUIRE_SHARED();
  const Models& m = stories();
  runtime::Context dctx(*m.draft, params());
  runtime::Drafter d(dctx, eager());
  auto history = encode("Once upon a time, there was a little girl");
  const auto first = d.draft(history, 4);
  ASSERT_EQ(first.size(), 4u);
  // The draft context evaluated the history and three of the guesses.
  EXPECT_EQ(dctx.stats().tokens_evaluated, history.size() + 3);
  // The next history extends the first: only what is new is evaluated again.
  history.push_back(first[0]);
  history.push_back(first[1]);
  const uint64_t before = dctx.stats().tokens_evaluated;
  const auto second = d.draft(history, 2);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0], first[2]);
  EXPECT_EQ(second[1], first[3]);
  EXPECT_EQ(dctx.stats().tokens_evaluated - before, 1u + 1u);  // the last history token, one guess
  // A context too small for the history drafts nothing; n caps the draft.
  runtime::Context tiny(*m.draft, params(8));
  runtime::Drafter dt(tiny, eager());
  EXPECT_TRUE(dt.draft(history, 4).empty());
  EXPECT_EQ(d.draft(history, 1).size(), 1u);
  // A token beyond the draft's vocabulary (a larger target's padding rows): no draft, no work.
  const uint64_t evaluated = dctx.stats().tokens_evaluated;
  std::vector<int32_t> odd = history;
  odd.push_back(600);
  EXPECT_TRUE(d.draft(odd, 4).empty());
  EXPECT_EQ(dctx.stats().tokens_evaluated, evaluated);
  // With a floor no guess can reach, nothing is drafted.
  runtime::DraftParams sure;
  sure.p_min = 1.0f;
  runtime::Drafter ds(dctx, sure);
  EXPECT_TRUE(ds.draft(history, 4).empty());
}

TEST(Speculative, DraftModelMustShareTheVocabulary) {
  MINFER_REQUIRE_SHARED();
  const Models& m = stories();
  EXPECT_EQ(runtime::draft_mismatch(m.target->tokenizer(), m.draft->tokenizer()), "");
  const auto other = runtime::Model::load(test::shared_path("models/llama-2-tiny-random.gguf"));
  const std::string why = runtime::draft_mismatch(m.target->tokenizer(), other->tokenizer());
  EXPECT_NE(why.find("vocabulary has 32000 tokens, the target's 512"), std::string::npos) << why;
}

// The draft's confidence against a plain reference: sort, softmax over the 40 largest.
TEST(Speculative, DraftChoiceIsTheTopOfTheFortyBest) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 3.f);
  for (size_t n : {size_t(5), size_t(40), size_t(41), size_t(1000), size_t(151936)}) {
    std::vector<float> logits(n);
    for (float& x : logits) x = normal(rng);
    std::vector<float> sorted = logits;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    double sum = 0;
    for (size_t i = 0; i < std::min<size_t>(40, n); ++i) sum += std::exp(double(sorted[i]) - double(sorted[0]));
    const auto [id, p] = runtime::draft_choice(logits);
    EXPECT_EQ(logits[size_t(id)], sorted[0]) << n;
    EXPECT_NEAR(p, 1.0 / sum, 1e-12) << n;
  }
  // Ties go to the lowest id; one sure token; nothing finite.
  EXPECT_EQ(runtime::draft_choice(std::vector<float>{1, 3, 3, 2}).first, 1);
  EXPECT_NEAR(runtime::draft_choice(std::vector<float>{0, 100, 0}).second, 1.0, 1e-12);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(runtime::draft_choice(std::vector<float>{-inf, -inf}).second, 0.0);
}

TEST(Speculative, ParamsAreChecked) {
  runtime::DraftParams p;
  EXPECT_NO_THROW(p.validate());
  p.n_max = -1;
  EXPECT_THROW(p.validate(), Error);
  p = {};
  p.n_min = 17;
  EXPECT_THROW(p.validate(), Error);
  p = {};
  p.p_min = 1.5f;
  EXPECT_THROW(p.validate(), Error);
  p.p_min = std::nanf("");
  EXPECT_THROW(p.validate(), Error);
}
