// Compare mode over two small MINFER_GRAPH_DUMP directories written here.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/error.h"
#include "server/compare.h"

using namespace minfer::server;
namespace fs = std::filesystem;

namespace {

struct DumpNode {
  int step, id;
  std::string name;
  std::vector<float> data;
};

// The layout NodeTrace writes: DIR/index.jsonl + DIR/stepNNNN/IIII-name.f32.
void write_dump(const fs::path& dir, const std::vector<DumpNode>& nodes) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream idx(dir / "index.jsonl", std::ios::trunc);
  for (const DumpNode& n : nodes) {
    const std::string rel = fmt::format("step{:04d}/{:04d}-{}.f32", n.step, n.id, n.name);
    fs::create_directories(dir / fmt::format("step{:04d}", n.step));
    std::ofstream(dir / rel, std::ios::binary)
        .write(reinterpret_cast<const char*>(n.data.data()), std::streamsize(n.data.size() * 4));
    idx << fmt::format(R"({{"step":{},"id":{},"name":"{}","op":"Add","shape":[{},1,1,1],"file":"{}"}})",
                       n.step, n.id, n.name, n.data.size(), rel)
        << "\n";
  }
}

class Compare : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / fmt::format("minfer-viz-compare-{}", ::getpid());
    a_ = root_ / "a";
    b_ = root_ / "b";
    fs::create_directories(a_);
    fs::create_directories(b_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_, a_, b_;
};

}  // namespace

TEST_F(Compare, FindsTheFirstDivergingNodeInStepThenIdOrder) {
  const std::vector<DumpNode> a = {{0, 2, "x", {1, 2, 3}}, {0, 5, "y", {10, -20}}, {1, 2, "x", {4, 4}}};
  std::vector<DumpNode> b = a;
  b[1].data = {10, -20.01f};  // step 0 node 5: |diff| ~ 0.01 over max |a| = 20
  b[2].data = {4, 5};         // step 1 node 2: diff 1
  write_dump(a_, a);
  write_dump(b_, b);

  const DumpComparison c = compare_dumps(a_.string(), b_.string(), 1e-4);
  ASSERT_EQ(c.nodes.size(), 3u);
  EXPECT_EQ(c.nodes[0].max_abs, 0.0);
  EXPECT_EQ(c.nodes[0].rel, 0.0);
  EXPECT_NEAR(c.nodes[1].max_abs, 0.01, 1e-5);
  EXPECT_NEAR(c.nodes[1].rel, 0.01 / 20, 1e-6);
  EXPECT_EQ(c.nodes[2].max_abs, 1.0);
  ASSERT_TRUE(c.first_diverging.has_value());
  EXPECT_EQ(c.nodes[*c.first_diverging].step, 0);
  EXPECT_EQ(c.nodes[*c.first_diverging].id, 5);

  // A looser tolerance moves the first divergence to step 1.
  const DumpComparison loose = compare_dumps(a_.string(), b_.string(), 1e-3);
  ASSERT_TRUE(loose.first_diverging.has_value());
  EXPECT_EQ(loose.nodes[*loose.first_diverging].step, 1);

  const auto j = nlohmann::json::parse(comparison_json(c));
  EXPECT_EQ(j["first_diverging"]["id"], 5);
  EXPECT_EQ(j["nodes"][1]["diverged"], true);
  EXPECT_EQ(j["nodes"][0]["shape"][0], 3);
}

TEST_F(Compare, IdenticalDumpsHaveNoDivergence) {
  const std::vector<DumpNode> a = {{0, 1, "x", {1, std::nanf(""), INFINITY}}};
  write_dump(a_, a);
  write_dump(b_, a);
  const DumpComparison c = compare_dumps(a_.string(), b_.string(), 0);
  EXPECT_FALSE(c.first_diverging.has_value());  // NaN == NaN and inf == inf count as equal here
  EXPECT_EQ(nlohmann::json::parse(comparison_json(c))["first_diverging"], nullptr);
}

TEST_F(Compare, NanAgainstANumberAndSizeMismatchDiverge) {
  write_dump(a_, {{0, 1, "x", {1, 2}}, {0, 2, "y", {1}}, {0, 3, "only_a", {0}}});
  write_dump(b_, {{0, 1, "x", {1, std::nanf("")}}, {0, 2, "y", {1, 1}}, {0, 4, "only_b", {0}}});
  const DumpComparison c = compare_dumps(a_.string(), b_.string(), 1e-4);
  ASSERT_EQ(c.nodes.size(), 2u);
  EXPECT_TRUE(std::isinf(c.nodes[0].max_abs));
  EXPECT_TRUE(c.nodes[1].size_mismatch);
  EXPECT_EQ(c.only_in_a, std::vector<std::string>{"0/3/only_a"});
  EXPECT_EQ(c.only_in_b, std::vector<std::string>{"0/4/only_b"});
  const auto j = nlohmann::json::parse(comparison_json(c));  // infinities must not break the JSON
  EXPECT_EQ(j["nodes"][0]["max_abs"], nullptr);
}

TEST_F(Compare, BadDirectoriesAreErrorsNamingThem) {
  write_dump(a_, {{0, 1, "x", {1}}});
  try {
    compare_dumps(a_.string(), (root_ / "nope").string(), 1e-4);
    FAIL() << "no error";
  } catch (const minfer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos) << e.what();
  }
  std::ofstream(b_ / "index.jsonl") << R"({"step":0,"id":1,"name":"x","file":"../../etc/passwd"})" << "\n";
  EXPECT_THROW(compare_dumps(a_.string(), b_.string(), 1e-4), minfer::Error);
  std::ofstream(b_ / "index.jsonl", std::ios::trunc) << "{not json\n";
  EXPECT_THROW(compare_dumps(a_.string(), b_.string(), 1e-4), minfer::Error);
  std::ofstream(b_ / "index.jsonl", std::ios::trunc) << R"({"step":0,"id":1,"name":"x","file":"missing.f32"})" << "\n";
  EXPECT_THROW(compare_dumps(a_.string(), b_.string(), 1e-4), minfer::Error);
  EXPECT_THROW(compare_dumps(a_.string(), a_.string(), -1), minfer::Error);
}
