#include <gtest/gtest.h>

#include "common/error.h"
#include "sched/assign.h"
#include "sched/fusion.h"
#include "sched_fixture.h"

using namespace minfer;
using namespace minfer::graph;
using minfer::test::RefBackend;

namespace {

bool matmul_or_add(const CNode& n) {
  return std::holds_alternative<OpMatMul>(n.op) || std::holds_alternative<OpAdd>(n.op);
}

// The accelerator holds layer 0's attention and FFN matrices (not its norms).
std::set<std::string> layer0_matrices() {
  return {"blk.0.attn_q.weight",      "blk.0.attn_k.weight",   "blk.0.attn_v.weight",
          "blk.0.attn_q.bias",        "blk.0.attn_k.bias",     "blk.0.attn_v.bias",
          "blk.0.attn_output.weight", "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight",
          "blk.0.ffn_down.weight"};
}

int backend_of(const ComputeGraph& g, const std::string& name) {
  for (const CNode& n : g.nodes)
    if (n.name == name) return n.backend;
  ADD_FAILURE() << "no node " << name;
  return -2;
}

// Checks what must hold for any assignment and split list.
void check_splits(const ComputeGraph& g, const std::vector<sched::Split>& splits,
                  std::span<sched::Backend* const> backends) {
  const std::vector<bool> live = g.live_mask();
  std::vector<int> seen(g.nodes.size(), 0);
  for (size_t s = 0; s < splits.size(); ++s) {
    const sched::Split& sp = splits[s];
    if (s > 0) {
      EXPECT_NE(sp.backend, splits[s - 1].backend) << "adjacent splits are merged";
    }
    std::vector<NodeId> expect_copies;
    for (NodeId id : sp.nodes) {
      ++seen[size_t(id)];
      const CNode& n = g.nodes[size_t(id)];
      EXPECT_EQ(n.backend, sp.backend);
      EXPECT_TRUE(backends[size_t(sp.backend)]->supports(n)) << n.name;
      for (NodeId src : n.src) {
        const CNode& sn = g.nodes[size_t(src)];
        const bool kv = std::holds_alternative<OpKvLoad>(sn.op);
        if (sn.backend != sp.backend && !kv &&
            std::find(expect_copies.begin(), expect_copies.end(), src) == expect_copies.end())
          expect_copies.push_back(src);
      }
    }
    EXPECT_EQ(sp.copies, expect_copies) << "split " << s;
  }
  for (const CNode& n : g.nodes) {
    EXPECT_GE(n.backend, 0) << n.name;
    const bool in_split = live[size_t(n.id)] && !std::holds_alternative<OpInput>(n.op);
    EXPECT_EQ(seen[size_t(n.id)], in_split ? 1 : 0) << n.name;
  }
}

}  // namespace

TEST(Assign, CpuOnlyIsOneSplitWithoutCopies) {
  test::MiniConfig c;
  ComputeGraph g = test::build_mini(c, test::mini_params(4, 1)).g;
  RefBackend cpu("CPU");
  std::vector<sched::Backend*> backends{&cpu};
  sched::assign_backends(g, backends);
  for (const CNode& n : g.nodes) EXPECT_EQ(n.backend, 0) << n.name;
  auto splits = sched::make_splits(g);
  ASSERT_EQ(splits.size(), 1u);
  EXPECT_TRUE(splits[0].copies.empty());
  check_splits(g, splits, backends);
}

