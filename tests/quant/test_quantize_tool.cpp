// `minfer quantize` end to end: llama-quantize's per-tensor type choices on llama-shaped
// models (expected tables written from llama.cpp's llama_tensor_get_type), data that
// dequantizes close to the input, and a round trip that reproduces the synthetic models
// (made by ggml's reference quantizers) byte for byte.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "common/fp16.h"
#include "common/test_data.h"
#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tools/imatrix.h"
#include "tools/quantize.h"
#include "tools/quantize_rules.h"

using namespace minfer;
namespace fs = std::filesystem;

namespace {

fs::path tmp_dir() {
  fs::path d = fs::temp_directory_path() / ("minfer-quant-test-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

struct Spec {
  int n_layer, n_embd, n_ff, n_vocab, n_head, n_head_kv;
  bool tied;
  GgmlType matrix_type;  // F32 or F16
};

// Original values per tensor name, to compare the quantized output against.
using Values = std::map<std::string, std::vector<float>>;

Values write_llama(const Spec& s, const std::string& path) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::str("llama"));
  w.set("general.name", gguf::Value::str("quant-test"));
  w.set("general.file_type", gguf::Value::u32(s.matrix_type == GgmlType::F16 ? 1 : 0));
  w.set("llama.block_count", gguf::Value::u32(uint32_t(s.n_layer)));
  w.set("llama.embedding_length", gguf::Value::u32(uint32_t(s.n_embd)));
  w.set("llama.feed_forward_length", gguf::Value::u32(uint32_t(s.n_ff)));
  w.set("llama.attention.head_count", gguf::Value::u32(uint32_t(s.n_head)));
  w.set("llama.attention.head_count_kv", gguf::Value::u32(uint32_t(s.n_head_kv)));
  w.set("llama.context_length", gguf::Value::u32(256));

  static Values values;  // kept alive until write() has run the producers
  values.clear();
  std::mt19937 rng(123);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  const int64_t kv_dim = int64_t(s.n_embd) / s.n_head * s.n_head_kv;
  auto add = [&](const std::string& name, std::vector<int64_t> ne, GgmlType type) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = nd(rng);
    if (type == GgmlType::F16)  // the reference values are what the file holds
      for (auto& x : v) x = fp16_to_fp32(fp32_to_fp16(x));
    values[name] = v;
    w.add_tensor(name, type, ne, [&vals = values[name], type](uint8_t* dst, size_t nbytes) {
      quant::quantize_row(type, vals.data(), dst, int64_t(vals.size()));
      (void)nbytes;
    });
  };
  const GgmlType m = s.matrix_type;
  add("token_embd.weight", {s.n_embd, s.n_vocab}, m);
  add("output_norm.weight", {s.n_embd}, GgmlType::F32);
  if (!s.tied) add("output.weight", {s.n_embd, s.n_vocab}, m);
  for (int i = 0; i < s.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    add(p + "attn_norm.weight", {s.n_embd}, GgmlType::F32);
    add(p + "attn_q.weight", {s.n_embd, s.n_embd}, m);
    add(p + "attn_k.weight", {s.n_embd, kv_dim}, m);
    add(p + "attn_v.weight", {s.n_embd, kv_dim}, m);
    add(p + "attn_output.weight", {s.n_embd, s.n_embd}, m);
    add(p + "ffn_norm.weight", {s.n_embd}, GgmlType::F32);
    add(p + "ffn_gate.weight", {s.n_embd, s.n_ff}, m);
    add(p + "ffn_up.weight", {s.n_embd, s.n_ff}, m);
    add(p + "ffn_down.weight", {s.n_ff, s.n_embd}, m);
  }
  w.write(path);
  return values;
}

std::map<std::string, GgmlType> types_of(const std::string& path) {
  std::map<std::string, GgmlType> m;
  const auto f = gguf::File::open(path);
  for (const auto& t : f->tensors()) m[t.name] = t.type;
  return m;
}

double bound_for(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
      return 0;
    case GgmlType::F16:
      return 0.0003;
    case GgmlType::Q8_0:
      return 0.007;
    case GgmlType::Q6_K:
      return 0.021;
    case GgmlType::Q5_0:
      return 0.05;
    case GgmlType::Q5_1:
      return 0.045;
    case GgmlType::Q5_K:
      return 0.043;
    case GgmlType::Q4_0:
      return 0.1;
    case GgmlType::Q4_K:
      return 0.083;
    case GgmlType::Q3_K:
      return 0.18;
    case GgmlType::Q2_K:
      return 0.35;
    case GgmlType::IQ4_NL:
    case GgmlType::IQ4_XS:
      return 0.09;
    default:
      return 0.5;
  }
}

// Every tensor of `path` dequantizes to within its type's bound of the original values.
void expect_close(const std::string& path, const Values& values) {
  auto f = gguf::File::open(path);
  for (const auto& t : f->tensors()) {
    const auto& x = values.at(t.name);
    ASSERT_EQ(size_t(t.n_elements()), x.size()) << t.name;
    std::vector<float> y(x.size());
    const int64_t nx = t.ne[0];
    const size_t rs = row_size(t.type, nx);
    for (int64_t r = 0; r < t.n_elements() / nx; ++r)
      quant::dequantize_row(t.type, t.data + size_t(r) * rs, y.data() + r * nx, nx);
    double se = 0, ss = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      se += double(x[i] - y[i]) * (x[i] - y[i]);
      ss += double(x[i]) * x[i];
    }
    EXPECT_LE(std::sqrt(se / ss), bound_for(t.type) * 1.3 + 1e-7)
        << t.name << " " << type_name(t.type);
  }
}

using Table = std::map<std::string, GgmlType>;

// Expected types for the llama-shaped model: `per_layer(i, suffix)` gives layer tensors.
Table expected(const Spec& s, GgmlType embd, GgmlType out,
               const std::function<GgmlType(int, const std::string&)>& per_layer) {
  Table t;
  t["token_embd.weight"] = embd;
  t["output_norm.weight"] = GgmlType::F32;
  if (!s.tied) t["output.weight"] = out;
  for (int i = 0; i < s.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    for (const char* n : {"attn_norm", "ffn_norm"}) t[p + n + ".weight"] = GgmlType::F32;
    for (const char* n :
         {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"})
      t[p + n + ".weight"] = per_layer(i, n);
  }
  return t;
}

void expect_types(const Table& want, const std::string& path) {
  const auto got = types_of(path);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, type] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_EQ(type_name(got.at(name)), type_name(type)) << name;
  }
}

