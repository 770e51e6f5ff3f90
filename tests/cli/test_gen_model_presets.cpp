// Every gen-model preset at its real widths and with its real vocabulary, cut to one layer (the
// full files are GBs), in each of Q8_0 and Q4_0 (written directly) and Q4_K_M (an F16 file
// through `quantize`, as users make one): each loads, runs a token, and `minfer inspect --json`
// reports the tensors, types and hyper-parameters the preset and llama-quantize's rules give.
// The expected Q4_K_M types are written here from llama.cpp's llama_tensor_get_type, not taken
// from tools/quantize_rules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/test_data.h"
#include "gguf/gguf.h"
#include "models/hparams.h"
#include "runtime/context.h"
#include "runtime/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/gen_model.h"
#include "tools/quantize.h"

using namespace minfer;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

fs::path temp_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("minfer-presets-" + std::to_string(::getpid()) + "-" + tag);
  fs::create_directories(d);
  return d;
}

struct Case {
  std::string preset;
  std::string tokenizer;  // relative to ../shared
  int64_t n_vocab;        // the checkpoint's embedding rows
};

std::string print(const testing::TestParamInfo<Case>& i) {
  std::string s = i.param.preset;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

const std::string kQwen = "tokenizers/qwen3/tokenizer.json";
const std::string kLlama3 = "tokenizers/llama3/tokenizer.json";
const std::string kLlama2 = "models/llama-2-tiny-random.gguf";  // the 32000-token Llama 2 SPM

json inspect(const std::string& path) {
  const std::string cmd = std::string(MINFER_BINARY) + " inspect --json '" + path + "'";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return json();
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (::pclose(p) != 0) return json();
  return json::parse(out, nullptr, false);
}

enum class Mix { Q8_0, Q4_0, Q4_K_M };

// llama-quantize's Q4_K_M for a one-layer model (use_more_bits(0, 1) holds), then its fallback
// for rows that are not whole 256-blocks.
GgmlType q4_k_m_type(const std::string& name, int64_t ne0, bool tied) {
  auto fit = [&](GgmlType t) {
    if (ne0 % 256 == 0) return t;
    return t == GgmlType::Q6_K ? GgmlType::Q8_0 : GgmlType::Q5_0;  // Q4_K -> Q5_0
  };
  if (name == "output.weight" || (tied && name == "token_embd.weight"))
    return ne0 % 256 != 0 ? GgmlType::Q8_0 : GgmlType::Q6_K;
  if (name.ends_with("attn_v.weight") || name.ends_with("ffn_down.weight")) return fit(GgmlType::Q6_K);
  return fit(GgmlType::Q4_K);
}

GgmlType expected_type(Mix mix, const tools::TensorSpec& t, bool tied) {
  if (t.ne.size() == 1) return GgmlType::F32;
  const bool embd_or_out = t.name == "token_embd.weight" || t.name == "output.weight";
  switch (mix) {
    case Mix::Q8_0: return GgmlType::Q8_0;
    case Mix::Q4_0: return embd_or_out ? GgmlType::Q8_0 : GgmlType::Q4_0;  // gen-model's rule
    case Mix::Q4_K_M: return q4_k_m_type(t.name, t.ne[0], tied);
  }
  return GgmlType::F32;
}

class Presets : public testing::TestWithParam<Case> {};

void check_model(const Case& c, Mix mix, const std::string& path, const char* file_type) {
  SCOPED_TRACE(path);
  tools::ModelPreset p = tools::find_preset(c.preset);
  p.n_layer = 1;
  const auto plan = tools::tensor_plan(p, c.n_vocab, GgmlType::F32, GgmlType::F32, GgmlType::F32);

  auto model = runtime::Model::load(path);
  const models::HParams& hp = model->hparams();
  EXPECT_EQ(hp.n_layer, 1);
  EXPECT_EQ(hp.n_embd, p.n_embd);
  EXPECT_EQ(hp.n_head, p.n_head);
  EXPECT_EQ(hp.n_head_kv, p.n_head_kv);
  EXPECT_EQ(hp.head_dim, p.head_dim);
  EXPECT_EQ(hp.n_vocab, c.n_vocab);
  EXPECT_EQ(hp.tied_output, p.tied);
  EXPECT_EQ(hp.rope_freqs, p.rope_llama3_factor > 0);
  EXPECT_EQ(model->tokenizer().n_vocab(), c.n_vocab);
  // One token through the whole pipeline: finite logits over the padded vocabulary.
  runtime::ContextParams cp;
  cp.n_ctx = 16;
  runtime::Context ctx(*model, cp);
  const int32_t tok = 1;
  const auto logits = ctx.decode(std::span<const int32_t>(&tok, 1));
  ASSERT_EQ(int64_t(logits.size()), c.n_vocab);
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
  model.reset();
  // Fixed-content tensors (rope_freqs.weight) hold exactly the planned values.
  auto file = gguf::File::open(path);
  for (const auto& t : plan) {
    if (t.values.empty()) continue;
    const auto* ti = file->find_tensor(t.name);
    ASSERT_NE(ti, nullptr) << t.name;
    ASSERT_EQ(ti->nbytes, t.values.size() * sizeof(float)) << t.name;
    EXPECT_EQ(std::memcmp(ti->data, t.values.data(), ti->nbytes), 0) << t.name;
  }

  const json j = inspect(path);
  ASSERT_TRUE(j.is_object()) << "minfer inspect --json failed on " << path;
  EXPECT_EQ(j["architecture"], p.arch);
  const json& h = j["hparams"];
  EXPECT_EQ(h["block_count"], 1);
  EXPECT_EQ(h["embedding_length"], p.n_embd);
  EXPECT_EQ(h["feed_forward_length"], p.n_ff);
  EXPECT_EQ(h["head_count"], p.n_head);
  EXPECT_EQ(h["head_count_kv"], p.n_head_kv);
  EXPECT_EQ(h["key_length"], p.head_dim);
  EXPECT_EQ(h["context_length"], p.n_ctx_train);
  EXPECT_EQ(h["vocab_size"], c.n_vocab);
  EXPECT_EQ(h["tied_output"], p.tied);
  EXPECT_NE(h["file_type"].get<std::string>().find(file_type), std::string::npos) << h["file_type"];

  const json& ts = j["tensors"];
  ASSERT_EQ(ts.size(), plan.size());
  std::map<std::string, json> by_name;
  for (const json& t : ts) by_name[t["name"].get<std::string>()] = t;
  for (const auto& t : plan) {
    ASSERT_TRUE(by_name.count(t.name)) << t.name << " missing";
    const json& got = by_name[t.name];
    EXPECT_EQ(got["type"], std::string(type_name(expected_type(mix, t, p.tied)))) << t.name;
    EXPECT_EQ(got["shape"], json(t.ne)) << t.name;
  }
}

}  // namespace

