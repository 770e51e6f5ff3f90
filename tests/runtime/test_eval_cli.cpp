// `minfer eval` end to end: the printed top list of the last position (and of every position
// with --all) matches the golden file's, and bad input exits 1 with a one-line error.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "common/test_data.h"

namespace {

std::string run_cmd(const std::string& args, int* rc) {
  const std::string cmd = std::string(MINFER_BINARY) + " " + args + " 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

#define REQUIRE_BINARY()                                                         \
  if (!std::filesystem::exists(MINFER_BINARY)) GTEST_SKIP() << "minfer not built"

}  // namespace

TEST(EvalCli, MatchesGoldenTopList) {
  MINFER_REQUIRE_SHARED();
  REQUIRE_BINARY();
  std::ifstream in(minfer::test::shared_path("golden/models/stories260K.once-upon-a-time.json"));
  const nlohmann::json g = nlohmann::json::parse(in);
  std::vector<int> ids = g.at("prompt_ids").get<std::vector<int>>();
  for (int id : g.at("greedy").at("ids")) ids.push_back(id);
  int rc = 0;
  const std::string out = run_cmd("eval -m " + minfer::test::shared_path("models/stories260K.gguf") +
                                      " --all --top 20 --tokens '" + nlohmann::json(ids).dump() + "'",
                                  &rc);
  ASSERT_EQ(rc, 0) << out;
  std::istringstream lines(out);
  std::string line;
  size_t pos = 0;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    ASSERT_EQ(j.at("pos").get<size_t>(), pos);
    const auto& gt = g.at("positions").at(pos).at("top");
    ASSERT_EQ(j.at("top").size(), 20u);
    EXPECT_EQ(j.at("top")[0].at("id"), gt[0].at("id")) << "pos " << pos;
    EXPECT_NEAR(j.at("top")[0].at("logprob").get<double>(), gt[0].at("logprob").get<double>(), 1e-3);
    ++pos;
  }
  EXPECT_EQ(pos, ids.size());
}

TEST(EvalCli, BadInputIsOneLineError) {
  MINFER_REQUIRE_SHARED();
  REQUIRE_BINARY();
  int rc = 0;
  std::string out = run_cmd("eval -m " + minfer::test::shared_path("models/stories260K.gguf") +
                                " --tokens '[1, 9999]'",
                            &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("token id 9999 is out of range"), std::string::npos) << out;
  out = run_cmd("eval -m " + minfer::test::shared_path("models/stories260K.gguf") + " --tokens 'x'", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("--tokens"), std::string::npos) << out;
  out = run_cmd("eval -m " + minfer::test::shared_path("vocab/ggml-vocab-phi-3.gguf") + " --tokens '[1]'", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("unsupported architecture 'phi3'"), std::string::npos) << out;
}