class QuantizeTool : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tmp_dir(); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string p(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// 8 layers of 256: llama's use_more_bits picks layers 0, 3, 6, 7 (first/last eighth and
// every third in between).
const Spec k8 = {8, 256, 512, 512, 8, 2, false, GgmlType::F32};

}  // namespace

TEST_F(QuantizeTool, Q4_K_M_Mix) {
  const Values v = write_llama(k8, p("in.gguf"));
  const auto r = tools::quantize_model(p("in.gguf"), p("out.gguf"), "Q4_K_M", 2);
  auto more_bits = [](int i) { return i == 0 || i == 3 || i == 6 || i == 7; };
  expect_types(expected(k8, GgmlType::Q4_K, GgmlType::Q6_K,
                        [&](int i, const std::string& n) {
                          if ((n == "attn_v" || n == "ffn_down") && more_bits(i))
                            return GgmlType::Q6_K;
                          return GgmlType::Q4_K;
                        }),
               p("out.gguf"));
  EXPECT_EQ(r.n_fallback, 0);
  EXPECT_EQ(r.n_tensors, 3 + 9 * 8);
  EXPECT_EQ(r.n_converted, 2 + 7 * 8);
  expect_close(p("out.gguf"), v);
  auto f = gguf::File::open(p("out.gguf"));
  EXPECT_EQ(f->get_uint("general.file_type"), 15u);
  EXPECT_EQ(f->get_uint("general.quantization_version"), 2u);
  EXPECT_EQ(f->get_string("general.name"), "quant-test");
  EXPECT_EQ(f->get_uint("llama.block_count"), 8u);
  // The input's general.file_type (its third key) is set again, and moves after the copied
  // keys, as llama-quantize's gguf_set_val_u32 moves it: the same header, byte for byte.
  const auto& kv = f->metadata();
  ASSERT_GE(kv.size(), 3u);
  EXPECT_EQ(kv[kv.size() - 2].key, "general.quantization_version");
  EXPECT_EQ(kv[kv.size() - 1].key, "general.file_type");
  EXPECT_EQ(kv[0].key, "general.architecture");
}

TEST_F(QuantizeTool, Q8_0EverythingButVectors) {
  const Values v = write_llama(k8, p("in.gguf"));
  tools::quantize_model(p("in.gguf"), p("out.gguf"), "q8_0", 1);
  expect_types(expected(k8, GgmlType::Q8_0, GgmlType::Q8_0,
                        [](int, const std::string&) { return GgmlType::Q8_0; }),
               p("out.gguf"));
  expect_close(p("out.gguf"), v);
  EXPECT_EQ(gguf::File::open(p("out.gguf"))->get_uint("general.file_type"), 7u);
}

TEST_F(QuantizeTool, Q3_K_M_Mix) {
  write_llama(k8, p("in.gguf"));
  tools::quantize_model(p("in.gguf"), p("out.gguf"), "Q3_K_M", 2);
  expect_types(expected(k8, GgmlType::Q3_K, GgmlType::Q6_K,
                        [](int i, const std::string& n) {
                          if (n == "attn_v") return i < 2 ? GgmlType::Q5_K : GgmlType::Q4_K;
                          if (n == "ffn_down" || n == "attn_output") return GgmlType::Q4_K;
                          return GgmlType::Q3_K;
                        }),
               p("out.gguf"));
}

TEST_F(QuantizeTool, Q2_KAndQ4_K_SAndQ5_K_MMixes) {
  write_llama(k8, p("in.gguf"));
  tools::quantize_model(p("in.gguf"), p("q2.gguf"), "Q2_K", 2);
  expect_types(expected(k8, GgmlType::Q2_K, GgmlType::Q6_K,
                        [](int, const std::string& n) {
                          if (n == "attn_v") return GgmlType::Q4_K;  // n_gqa = 8/2 >= 4
                          if (n == "ffn_down" || n == "attn_output") return GgmlType::Q3_K;
                          return GgmlType::Q2_K;
                        }),
               p("q2.gguf"));
  tools::quantize_model(p("in.gguf"), p("q4s.gguf"), "Q4_K_S", 2);
  expect_types(expected(k8, GgmlType::Q4_K, GgmlType::Q6_K,
                        [](int i, const std::string& n) {
                          if (n == "attn_v" && i < 4) return GgmlType::Q5_K;
                          if (n == "ffn_down" && i < 1) return GgmlType::Q5_K;
                          return GgmlType::Q4_K;
                        }),
               p("q4s.gguf"));
  tools::quantize_model(p("in.gguf"), p("q5m.gguf"), "Q5_K_M", 2);
  expect_types(expected(k8, GgmlType::Q5_K, GgmlType::Q6_K,
                        [](int i, const std::string& n) {
                          const bool more = i == 0 || i == 3 || i == 6 || i == 7;
                          if ((n == "attn_v" || n == "ffn_down") && more) return GgmlType::Q6_K;
                          return GgmlType::Q5_K;
                        }),
               p("q5m.gguf"));
}

