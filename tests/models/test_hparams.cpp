// HParams from the real model files (values as DATA.md lists them) and the errors for an
// unknown architecture, a missing tensor and a wrong shape.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "common/error.h"
#include "common/rewritten_model.h"
#include "common/test_data.h"
#include "gguf/gguf.h"
#include "models/hparams.h"
#include "models/tensors.h"

using namespace minfer;
using namespace minfer::models;

namespace {

HParams load(const std::string& rel) {
  auto f = gguf::File::open(test::shared_path(rel));
  return hparams_from_gguf(*f, TensorTable::from_gguf(*f));
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A descriptor-only table of a tiny llama: 1 layer, n_embd 8, 2 heads, 1 KV head, ff 16.
HParams tiny_hp() {
  HParams hp;
  hp.arch = Arch::Llama;
  hp.n_vocab = 10;
  hp.n_ctx_train = 64;
  hp.n_embd = 8;
  hp.n_layer = 1;
  hp.n_ff = 16;
  hp.n_head = 2;
  hp.n_head_kv = 1;
  hp.head_dim = hp.head_dim_v = hp.n_rot = 4;
  hp.tied_output = true;
  return hp;
}

TensorTable tiny_table() {
  TensorTable t("tiny");
  auto add = [&](const std::string& n, int64_t a, int64_t b) {
    t.add({n, GgmlType::F32, {a, b, 1, 1}, nullptr});
  };
  add("token_embd.weight", 8, 10);
  add("output_norm.weight", 8, 1);
  add("blk.0.attn_norm.weight", 8, 1);
  add("blk.0.attn_q.weight", 8, 8);
  add("blk.0.attn_k.weight", 8, 4);
  add("blk.0.attn_v.weight", 8, 4);
  add("blk.0.attn_output.weight", 8, 8);
  add("blk.0.ffn_norm.weight", 8, 1);
  add("blk.0.ffn_gate.weight", 8, 16);
  add("blk.0.ffn_up.weight", 8, 16);
  add("blk.0.ffn_down.weight", 16, 8);
  return t;
}

}  // namespace

TEST(HParams, Stories260K) {
  MINFER_REQUIRE_SHARED();
  HParams hp = load("models/stories260K.gguf");
  EXPECT_EQ(hp.arch, Arch::Llama);
  EXPECT_EQ(hp.n_ctx_train, 2048);
  EXPECT_EQ(hp.n_embd, 64);
  EXPECT_EQ(hp.n_ff, 172);
  EXPECT_EQ(hp.n_layer, 5);
  EXPECT_EQ(hp.n_head, 8);
  EXPECT_EQ(hp.n_head_kv, 4);
  EXPECT_EQ(hp.head_dim, 8);
  EXPECT_EQ(hp.head_dim_v, 8);
  EXPECT_EQ(hp.n_rot, 8);
  EXPECT_EQ(hp.n_vocab, 512);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 10000.0f);  // no key: llama.cpp's default
  EXPECT_FLOAT_EQ(hp.rope_freq_scale, 1.0f);
  EXPECT_FLOAT_EQ(hp.rms_eps, 1e-5f);
  EXPECT_FALSE(hp.neox_rope);
  EXPECT_FALSE(hp.tied_output);
  EXPECT_FALSE(hp.qkv_bias);
  EXPECT_FALSE(hp.qk_norm);
}

TEST(HParams, TinyQwen2HasBiasesAndTiedOutput) {
  MINFER_REQUIRE_SHARED();
  HParams hp = load("models/tiny-qwen2-q8_0.gguf");
  EXPECT_EQ(hp.arch, Arch::Qwen2);
  EXPECT_EQ(hp.n_layer, 2);
  EXPECT_EQ(hp.n_embd, 128);
  EXPECT_EQ(hp.n_ff, 384);
  EXPECT_EQ(hp.n_head, 4);
  EXPECT_EQ(hp.n_head_kv, 2);
  EXPECT_EQ(hp.head_dim, 32);
  EXPECT_EQ(hp.n_vocab, 151936);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 1e6f);
  EXPECT_FLOAT_EQ(hp.rms_eps, 1e-6f);
  EXPECT_TRUE(hp.neox_rope);
  EXPECT_TRUE(hp.tied_output);
  EXPECT_TRUE(hp.qkv_bias);
  EXPECT_FALSE(hp.qk_norm);
}

