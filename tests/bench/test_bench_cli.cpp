// `minfer bench` end to end on stories260K: the JSON has one entry per (threads, test) with
// the documented fields, every number positive and finite, the kernel path named; bad flags
// exit 2 (usage) or 1 (bad values, bad model). No timing assertions.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/test_data.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Result run(const std::string& args) {
  const fs::path dir = fs::temp_directory_path() / ("minfer-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string cmd = std::string(MINFER_BINARY) + " bench " + args + " >" +
                          (dir / "out").string() + " 2>" + (dir / "err").string();
  const int st = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

std::string stories() { return minfer::test::shared_path("models/stories260K.gguf"); }

bool positive_finite(const json& v) { return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0; }

}  // namespace

TEST(BenchCli, JsonStructureAndValues) {
  MINFER_REQUIRE_SHARED();
  const Result r = run("-m " + stories() + " -p 16 -n 4 -r 1 -t 1,2 -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 4u);  // (1 thread, 2 threads) x (pp16, tg4), in that order
  const char* tests[] = {"pp16", "tg4", "pp16", "tg4"};
  const int threads[] = {1, 1, 2, 2};
  for (size_t i = 0; i < j.size(); ++i) {
    const json& e = j[i];
    SCOPED_TRACE(e.dump());
    EXPECT_EQ(e.at("test"), tests[i]);
    EXPECT_EQ(e.at("threads"), threads[i]);
    EXPECT_TRUE(positive_finite(e.at("avg_ts")));
    EXPECT_TRUE(e.at("stddev_ts").is_number());
    EXPECT_EQ(e.at("stddev_ts").get<double>(), 0.0);  // one sample
    ASSERT_TRUE(e.at("samples_ts").is_array());
    ASSERT_EQ(e.at("samples_ts").size(), 1u);
    EXPECT_TRUE(positive_finite(e.at("samples_ts")[0]));
    EXPECT_DOUBLE_EQ(e.at("samples_ts")[0].get<double>(), e.at("avg_ts").get<double>());
    EXPECT_EQ(e.at("n_prompt"), i % 2 == 0 ? 16 : 0);
    EXPECT_EQ(e.at("n_gen"), i % 2 == 0 ? 0 : 4);
    EXPECT_EQ(e.at("model_filename"), "stories260K.gguf");
    EXPECT_EQ(e.at("model_n_params"), 292800);
    EXPECT_EQ(e.at("model_size"), 292800 * 4);
    EXPECT_TRUE(positive_finite(e.at("bytes_per_token")));
    // The kernel path is named, for the one weight type this model has.
    EXPECT_TRUE(e.at("isa").is_string());
    ASSERT_TRUE(e.at("matmul_isa").contains("F32"));
    EXPECT_EQ(e.at("repacked_at_load"), false);
    EXPECT_GT(e.at("copied_at_load"), 0) << "its F32 matrices are staged on huge pages";
    EXPECT_EQ(e.at("kv_type"), "F16");
    EXPECT_EQ(e.at("repetitions"), 1);
  }
}

TEST(BenchCli, DepthsRunEveryTestAfterTheirTokens) {
  MINFER_REQUIRE_SHARED();
  const Result r = run("-m " + stories() + " -p 8 -n 2 -d 0,24 -r 1 -t 1 -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j.size(), 4u);  // llama-bench's order: depth outer, pp before tg
  const char* tests[] = {"pp8", "tg2", "pp8 @ d24", "tg2 @ d24"};
  const int depths[] = {0, 0, 24, 24};
  for (size_t i = 0; i < j.size(); ++i) {
    SCOPED_TRACE(j[i].dump());
    EXPECT_EQ(j[i].at("test"), tests[i]);
    EXPECT_EQ(j[i].at("n_depth"), depths[i]);
    EXPECT_EQ(j[i].at("n_ctx"), 32);  // the deepest test's tokens: 24 + 8
    EXPECT_TRUE(positive_finite(j[i].at("avg_ts")));
  }
}

TEST(BenchCli, MarkdownTable) {
  MINFER_REQUIRE_SHARED();
  const Result r = run("-m " + stories() + " -p 8 -n 2 -r 2 -t 1 --kv-type f32");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| model | size | params | backend | threads | test | t/s |"), std::string::npos);
  EXPECT_NE(r.out.find("| pp8 |"), std::string::npos);
  EXPECT_NE(r.out.find("| tg2 |"), std::string::npos);
  EXPECT_NE(r.out.find("±"), std::string::npos);
  EXPECT_NE(r.out.find("matmul kernels: F32="), std::string::npos);
  EXPECT_NE(r.out.find("KV cache F32"), std::string::npos);
}

TEST(BenchCli, ZeroSkipsATest) {
  MINFER_REQUIRE_SHARED();
  const Result r = run("-m " + stories() + " -p 0 -n 2 -r 1 -t 1 -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0].at("test"), "tg2");
}

TEST(BenchCli, BadFlags) {
  MINFER_REQUIRE_SHARED();
  const std::string m = "-m " + stories();
  // Usage errors: exit 2.
  EXPECT_EQ(run(m + " --frobnicate").code, 2);
  EXPECT_EQ(run(m + " -o xml").code, 2);
  EXPECT_EQ(run(m + " -p abc").code, 2);
  EXPECT_EQ(run("-p 16").code, 2);  // no model
  // Bad values and bad files: exit 1 with a message.
  Result r = run(m + " -r 0");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("-r 0"), std::string::npos) << r.err;
  EXPECT_EQ(run(m + " -p -5").code, 1);
  EXPECT_EQ(run(m + " -t 0").code, 1);
  r = run(m + " -d -1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("-d -1"), std::string::npos) << r.err;
  EXPECT_EQ(run(m + " -p 0 -n 0").code, 1);
  EXPECT_EQ(run(m + " --kv-type f8").code, 1);
  r = run("-m /nonexistent/model.gguf -p 4 -n 1 -r 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
}
