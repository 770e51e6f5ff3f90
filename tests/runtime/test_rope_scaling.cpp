// Rope scaling read from a GGUF file (rope.scaling.type / factor / original_context_length /
// attn_factor), end to end against llama.cpp (oracle_logprobs.h): the shared tiny models
// rewritten with the keys. minfer and llama.cpp agreed to 1e-6 on this machine; the bound
// leaves room for other instruction sets' sums and is far below what a missed scaling moves (the
// unscaled model's top-1 differs at every checked position).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "common/rewritten_model.h"
#include "common/test_data.h"
#include "oracle_logprobs.h"
#include "gguf/gguf.h"
#include "runtime/model.h"

using namespace minfer;

namespace {

// `base` from ../shared/models with `keys` set, loaded.
std::unique_ptr<runtime::Model> rewritten(const std::string& base, const std::vector<gguf::KV>& keys) {
  const test::RewrittenModel copy(base, [&](gguf::Writer& w) {
    for (const auto& kv : keys) w.set(kv.key, kv.value);
  });
  return runtime::Model::load(copy.path());
}

// Qwen's YaRN setting (factor 4 over an original context) on a qwen3 file: the ramp between
// scaled and unscaled angles and YaRN's magnitude factor.
TEST(RopeScaling, YarnMatchesLlamaCpp) {
  MINFER_REQUIRE_SHARED();
  auto m = rewritten("tiny-qwen3-q4_0.gguf", {{"qwen3.rope.scaling.type", gguf::Value::str("yarn")},
                                               {"qwen3.rope.scaling.factor", gguf::Value::f32(4.0f)},
                                               {"qwen3.rope.scaling.original_context_length", gguf::Value::u32(10240)}});
  test::expect_oracle_logprobs(*m, {{4, {{58761, -3.707920}, {102630, -4.071634}, {49663, -4.251851}}},
             {11, {{97101, -3.881077}, {11389, -3.948049}, {109395, -4.502245}}},
             {19, {{13532, -3.986011}, {146859, -4.121315}, {28578, -4.281716}}}});
}

// Linear scaling with rope.scaling.attn_factor (cos and sin scaled by it) on a qwen2 file.
TEST(RopeScaling, LinearWithAttnFactorMatchesLlamaCpp) {
  MINFER_REQUIRE_SHARED();
  auto m = rewritten("tiny-qwen2-q8_0.gguf", {{"qwen2.rope.scaling.type", gguf::Value::str("linear")},
                                               {"qwen2.rope.scaling.factor", gguf::Value::f32(2.0f)},
                                               {"qwen2.rope.scaling.attn_factor", gguf::Value::f32(1.3f)}});
  test::expect_oracle_logprobs(*m, {{4, {{96463, -3.981890}, {134386, -4.192237}, {69577, -4.207070}}},
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

// The same YaRN setting given as load-time overrides (the CLI's --rope-scaling yarn --rope-scale 4
// --yarn-orig-ctx 10240, or --override-kv) on the unmodified file: llama.cpp's numbers again.
TEST(RopeScaling, OverridesAtLoadAreTheKeys) {
  MINFER_REQUIRE_SHARED();
  runtime::LoadOptions lo;
  lo.kv_overrides = {{"{arch}.rope.scaling.type", gguf::Value::str("yarn")},
                     {"{arch}.rope.scaling.factor", gguf::Value::f64(4.0)},
                     {"{arch}.rope.scaling.original_context_length", gguf::Value::i64(10240)}};
  auto m = runtime::Model::load(test::shared_path("models/tiny-qwen3-q4_0.gguf"), lo);
  EXPECT_EQ(m->hparams().rope_freq_scale, 0.25f);
  test::expect_oracle_logprobs(*m, {{4, {{58761, -3.707920}, {102630, -4.071634}, {49663, -4.251851}}},
             {11, {{97101, -3.881077}, {11389, -3.948049}, {109395, -4.502245}}},
             {19, {{13532, -3.986011}, {146859, -4.121315}, {28578, -4.281716}}}});
  lo.kv_overrides = {{"{arch}.rope.scaling.type", gguf::Value::str("sideways")}};
  EXPECT_THROW(runtime::Model::load(test::shared_path("models/tiny-qwen3-q4_0.gguf"), lo), Error);
}
