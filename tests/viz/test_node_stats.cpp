// Node statistics and their JSON event payload, against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "server/node_stats.h"

using namespace minfer::server;

TEST(NodeStats, RangeMeanRmsAndHistogram) {
  const float x[] = {1, 2, 3, 4};
  const NodeStats s = compute_node_stats(x, 4, 4);
  EXPECT_EQ(s.n, 4);
  EXPECT_EQ(s.min, 1.0f);
  EXPECT_EQ(s.max, 4.0f);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.rms, std::sqrt(30.0 / 4));  // (1 + 4 + 9 + 16) / 4
  // Buckets of width 0.75 from 1: 1 -> 0, 2 -> 1, 3 -> 2, 4 (the max) -> the last.
  EXPECT_EQ(s.hist, (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST(NodeStats, NanAndInfAreCountedAndExcluded) {
  const float inf = std::numeric_limits<float>::infinity();
  const float x[] = {std::nanf(""), inf, -inf, 1, -1, 0.5f};
  const NodeStats s = compute_node_stats(x, 6, 2);
  EXPECT_EQ(s.nan, 1);
  EXPECT_EQ(s.inf, 2);
  EXPECT_EQ(s.min, -1.0f);
  EXPECT_EQ(s.max, 1.0f);
  EXPECT_DOUBLE_EQ(s.mean, 0.5 / 3);
  EXPECT_DOUBLE_EQ(s.rms, std::sqrt(2.25 / 3));
  EXPECT_EQ(s.hist, (std::vector<int64_t>{1, 2}));  // -1 | 0.5, 1
}

TEST(NodeStats, ConstantOutputFillsTheFirstBucket) {
  const float x[] = {5, 5, 5};
  const NodeStats s = compute_node_stats(x, 3, 4);
  EXPECT_EQ(s.hist, (std::vector<int64_t>{3, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(s.rms, 5.0);
}

TEST(NodeStats, NoFiniteValuesMeansNoHistogram) {
  const float x[] = {std::nanf(""), std::nanf("")};
  const NodeStats s = compute_node_stats(x, 2);
  EXPECT_EQ(s.nan, 2);
  EXPECT_TRUE(s.hist.empty());
  const auto j = nlohmann::json::parse(node_event_json(1, 1, 2, 0.5, &s));
  EXPECT_EQ(j["n"], 2);
  EXPECT_EQ(j["nan"], 2);
  EXPECT_FALSE(j.contains("min"));  // JSON has no NaN: absent rather than invalid
  EXPECT_FALSE(j.contains("hist"));
}

TEST(NodeStats, DefaultHistogramHasSixteenBuckets) {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  const NodeStats s = compute_node_stats(x.data(), x.size());
  ASSERT_EQ(s.hist.size(), 16u);
  int64_t total = 0;
  for (int64_t c : s.hist) total += c;
  EXPECT_EQ(total, 1000);
  EXPECT_EQ(s.hist[0], 63);  // width 999/16 = 62.4375: 0..62
}

TEST(NodeEventJson, ExactPayload) {
  const float x[] = {1, 2, 3, 4};
  const NodeStats s = compute_node_stats(x, 4, 4);
  EXPECT_EQ(node_event_json(2, 3, 7, 0.5, &s),
            R"({"run":2,"step":3,"id":7,"ms":0.5,"n":4,"nan":0,"inf":0,"min":1,"max":4,"mean":2.5,)"
            R"("rms":2.738613,"hist":[1,1,1,1]})");
}

TEST(NodeEventJson, NodeWithoutF32Output) {
  EXPECT_EQ(node_event_json(1, 0, 12, 0.25, nullptr), R"({"run":1,"step":0,"id":12,"ms":0.25,"n":0})");
}