TEST(HParams, TinyQwen3HeadDimFromKeyLength) {
  MINFER_REQUIRE_SHARED();
  HParams hp = load("models/tiny-qwen3-q4_0.gguf");
  EXPECT_EQ(hp.arch, Arch::Qwen3);
  EXPECT_EQ(hp.n_layer, 3);
  EXPECT_EQ(hp.head_dim, 64);  // key_length: q is 256 wide although n_embd is 128
  EXPECT_EQ(hp.n_embd_q(), 256);
  EXPECT_EQ(hp.n_embd_k(), 128);
  EXPECT_TRUE(hp.qk_norm);
  EXPECT_FALSE(hp.qkv_bias);
  EXPECT_TRUE(hp.tied_output);
}

TEST(HParams, F16Llama) {
  MINFER_REQUIRE_SHARED();
  HParams hp = load("models/llama-2-tiny-random.gguf");
  EXPECT_EQ(hp.n_embd, 8);
  EXPECT_EQ(hp.n_vocab, 32000);
  EXPECT_EQ(hp.head_dim, 4);
  EXPECT_EQ(hp.n_ctx_train, 4096);
}

TEST(HParams, UnknownArchitecture) {
  MINFER_REQUIRE_SHARED();
  std::string msg = error_of([] { load("vocab/ggml-vocab-phi-3.gguf"); });
  EXPECT_NE(msg.find("unsupported architecture 'phi3'"), std::string::npos) << msg;
}

TEST(HParams, TinyTableIsComplete) {
  EXPECT_NO_THROW(check_tensors(tiny_hp(), tiny_table()));
}

TEST(HParams, MissingTensorIsNamed) {
  TensorTable t = tiny_table();
  TensorTable u("tiny");
  for (const char* n : {"token_embd.weight", "output_norm.weight", "blk.0.attn_norm.weight",
                        "blk.0.attn_q.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight",
                        "blk.0.ffn_norm.weight", "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight",
                        "blk.0.ffn_down.weight"})
    u.add(t.get(n));
  std::string msg = error_of([&] { check_tensors(tiny_hp(), u); });
  EXPECT_NE(msg.find("missing tensor blk.0.attn_k.weight"), std::string::npos) << msg;
}

TEST(HParams, WrongShapeIsNamed) {
  TensorTable t = tiny_table();
  t.add({"blk.0.attn_k.weight", GgmlType::F32, {8, 8, 1, 1}, nullptr});
  std::string msg = error_of([&] { check_tensors(tiny_hp(), t); });
  EXPECT_NE(msg.find("blk.0.attn_k.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[8, 4] expected"), std::string::npos) << msg;
}

TEST(HParams, BiasRequiredWhenDeclared) {
  HParams hp = tiny_hp();
  hp.qkv_bias = true;
  std::string msg = error_of([&] { check_tensors(hp, tiny_table()); });
  EXPECT_NE(msg.find("missing tensor blk.0.attn_q.bias"), std::string::npos) << msg;
}

TEST(HParams, ArchNames) {
  EXPECT_EQ(arch_from_name("qwen2"), Arch::Qwen2);
  EXPECT_THROW(arch_from_name("gemma"), Error);
}

namespace {

HParams load_abs(const std::string& path) {
  auto f = gguf::File::open(path);
  return hparams_from_gguf(*f, TensorTable::from_gguf(*f));
}

// stories260K with `edit` applied to its keys.
HParams load_edited(const std::function<void(gguf::Writer&)>& edit) {
  const test::RewrittenModel copy("stories260K.gguf", edit);
  return load_abs(copy.path());
}

}  // namespace