TEST(Assign, WeightsPullNodesAndExpansionFollowsGgml) {
  test::MiniConfig c;
  ComputeGraph g = test::build_mini(c, test::mini_params(4, 1)).g;
  RefBackend accel("ACCEL", matmul_or_add, layer0_matrices());
  RefBackend cpu("CPU");
  std::vector<sched::Backend*> backends{&accel, &cpu};
  sched::assign_backends(g, backends);
  EXPECT_EQ(sched::FusionPass::run(g, backends), 2);
  auto splits = sched::make_splits(g);
  check_splits(g, splits, backends);

  // Layer 0: the matrices go where their weights are.
  EXPECT_EQ(g.nodes[5].backend, 0);   // q
  EXPECT_EQ(g.nodes[6].backend, 0);   // k
  EXPECT_EQ(g.nodes[7].backend, 0);   // v
  EXPECT_EQ(g.nodes[13].backend, 0);  // o
  // Norm weights are host memory: rms_norm stays on the CPU although ACCEL could be expanded.
  EXPECT_EQ(g.nodes[4].backend, 1);
  EXPECT_EQ(g.nodes[15].backend, 1);
  // Ops ACCEL cannot run are never sent there.
  for (size_t i : {8, 9, 10, 11, 12, 18, 19}) EXPECT_EQ(g.nodes[i].backend, 1) << g.nodes[i].name;
  // The residual add after ACCEL's o projection is taken by the downward expansion.
  EXPECT_EQ(g.nodes[14].backend, 0);
  EXPECT_EQ(g.nodes[21].backend, 0);  // add after ffn_down
  // Layer 1's matrices are host weights: CPU.
  EXPECT_EQ(backend_of(g, "matmul_blk.1.attn_q.weight"), 1);
  EXPECT_EQ(backend_of(g, "matmul_output.weight"), 1);
  // Inputs live on the host.
  for (NodeId id : g.inputs) EXPECT_EQ(g.nodes[size_t(id)].backend, 1);

  // The q/k/v split copies the normed activations (node 4) in; the rope split copies q, k
  // and v (the store reads v directly).
  ASSERT_GE(splits.size(), 3u);
  EXPECT_EQ(splits[0].backend, 1);
  EXPECT_EQ(splits[1].backend, 0);
  EXPECT_EQ(splits[1].nodes, (std::vector<NodeId>{5, 6, 7}));
  EXPECT_EQ(splits[1].copies, (std::vector<NodeId>{4}));
  EXPECT_EQ(splits[2].copies, (std::vector<NodeId>{5, 6, 7}));
}

TEST(Assign, ExpansionFillsUnweightedNodesNextToAnAccelerator) {
  // ACCEL holds everything and runs every op except rope: all but the ropes (and the host
  // inputs) expand onto it.
  test::MiniConfig c;
  c.n_layer = 1;
  ComputeGraph g = test::build_mini(c, test::mini_params(3, 3)).g;
  auto w = test::mini_weights(c, 1);
  std::set<std::string> all;
  for (auto& [name, v] : w) all.insert(name);
  RefBackend accel("ACCEL", [](const CNode& n) { return !std::holds_alternative<OpRope>(n.op); },
                   all);
  RefBackend cpu("CPU");
  std::vector<sched::Backend*> backends{&accel, &cpu};
  sched::assign_backends(g, backends);
  for (const CNode& n : g.nodes) {
    const bool host = std::holds_alternative<OpInput>(n.op) || std::holds_alternative<OpRope>(n.op);
    EXPECT_EQ(n.backend, host ? 1 : 0) << n.name;
  }
}

TEST(Assign, PreassignmentIsKeptOnlyWhenSupported) {
  test::MiniConfig c;
  c.n_layer = 1;
  ComputeGraph g = test::build_mini(c, test::mini_params(2, 2)).g;
  RefBackend accel("ACCEL", matmul_or_add);
  RefBackend cpu("CPU");
  std::vector<sched::Backend*> backends{&accel, &cpu};
  // No tail input here: 0, 1 inputs, 2 embed, 3.. layer 0 (14 ffn rms_norm, 15 gate, 16 up).
  g.nodes[2].backend = 0;   // embedding: ACCEL cannot run it
  g.nodes[14].backend = 0;  // rms_norm: neither
  g.nodes[15].backend = 0;  // ffn_gate matmul: fine
  g.nodes[16].backend = 7;  // no such backend
  sched::assign_backends(g, backends);
  EXPECT_EQ(g.nodes[2].backend, 1);
  EXPECT_EQ(g.nodes[14].backend, 1);
  EXPECT_EQ(g.nodes[15].backend, 0);
  EXPECT_EQ(g.nodes[16].backend, 1);  // reset, then placed with its (host) weight
  check_splits(g, sched::make_splits(g), backends);
}

TEST(Assign, UnsupportedEverywhereIsAnError) {
  test::MiniConfig c;
  c.n_layer = 1;
  ComputeGraph g = test::build_mini(c, test::mini_params(2, 2)).g;
  RefBackend cpu("CPU", [](const CNode& n) { return !std::holds_alternative<OpAttn>(n.op); });
  std::vector<sched::Backend*> backends{&cpu};
  try {
    sched::assign_backends(g, backends);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attn"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sched::assign_backends(g, {}), Error);
}

TEST(Assign, SplitsNeedAssignedNodesInNodeOrder) {
  test::MiniConfig c;
  c.n_layer = 1;
  ComputeGraph g = test::build_mini(c, test::mini_params(2, 2)).g;
  EXPECT_THROW(sched::make_splits(g), Error);  // nothing assigned yet
  for (CNode& n : g.nodes) n.backend = 0;
  g.nodes[5].src[0] = 9;  // reads a later node
  EXPECT_THROW(sched::make_splits(g), Error);
}
