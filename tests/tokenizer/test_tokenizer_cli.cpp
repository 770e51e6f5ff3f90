// `minfer tokenize` end to end (skipped when the minfer executable has not been built).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "common/test_data.h"

namespace {

std::string run(const std::string& args, int* rc) {
  const std::string cmd = std::string(MINFER_BINARY) + " tokenize " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    MINFER_REQUIRE_SHARED();
    if (std::string(MINFER_BINARY).empty() || !std::filesystem::exists(MINFER_BINARY))
      GTEST_SKIP() << "minfer executable not built: " << MINFER_BINARY;
  }
};

TEST_F(Cli, PrintsIdsAndPiecesLikeLlamaTokenize) {
  int rc = 0;
  const std::string model = minfer::test::shared_path("models/stories260K.gguf");
  EXPECT_EQ(run("-m " + model + " -p 'Once upon a time'", &rc),
            "     1 -> '<s>'\n   403 -> ' Once'\n   407 -> ' upon'\n   261 -> ' a'\n"
            "   378 -> ' time'\n");
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(run("-m " + model + " -p 'Once upon a time' --ids --no-bos", &rc),
            "[403, 407, 261, 378]\n");
  EXPECT_EQ(rc, 0);
}

TEST_F(Cli, SpecialTokensAndErrors) {
  int rc = 0;
  const std::string model = minfer::test::shared_path("models/tiny-qwen2-q8_0.gguf");
  EXPECT_EQ(run("-m " + model + " -p '<|im_start|>user' --ids", &rc), "[151644, 872]\n");
  EXPECT_EQ(run("-m " + model + " -p '<|im_start|>user' --ids --no-parse-special", &rc),
            "[27, 91, 318, 4906, 91, 29, 872]\n");
  const std::string err = run("-m /nonexistent.gguf -p x", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find("/nonexistent.gguf"), std::string::npos) << err;
  run("-m " + model, &rc);
  EXPECT_NE(rc, 0);
}

}  // namespace