TEST_F(QuantizeTool, LegacyAndFloatMixes) {
  const Values v = write_llama(k8, p("in.gguf"));
  // Legacy types still give the output projection 6 bits; IQ4_NL adds Q5_K for attn_v when
  // n_gqa >= 4 and for the first eighth of ffn_down.
  for (const char* ft : {"Q4_0", "Q4_1", "Q5_0", "Q5_1"}) {
    tools::quantize_model(p("in.gguf"), p("out.gguf"), ft, 2);
    const GgmlType t = *type_from_name(ft);
    expect_types(expected(k8, t, GgmlType::Q6_K, [t](int, const std::string&) { return t; }),
                 p("out.gguf"));
    expect_close(p("out.gguf"), v);
  }
  for (const GgmlType t : {GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {  // (IQ4_XS: the same rules)
    tools::quantize_model(p("in.gguf"), p("out.gguf"), std::string(type_name(t)), 2);
    expect_types(expected(k8, t, GgmlType::Q6_K,
                          [t](int i, const std::string& n) {
                            if (n == "attn_v" || (n == "ffn_down" && i < 1)) return GgmlType::Q5_K;
                            return t;
                          }),
                 p("out.gguf"));
    expect_close(p("out.gguf"), v);
  }
  for (const char* ft : {"F16", "BF16"}) {
    tools::quantize_model(p("in.gguf"), p("out.gguf"), ft, 2);
    const GgmlType t = *type_from_name(ft);
    expect_types(expected(k8, t, t, [t](int, const std::string&) { return t; }), p("out.gguf"));
  }
  tools::quantize_model(p("in.gguf"), p("q6.gguf"), "Q6_K", 2);
  expect_types(expected(k8, GgmlType::Q6_K, GgmlType::Q6_K,
                        [](int, const std::string&) { return GgmlType::Q6_K; }),
               p("q6.gguf"));
}

TEST_F(QuantizeTool, Width896FallsBack) {
  // Qwen2.5-0.5B's width: 896 is a multiple of 32 but not of 256. F16 input this time.
  const Spec s = {4, 896, 512, 256, 14, 2, false, GgmlType::F16};
  const Values v = write_llama(s, p("in.gguf"));
  const auto r = tools::quantize_model(p("in.gguf"), p("out.gguf"), "Q4_K_M", 2);
  // use_more_bits(i, 4): layers 2 (third after the first eighth) and 3 (last eighth).
  expect_types(expected(s, GgmlType::Q5_0, GgmlType::Q8_0,
                        [](int i, const std::string& n) {
                          const bool more = i >= 2;
                          if (n == "ffn_down")
                            return more ? GgmlType::Q6_K : GgmlType::Q4_K;  // rows of 512
                          if (n == "attn_v") return more ? GgmlType::Q8_0 : GgmlType::Q5_0;
                          return GgmlType::Q5_0;
                        }),
               p("out.gguf"));
  // token_embd + 6 matrices x 4 layers; output.weight goes straight to Q8_0 (no fallback).
  EXPECT_EQ(r.n_fallback, 1 + 6 * 4);
  expect_close(p("out.gguf"), v);

  const auto r2 = tools::quantize_model(p("in.gguf"), p("q3.gguf"), "Q3_K_M", 2);
  const auto got = types_of(p("q3.gguf"));
  EXPECT_EQ(got.at("token_embd.weight"), GgmlType::Q4_0);      // Q3_K -> Q4_0 (llama.cpp v0.4.0)
  EXPECT_EQ(got.at("blk.0.attn_v.weight"), GgmlType::Q5_1);    // Q5_K -> Q5_1
  EXPECT_EQ(got.at("blk.3.attn_v.weight"), GgmlType::Q5_0);    // Q4_K -> Q5_0
  EXPECT_EQ(got.at("blk.1.ffn_down.weight"), GgmlType::Q4_K);  // 512-wide rows fit
  EXPECT_GT(r2.n_fallback, 0);

  // IQ4_XS's 256-blocks fall back to IQ4_NL, as llama-quantize's do.
  tools::quantize_model(p("in.gguf"), p("xs.gguf"), "IQ4_XS", 2);
  const auto xs = types_of(p("xs.gguf"));
  EXPECT_EQ(xs.at("token_embd.weight"), GgmlType::IQ4_NL);
  EXPECT_EQ(xs.at("blk.1.attn_q.weight"), GgmlType::IQ4_NL);
  EXPECT_EQ(xs.at("blk.1.ffn_down.weight"), GgmlType::IQ4_XS);  // 512-wide rows fit
  expect_close(p("xs.gguf"), v);
}

// The 1-2 bit and ternary file types (llama-quantize's Q1_0, Q2_0, TQ1_0, TQ2_0): every matrix
// in the type, the output in Q6_K, the embedding in Q4_K but for Q1_0; rows that the type's
// blocks do not divide fall back to Q4_0 (Q1_0 has no fallback). These tables and the files'
// bytes were checked against llama.cpp v0.4.0's llama_model_quantize on a 2-layer qwen2.5-0.5b
// shape (896 wide), as were the other types' (Q3_K_M ... IQ4_XS): equal types, equal data.
TEST_F(QuantizeTool, LowBitAndTernaryMixes) {
  write_llama(k8, p("in.gguf"));
  for (const char* ft : {"Q1_0", "Q2_0", "TQ1_0", "TQ2_0"}) {
    tools::quantize_model(p("in.gguf"), p("out.gguf"), ft, 2);
    const GgmlType t = *type_from_name(ft);
    expect_types(expected(k8, t == GgmlType::Q1_0 ? t : GgmlType::Q4_K, GgmlType::Q6_K,
                          [t](int, const std::string&) { return t; }),
                 p("out.gguf"));
  }
  const Spec s = {2, 896, 512, 256, 14, 2, false, GgmlType::F16};
  write_llama(s, p("w896.gguf"));
  tools::quantize_model(p("w896.gguf"), p("tq.gguf"), "TQ2_0", 2);
  expect_types(expected(s, GgmlType::Q5_0, GgmlType::Q8_0,  // embedding: Q4_K -> Q5_0
                        [](int, const std::string& n) { return n == "ffn_down" ? GgmlType::TQ2_0 : GgmlType::Q4_0; }),
               p("tq.gguf"));
  EXPECT_EQ(gguf::File::open(p("tq.gguf"))->get_uint("general.file_type"), 37u);
}

// Names as llama-quantize takes them, any case, or the llama_ftype number (llama.h's values;
// an alias's number names the mix it stands for).
TEST(QuantizeFtype, ByNameOrLlamaFtypeNumber) {
  for (auto [arg, name, value] : {std::tuple{"q4_k_m", "Q4_K_M", 15u}, {"15", "Q4_K_M", 15u},
                                  {"12", "Q3_K_M", 12u}, {"Q3_K", "Q3_K", 12u}, {"7", "Q8_0", 7u},
                                  {"1", "F16", 1u}, {"0", "F32", 0u}, {"32", "BF16", 32u},
                                  {"21", "Q2_K_S", 21u}, {"38", "MXFP4_MOE", 38u}, {"41", "Q2_0", 41u},
                                  {"19", "IQ2_XXS", 19u}, {"28", "IQ2_S", 28u}}) {
    const tools::Ftype* f = tools::find_ftype(arg);
    ASSERT_NE(f, nullptr) << arg;
    EXPECT_EQ(f->name, name) << arg;
    EXPECT_EQ(f->value, value) << arg;
  }
  // 39 is NVFP4, which llama-quantize does not write either; 4-6 and 33-35 are gone from llama.h.
  for (const char* bad : {"", "39", "4", "33", "999", "15x", "-15", " 15", "+15", "Q9_X"})
    EXPECT_EQ(tools::find_ftype(bad), nullptr) << "'" << bad << "'";
}

TEST_F(QuantizeTool, BadInputsAreErrors) {
  write_llama(k8, p("in.gguf"));
  EXPECT_THROW(tools::quantize_model(p("in.gguf"), p("out.gguf"), "Q9_X", 1), Error);
  EXPECT_THROW(tools::quantize_model(p("missing.gguf"), p("out.gguf"), "Q8_0", 1), Error);
  EXPECT_FALSE(fs::exists(p("out.gguf")));
  // A row of 100 fits no block type: Q1_0 (128-blocks) has no fallback type, as in
  // llama-quantize, which throws there.
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::str("llama"));
  std::vector<float> x(100 * 4, 0.5f);
  w.add_tensor("blk.0.attn_q.weight", GgmlType::F32, {100, 4}, x.data());
  w.write(p("odd.gguf"));
  try {
    tools::quantize_model(p("odd.gguf"), p("out.gguf"), "Q1_0", 1);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.attn_q.weight"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(p("out.gguf")));
}

// Rows that no 32-block divides go to F16 for the 32-block types, as llama-quantize's "must use
// F16 due to unusual shape" (llama.cpp v0.4.0 quantizing stories260K to Q8_0 gives F16 for its
// 172-wide ffn_down and Q8_0 elsewhere; the same for Q4_0, Q5_1, IQ4_NL).
TEST_F(QuantizeTool, RowsNoBlockDividesFallBackToF16) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::str("llama"));
  std::vector<float> odd(100 * 4), even(64 * 4);
  for (size_t i = 0; i < odd.size(); ++i) odd[i] = std::sin(0.37f * float(i));
  for (size_t i = 0; i < even.size(); ++i) even[i] = std::cos(0.11f * float(i));
  w.add_tensor("blk.0.ffn_down.weight", GgmlType::F32, {100, 4}, odd.data());
  w.add_tensor("blk.0.attn_q.weight", GgmlType::F32, {64, 4}, even.data());
  w.write(p("odd.gguf"));
  for (const char* ft : {"Q8_0", "Q4_0", "Q5_1", "IQ4_NL"}) {
    SCOPED_TRACE(ft);
    const auto r = tools::quantize_model(p("odd.gguf"), p("out.gguf"), ft, 1);
    EXPECT_EQ(r.n_fallback, 1);
    const auto got = types_of(p("out.gguf"));
    EXPECT_EQ(got.at("blk.0.ffn_down.weight"), GgmlType::F16);
    EXPECT_EQ(got.at("blk.0.attn_q.weight"), *type_from_name(ft));
    const auto f = gguf::File::open(p("out.gguf"));
    const auto* t = f->find_tensor("blk.0.ffn_down.weight");
    ASSERT_NE(t, nullptr);
    const auto* h = reinterpret_cast<const uint16_t*>(t->data);
    for (size_t i = 0; i < odd.size(); ++i) ASSERT_EQ(h[i], fp32_to_fp16(odd[i])) << i;
  }
}

