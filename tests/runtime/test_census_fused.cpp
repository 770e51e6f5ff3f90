// The census after scheduling on the CPU backend (design 05 §2.6): FusionPass rewrites each
// layer's Mul into SwiGLU in place and orphans the Silu, which stays in the node list but is
// no longer live; node counts do not change.
#include <gtest/gtest.h>

#include <vector>

#include "../models/synthetic.h"
#include "graph/ir.h"
#include "models/llama_graph.h"
#include "runtime/cpu_backend.h"
#include "sched/assign.h"
#include "sched/fusion.h"

using namespace minfer;

TEST(CensusFused, SwiGLURewriteOrphansSilu) {
  const auto hp = test::qwen25_05b_hparams();
  const auto t = test::qwen25_05b_tensors();
  graph::GraphParams p;
  p.n_tokens = 30;
  p.n_out = 1;
  p.cparams.n_ctx = 4096;
  p.cparams.fuse_ffn = false;  // the unfused FFN, which the pass rewrites
  graph::ComputeGraph g = models::build_llama_graph(hp, t, p, {true, true, true, true});
  runtime::CpuBackend cpu;
  std::vector<sched::Backend*> backends{&cpu};
  sched::assign_backends(g, backends);
  EXPECT_EQ(sched::FusionPass::run(g, backends), 24);
  ASSERT_EQ(g.nodes.size(), 440u);
  const std::vector<bool> live = g.live_mask();
  for (int il = 0; il < 24; ++il) {
    const int shift = il == 23 ? 2 : 0;  // the last layer's two tail GetRows
    const int silu = 18 + il * 18 + shift, sw = silu + 1;
    EXPECT_EQ(graph::op_name(g.nodes[size_t(silu)].op), "Silu");
    EXPECT_FALSE(live[size_t(silu)]) << silu;
    EXPECT_EQ(graph::op_name(g.nodes[size_t(sw)].op), "SwiGLU");
    EXPECT_EQ(g.nodes[size_t(sw)].src, (std::vector<graph::NodeId>{sw - 3, sw - 2}));  // gate, up
    EXPECT_TRUE(live[size_t(sw)]);
  }
  for (const auto& n : g.nodes) EXPECT_EQ(n.backend, 0) << n.name;
  // The stale edge gate -> silu is still there, as in the design's DOT dump.
  EXPECT_EQ(g.nodes[18].src, (std::vector<graph::NodeId>{16}));
}
