#include <gtest/gtest.h>

#include "sched/fusion.h"
#include "sched_fixture.h"

using namespace minfer;
using namespace minfer::graph;
using minfer::test::MiniGraph;
using minfer::test::RefBackend;

TEST(Fusion, RewritesMulOfSiluInPlaceAndOrphansTheSilu) {
  test::MiniConfig c;
  ComputeGraph g = test::build_mini(c, test::mini_params(3, 1)).g;
  const size_t count = g.nodes.size();
  RefBackend cpu("CPU");
  std::vector<sched::Backend*> backends{&cpu};
  sched::assign_backends(g, backends);
  EXPECT_EQ(sched::FusionPass::run(g, backends), c.n_layer);
  EXPECT_EQ(sched::FusionPass::run(g, backends), 0) << "nothing left to fuse";
  EXPECT_EQ(g.nodes.size(), count) << "fusion keeps the node list";

  const std::vector<bool> live = g.live_mask();
  int swiglus = 0;
  for (const CNode& n : g.nodes) {
    EXPECT_FALSE(std::holds_alternative<OpMul>(n.op));
    if (std::holds_alternative<OpSilu>(n.op)) {
      EXPECT_FALSE(live[size_t(n.id)]) << "orphan";
    }
    if (std::holds_alternative<OpSwiGLU>(n.op)) {
      ++swiglus;
      // swiglu(gate, up): the silu's source and the mul's other operand.
      const CNode& gate = g.nodes[size_t(n.src[0])];
      const CNode& up = g.nodes[size_t(n.src[1])];
      EXPECT_NE(gate.name.find("ffn_gate"), std::string::npos);
      EXPECT_NE(up.name.find("ffn_up"), std::string::npos);
      EXPECT_EQ(n.id, g.nodes[size_t(n.src[1])].id + 2);  // still where the mul was
    }
  }
  EXPECT_EQ(swiglus, c.n_layer);

  // The orphan gets no buffer and is never computed.
  sched::GraphAllocator alloc;
  auto splits = sched::make_splits(g);
  alloc.allocate(g, splits, 1);
  for (const CNode& n : g.nodes)
    if (std::holds_alternative<OpSilu>(n.op)) {
      EXPECT_FALSE(alloc.has_buffer(n.id));
      EXPECT_THROW(alloc.data(n.id), Error);
      for (const auto& sp : splits)
        EXPECT_EQ(std::find(sp.nodes.begin(), sp.nodes.end(), n.id), sp.nodes.end());
    }
}

TEST(Fusion, OnlyWhereTheBackendHasTheKernel) {
  test::MiniConfig c;
  ComputeGraph g = test::build_mini(c, test::mini_params(3, 1)).g;
  RefBackend cpu("CPU", {}, {}, /*swiglu=*/false);
  std::vector<sched::Backend*> backends{&cpu};
  sched::assign_backends(g, backends);
  EXPECT_EQ(sched::FusionPass::run(g, backends), 0);

  // Two backends, only one with the kernel: only the muls placed there are rewritten.
  ComputeGraph h = test::build_mini(c, test::mini_params(3, 1)).g;
  RefBackend fused("FUSED", [](const CNode& n) { return !std::holds_alternative<OpRope>(n.op); },
                   {}, true);
  RefBackend plain("CPU", {}, {}, false);
  std::vector<sched::Backend*> two{&fused, &plain};
  for (CNode& n : h.nodes) n.backend = 1;
  // Place layer 0's mul on FUSED by hand.
  int first_mul = -1;
  for (const CNode& n : h.nodes)
    if (std::holds_alternative<OpMul>(n.op)) {
      first_mul = n.id;
      break;
    }
  h.nodes[size_t(first_mul)].backend = 0;
  EXPECT_EQ(sched::FusionPass::run(h, two), 1);
  EXPECT_TRUE(std::holds_alternative<OpSwiGLU>(h.nodes[size_t(first_mul)].op));
}

TEST(Fusion, SiluWithAnotherReaderStaysLive) {
  GraphBuilder b;
  NodeId x = b.input("x", {4, 2, 1, 1}, DType::F32);
  NodeId y = b.input("y", {4, 2, 1, 1}, DType::F32);
  NodeId s = b.silu(x);
  NodeId m = b.mul(y, s);  // silu as the second operand
  NodeId a = b.add(m, s);  // and read once more
  b.output(a);
  ComputeGraph g = b.build();
  RefBackend cpu("CPU");
  std::vector<sched::Backend*> backends{&cpu};
  sched::assign_backends(g, backends);
  EXPECT_EQ(sched::FusionPass::run(g, backends), 1);
  EXPECT_EQ(g.nodes[size_t(m)].op, Op(OpSwiGLU{}));
  EXPECT_EQ(g.nodes[size_t(m)].src, (std::vector<NodeId>{x, y}));
  EXPECT_TRUE(g.live_mask()[size_t(s)]);
}

TEST(Fusion, FusedAndUnfusedGiveTheSameNumbers) {
  test::MiniConfig c;
  test::MapWeights w(test::mini_weights(c, 7));
  const std::vector<int32_t> tokens{1, 5, 2, 9};
  RefBackend fused("CPU", {}, {}, true), plain("CPU", {}, {}, false);
  test::MiniRun a, b;
  a.backends = {&fused};
  b.backends = {&plain};
  const auto la = a.run(c, w, tokens, 0, 2);
  const auto lb = b.run(c, w, tokens, 0, 2);
  EXPECT_EQ(a.schedule.fusions, c.n_layer);
  EXPECT_EQ(b.schedule.fusions, 0);
  test::expect_close(la, lb, 1e-5f);
  // The FusedFFN graph (one node for gate, up and swiglu) agrees too.
  test::MiniConfig cf = c;
  cf.fused_ffn = true;
  test::MiniRun f;
  f.backends = {&plain};
  test::expect_close(f.run(cf, w, tokens, 0, 2), la, 1e-5f);
}

// The decode fusions the model code may emit compute what the unfused layer computes: the
// fused node writes K/V to the layer's regions and returns the roped Q.
TEST(Fusion, FusedQkvClassesMatchTheUnfusedLayer) {
  RefBackend cpu("CPU");
  for (auto mode : {test::MiniConfig::Qkv::FusedQKV, test::MiniConfig::Qkv::BiasRopeStore}) {
    test::MiniConfig c;
    test::MapWeights w(test::mini_weights(c, 9));
    test::MiniRun plain, fused;
    plain.backends = fused.backends = {&cpu};
    const std::vector<int32_t> prompt{4, 2, 7};
    plain.run(c, w, prompt, 0, 1);
    fused.run(c, w, prompt, 0, 1);
    const auto expect = plain.run(c, w, {6}, 3, 1);
    test::MiniConfig cf = c;
    cf.qkv = mode;
    MiniGraph m;
    const auto got = fused.run(cf, w, {6}, 3, 1, &m);
    test::expect_close(got, expect, 1e-5f);
    // Fewer nodes: q, k, v, rope, rope, store -> fused_qkv (or the three matmuls + epilogue).
    const size_t unfused_nodes = test::build_mini(c, test::mini_params(1, 1)).g.nodes.size();
    const size_t per_layer_saved = mode == test::MiniConfig::Qkv::FusedQKV ? 5 : 2;
    EXPECT_EQ(m.g.nodes.size(), unfused_nodes - per_layer_saved * size_t(c.n_layer));
  }
}