// Dequantize a synthetic model to F32, quantize it back with its own type: every tensor,
// including the tied token_embd that the Q6_K rule sends to Q8_0 via the fallback, and all
// metadata come back identical (but for the order of the keys quantize sets).
TEST_F(QuantizeTool, RoundTripReproducesSyntheticModels) {
  MINFER_REQUIRE_SHARED();
  for (auto [file, ft] : {std::pair{"models/tiny-qwen3-q4_0.gguf", "Q4_0"},
                          std::pair{"models/tiny-qwen2-q8_0.gguf", "Q8_0"}}) {
    const std::string orig = test::shared_path(file);
    tools::quantize_model(orig, p("f32.gguf"), "F32", 2);
    tools::quantize_model(p("f32.gguf"), p("back.gguf"), ft, 2);
    auto a = gguf::File::open(orig);
    auto b = gguf::File::open(p("back.gguf"));
    ASSERT_EQ(a->tensors().size(), b->tensors().size());
    for (const auto& ta : a->tensors()) {
      const auto* tb = b->find_tensor(ta.name);
      ASSERT_NE(tb, nullptr) << ta.name;
      EXPECT_EQ(type_name(tb->type), type_name(ta.type)) << ta.name;
      ASSERT_EQ(tb->nbytes, ta.nbytes) << ta.name;
      EXPECT_EQ(std::memcmp(ta.data, tb->data, ta.nbytes), 0) << ta.name;
    }
    // The same keys and values; the two keys quantize sets come last, as llama-quantize's.
    ASSERT_EQ(a->metadata().size(), b->metadata().size());
    for (const auto& kv : a->metadata()) {
      const gguf::Value* vb = b->find(kv.key);
      ASSERT_NE(vb, nullptr) << kv.key;
      EXPECT_TRUE(kv.value == *vb) << kv.key;
    }
  }
}

