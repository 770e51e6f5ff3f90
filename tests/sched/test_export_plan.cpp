#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "graph/export.h"
#include "sched_fixture.h"

using namespace minfer;
using namespace minfer::graph;
using minfer::test::RefBackend;

// The dump of a scheduled graph: backends by name, buffers from the allocator's plan, null
// for bufferless nodes (fusion orphans, KV nodes).
TEST(ExportPlan, JsonShowsBackendsAndBuffersOfTheSchedule) {
  test::MiniConfig c;
  ComputeGraph g = test::build_mini(c, test::mini_params(3, 1)).g;
  RefBackend accel("ACCEL", [](const CNode& n) { return std::holds_alternative<OpMatMul>(n.op); },
                   {"blk.0.attn_q.weight"});
  RefBackend cpu("CPU");
  std::vector<sched::Backend*> backends{&accel, &cpu};
  sched::GraphAllocator alloc;
  sched::KvStore kv;
  sched::prepare(g, backends, alloc, kv);
  const GraphParams p = test::mini_params(3, 1);
  ExportInfo info{&p, {"ACCEL", "CPU"}, alloc.buffer_info()};
  const nlohmann::json j = nlohmann::json::parse(to_json(g, info));
  ASSERT_EQ(j["nodes"].size(), g.nodes.size());
  for (const CNode& n : g.nodes) {
    const auto& jn = j["nodes"][size_t(n.id)];
    EXPECT_EQ(jn["backend"], n.backend == 0 ? "ACCEL" : "CPU") << n.name;
    const bool bufferless = std::holds_alternative<OpSilu>(n.op) ||
                            std::holds_alternative<OpKvStore>(n.op) ||
                            std::holds_alternative<OpKvLoad>(n.op);
    EXPECT_EQ(jn["buffer"].is_null(), bufferless) << n.name;
    if (!bufferless) {
      EXPECT_EQ(jn["buffer"]["arena"], n.backend);
      EXPECT_EQ(jn["buffer"]["size"], n.n_bytes());
    }
  }
  EXPECT_EQ(j["nodes"][5]["backend"], "ACCEL");  // blk.0.attn_q
  const std::string dot = to_dot(g, info);
  EXPECT_NE(dot.find("@ACCEL"), std::string::npos);
  EXPECT_NE(dot.find("SwiGLU"), std::string::npos);
}
