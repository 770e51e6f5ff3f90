// Rope scaling read from a GGUF file (rope.scaling.type / factor / original_context_length /
// attn_factor), end to end against llama.cpp: the shared tiny models rewritten with the keys, a
// 20-token prompt decoded in one batch with an F32 cache, and the top-3 log-probabilities at three
// positions compared with what the oracle (llama.cpp v0.4.0, `oracle.mjs --probs-all`, F32 KV,
// flash attention off) printed for the same rewritten files. minfer and llama.cpp agreed to
// 1e-6 on this machine; the bound leaves room for other instruction sets' sums and is far below
// what a missed scaling moves (the unscaled model's top-1 differs at every checked position).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "common/rewritten_model.h"
#include "common/test_data.h"
#include "gguf/gguf.h"
#include "runtime/context.h"
#include "runtime/logprobs.h"
#include "runtime/model.h"

using namespace minfer;

namespace {

struct Expected {
  int64_t pos;
  std::vector<std::pair<int32_t, double>> top;  // (id, logprob), best first
};

const std::vector<int32_t> kPrompt = {9707, 11,   1879,  374,   264,   1273, 315,  279,  11358, 1849,
                                      13,   576,  3974,  13876, 38835, 3554, 1052, 2662, 323,   264};

// `base` from ../shared/models with `keys` set, loaded.
std::unique_ptr<runtime::Model> rewritten(const std::string& base, const std::vector<gguf::KV>& keys) {
  const test::RewrittenModel copy(base, [&](gguf::Writer& w) {
    for (const auto& kv : keys) w.set(kv.key, kv.value);
  });
  return runtime::Model::load(copy.path());
}

void check(const runtime::Model& m, const std::vector<Expected>& expected) {
  runtime::ContextParams cp;
  cp.n_ctx = 256;
  cp.kv_type = GgmlType::F32;
  runtime::Context ctx(m, cp);
  const int64_t nt = int64_t(kPrompt.size());
  std::span<const float> logits = ctx.decode(kPrompt, nt);
  const int64_t nv = m.n_vocab();
  for (const Expected& e : expected) {
    const std::vector<double> lp = runtime::log_softmax(logits.subspan(size_t(e.pos * nv), size_t(nv)));
    for (const auto& [id, want] : e.top) EXPECT_NEAR(lp[size_t(id)], want, 0.01) << "pos " << e.pos << " id " << id;
    int32_t best = 0;
    for (int32_t i = 1; i < int32_t(nv); ++i)
      if (lp[size_t(i)] > lp[size_t(best)]) best = i;
    EXPECT_EQ(best, e.top[0].first) << "pos " << e.pos;
  }
}

// Qwen's YaRN setting (factor 4 over an original context) on a qwen3 file: the ramp between
// scaled and unscaled angles and YaRN's magnitude factor.
TEST(RopeScaling, YarnMatchesLlamaCpp) {
  MINFER_REQUIRE_SHARED();
  auto m = rewritten("tiny-qwen3-q4_0.gguf", {{"qwen3.rope.scaling.type", gguf::Value::str("yarn")},
                                               {"qwen3.rope.scaling.factor", gguf::Value::f32(4.0f)},
                                               {"qwen3.rope.scaling.original_context_length", gguf::Value::u32(10240)}});
  check(*m, {{4, {{58761, -3.707920}, {102630, -4.071634}, {49663, -4.251851}}},
             {11, {{97101, -3.881077}, {11389, -3.948049}, {109395, -4.502245}}},
             {19, {{13532, -3.986011}, {146859, -4.121315}, {28578, -4.281716}}}});
}

// Linear scaling with rope.scaling.attn_factor (cos and sin scaled by it) on a qwen2 file.
TEST(RopeScaling, LinearWithAttnFactorMatchesLlamaCpp) {
  MINFER_REQUIRE_SHARED();
  auto m = rewritten("tiny-qwen2-q8_0.gguf", {{"qwen2.rope.scaling.type", gguf::Value::str("linear")},
                                               {"qwen2.rope.scaling.factor", gguf::Value::f32(2.0f)},
                                               {"qwen2.rope.scaling.attn_factor", gguf::Value::f32(1.3f)}});
  check(*m, {{4, {{96463, -3.981890}, {134386, -4.192237}, {69577, -4.207070}}},
             {11, {{136291, -3.062430}, {97448, -4.049441}, {91002, -4.181194}}},
             {19, {{29623, -3.768343}, {45969, -4.034951}, {53524, -4.298710}}}});
}

// Type "none" ignores the factor (llama.cpp: "never scale if scaling type is none"); an unknown
// type is refused at load.
TEST(RopeScaling, NoneIgnoresTheFactorAndUnknownTypesAreRefused) {
  MINFER_REQUIRE_SHARED();
  auto none = rewritten("tiny-qwen2-q8_0.gguf", {{"qwen2.rope.scaling.type", gguf::Value::str("none")},
                                                  {"qwen2.rope.scaling.factor", gguf::Value::f32(4.0f)}});
  EXPECT_EQ(none->hparams().rope_freq_scale, 1.0f);
  auto plain = runtime::Model::load(test::shared_path("models/tiny-qwen2-q8_0.gguf"));
  EXPECT_EQ(none->hparams().rope_yarn, plain->hparams().rope_yarn);
  try {
    rewritten("tiny-qwen2-q8_0.gguf", {{"qwen2.rope.scaling.type", gguf::Value::str("longrope")}});
    ADD_FAILURE() << "longrope was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rope scaling type 'longrope' is not supported"), std::string::npos) << e.what();
  }
}

}  // namespace