namespace {

struct CliResult {
  int exit_code = -1;
  std::string err;  // stderr (stdout discarded)
};

CliResult run_minfer(const std::string& args) {
  const std::string cmd = std::string(MINFER_BINARY) + " " + args + " 2>&1 >/dev/null";
  CliResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.err.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

TEST_F(QuantizeTool, CommandLine) {
  if (!fs::exists(MINFER_BINARY)) GTEST_SKIP() << "minfer binary not built";
  write_llama(k8, p("in.gguf"));
  // stderr is not a terminal here: no progress bar, only the summary.
  CliResult r =
      run_minfer("quantize " + p("in.gguf") + " " + p("out.gguf") + " q4_k_m --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("75 tensors, 58 converted"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" MiB -> "), std::string::npos) << r.err;
  EXPECT_EQ(types_of(p("out.gguf")).at("output.weight"), GgmlType::Q6_K);

  r = run_minfer("quantize " + p("in.gguf") + " " + p("bad.gguf") + " Q7_X");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("Q7_X"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(p("bad.gguf")));
  r = run_minfer("quantize " + p("nope.gguf") + " " + p("bad.gguf") + " Q8_0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("nope.gguf"), std::string::npos) << r.err;
  r = run_minfer("quantize " + p("in.gguf"));  // missing arguments: usage error
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

// ---- --imatrix: llama-imatrix's files, both formats --------------------------------------------

namespace {

// Importance weights for every matrix of `s` (ne0 values each), deterministic and uneven.
std::map<std::string, std::vector<float>> imatrix_weights(const Spec& s) {
  std::map<std::string, std::vector<float>> m;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(0.05f, 4.0f);
  auto add = [&](const std::string& name, int64_t ne0) {
    auto& v = m[name];
    for (int64_t i = 0; i < ne0; ++i) v.push_back(u(rng) * (i % 5 == 0 ? 30.0f : 1.0f));
  };
  for (int i = 0; i < s.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up"})
      add(p + n + ".weight", s.n_embd);
    add(p + "ffn_down.weight", s.n_ff);
  }
  add("output.weight", s.n_embd);
  return m;
}

void put_i32(std::string& b, int32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); }

// The legacy binary format, values stored times ncall (8: exact in float).
std::string legacy_imatrix(const std::map<std::string, std::vector<float>>& m, int32_t ncall = 8) {
  std::string b;
  put_i32(b, int32_t(m.size()));
  for (const auto& [name, v] : m) {
    put_i32(b, int32_t(name.size()));
    b += name;
    put_i32(b, ncall);
    put_i32(b, int32_t(v.size()));
    for (float x : v) {
      const float y = x * float(ncall);
      b.append(reinterpret_cast<const char*>(&y), 4);
    }
  }
  put_i32(b, 42);  // chunks
  put_i32(b, 8);
  b += "wiki.txt";
  return b;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The GGUF format: NAME.in_sum2 (values x count) and NAME.counts, with its metadata keys.
void gguf_imatrix(const std::map<std::string, std::vector<float>>& m, const std::string& path, bool meta = true) {
  gguf::Writer w;
  if (meta) {
    w.set("imatrix.datasets", gguf::Value::string_array({"wiki.txt"}));
    w.set("imatrix.chunk_count", gguf::Value::u32(42));
    w.set("imatrix.chunk_size", gguf::Value::u32(512));
  }
  static std::vector<std::vector<float>> keep;
  keep.clear();
  keep.reserve(2 * m.size());
  for (const auto& [name, v] : m) {
    auto& sums = keep.emplace_back(v);
    for (float& x : sums) x *= 16.0f;
    static const float kNone = 0.0f;  // (an entry of no values still needs a data pointer)
    w.add_tensor(name + ".in_sum2", GgmlType::F32, {int64_t(v.size()), 1}, sums.empty() ? &kNone : sums.data());
    auto& counts = keep.emplace_back(std::vector<float>{16.0f});
    w.add_tensor(name + ".counts", GgmlType::F32, {1, 1}, counts.data());
  }
  w.write(path);
}

std::vector<uint8_t> tensor_bytes(const std::string& path, const std::string& name) {
  const auto f = gguf::File::open(path);
  const gguf::TensorInfo* t = f->find_tensor(name);
  return {t->data, t->data + t->nbytes};
}

}  // namespace

// Q2_K_S (llama-quantize's rules: attn_v Q4_K where n_head / n_head_kv >= 4, the first eighth
// of ffn_down Q4_K, the rest Q2_K) needs importance weights for its Q2_K matrices, the
// embedding and output excepted, and stops without writing anything when they are missing.
// MXFP4_MOE puts MXFP4 on expert tensors only: a dense model's matrices are all Q8_0. Both
// checked against llama.cpp v0.4.0's llama_model_quantize (qwen2.5-0.5b, qwen3-0.6b and
// SmolLM2 shapes; Q2_K_S with a flat importance matrix): the same tensors, byte for byte.
TEST_F(QuantizeTool, Q2_K_SAndMxfp4MoeMixes) {
  write_llama(k8, p("in.gguf"));  // 8 layers, GQA 8 / 2
  try {
    tools::quantize_model(p("in.gguf"), p("q2ks.gguf"), "Q2_K_S", 1);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing importance matrix"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("blk.0.attn_k.weight"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(p("q2ks.gguf")));

  write_file(p("im.dat"), legacy_imatrix(imatrix_weights(k8)));
  const tools::Imatrix im = tools::load_imatrix(p("im.dat"));
  tools::quantize_model(p("in.gguf"), p("q2ks.gguf"), "Q2_K_S", 1, {}, &im);
  expect_types(expected(k8, GgmlType::Q2_K, GgmlType::Q6_K,
                        [](int i, const std::string& n) {
                          if (n == "attn_v" || (n == "ffn_down" && i < 1)) return GgmlType::Q4_K;
                          return GgmlType::Q2_K;
                        }),
               p("q2ks.gguf"));
  EXPECT_EQ(gguf::File::open(p("q2ks.gguf"))->get_uint("general.file_type"), 21u);

  tools::quantize_model(p("in.gguf"), p("mx.gguf"), "MXFP4_MOE", 1);
  expect_types(expected(k8, GgmlType::Q8_0, GgmlType::Q8_0,
                        [](int, const std::string&) { return GgmlType::Q8_0; }),
               p("mx.gguf"));
  EXPECT_EQ(gguf::File::open(p("mx.gguf"))->get_uint("general.file_type"), 38u);
}

// The IQ3 and IQ2 mixes (llama-quantize's rules; each checked against llama.cpp v0.4.0's
// llama_model_quantize on gen-model qwen3-0.6b, qwen2.5-0.5b, SmolLM2 and TinyLlama shapes, with
// and without an importance matrix: the same files): IQ3_S with attn_v at Q4_K where GQA >= 4;
// IQ3_M also attn_output and the first eighth of ffn_down at Q4_K; IQ3_XS puts attn_q, attn_k
// and the middle layers' gate and up at IQ3_XXS, which needs importance weights.
TEST_F(QuantizeTool, Iq3AndIq2Mixes) {
  write_llama(k8, p("in.gguf"));  // 8 layers, GQA 8 / 2
  tools::quantize_model(p("in.gguf"), p("s.gguf"), "IQ3_S", 2);
  expect_types(expected(k8, GgmlType::IQ3_S, GgmlType::Q6_K,
                        [](int, const std::string& n) { return n == "attn_v" ? GgmlType::Q4_K : GgmlType::IQ3_S; }),
               p("s.gguf"));
  EXPECT_EQ(gguf::File::open(p("s.gguf"))->get_uint("general.file_type"), 26u);

  tools::quantize_model(p("in.gguf"), p("m.gguf"), "IQ3_M", 2);
  expect_types(expected(k8, GgmlType::IQ3_S, GgmlType::Q6_K,
                        [](int i, const std::string& n) {
                          if (n == "attn_v" || n == "attn_output" || (n == "ffn_down" && i < 1)) return GgmlType::Q4_K;
                          return GgmlType::IQ3_S;
                        }),
               p("m.gguf"));

  EXPECT_THROW(tools::quantize_model(p("in.gguf"), p("xs.gguf"), "IQ3_XS", 2), Error);
  EXPECT_FALSE(fs::exists(p("xs.gguf")));
  write_file(p("im.dat"), legacy_imatrix(imatrix_weights(k8)));
  const tools::Imatrix im = tools::load_imatrix(p("im.dat"));
  tools::quantize_model(p("in.gguf"), p("xs.gguf"), "IQ3_XS", 2, {}, &im);
  expect_types(expected(k8, GgmlType::IQ3_S, GgmlType::Q6_K,
                        [](int i, const std::string& n) {
                          if (n == "attn_v") return GgmlType::Q4_K;
                          if (n == "attn_q" || n == "attn_k") return GgmlType::IQ3_XXS;
                          if ((n == "ffn_gate" || n == "ffn_up") && i >= 1 && i < 7) return GgmlType::IQ3_XXS;
                          return GgmlType::IQ3_S;
                        }),
               p("xs.gguf"));
  EXPECT_EQ(gguf::File::open(p("xs.gguf"))->get_uint("general.file_type"), 22u);

  // IQ3_XXS: output Q5_K, embedding IQ3_S, attn_q and attn_k IQ2_S, attn_output IQ3_S, attn_v
  // Q4_K at GQA >= 4; IQ2_M: IQ2_S with attn_v Q4_K (GQA >= 4), the first eighth of ffn_down
  // and attn_output IQ3_S. Both need the importance matrix.
  EXPECT_THROW(tools::quantize_model(p("in.gguf"), p("x3.gguf"), "IQ3_XXS", 2), Error);
  tools::quantize_model(p("in.gguf"), p("x3.gguf"), "IQ3_XXS", 2, {}, &im);
  expect_types(expected(k8, GgmlType::IQ3_S, GgmlType::Q5_K,
                        [](int, const std::string& n) {
                          if (n == "attn_v") return GgmlType::Q4_K;
                          if (n == "attn_q" || n == "attn_k") return GgmlType::IQ2_S;
                          if (n == "attn_output") return GgmlType::IQ3_S;
                          return GgmlType::IQ3_XXS;
                        }),
               p("x3.gguf"));
  tools::quantize_model(p("in.gguf"), p("m2.gguf"), "IQ2_M", 2, {}, &im);
  expect_types(expected(k8, GgmlType::IQ3_S, GgmlType::Q5_K,
                        [](int i, const std::string& n) {
                          if (n == "attn_v") return GgmlType::Q4_K;
                          if (n == "attn_output" || (n == "ffn_down" && i < 1)) return GgmlType::IQ3_S;
                          return GgmlType::IQ2_S;
                        }),
               p("m2.gguf"));
  EXPECT_EQ(gguf::File::open(p("m2.gguf"))->get_uint("general.file_type"), 29u);
  // IQ2_XXS / IQ2_XS: the embedding and the first eighth of ffn_down Q2_K; IQ2_S: IQ2_XS with
  // IQ2_M's IQ3_S rules.
  tools::quantize_model(p("in.gguf"), p("xxs.gguf"), "IQ2_XXS", 2, {}, &im);
  expect_types(expected(k8, GgmlType::Q2_K, GgmlType::Q5_K,
                        [](int i, const std::string& n) {
                          if (n == "attn_v") return GgmlType::Q4_K;
                          if (n == "ffn_down" && i < 1) return GgmlType::Q2_K;
                          return GgmlType::IQ2_XXS;
                        }),
               p("xxs.gguf"));
  tools::quantize_model(p("in.gguf"), p("s2.gguf"), "IQ2_S", 2, {}, &im);
  expect_types(expected(k8, GgmlType::IQ3_S, GgmlType::Q5_K,
                        [](int i, const std::string& n) {
                          if (n == "attn_v") return GgmlType::Q4_K;
                          if (n == "attn_output" || (n == "ffn_down" && i < 1)) return GgmlType::IQ3_S;
                          return GgmlType::IQ2_XS;
                        }),
               p("s2.gguf"));
  EXPECT_EQ(gguf::File::open(p("s2.gguf"))->get_uint("general.file_type"), 28u);
  // IQ1_S / IQ1_M: IQ2_XXS's rules, with attn_output IQ2_XXS.
  for (GgmlType t1 : {GgmlType::IQ1_S, GgmlType::IQ1_M}) {
    tools::quantize_model(p("in.gguf"), p("s1.gguf"), std::string(type_name(t1)), 2, {}, &im);
    expect_types(expected(k8, GgmlType::Q2_K, GgmlType::Q5_K,
                          [t1](int i, const std::string& n) {
                            if (n == "attn_v") return GgmlType::Q4_K;
                            if (n == "ffn_down" && i < 1) return GgmlType::Q2_K;
                            if (n == "attn_output") return GgmlType::IQ2_XXS;
                            return t1;
                          }),
                 p("s1.gguf"));
  }

  // Rows of 896 take IQ4_NL (the output Q8_0), as llama-quantize's fallback.
  const Spec w = {2, 896, 512, 256, 14, 2, false, GgmlType::F16};
  write_llama(w, p("w.gguf"));
  tools::quantize_model(p("w.gguf"), p("w3.gguf"), "IQ3_S", 2);
  expect_types(expected(w, GgmlType::IQ4_NL, GgmlType::Q8_0,
                        [](int, const std::string& n) {
                          if (n == "attn_v") return GgmlType::Q5_0;  // Q4_K (GQA 7), which 896 sends to Q5_0
                          return n == "ffn_down" ? GgmlType::IQ3_S : GgmlType::IQ4_NL;
                        }),
               p("w3.gguf"));
}

// A fused QKV projection is attention-v-like in llama.cpp v0.4.0 (category_is_attn_v): it takes
// attn_v's rules (Q4_K_M: Q6_K on the use_more_bits layers), and its own older attn_qkv rules
// (Q5_K at Q4_K_M) are never reached there.
TEST_F(QuantizeTool, FusedQkvTakesAttnVRules) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::str("llama"));
  w.set("llama.block_count", gguf::Value::u32(8));
  w.set("llama.attention.head_count", gguf::Value::u32(8));
  w.set("llama.attention.head_count_kv", gguf::Value::u32(8));
  std::vector<float> x(256 * 768);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.01f * float(i));
  for (int i = 0; i < 8; ++i) w.add_tensor("blk." + std::to_string(i) + ".attn_qkv.weight", GgmlType::F32, {256, 768}, x.data());
  w.write(p("qkv.gguf"));
  tools::quantize_model(p("qkv.gguf"), p("out.gguf"), "Q4_K_M", 1);
  const auto got = types_of(p("out.gguf"));
  for (int i = 0; i < 8; ++i) {
    const bool more = i == 0 || i == 3 || i == 6 || i == 7;
    EXPECT_EQ(got.at("blk." + std::to_string(i) + ".attn_qkv.weight"), more ? GgmlType::Q6_K : GgmlType::Q4_K) << i;
  }
}

TEST_F(QuantizeTool, ImatrixWeightsEachTensorAndChangesTheRules) {
  const Values v = write_llama(k8, p("in.gguf"));
  const auto weights = imatrix_weights(k8);
  write_file(p("im.dat"), legacy_imatrix(weights));
  gguf_imatrix(weights, p("im.gguf"));
  const tools::Imatrix legacy = tools::load_imatrix(p("im.dat"));
  const tools::Imatrix gg = tools::load_imatrix(p("im.gguf"));
  ASSERT_EQ(legacy.weights, weights);  // (values x 8 / 8 and x 16 / 16 are exact)
  ASSERT_EQ(gg.weights, weights);
  EXPECT_EQ(legacy.chunk_count, 42);
  EXPECT_EQ(gg.chunk_count, 42);
  EXPECT_EQ(legacy.datasets, std::vector<std::string>{"wiki.txt"});
  EXPECT_EQ(gg.datasets, std::vector<std::string>{"wiki.txt"});

  // Each converted tensor is quantize_rows with its own weights; both formats give one file.
  tools::quantize_model(p("in.gguf"), p("a.gguf"), "Q4_K_M", 2, {}, &legacy);
  tools::quantize_model(p("in.gguf"), p("b.gguf"), "Q4_K_M", 2, {}, &gg);
  const auto types = types_of(p("a.gguf"));
  for (const std::string name : {"blk.2.attn_q.weight", "blk.7.ffn_down.weight", "output.weight"}) {
    const std::vector<float>& x = v.at(name);
    const int64_t nx = name.find("ffn_down") != std::string::npos ? k8.n_ff : k8.n_embd;
    const GgmlType t = types.at(name);
    std::vector<uint8_t> want(row_size(t, nx) * (x.size() / size_t(nx)));
    quant::quantize_rows(t, x.data(), want.data(), int64_t(x.size()) / nx, nx, weights.at(name).data());
    EXPECT_EQ(tensor_bytes(p("a.gguf"), name), want) << name;
    std::vector<uint8_t> plain(want.size());
    quant::quantize_rows(t, x.data(), plain.data(), int64_t(x.size()) / nx, nx);
    EXPECT_NE(plain, want) << name << ": the imatrix changed nothing";
  }
  for (const auto& [name, t] : types) EXPECT_EQ(tensor_bytes(p("a.gguf"), name), tensor_bytes(p("b.gguf"), name)) << name;

  // llama-quantize's record of it.
  const auto f = gguf::File::open(p("a.gguf"));
  EXPECT_EQ(f->get_string("quantize.imatrix.file"), p("im.dat"));
  EXPECT_EQ(f->get_string("quantize.imatrix.dataset"), "wiki.txt");
  EXPECT_EQ(f->get_uint("quantize.imatrix.entries_count"), weights.size());
  EXPECT_EQ(f->get_uint("quantize.imatrix.chunks_count"), 42u);

  // The rules that depend on an imatrix (first eighth of ffn_down: layer 0 of 8): IQ4_XS no
  // longer bumps it to Q5_K; Q4_0 and Q5_0 guard it with Q4_1 / Q5_1.
  tools::quantize_model(p("in.gguf"), p("xs.gguf"), "IQ4_XS", 2, {}, &legacy);
  EXPECT_EQ(types_of(p("xs.gguf")).at("blk.0.ffn_down.weight"), GgmlType::IQ4_XS);
  tools::quantize_model(p("in.gguf"), p("q40.gguf"), "Q4_0", 2, {}, &legacy);
  EXPECT_EQ(types_of(p("q40.gguf")).at("blk.0.ffn_down.weight"), GgmlType::Q4_1);
  EXPECT_EQ(types_of(p("q40.gguf")).at("blk.1.ffn_down.weight"), GgmlType::Q4_0);
  tools::quantize_model(p("in.gguf"), p("q50.gguf"), "Q5_0", 2, {}, &legacy);
  EXPECT_EQ(types_of(p("q50.gguf")).at("blk.0.ffn_down.weight"), GgmlType::Q5_1);
}

TEST_F(QuantizeTool, BadImatrixFilesAreErrors) {
  write_llama(k8, p("in.gguf"));
  auto weights = imatrix_weights(k8);
  const std::string good = legacy_imatrix(weights);
  for (size_t cut : {size_t(0), size_t(3), size_t(10), good.size() / 2}) {
    write_file(p("cut.dat"), good.substr(0, cut));
    EXPECT_THROW(tools::load_imatrix(p("cut.dat")), Error) << cut;
  }
  EXPECT_THROW(tools::load_imatrix(p("missing.dat")), Error);
  auto bad = weights;
  bad["blk.1.attn_q.weight"][3] = std::nanf("");
  write_file(p("nan.dat"), legacy_imatrix(bad));
  EXPECT_THROW(tools::load_imatrix(p("nan.dat")), Error);
  gguf_imatrix(weights, p("nometa.gguf"), false);
  EXPECT_THROW(tools::load_imatrix(p("nometa.gguf")), Error);
  // An entry of no values (found by fuzz_imatrix: it reached a copy into an empty buffer).
  auto none = weights;
  none["blk.0.attn_q.weight"].clear();
  gguf_imatrix(none, p("none.gguf"));
  try {
    tools::load_imatrix(p("none.gguf"));
    ADD_FAILURE() << "an entry of no values loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no values"), std::string::npos) << e.what();
  }

  // An entry whose size does not match its tensor: an error, and no output file.
  auto wrong = weights;
  wrong["blk.3.attn_k.weight"].pop_back();
  write_file(p("wrong.dat"), legacy_imatrix(wrong));
  const tools::Imatrix m = tools::load_imatrix(p("wrong.dat"));
  EXPECT_THROW(tools::quantize_model(p("in.gguf"), p("out.gguf"), "Q4_K_M", 2, {}, &m), Error);
  EXPECT_FALSE(fs::exists(p("out.gguf")));
  // Except for token_embd, which llama-quantize then quantizes without weights.
  auto emb = weights;
  emb["token_embd.weight"] = std::vector<float>(7, 1.0f);
  write_file(p("emb.dat"), legacy_imatrix(emb));
  const tools::Imatrix e = tools::load_imatrix(p("emb.dat"));
  EXPECT_NO_THROW(tools::quantize_model(p("in.gguf"), p("out.gguf"), "Q4_K_M", 2, {}, &e));
}

// --pure, --output-tensor-type, --token-embedding-type as llama_tensor_get_type applies them
// (checked against llama_model_quantize on a tied model, see QUANT.md): the user's types come
// before everything, for float targets too; --pure drops the mix but keeps the fallbacks.
TEST_F(QuantizeTool, PureAndOutputAndEmbeddingTypes) {
  write_llama(k8, p("in.gguf"));
  auto more_bits = [](int i) { return i == 0 || i == 3 || i == 6 || i == 7; };
  auto q4km = [&](int i, const std::string& n) {
    return (n == "attn_v" || n == "ffn_down") && more_bits(i) ? GgmlType::Q6_K : GgmlType::Q4_K;
  };
  tools::TypeOverrides pure;
  pure.pure = true;
  tools::quantize_model(p("in.gguf"), p("pure.gguf"), "Q4_K_M", 2, {}, nullptr, &pure);
  expect_types(expected(k8, GgmlType::Q4_K, GgmlType::Q4_K, [](int, const std::string&) { return GgmlType::Q4_K; }),
               p("pure.gguf"));

  tools::TypeOverrides both;
  both.output = GgmlType::Q8_0;
  both.token_embd = GgmlType::Q5_K;
  tools::quantize_model(p("in.gguf"), p("both.gguf"), "Q4_K_M", 2, {}, nullptr, &both);
  expect_types(expected(k8, GgmlType::Q5_K, GgmlType::Q8_0, q4km), p("both.gguf"));
  tools::quantize_model(p("in.gguf"), p("f16.gguf"), "F16", 2, {}, nullptr, &both);
  expect_types(expected(k8, GgmlType::Q5_K, GgmlType::Q8_0, [](int, const std::string&) { return GgmlType::F16; }),
               p("f16.gguf"));

  // Tied (no output.weight): the output type goes to token_embd, unless it has its own.
  const Spec tied = {8, 256, 512, 512, 8, 2, true, GgmlType::F32};
  write_llama(tied, p("tied.gguf"));
  tools::TypeOverrides out_only;
  out_only.output = GgmlType::Q8_0;
  tools::quantize_model(p("tied.gguf"), p("t1.gguf"), "Q4_K_M", 2, {}, nullptr, &out_only);
  EXPECT_EQ(types_of(p("t1.gguf")).at("token_embd.weight"), GgmlType::Q8_0);
  tools::quantize_model(p("tied.gguf"), p("t2.gguf"), "Q4_K_M", 2, {}, nullptr, &both);
  EXPECT_EQ(types_of(p("t2.gguf")).at("token_embd.weight"), GgmlType::Q5_K);

  // --pure keeps the fallback of rows that do not divide into 256-blocks.
  const Spec s896 = {2, 896, 512, 256, 14, 2, false, GgmlType::F16};
  write_llama(s896, p("w896.gguf"));
  tools::quantize_model(p("w896.gguf"), p("p896.gguf"), "Q4_K_M", 2, {}, nullptr, &pure);
  const auto got = types_of(p("p896.gguf"));
  EXPECT_EQ(got.at("blk.0.attn_q.weight"), GgmlType::Q5_0);    // Q4_K -> Q5_0
  EXPECT_EQ(got.at("blk.1.ffn_down.weight"), GgmlType::Q4_K);  // 512-wide rows fit
  EXPECT_EQ(got.at("output.weight"), GgmlType::Q5_0);          // no Q8_0 for the output when pure
}

// --tensor-type NAME=TYPE: the first pattern found in a tensor's name gives its type, and the
// mix's per-layer counters skip that tensor, as in llama.cpp (checked against
// llama_model_quantize with the same patterns on the qwen3-0.6b F16 file).
TEST_F(QuantizeTool, TensorTypePatterns) {
  write_llama(k8, p("in.gguf"));
  tools::TypeOverrides ov;
  ov.tensor_types = {{"blk\\.0\\.attn_v", GgmlType::Q8_0}, {"ffn_up", GgmlType::Q5_K}, {"up|gate", GgmlType::Q2_K}};
  tools::quantize_model(p("in.gguf"), p("out.gguf"), "Q4_K_M", 2, {}, nullptr, &ov);
  // attn_v of layers 1..7 now take the counter values 0..6: use_more_bits(i, 8) holds for
  // i = 0, 3, 6 (and 7, which no layer reaches), so layers 1, 4 and 7 get Q6_K.
  auto more_bits = [](int i) { return i == 0 || i == 3 || i == 6 || i == 7; };
  expect_types(expected(k8, GgmlType::Q4_K, GgmlType::Q6_K,
                        [&](int i, const std::string& n) {
                          if (n == "attn_v") return i == 0 ? GgmlType::Q8_0 : more_bits(i - 1) ? GgmlType::Q6_K : GgmlType::Q4_K;
                          if (n == "ffn_up") return GgmlType::Q5_K;     // (the first pattern that matches)
                          if (n == "ffn_gate") return GgmlType::Q2_K;
                          if (n == "ffn_down") return more_bits(i) ? GgmlType::Q6_K : GgmlType::Q4_K;
                          return GgmlType::Q4_K;
                        }),
               p("out.gguf"));
  // Float targets keep their one type; a pattern that is not a regular expression is an error.
  tools::quantize_model(p("in.gguf"), p("f16.gguf"), "F16", 2, {}, nullptr, &ov);
  EXPECT_EQ(types_of(p("f16.gguf")).at("blk.0.ffn_up.weight"), GgmlType::F16);
  tools::TypeOverrides bad;
  bad.tensor_types = {{"attn_(q", GgmlType::Q8_0}};
  EXPECT_THROW(tools::quantize_model(p("in.gguf"), p("bad.gguf"), "Q4_K_M", 2, {}, nullptr, &bad), Error);
}
