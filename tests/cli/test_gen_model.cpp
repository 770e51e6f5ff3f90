// gen-model against independent references: the shared synthetic models written by the
// reference generator (same PRNG, same presets: the tensors must be bit-identical), and the
// published parameter counts of the real checkpoints whose shapes the presets copy.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/test_data.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tools/gen_model.h"

using namespace minfer;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("minfer-test-gen-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// Every tensor of `ref` is in `got` with the same type, shape and bytes; same count.
void expect_same_tensors(const gguf::File& ref, const gguf::File& got) {
  ASSERT_EQ(ref.tensors().size(), got.tensors().size());
  for (size_t i = 0; i < ref.tensors().size(); ++i) {
    const auto& a = ref.tensors()[i];
    const auto& b = got.tensors()[i];
    ASSERT_EQ(a.name, b.name) << "tensor order differs at " << i;
    EXPECT_EQ(a.type, b.type) << a.name;
    EXPECT_EQ(a.ne, b.ne) << a.name;
    ASSERT_EQ(a.nbytes, b.nbytes) << a.name;
    EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0) << a.name << ": bytes differ";
  }
}

void expect_same_key(const gguf::File& ref, const gguf::File& got, const std::string& key) {
  const gguf::Value* a = ref.find(key);
  const gguf::Value* b = got.find(key);
  ASSERT_NE(a, nullptr) << key;
  ASSERT_NE(b, nullptr) << key;
  EXPECT_TRUE(*a == *b) << key;
}

uint64_t params_of(const std::string& preset, int64_t n_vocab) {
  const auto& p = tools::find_preset(preset);
  uint64_t n = 0;
  for (const auto& t : tools::tensor_plan(p, n_vocab, GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0)) {
    if (t.name == "rope_freqs.weight") continue;  // derived by the converter, not a parameter
    uint64_t e = 1;
    for (auto x : t.ne) e *= uint64_t(x);
    n += e;
  }
  return n;
}

}  // namespace

TEST(GenModel, RegeneratesTheSharedTinyQwen2BitForBit) {
  MINFER_REQUIRE_SHARED();
  const std::string ref_path = test::shared_path("models/tiny-qwen2-q8_0.gguf");
  const fs::path out = temp_dir() / "tiny-qwen2-q8_0.gguf";
  tools::GenModelOptions o;
  o.preset = "tiny-qwen2";
  o.type = GgmlType::Q8_0;
  o.seed = 1;
  o.tokenizer = ref_path;  // copy its Qwen vocabulary: same n_vocab, so same token_embd
  const auto info = tools::generate_model(o, out.string());
  EXPECT_EQ(info.n_params, 19842176u);  // DATA.md's table
  auto ref = gguf::File::open(ref_path);
  auto got = gguf::File::open(out.string());
  expect_same_tensors(*ref, *got);
  for (const char* k : {"general.architecture", "general.file_type", "general.quantization_version",
                        "qwen2.block_count", "qwen2.context_length", "qwen2.embedding_length",
                        "qwen2.feed_forward_length", "qwen2.attention.head_count",
                        "qwen2.attention.head_count_kv", "qwen2.rope.freq_base",
                        "qwen2.attention.layer_norm_rms_epsilon"})
    expect_same_key(*ref, *got, k);
  fs::remove_all(out.parent_path());
}

TEST(GenModel, RegeneratesTheSharedTinyQwen3Q4_0WithQ8_0Embeddings) {
  MINFER_REQUIRE_SHARED();
  const std::string ref_path = test::shared_path("models/tiny-qwen3-q4_0.gguf");
  const fs::path out = temp_dir() / "tiny-qwen3-q4_0.gguf";
  tools::GenModelOptions o;
  o.preset = "tiny-qwen3";
  o.type = GgmlType::Q4_0;
  o.seed = 1;
  o.tokenizer = ref_path;
  const auto info = tools::generate_model(o, out.string());
  EXPECT_EQ(info.n_params, 20186368u);
  EXPECT_EQ(info.embd_type, GgmlType::Q8_0);
  auto ref = gguf::File::open(ref_path);
  auto got = gguf::File::open(out.string());
  expect_same_tensors(*ref, *got);
  for (const char* k : {"general.file_type", "qwen3.block_count", "qwen3.attention.key_length",
                        "qwen3.attention.value_length"})
    expect_same_key(*ref, *got, k);
  fs::remove_all(out.parent_path());
}

