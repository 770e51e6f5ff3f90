#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "sched_fixture.h"

using namespace minfer;
using namespace minfer::graph;
using minfer::test::MiniGraph;
using minfer::test::RefBackend;

namespace {

bool matmul_or_add(const CNode& n) {
  return std::holds_alternative<OpMatMul>(n.op) || std::holds_alternative<OpAdd>(n.op);
}

const std::vector<int32_t> kTokens{3, 1, 4, 1, 5, 9};

// The weights an accelerator holds in the split tests: layer 0's, and the output matrix.
std::set<std::string> accel_weights(const std::map<std::string, std::vector<float>>& weights) {
  std::set<std::string> held;
  for (auto& [name, v] : weights)
    if (name.rfind("blk.0.", 0) == 0 || name == "output.weight") held.insert(name);
  return held;
}

}  // namespace

TEST(Executor, SplitExecutionWithCopiesMatchesSingleBackend) {
  test::MiniConfig c;
  auto weights = test::mini_weights(c, 11);
  test::MapWeights w(weights);
  const std::set<std::string> held = accel_weights(weights);

  RefBackend cpu_only("CPU");
  test::MiniRun ref;
  ref.backends = {&cpu_only};
  const auto expect = ref.run(c, w, kTokens, 0, 2);

  RefBackend accel("ACCEL", matmul_or_add, held);
  RefBackend cpu("CPU");
  test::MiniRun split;
  split.backends = {&accel, &cpu};
  const auto got = split.run(c, w, kTokens, 0, 2);
  EXPECT_EQ(got, expect) << "same scalar code on both sides: bit-identical";

  size_t copies = 0;
  for (const auto& sp : split.schedule.splits) copies += sp.copies.size();
  EXPECT_GT(split.schedule.splits.size(), 5u);
  EXPECT_GT(copies, 5u);
  EXPECT_GT(accel.computed.size(), 8u);
  // Every activation ACCEL read was in its own arena: cross-backend sources were copied.
  const uint8_t* base = split.alloc.arena_base(0);
  const size_t cap = split.alloc.arena_capacity(0);
  ASSERT_NE(base, nullptr);
  for (const void* p : accel.reads) {
    const auto* b = static_cast<const uint8_t*>(p);
    EXPECT_TRUE(b >= base && b < base + cap);
  }
  for (const void* p : cpu.reads) {
    const auto* b = static_cast<const uint8_t*>(p);
    EXPECT_FALSE(b >= base && b < base + cap) << "CPU read ACCEL memory";
  }
}

TEST(Executor, TailRowsMatchTheFullBatch) {
  test::MiniConfig c;
  test::MapWeights w(test::mini_weights(c, 3));
  RefBackend cpu("CPU");
  test::MiniRun full, tail;
  full.backends = tail.backends = {&cpu};
  const auto all = full.run(c, w, kTokens, 0, int64_t(kTokens.size()));
  const auto last2 = tail.run(c, w, kTokens, 0, 2);
  ASSERT_EQ(all.size(), kTokens.size() * size_t(c.vocab));
  const std::vector<float> expect(all.end() - 2 * c.vocab, all.end());
  test::expect_close(last2, expect, 1e-5f);
}

// The KV regions belong to the KvStore, not to the graph plan: a decode graph built and
// allocated after the prefill (with a brand-new allocator) continues from the stored K/V.
TEST(Executor, AllocatorSurvivesRebuild) {
  test::MiniConfig c;
  test::MapWeights w(test::mini_weights(c, 5));
  RefBackend cpu("CPU");

  test::MiniRun whole;
  whole.backends = {&cpu};
  const auto expect = whole.run(c, w, kTokens, 0, 1);

  test::MiniRun steps;
  steps.backends = {&cpu};
  const std::vector<int32_t> prompt(kTokens.begin(), kTokens.end() - 2);
  steps.run(c, w, prompt, 0, 1);
  steps.alloc = sched::GraphAllocator{};  // the next graph gets fresh buffers
  steps.run(c, w, {kTokens[kTokens.size() - 2]}, int32_t(prompt.size()), 1);
  const auto got = steps.run(c, w, {kTokens.back()}, int32_t(prompt.size() + 1), 1);
  test::expect_close(got, expect, 1e-5f);

  // Without the stored context the last token alone gives something else.
  test::MiniRun cold;
  cold.backends = {&cpu};
  const auto alone = cold.run(c, w, {kTokens.back()}, 0, 1);
  float diff = 0;
  for (size_t i = 0; i < alone.size(); ++i) diff = std::max(diff, std::abs(alone[i] - expect[i]));
  EXPECT_GT(diff, 1e-3f);
}