TEST(HParams, LinearRopeScaling) {
  MINFER_REQUIRE_SHARED();
  HParams hp = load_edited([](gguf::Writer& w) {
    w.set("llama.rope.scaling.type", gguf::Value::str("linear"));
    w.set("llama.rope.scaling.factor", gguf::Value::f32(4.0f));
    w.set("llama.rope.freq_base", gguf::Value::f32(500000.0f));
  });
  EXPECT_FLOAT_EQ(hp.rope_freq_scale, 0.25f);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 500000.0f);
  EXPECT_EQ(hp.rope_yarn, (graph::RopeYarn{0.0f, 1.0f, 32.0f, 1.0f, hp.n_ctx_train}));
}

// YaRN as llama.cpp's context sets it up: ext_factor 1, beta 32 / 1, the original context from
// its key (else the trained one), and the magnitude factor get_mscale(4) / (1 + 0.1 ln 4) times
// rope.scaling.attn_factor.
TEST(HParams, YarnRopeScaling) {
  MINFER_REQUIRE_SHARED();
  HParams hp = load_edited([](gguf::Writer& w) {
    w.set("llama.rope.scaling.type", gguf::Value::str("yarn"));
    w.set("llama.rope.scaling.factor", gguf::Value::f32(4.0f));
    w.set("llama.rope.scaling.original_context_length", gguf::Value::u32(8192));
    w.set("llama.rope.scaling.attn_factor", gguf::Value::f32(2.0f));
  });
  EXPECT_FLOAT_EQ(hp.rope_freq_scale, 0.25f);
  EXPECT_EQ(hp.rope_yarn.ext_factor, 1.0f);
  EXPECT_EQ(hp.rope_yarn.beta_fast, 32.0f);
  EXPECT_EQ(hp.rope_yarn.beta_slow, 1.0f);
  EXPECT_EQ(hp.rope_yarn.n_ctx_orig, 8192);
  const float m = 0.1f * std::log(4.0f) + 1.0f;
  EXPECT_FLOAT_EQ(hp.rope_yarn.attn_factor, m * (1.0f / (1.0f + 0.1f * std::log(4.0f))) * 2.0f);
  const std::string msg = error_of([&] {
    load_edited([](gguf::Writer& w) { w.set("llama.rope.scaling.type", gguf::Value::str("longrope")); });
  });
  EXPECT_NE(msg.find("rope scaling type 'longrope'"), std::string::npos) << msg;
}

// A Mixtral-style file (arch llama with experts) is refused by name, not by a missing tensor.
TEST(HParams, MixtureOfExpertsIsRefused) {
  MINFER_REQUIRE_SHARED();
  const std::string msg = error_of([&] {
    load_edited([](gguf::Writer& w) { w.set("llama.expert_count", gguf::Value::u32(8)); });
  });
  EXPECT_NE(msg.find("mixture-of-experts models (llama.expert_count = 8) are not supported"), std::string::npos)
      << msg;
  HParams dense = load_edited([](gguf::Writer& w) { w.set("llama.expert_count", gguf::Value::u32(0)); });
  EXPECT_EQ(dense.n_layer, 5);
}

TEST(HParams, MissingKeyIsNamed) {
  MINFER_REQUIRE_SHARED();
  std::string msg = error_of([&] { load_edited([](gguf::Writer& w) { w.remove("llama.block_count"); }); });
  EXPECT_NE(msg.find("missing key llama.block_count"), std::string::npos) << msg;
}

TEST(HParams, BadHeadCountIsAnError) {
  MINFER_REQUIRE_SHARED();
  std::string msg = error_of([&] {
    load_edited([](gguf::Writer& w) { w.set("llama.attention.head_count_kv", gguf::Value::u32(3)); });
  });
  EXPECT_NE(msg.find("head_count_kv = 3"), std::string::npos) << msg;
}
