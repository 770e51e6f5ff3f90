// The context shift (Context::shift, generate()'s context_shift): after dropping tokens from the
// middle of the cache, the next-token distributions equal llama.cpp's after its own shift of the
// same cache (llama_memory_seq_rm + seq_add, through node-llama-cpp's eraseContextTokenRanges,
// flash attention off), for Normal (stories260K) and NeoX rope (qwen2, qwen3 with its QK norms),
// F32 caches and an F16 one. (The tiny random qwen files are too sensitive for F16 here: F16
// instead of F32 keys alone moves llama.cpp's own top probabilities by 15 %.) Then generate() going past a full context, its bookkeeping and its errors.
//
// The expected values came from the oracle (../shared/oracle) through scripts/oracle/context-shift.mjs:
//   seq.controlledEvaluate(PROMPT); seq.eraseContextTokenRanges([{start: KEEP, end: KEEP + DISCARD}]);
//   seq.controlledEvaluate(NEXT with probabilities)   -> the top 5 of each NEXT position
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "common/error.h"
#include "common/shared_model.h"
#include "common/test_data.h"
#include "runtime/context.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "tokenizer/tokenizer.h"

using namespace minfer;

namespace {

const runtime::Model& model(const std::string& name) { return test::shared_model(name); }

runtime::Context make_context(const runtime::Model& m, GgmlType kv, int64_t n_ctx = 256) {
  runtime::ContextParams p;
  p.n_ctx = n_ctx;
  p.n_threads = 2;
  p.kv_type = kv;
  return runtime::Context(m, p);
}

struct Prob {
  int32_t id;
  double p;
};

struct Case {
  const char* model;
  GgmlType kv;
  std::vector<int32_t> prompt;
  int64_t keep, discard;
  std::vector<int32_t> next;
  std::vector<std::vector<Prob>> want;  // llama.cpp's top 5 after each token of `next`
};

const std::vector<int32_t> kStoriesPrompt = {1,   403, 407, 261, 378, 365, 300, 263, 285, 263, 307, 261,
                                             378, 302, 363, 288, 356, 290, 271, 312, 350, 302, 293, 402,
                                             307, 318, 303, 301, 420, 302, 291, 342, 311, 336, 271};
// "The quick brown fox jumps over the lazy dog. It was a sunny day and the children played in the park."
const std::vector<int32_t> kQwenPrompt = {785, 3974, 13876, 38835, 34208, 916, 279,  15678, 5562, 13,   1084, 572,
                                          264, 39698, 1899, 323,  279,   2841, 6342, 304,  279,  6118, 13};

const Case kCases[] = {
    {"stories260K.gguf", GgmlType::F32, kStoriesPrompt, 5, 12, {300, 263, 285},
     {{{315, 0.287777}, {264, 0.235462}, {419, 0.104673}, {435, 0.104369}, {416, 0.076996}},
      {{415, 0.468485}, {260, 0.292083}, {292, 0.058532}, {389, 0.048505}, {304, 0.047407}},
      {{418, 0.154944}, {416, 0.124606}, {285, 0.115506}, {356, 0.113428}, {421, 0.091813}}}},
    {"stories260K.gguf", GgmlType::F16, kStoriesPrompt, 5, 12, {300, 263, 285},
     {{{315, 0.287311}, {264, 0.235507}, {419, 0.104745}, {435, 0.104369}, {416, 0.077255}},
      {{415, 0.468467}, {260, 0.292314}, {292, 0.058442}, {389, 0.048418}, {304, 0.047509}},
      {{418, 0.155450}, {416, 0.125160}, {285, 0.115169}, {356, 0.113657}, {421, 0.091526}}}},
    {"tiny-qwen3-q4_0.gguf", GgmlType::F32, kQwenPrompt, 3, 9, {576, 3974, 13876},
     {{{122568, 0.009256}, {7101, 0.009148}, {57851, 0.007681}, {93952, 0.007676}, {116747, 0.007581}},
      {{61050, 0.069286}, {138703, 0.008487}, {125380, 0.006959}, {30746, 0.006366}, {5203, 0.006072}},
      {{66173, 0.025325}, {63391, 0.020323}, {10917, 0.017069}, {45409, 0.015034}, {4609, 0.012362}}}},
    {"tiny-qwen2-q8_0.gguf", GgmlType::F32, kQwenPrompt, 4, 10, {576, 3974, 13876},
     {{{91967, 0.039579}, {122507, 0.013934}, {24853, 0.011394}, {134723, 0.008358}, {132819, 0.007390}},
      {{45117, 0.030948}, {62039, 0.021807}, {130560, 0.012390}, {59282, 0.011849}, {31157, 0.009953}},
      {{62039, 0.017733}, {27608, 0.015036}, {89329, 0.014657}, {120538, 0.008581}, {15810, 0.007165}}}},
};

std::vector<double> softmax(std::span<const float> logits) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double z = 0;
  for (size_t i = 0; i < p.size(); ++i) z += p[i] = std::exp(double(logits[i]) - mx);
  for (double& x : p) x /= z;
  return p;
}