TEST(Executor, PositionsOutsideTheContextAreErrors) {
  test::MiniConfig c;  // n_ctx 16
  test::MapWeights w(test::mini_weights(c, 5));
  RefBackend cpu("CPU");
  test::MiniRun run;
  run.backends = {&cpu};
  try {
    run.run(c, w, {1, 2, 3}, 14, 1);  // positions 14, 15, 16
    FAIL() << "position 16 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("position 16"), std::string::npos) << e.what();
  }
  // Checked before the store ran: nothing was written.
  for (int l = 0; l < c.n_layer; ++l) {
    const sched::KvPair p = run.kv.layer(l);
    const size_t n = p.k.row_bytes * size_t(p.k.n_ctx);
    EXPECT_EQ(std::count(p.k.data, p.k.data + n, uint8_t(0)), std::ptrdiff_t(n));
  }
  EXPECT_THROW(run.run(c, w, {1}, -1, 1), Error);
  EXPECT_NO_THROW(run.run(c, w, {1, 2}, 14, 1));  // 14, 15: the last two slots
}

// Every backend hears of each run before any node of it is computed (state a backend carries
// from node to node, such as the CPU backend's shared matmul activations, is per run).
TEST(Executor, EveryBackendBeginsEachRunBeforeItsNodes) {
  test::MiniConfig c;
  auto weights = test::mini_weights(c, 11);
  test::MapWeights w(weights);
  RefBackend accel("ACCEL", matmul_or_add, accel_weights(weights));
  RefBackend cpu("CPU");
  test::MiniRun split;
  split.backends = {&accel, &cpu};
  split.run(c, w, kTokens, 0, 2);
  const size_t accel_first = accel.computed.size(), cpu_first = cpu.computed.size();
  ASSERT_GT(accel_first, 0u);
  ASSERT_GT(cpu_first, 0u);
  split.run(c, w, {2, 7}, int32_t(kTokens.size()), 1);
  EXPECT_EQ(accel.runs_at, (std::vector<size_t>{0, accel_first}));
  EXPECT_EQ(cpu.runs_at, (std::vector<size_t>{0, cpu_first}));
  EXPECT_GT(cpu.computed.size(), cpu_first);
}

TEST(Executor, ObserverSeesEveryComputedNodeAndSkipsOrphans) {
  test::MiniConfig c;
  test::MapWeights w(test::mini_weights(c, 5));
  RefBackend cpu("CPU");
  test::MiniRun run;
  run.backends = {&cpu};
  std::vector<sched::NodeEvent> events;
  run.observer = [&](const sched::NodeEvent& e) { events.push_back(e); };
  MiniGraph m;
  run.run(c, w, {1, 2, 3}, 0, 1, &m);

  const std::vector<bool> live = m.g.live_mask();
  std::vector<NodeId> expect;
  for (const CNode& n : m.g.nodes)
    if (live[size_t(n.id)] && !std::holds_alternative<OpInput>(n.op) &&
        !std::holds_alternative<OpKvLoad>(n.op))
      expect.push_back(n.id);
  ASSERT_EQ(events.size(), expect.size());
  EXPECT_EQ(cpu.computed, expect);
  for (size_t i = 0; i < events.size(); ++i) {
    const sched::NodeEvent& e = events[i];
    EXPECT_EQ(e.node->id, expect[i]);
    EXPECT_FALSE(std::holds_alternative<OpSilu>(e.node->op)) << "orphan computed";
    EXPECT_EQ(e.backend, 0);
    EXPECT_EQ(e.backend_name, "CPU");
    EXPECT_GE(e.ms, 0.0);
    if (std::holds_alternative<OpKvStore>(e.node->op)) {
      EXPECT_EQ(e.data, nullptr);
    } else {
      EXPECT_EQ(e.data, run.alloc.data(e.node->id));
      EXPECT_EQ(e.bytes, e.node->n_bytes());
    }
  }
  // The logits reported are the logits returned.
  EXPECT_EQ(events.back().node->id, m.logits);
}

TEST(Executor, RejectsAPlanOfAnotherGraph) {
  test::MiniConfig c;
  test::MapWeights w(test::mini_weights(c, 5));
  RefBackend cpu("CPU");
  std::vector<sched::Backend*> backends{&cpu};
  MiniGraph a = test::build_mini(c, test::mini_params(2, 1));
  MiniGraph b = test::build_mini(c, test::mini_params(3, 3));
  sched::GraphAllocator alloc;
  sched::KvStore kv;
  sched::Schedule s = sched::prepare(a.g, backends, alloc, kv);
  sched::prepare(b.g, backends, alloc, kv);
  sched::Executor ex(backends);
  EXPECT_THROW(ex.run(a.g, s.splits, alloc, w, kv), Error);
  EXPECT_THROW(sched::Executor({}), Error);
}

TEST(Executor, UnknownWeightIsAnError) {
  test::MiniConfig c;
  auto weights = test::mini_weights(c, 5);
  weights.erase("blk.1.ffn_up.weight");
  test::MapWeights w(weights);
  RefBackend cpu("CPU");
  test::MiniRun run;
  run.backends = {&cpu};
  try {
    run.run(c, w, {1, 2}, 0, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.1.ffn_up.weight"), std::string::npos) << e.what();
  }
}