TEST_P(Presets, OneLayerInQ8_0Q4_0AndQ4_K_MLoadsRunsAndInspects) {
  MINFER_REQUIRE_SHARED();
  const Case& c = GetParam();
  const fs::path d = temp_dir(print({c, 0}));
  tools::GenModelOptions o;
  o.preset = c.preset;
  o.n_layer = 1;
  o.tokenizer = test::shared_path(c.tokenizer);
  for (auto [t, mix, name] : {std::tuple{GgmlType::Q8_0, Mix::Q8_0, "Q8_0"},
                              std::tuple{GgmlType::Q4_0, Mix::Q4_0, "Q4_0"}}) {
    o.type = t;
    const std::string path = (d / (std::string(name) + ".gguf")).string();
    EXPECT_EQ(tools::generate_model(o, path).n_vocab, c.n_vocab);
    check_model(c, mix, path, name);
    // The written file's tokenizer keys (already padded) feed the next one: parsing a
    // tokenizer.json takes seconds, copying GGUF keys does not.
    o.tokenizer = (d / "tok.gguf").string();
    fs::rename(path, o.tokenizer);
  }

  // Q4_K_M the way users make one: an F16 file through `quantize`. Which type each tensor
  // gets depends on its row width (the preset's real n_embd / n_ff) and on tying, not on the
  // vocabulary size, so this file uses the small built-in tokenizer: quantizing 150k
  // embedding rows to Q6_K would triple the test's time and check nothing more.
  o.type = GgmlType::F16;
  o.tokenizer.clear();
  const std::string f16 = (d / "f16.gguf").string(), q4km = (d / "q4_k_m.gguf").string();
  const int64_t n_small = tools::generate_model(o, f16).n_vocab;
  tools::quantize_model(f16, q4km, "Q4_K_M", 2);
  check_model({c.preset, "", n_small}, Mix::Q4_K_M, q4km, "Q4_K_M");
  fs::remove_all(d);
}