// Each row's probabilities of llama.cpp's top tokens, relative to the largest of them.
double worst_error(std::span<const float> rows, int64_t n_vocab, const std::vector<std::vector<Prob>>& want) {
  double worst = 0;
  for (size_t r = 0; r < want.size(); ++r) {
    const std::vector<double> p = softmax(rows.subspan(r * size_t(n_vocab), size_t(n_vocab)));
    for (const Prob& w : want[r]) worst = std::max(worst, std::fabs(p[size_t(w.id)] - w.p) / want[r][0].p);
  }
  return worst;
}

TEST(ContextShift, NextTokenProbabilitiesMatchLlamaCpp) {
  MINFER_REQUIRE_SHARED();
  for (const Case& c : kCases) {
    SCOPED_TRACE(fmt::format("{} KV {}", c.model, type_name(c.kv)));
    const runtime::Model& m = model(c.model);
    runtime::Context ctx = make_context(m, c.kv);
    ctx.decode(c.prompt, 1);
    ctx.shift(c.keep, c.discard);
    ASSERT_EQ(ctx.n_past(), int64_t(c.prompt.size()) - c.discard);
    std::vector<int32_t> kept(c.prompt.begin(), c.prompt.begin() + c.keep);
    kept.insert(kept.end(), c.prompt.begin() + c.keep + c.discard, c.prompt.end());
    EXPECT_EQ(std::vector<int32_t>(ctx.tokens().begin(), ctx.tokens().end()), kept);
    const auto rows = ctx.decode(c.next, int64_t(c.next.size()));
    // F16 keys are rounded again after their rotation, whose sin/cos may differ from ggml's in a
    // last bit: a rounding apart here and there.
    EXPECT_LT(worst_error(rows, m.n_vocab(), c.want), c.kv == GgmlType::F32 ? 2e-3 : 5e-3);

    // Without the keys' rotation the distributions are another model's: the check can tell.
    runtime::Context fresh = make_context(m, c.kv);
    fresh.decode(kept, 1);
    const auto re = fresh.decode(c.next, int64_t(c.next.size()));
    EXPECT_GT(worst_error(re, m.n_vocab(), c.want), 1e-2) << "re-evaluating the kept tokens gives the same";
  }
}

TEST(ContextShift, GraphBuiltOnceAndCounted) {
  MINFER_REQUIRE_SHARED();
  const runtime::Model& m = model("stories260K.gguf");
  runtime::Context ctx = make_context(m, GgmlType::F16, 64);
  ctx.decode(kStoriesPrompt, 1);
  const uint64_t built = ctx.stats().graphs_built;
  ctx.shift(1, 10);
  ctx.decode(std::vector<int32_t>{300}, 1);
  ctx.shift(1, 5);
  EXPECT_EQ(ctx.stats().kv_shifts, 2u);
  EXPECT_EQ(ctx.stats().graphs_built, built + 2);  // the shift graph and the decode graph, once each
  EXPECT_EQ(ctx.n_past(), int64_t(kStoriesPrompt.size()) + 1 - 15);
}

TEST(ContextShift, BadArgumentsAreErrors) {
  MINFER_REQUIRE_SHARED();
  const runtime::Model& m = model("stories260K.gguf");
  runtime::Context ctx = make_context(m, GgmlType::F32, 64);
  ctx.decode(std::vector<int32_t>{1, 403, 407, 261}, 1);
  EXPECT_THROW(ctx.shift(0, 0), Error);
  EXPECT_THROW(ctx.shift(-1, 1), Error);
  EXPECT_THROW(ctx.shift(2, 3), Error);  // past n_past
  EXPECT_EQ(ctx.n_past(), 4);
  ctx.shift(2, 2);
  EXPECT_EQ(ctx.n_past(), 2);
}

runtime::GenerateResult greedy(runtime::Context& ctx, const runtime::Model& m, std::span<const int32_t> prompt,
                               runtime::GenerateOptions go) {
  runtime::SamplerParams sp;
  sp.temp = 0;
  runtime::Sampler sampler(sp);
  return runtime::generate(ctx, m.tokenizer(), sampler, prompt, go, nullptr);
}

