// The engine against llama.cpp's outputs (../shared/golden/models, README "How to compare an
// engine"): teacher-forced distributions of prompt ++ greedy ids in ONE prefill with an F32
// KV cache, and the 64-token greedy continuations of stories260K decoded token by token.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include <nlohmann/json.hpp>
#include <fstream>

#include "common/shared_model.h"
#include "common/test_data.h"
#include "golden.h"
#include "runtime/context.h"
#include "runtime/logprobs.h"
#include "runtime/model.h"
#include "tokenizer/tokenizer.h"

using namespace minfer;

namespace {

const runtime::Model& model(const std::string& name) { return test::shared_model(name); }

int32_t argmax(std::span<const float> x) {
  int32_t best = 0;
  for (size_t i = 1; i < x.size(); ++i)
    if (x[i] > x[size_t(best)]) best = int32_t(i);  // ties -> lowest id, as llama.cpp's greedy
  return best;
}

class Golden : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(Golden, TeacherForcedDistributions) {
  MINFER_REQUIRE_SHARED();
  const test::GoldenFile g = test::read_golden(GetParam());
  const runtime::Model& m = model(g.model);
  std::vector<int32_t> ids = g.prompt_ids;
  ids.insert(ids.end(), g.greedy_ids.begin(), g.greedy_ids.end());
  ASSERT_EQ(ids.size(), g.positions.size());

  runtime::ContextParams cp;
  cp.n_ctx = 256;  // the goldens' setting
  cp.kv_type = GgmlType::F32;
  runtime::Context ctx(m, cp);
  const int64_t nt = int64_t(ids.size());
  std::span<const float> logits = ctx.decode(ids, nt);
  const int64_t nv = m.n_vocab();
  std::vector<std::vector<double>> lp;
  for (int64_t r = 0; r < nt; ++r) lp.push_back(runtime::log_softmax(logits.subspan(size_t(r * nv), size_t(nv))));

  const test::Tolerance tol = test::tolerance_for(g.weight_type);
  const test::Comparison c = test::compare(g, lp, tol);
  std::printf("  %s [%s]: max |dlogprob| %.3g, mean %.3g, top-1 disagreements %d, intruders %d (%s)\n",
              g.path.substr(g.path.rfind('/') + 1).c_str(), g.weight_type.c_str(), c.max_abs,
              c.mean_abs, c.top1_disagreements, c.intruders, c.worst.c_str());
  EXPECT_LE(c.max_abs, tol.max_abs) << c.worst;
  EXPECT_EQ(c.top1_disagreements, 0);
  EXPECT_EQ(c.intruders, 0);
  if (tol.mean >= 0) {
    EXPECT_LE(c.mean_abs, tol.mean);
  }
}

// README step 1, through Model's tokenizer (BOS per the model, special tokens parsed).
TEST_P(Golden, Tokenization) {
  MINFER_REQUIRE_SHARED();
  std::ifstream in(GetParam());
  const nlohmann::json j = nlohmann::json::parse(in);
  const runtime::Model& m = model(j.at("model").get<std::string>());
  const auto ids = m.tokenizer().encode(j.at("prompt_text").get<std::string>(),
                                        j.at("add_bos").get<bool>(), true);
  EXPECT_EQ(ids, j.at("prompt_ids").get<std::vector<int32_t>>());
}

INSTANTIATE_TEST_SUITE_P(Models, Golden, ::testing::ValuesIn(test::golden_files()),
                         [](const auto& info) {
                           std::string s = info.param.substr(info.param.rfind('/') + 1);
                           for (char& ch : s)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

TEST(Golden64, StoriesGreedyTokenByToken) {
  MINFER_REQUIRE_SHARED();
  std::ifstream in(test::shared_path("golden/models/stories260K.greedy64.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  const runtime::Model& m = model(j.at("model").get<std::string>());
  for (const auto& c : j.at("cases")) {
    const auto prompt = c.at("prompt_ids").get<std::vector<int32_t>>();
    const auto expected = c.at("greedy").at("ids").get<std::vector<int32_t>>();
    runtime::Context ctx(m, {});
    int32_t next = argmax(ctx.decode(prompt));
    std::vector<int32_t> got;
    for (size_t k = 0; k < expected.size(); ++k) {
      got.push_back(next);
      if (k + 1 < expected.size()) next = argmax(ctx.decode(std::span<const int32_t>(&next, 1)));
    }
    EXPECT_EQ(got, expected) << c.at("prompt_text").get<std::string>();
    // The decode graph was built once and replayed for every other step.
    EXPECT_EQ(ctx.stats().graphs_built, 2u);
    EXPECT_EQ(ctx.stats().graph_reuses, expected.size() - 2);
  }
}
