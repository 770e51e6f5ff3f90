#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "graph/export.h"
#include "graph/mini_transformer.h"

using namespace minfer::graph;

namespace {

GraphParams params() {
  GraphParams p;
  p.n_tokens = 3;
  p.n_out = 1;
  p.cparams.n_ctx = 16;
  p.cparams.backends = {"TEST", "CPU"};
  return p;
}

}  // namespace

TEST(Export, DotMarksInputsOutputsBackendsAndPayloads) {
  minfer::test::MiniConfig c;
  c.n_layer = 1;
  ComputeGraph g = minfer::test::build_mini(c, params()).g;
  for (CNode& n : g.nodes) n.backend = std::holds_alternative<OpMatMul>(n.op) ? 0 : 1;
  ExportInfo info;
  info.backend_names = {"TEST", "CPU"};
  const std::string dot = to_dot(g, info);
  EXPECT_EQ(dot.rfind("digraph", 0), 0u);
  EXPECT_NE(dot.find("n0 [label=\"token_ids (0)"), std::string::npos);
  // token_ids, positions, tail_ids and the logits are double circles; nothing else is.
  size_t circles = 0;
  for (size_t at = dot.find("doublecircle"); at != std::string::npos;
       at = dot.find("doublecircle", at + 1))
    ++circles;
  EXPECT_EQ(circles, 4u);
  EXPECT_NE(dot.find("KvStore { layer: 0 }"), std::string::npos);
  EXPECT_NE(dot.find("RmsNorm { eps: 1e-06 }"), std::string::npos);
  EXPECT_NE(dot.find("@TEST"), std::string::npos);
  EXPECT_NE(dot.find("@CPU"), std::string::npos);
  EXPECT_NE(dot.find("fillcolor=\"#a6cee3\""), std::string::npos);  // backend 0's colour
  EXPECT_NE(dot.find("fillcolor=\"#b2df8a\""), std::string::npos);  // backend 1's colour
  // One edge per source.
  size_t edges = 0, expected = 0;
  for (size_t at = dot.find(" -> "); at != std::string::npos; at = dot.find(" -> ", at + 1))
    ++edges;
  for (const CNode& n : g.nodes) expected += n.src.size();
  EXPECT_EQ(edges, expected);
}

TEST(Export, JsonCarriesParamsNodesAndBuffers) {
  minfer::test::MiniConfig c;
  c.n_layer = 1;
  const GraphParams p = params();
  ComputeGraph g = minfer::test::build_mini(c, p).g;
  g.nodes[5].backend = 0;
  ExportInfo info;
  info.params = &p;
  info.backend_names = {"TEST", "CPU"};
  info.buffers.assign(g.nodes.size(), std::nullopt);
  info.buffers[5] = BufferInfo{0, 128, 96};
  const nlohmann::json j = nlohmann::json::parse(to_json(g, info));
  EXPECT_EQ(j["params"]["n_tokens"], 3);
  EXPECT_EQ(j["params"]["gtype"], "Prefill");
  EXPECT_EQ(j["params"]["cparams"]["n_ctx"], 16);
  EXPECT_EQ(j["params"]["cparams"]["kv_type"], "F32");
  EXPECT_EQ(j["params"]["cparams"]["backends"], (std::vector<std::string>{"TEST", "CPU"}));
  ASSERT_EQ(j["nodes"].size(), g.nodes.size());
  const auto& n5 = j["nodes"][5];
  EXPECT_EQ(n5["id"], 5);
  EXPECT_EQ(n5["op"], "MatMul");
  EXPECT_EQ(n5["payload"], "transpose_b: false");
  EXPECT_EQ(n5["name"], "matmul_blk.0.attn_q.weight");
  EXPECT_EQ(n5["src"], (std::vector<int>{4}));
  EXPECT_EQ(n5["shape"], (std::vector<int>{8, 3, 1, 1}));
  EXPECT_EQ(n5["dtype"], "f32");
  EXPECT_EQ(n5["backend"], "TEST");
  EXPECT_EQ(n5["buffer"]["arena"], 0);
  EXPECT_EQ(n5["buffer"]["offset"], 128);
  EXPECT_EQ(n5["buffer"]["size"], 96);
  EXPECT_TRUE(j["nodes"][4]["backend"].is_null());
  EXPECT_TRUE(j["nodes"][4]["buffer"].is_null());
  EXPECT_EQ(j["nodes"][0]["dtype"], "i32");
  EXPECT_EQ(j["inputs"], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(j["outputs"], (std::vector<int>{int(g.nodes.size()) - 1}));

  const nlohmann::json bare = nlohmann::json::parse(to_json(g));
  EXPECT_TRUE(bare["params"].is_null());
}
