// `minfer inspect`: runs the built binary and checks its JSON against DATA.md's facts.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/test_data.h"
#include "test_gguf_temp_dir.h"

namespace {

struct Result {
  int exit_code = -1;
  std::string out;  // stdout, or stderr with stdout discarded when `errors` is set
};

Result run_minfer(const std::string& args, bool errors = false) {
  const std::string cmd = std::string(MINFER_BINARY) + " " + args + (errors ? " 2>&1 >/dev/null" : " 2>/dev/null");
  Result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

TEST(GgufInspect, JsonOfStories260K) {
  MINFER_REQUIRE_SHARED();
  Result r = run_minfer("inspect " + minfer::test::shared_path("models/stories260K.gguf") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["alignment"], 32);
  const auto& md = j["metadata"];
  EXPECT_EQ(md.size(), 19u);
  EXPECT_EQ(md["llama.block_count"], 5);
  EXPECT_EQ(md["general.name"], "llama");
  EXPECT_EQ(md["tokenizer.ggml.padding_token_id"], 4294967295u);
  EXPECT_DOUBLE_EQ(md["llama.attention.layer_norm_rms_epsilon"].get<double>(), 1e-5);
  ASSERT_EQ(md["tokenizer.ggml.tokens"].size(), 512u);  // complete in JSON
  EXPECT_EQ(md["tokenizer.ggml.tokens"][258], "<0xFF>");
  ASSERT_EQ(j["tensors"].size(), 48u);
  const auto& t0 = j["tensors"][0];
  EXPECT_EQ(t0["name"], "token_embd.weight");
  EXPECT_EQ(t0["type"], "F32");
  EXPECT_EQ(t0["shape"], nlohmann::json::parse("[64, 512]"));
  EXPECT_EQ(t0["offset"], 0);
  EXPECT_EQ(t0["bytes"], 64 * 512 * 4);
  EXPECT_EQ(j["tensors"][1]["offset"], 64 * 512 * 4);  // llama.cpp packs tensors in order
  const auto& h = j["hparams"];
  EXPECT_EQ(h["block_count"], 5);
  EXPECT_EQ(h["head_count_kv"], 4);
  EXPECT_EQ(h["key_length"], 8);  // 64 / 8: no key_length key
  EXPECT_EQ(h["rope_freq_base"], 10000.0);
  EXPECT_EQ(h["vocab_size"], 512);
  EXPECT_EQ(h["tied_output"], false);
  // 2 x [64,512] + 5 layers x (4 attn + 3 ffn + 2 norms) + output norm
  EXPECT_EQ(h["n_params"], 2 * 64 * 512 + 5 * (64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 172 + 2 * 64) + 64);
}

TEST(GgufInspect, QwenHparamsAndAbbreviatedText) {
  MINFER_REQUIRE_SHARED();
  const std::string q3 = minfer::test::shared_path("models/tiny-qwen3-q4_0.gguf");
  Result r = run_minfer("inspect " + q3 + " --json");
  ASSERT_EQ(r.exit_code, 0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["architecture"], "qwen3");
  EXPECT_EQ(j["hparams"]["key_length"], 64);  // explicit key, not n_embd / n_head = 32
  EXPECT_EQ(j["hparams"]["tied_output"], true);
  EXPECT_EQ(j["hparams"]["file_type"], "MOSTLY_Q4_0");
  EXPECT_EQ(j["metadata"]["tokenizer.ggml.tokens"].size(), 151936u);

  Result t = run_minfer("inspect " + q3);
  ASSERT_EQ(t.exit_code, 0);
  EXPECT_NE(t.out.find("... (151936 items)]"), std::string::npos);
  EXPECT_NE(t.out.find("token_embd.weight"), std::string::npos);
  EXPECT_LT(t.out.size(), 20000u);  // nothing printed in full
}

TEST(GgufInspect, CorruptFileIsOneLineErrorAndExit1) {
  MINFER_REQUIRE_SHARED();
  minfer::test::TempDir dir("inspect");
  const std::string bad = dir.file("truncated.gguf");
  {
    std::ifstream in(minfer::test::shared_path("models/stories260K.gguf"), std::ios::binary);
    std::string head(5000, '\0');
    in.read(head.data(), head.size());
    std::ofstream(bad, std::ios::binary) << head;
  }
  Result r = run_minfer("inspect " + bad + " --json", /*errors=*/true);
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;  // exactly one line
  EXPECT_EQ(r.out.rfind("minfer: error: " + bad + ": ", 0), 0u) << r.out;

  Result missing = run_minfer("inspect " + dir.file("nope.gguf"), true);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("nope.gguf: cannot open"), std::string::npos) << missing.out;
}