TEST(ContextShift, GenerationGoesPastAFullContext) {
  MINFER_REQUIRE_SHARED();
  const runtime::Model& m = model("stories260K.gguf");
  const std::vector<int32_t> prompt(kStoriesPrompt.begin(), kStoriesPrompt.begin() + 6);
  runtime::GenerateOptions go;
  go.n_predict = 150;
  go.ignore_eog = true;

  runtime::Context plain = make_context(m, GgmlType::F16, 64);
  const auto cut = greedy(plain, m, prompt, go);
  EXPECT_EQ(cut.reason, runtime::StopReason::ContextFull);
  EXPECT_EQ(cut.tokens.size(), size_t(64 - 6 + 1));

  runtime::Context ctx = make_context(m, GgmlType::F16, 64);
  go.context_shift = true;
  go.n_keep = 6;  // the whole prompt, as --keep -1
  const auto res = greedy(ctx, m, prompt, go);
  EXPECT_EQ(res.reason, runtime::StopReason::Length);
  ASSERT_EQ(res.tokens.size(), 150u);
  // Up to the first shift the text is the unshifted one.
  EXPECT_TRUE(std::equal(cut.tokens.begin(), cut.tokens.end(), res.tokens.begin()));
  // Shifts of half the tokens after the prompt: 64 -> 35 (29 dropped), then 29 each time a
  // context of 64 fills again; the cache holds the prompt, then the latest tokens.
  const int64_t total = 6 + 149;  // the last sampled token is not decoded
  EXPECT_EQ(res.n_discarded, total - ctx.n_past());
  EXPECT_GE(res.n_context_shifts, 3);
  EXPECT_EQ(res.n_tokens_in_kv, 149);
  std::vector<int32_t> want(prompt.begin(), prompt.end());
  want.insert(want.end(), res.tokens.end() - 1 - (ctx.n_past() - 6), res.tokens.end() - 1);
  EXPECT_EQ(std::vector<int32_t>(ctx.tokens().begin(), ctx.tokens().end()), want);
}

TEST(ContextShift, DiscardCountAndKeepLimits) {
  MINFER_REQUIRE_SHARED();
  const runtime::Model& m = model("stories260K.gguf");
  const std::vector<int32_t> prompt(kStoriesPrompt.begin(), kStoriesPrompt.begin() + 6);
  runtime::GenerateOptions go;
  go.n_predict = 100;
  go.ignore_eog = true;
  go.context_shift = true;
  go.n_keep = 1;
  go.n_discard = 7;
  runtime::Context ctx = make_context(m, GgmlType::F32, 32);
  auto res = greedy(ctx, m, prompt, go);
  EXPECT_EQ(res.tokens.size(), 100u);
  EXPECT_EQ(res.n_discarded, 7 * res.n_context_shifts);
  EXPECT_EQ(ctx.tokens()[0], prompt[0]);

  // A negative n_keep keeps nothing (no error).
  runtime::Context neg = make_context(m, GgmlType::F32, 32);
  go.n_keep = -5;
  go.n_discard = 0;
  res = greedy(neg, m, prompt, go);
  EXPECT_EQ(res.tokens.size(), 100u);
  EXPECT_GE(res.n_context_shifts, 1);

  // Nothing can go when everything is kept: the context fills as without a shift.
  runtime::Context full = make_context(m, GgmlType::F32, 32);
  go.n_keep = 40;
  go.n_discard = 0;
  res = greedy(full, m, prompt, go);
  EXPECT_EQ(res.reason, runtime::StopReason::ContextFull);
  EXPECT_EQ(res.n_context_shifts, 0);
}

TEST(ContextShift, APromptMustFitBehindTheKeptTokens) {
  MINFER_REQUIRE_SHARED();
  const runtime::Model& m = model("stories260K.gguf");
  runtime::GenerateOptions go;
  go.n_predict = 4;
  go.context_shift = true;
  runtime::Context ctx = make_context(m, GgmlType::F32, 16);
  EXPECT_THROW(greedy(ctx, m, kStoriesPrompt, go), Error);  // 35 tokens, context 16
  // A second prompt that does not fit after the first: the old tokens after n_keep make room.
  ctx.decode(std::vector<int32_t>(kStoriesPrompt.begin(), kStoriesPrompt.begin() + 12), 1);
  go.n_keep = 1;
  const std::vector<int32_t> more(kStoriesPrompt.begin() + 12, kStoriesPrompt.begin() + 20);
  const auto res = greedy(ctx, m, more, go);
  EXPECT_EQ(res.tokens.size(), 4u);
  EXPECT_GE(res.n_context_shifts, 1);
  EXPECT_EQ(ctx.n_past(), 12 + 8 + 3 - res.n_discarded);
  EXPECT_EQ(ctx.tokens()[0], kStoriesPrompt[0]);
  EXPECT_TRUE(std::equal(res.tokens.begin(), res.tokens.end() - 1, ctx.tokens().end() - 3));
}

}  // namespace