INSTANTIATE_TEST_SUITE_P(
    All, Presets,
    testing::Values(Case{"qwen2.5-0.5b", kQwen, 151936}, Case{"qwen2.5-1.5b", kQwen, 151936},
                    Case{"qwen3-0.6b", kQwen, 151936}, Case{"llama-3.2-1b", kLlama3, 128256},
                    Case{"tinyllama-1.1b", kLlama2, 32000}, Case{"llama", kLlama2, 32000},
                    Case{"tiny-qwen2", kQwen, 151936}, Case{"tiny-qwen3", kQwen, 151936},
                    Case{"tiny-llama", kLlama2, 32000}),
    print);

TEST(Presets, EveryPresetIsCovered) {
  EXPECT_EQ(tools::presets().size(), 9u) << "add the new preset to the list above";
}

TEST(GenModelVocab, FileTokenizersArePaddedToTheCheckpointVocabulary) {
  MINFER_REQUIRE_SHARED();
  // The reference generator pads the Qwen tokenizer.json vocabulary to 151936 entries, like
  // the shared tiny-qwen2 model (made by it) holds: "[PADi]", type UNUSED.
  const fs::path out = temp_dir("vocab") / "q.gguf";
  tools::GenModelOptions o;
  o.preset = "tiny-qwen2";
  o.type = GgmlType::Q8_0;
  o.n_layer = 1;
  o.tokenizer = test::shared_path("tokenizers/qwen3/tokenizer.json");
  const auto info = tools::generate_model(o, out.string());
  EXPECT_EQ(info.n_vocab, 151936);
  auto got = gguf::File::open(out.string());
  auto ref = gguf::File::open(test::shared_path("models/tiny-qwen2-q8_0.gguf"));
  const auto toks = got->get_string_array("tokenizer.ggml.tokens");
  const auto ref_toks = ref->get_string_array("tokenizer.ggml.tokens");
  const auto types = got->get_int_array("tokenizer.ggml.token_type");
  ASSERT_EQ(toks.size(), 151936u);
  ASSERT_EQ(ref_toks.size(), 151936u);
  ASSERT_EQ(types.size(), 151936u);
  // Qwen2.5's added tokens stop at 151664 (Qwen3's tokenizer.json has four more).
  for (size_t i = 0; i < toks.size(); ++i) {
    if (i > 151664 && i <= 151668) continue;
    ASSERT_EQ(toks[i], ref_toks[i]) << i;
  }
  EXPECT_EQ(toks[151935], "[PAD151935]");
  EXPECT_EQ(types[151935], 5);  // UNUSED
  EXPECT_EQ(got->find_tensor("token_embd.weight")->ne[1], 151936);
  EXPECT_EQ(tok::Tokenizer::from_gguf(*got)->n_vocab(), 151936);
  // The built-in byte-level tokenizer is not padded (the demo model stays small).
  o.tokenizer.clear();
  EXPECT_EQ(tools::generate_model(o, out.string()).n_vocab,
            256 + int64_t(tools::byte_level_specials().size()));
  fs::remove_all(out.parent_path());
}