TEST(GenModel, TinyLlamaWithTheBuiltInTokenizer) {
  const fs::path out = temp_dir() / "tiny-llama.gguf";
  tools::GenModelOptions o;
  o.preset = "tiny-llama";
  o.type = GgmlType::F16;
  const auto info = tools::generate_model(o, out.string());
  auto f = gguf::File::open(out.string());
  EXPECT_EQ(f->architecture(), "llama");
  EXPECT_EQ(f->get_uint("llama.block_count"), 4u);
  EXPECT_EQ(f->get_uint("llama.embedding_length"), 256u);
  EXPECT_EQ(f->get_uint("llama.rope.dimension_count"), 32u);
  EXPECT_EQ(f->get_uint("general.file_type"), 1u);
  auto tok = tok::Tokenizer::from_gguf(*f);
  EXPECT_EQ(tok->n_vocab(), 256 + int32_t(tools::byte_level_specials().size()));
  EXPECT_EQ(info.n_vocab, tok->n_vocab());
  ASSERT_TRUE(tok->chat_template().has_value());
  // token_embd, output_norm, output + 9 per layer
  EXPECT_EQ(f->tensors().size(), 3u + 4u * 9u);
  const auto* out_w = f->find_tensor("output.weight");
  ASSERT_NE(out_w, nullptr);
  EXPECT_EQ(out_w->type, GgmlType::F16);
  EXPECT_EQ(out_w->ne[1], tok->n_vocab());
  const auto* down = f->find_tensor("blk.3.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->ne[0], 768);
  EXPECT_EQ(down->ne[1], 256);
  fs::remove_all(out.parent_path());
}

TEST(GenModel, SameSeedSameFileOtherSeedOtherWeights) {
  const fs::path d = temp_dir();
  auto make = [&](uint64_t seed, const std::string& name) {
    tools::GenModelOptions o;
    o.preset = "tiny-qwen3";
    o.type = GgmlType::Q8_0;
    o.seed = seed;
    tools::generate_model(o, (d / name).string());
    std::ifstream in(d / name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string a = make(3, "a.gguf"), b = make(3, "b.gguf"), c = make(4, "c.gguf");
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), c.size());
  EXPECT_NE(a, c);
  fs::remove_all(d);
}

TEST(GenModel, WeightStreamHasTheRequestedMomentsAndBounds) {
  tools::NormalStream s(1, "x");
  std::vector<float> v(200000);
  s.fill(v.data(), v.size(), 0.5, 2.0);
  double sum = 0, sq = 0, mx = 0;
  for (float x : v) {
    sum += x;
    sq += double(x) * x;
    mx = std::max(mx, std::fabs(double(x) - 0.5));
  }
  const double mean = sum / double(v.size());
  const double var = sq / double(v.size()) - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.02);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.02);
  EXPECT_LE(mx, 2.0 * std::sqrt(12.0) + 1e-3);  // Irwin-Hall(4) is bounded at sqrt(12) sigma
}

TEST(GenModel, FullSizePresetsHaveThePublishedParameterCounts) {
  // Hugging Face model cards / safetensors headers of the checkpoints the presets copy.
  EXPECT_EQ(params_of("qwen2.5-0.5b", 151936), 494032768u);
  EXPECT_EQ(params_of("qwen2.5-1.5b", 151936), 1543714304u);
  EXPECT_EQ(params_of("qwen3-0.6b", 151936), 596049920u);
  EXPECT_EQ(params_of("tinyllama-1.1b", 32000), 1100048384u);
  EXPECT_EQ(params_of("llama-3.2-1b", 128256), 1235814400u);
}

TEST(GenModel, BadOptionsAreClearErrors) {
  const fs::path d = temp_dir();
  tools::GenModelOptions o;
  o.preset = "no-such-preset";
  try {
    tools::generate_model(o, (d / "x.gguf").string());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tiny-llama"), std::string::npos) << e.what();
  }
  o.preset = "tiny-qwen2";
  o.type = GgmlType::Q4_K;  // rows of 128 are not a multiple of 256
  EXPECT_THROW(tools::generate_model(o, (d / "x.gguf").string()), Error);
  o.type = GgmlType::Q8_0;
  o.tokenizer = (d / "missing.json").string();
  EXPECT_THROW(tools::generate_model(o, (d / "x.gguf").string()), Error);
  EXPECT_FALSE(fs::exists(d / "x.gguf"));
  fs::remove_all(d);
}

TEST(GenModel, Llama32CarriesLlama3RopeFactors) {
  // Llama-3.2-1B's rope_scaling {factor 32, low_freq_factor 1, high_freq_factor 4,
  // original_max_position_embeddings 8192}, theta 500000, head_dim 64, through the converter's
  // formula (computed independently in double precision).
  const std::vector<double> expected = {
      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1.6513292457638984, 3.2922621029408843,
      9.666728978753293, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32};
  const auto& p = tools::find_preset("llama-3.2-1b");
  const std::vector<float> f = tools::llama3_rope_factors(p);
  ASSERT_EQ(f.size(), expected.size());
  for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], expected[i], 1e-5 * expected[i]) << i;

  // Planned first (the converter writes its derived tensors first), F32, with these values;
  // the file's bytes are checked by test_gen_model_presets.
  const auto plan = tools::tensor_plan(p, 128256, GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0);
  ASSERT_FALSE(plan.empty());
  EXPECT_EQ(plan[0].name, "rope_freqs.weight");
  EXPECT_EQ(plan[0].type, GgmlType::F32);
  EXPECT_EQ(plan[0].ne, std::vector<int64_t>{32});
  EXPECT_EQ(plan[0].values, f);
  // Presets without llama3 scaling have none.
  for (const auto& t : tools::tensor_plan(tools::find_preset("tinyllama-1.1b"), 32000, GgmlType::Q8_0,
                                          GgmlType::Q8_0, GgmlType::Q8_0))
    EXPECT_NE(t.name, "rope_freqs.weight");
}
