#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "common/error.h"
#include "backend/cpu/backend.h"
#include "sched/alloc.h"
#include "sched_fixture.h"

using namespace minfer;
using namespace minfer::graph;

namespace {

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

// A buffer's life on the time line the allocator documents: the copies of split s happen at
// 2*first(s), node n runs at 2n+1. Computed here from the graph and splits alone.
struct Life {
  std::string what;
  BufferInfo buf;
  int64_t start, end;
  NodeId node = -1;  // -1 for copies
};

std::vector<Life> lives(const ComputeGraph& g, const std::vector<sched::Split>& splits,
                        const sched::AllocPlan& plan) {
  std::vector<Life> out;
  std::vector<int64_t> end(g.nodes.size(), -1), start(g.nodes.size(), -1);
  for (const CNode& n : g.nodes) start[size_t(n.id)] = 2 * int64_t(n.id) + 1;
  for (NodeId id : g.inputs) {
    start[size_t(id)] = -1;
    end[size_t(id)] = kEnd;
  }
  for (NodeId id : g.outputs) end[size_t(id)] = kEnd;
  for (size_t s = 0; s < splits.size(); ++s) {
    const auto& sp = splits[s];
    const int64_t copy_t = 2 * int64_t(sp.nodes.front());
    for (size_t k = 0; k < sp.copies.size(); ++k) {
      const NodeId src = sp.copies[k];
      end[size_t(src)] = std::max(end[size_t(src)], copy_t);
      int64_t last = copy_t;
      for (NodeId id : sp.nodes)
        for (NodeId x : g.nodes[size_t(id)].src)
          if (x == src) last = std::max(last, 2 * int64_t(id) + 1);
      EXPECT_EQ(plan.split_copies[s][k].src, src);
      out.push_back({"copy of " + std::to_string(src), plan.split_copies[s][k].buf, copy_t, last});
    }
    for (NodeId id : sp.nodes)
      for (NodeId x : g.nodes[size_t(id)].src)
        if (std::find(sp.copies.begin(), sp.copies.end(), x) == sp.copies.end())
          end[size_t(x)] = std::max(end[size_t(x)], 2 * int64_t(id) + 1);
  }
  for (const CNode& n : g.nodes)
    if (plan.node_buf[size_t(n.id)])
      out.push_back({n.name + "#" + std::to_string(n.id), *plan.node_buf[size_t(n.id)],
                     start[size_t(n.id)], std::max(end[size_t(n.id)], start[size_t(n.id)]), n.id});
  return out;
}

// No two buffers that are alive at the same time share a byte, except an in-place output
// taking over the buffer of the source that dies at it.
void check_no_overlap(const ComputeGraph& g, const std::vector<sched::Split>& splits,
                      const sched::AllocPlan& plan) {
  const auto ls = lives(g, splits, plan);
  for (size_t i = 0; i < ls.size(); ++i) {
    const Life& a = ls[i];
    ASSERT_LE(a.buf.offset + a.buf.size, plan.arena_size[size_t(a.buf.arena)]) << a.what;
    EXPECT_EQ(a.buf.offset % sched::kBufferAlign, 0u);
    for (size_t j = i + 1; j < ls.size(); ++j) {
      const Life& b = ls[j];
      if (a.buf.arena != b.buf.arena) continue;
      const bool bytes = a.buf.offset < b.buf.offset + b.buf.size &&
                         b.buf.offset < a.buf.offset + a.buf.size;
      if (!bytes) continue;
      const Life& first = a.start <= b.start ? a : b;
      const Life& second = a.start <= b.start ? b : a;
      const bool in_place = second.node >= 0 && first.node >= 0 &&
                            plan.alias_of[size_t(second.node)] == first.node &&
                            first.end == second.start;
      EXPECT_TRUE(first.end < second.start || in_place)
          << first.what << " [" << first.start << "," << first.end << "] and " << second.what
          << " [" << second.start << "," << second.end << "] share bytes";
    }
  }
}

// A random DAG in builder order: inputs of a few widths, matmuls changing widths, elementwise
// ops pairing equal shapes, some dead ends, random outputs.
ComputeGraph random_dag(std::mt19937& rng, int n_nodes) {
  GraphBuilder b;
  const int64_t widths[] = {4, 16, 24, 64};
  std::vector<NodeId> ids;
  const int n_inputs = 1 + int(rng() % 3);
  for (int i = 0; i < n_inputs; ++i)
    ids.push_back(b.input("in" + std::to_string(i), {widths[rng() % 4], 3, 1, 1}, DType::F32));
  while (int(b.size()) < n_nodes) {
    const NodeId x = ids[rng() % ids.size()];
    const Shape s = b.node(x).shape;
    std::vector<NodeId> same;
    for (NodeId y : ids)
      if (b.node(y).shape == s) same.push_back(y);
    const NodeId y = same[rng() % same.size()];
    switch (rng() % 5) {
      case 0: ids.push_back(b.matmul(x, WeightDesc{"w", GgmlType::F32, {s[0], widths[rng() % 4], 1, 1}})); break;
      case 1: ids.push_back(b.add(x, y)); break;
      case 2: ids.push_back(b.mul(x, y)); break;
      case 3: ids.push_back(b.silu(x)); break;
      default: ids.push_back(b.swiglu(x, y)); break;
    }
  }
  const int n_out = 1 + int(rng() % 3);
  for (int i = 0; i < n_out; ++i) b.output(ids[size_t(n_inputs) + rng() % (ids.size() - size_t(n_inputs))]);
  return b.build();
}

}  // namespace

TEST(Alloc, LivenessNeverOverlapsLiveBuffersOnRandomDags) {
  std::mt19937 rng(1234);
  int aliased = 0, reused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    ComputeGraph g = random_dag(rng, 8 + int(rng() % 60));
    const int nb = 1 + int(rng() % 3);  // 1..3 backends: random placement makes copies
    for (CNode& n : g.nodes)
      n.backend = std::holds_alternative<OpInput>(n.op) ? nb - 1 : int(rng() % unsigned(nb));
    const auto splits = sched::make_splits(g);
    const auto plan = sched::plan_allocation(g, splits, nb);
    const std::vector<bool> live = g.live_mask();
    for (const CNode& n : g.nodes) {
      EXPECT_EQ(plan.node_buf[size_t(n.id)].has_value(), bool(live[size_t(n.id)])) << n.name;
      if (plan.node_buf[size_t(n.id)]) {
        EXPECT_EQ(plan.node_buf[size_t(n.id)]->size, n.n_bytes());
        EXPECT_EQ(plan.node_buf[size_t(n.id)]->arena, n.backend);
      }
      if (plan.alias_of[size_t(n.id)] >= 0) {
        ++aliased;
        EXPECT_TRUE(is_elementwise(n.op));
        EXPECT_EQ(plan.alias_of[size_t(n.id)], n.src[0]);
      }
    }
    size_t total = 0;
    for (const CNode& n : g.nodes)
      if (plan.node_buf[size_t(n.id)]) total += (n.n_bytes() + 63) / 64 * 64;
    size_t arenas = 0;
    for (size_t a : plan.arena_size) arenas += a;
    if (arenas < total) ++reused;
    check_no_overlap(g, splits, plan);
    if (HasFailure()) {
      ADD_FAILURE() << "trial " << trial;
      break;
    }
  }
  // The property must have been exercised, not vacuously true.
  EXPECT_GT(aliased, 100);
  EXPECT_GT(reused, 100);
}

TEST(Alloc, InPlaceOnlyWhenTheSourceDiesThere) {
  GraphBuilder b;
  NodeId x = b.input("x", {16, 2, 1, 1}, DType::F32);
  NodeId m = b.matmul(x, WeightDesc{"w", GgmlType::F32, {16, 16, 1, 1}});
  NodeId a1 = b.add(m, x);   // m dies here: in place
  NodeId a2 = b.add(a1, x);  // a1 dies here: in place (chain)
  NodeId s = b.silu(a2);     // a2 is still read below: new buffer
  NodeId a3 = b.add(s, a2);  // s dies here: in place
  NodeId a4 = b.add(x, a3);  // x is a graph input: never written over
  b.output(a4);
  ComputeGraph g = b.build();
  for (CNode& n : g.nodes) n.backend = 0;
  const auto splits = sched::make_splits(g);
  const auto plan = sched::plan_allocation(g, splits, 1);
  EXPECT_EQ(plan.alias_of[size_t(a1)], m);
  EXPECT_EQ(plan.alias_of[size_t(a2)], a1);
  EXPECT_EQ(plan.node_buf[size_t(a2)], plan.node_buf[size_t(m)]);
  EXPECT_EQ(plan.alias_of[size_t(s)], -1);
  EXPECT_NE(plan.node_buf[size_t(s)]->offset, plan.node_buf[size_t(a2)]->offset);
  EXPECT_EQ(plan.alias_of[size_t(a3)], s);
  EXPECT_EQ(plan.alias_of[size_t(a4)], -1);
  EXPECT_NE(plan.node_buf[size_t(a4)]->offset, plan.node_buf[size_t(x)]->offset);
  check_no_overlap(g, splits, plan);
}

TEST(Alloc, FreedBuffersAreReusedBestFit) {
  // A long chain of matmuls alternating widths needs 2 live buffers at a time, not 40.
  GraphBuilder b;
  NodeId x = b.input("x", {64, 4, 1, 1}, DType::F32);
  NodeId cur = x;
  for (int i = 0; i < 40; ++i) {
    const int64_t in = b.node(cur).shape[0], out = i % 2 ? 64 : 32;
    cur = b.matmul(cur, WeightDesc{"w", GgmlType::F32, {in, out, 1, 1}});
  }
  b.output(cur);
  ComputeGraph g = b.build();
  for (CNode& n : g.nodes) n.backend = 0;
  const auto splits = sched::make_splits(g);
  const auto plan = sched::plan_allocation(g, splits, 1);
  // input (1 KiB) + at most two intermediates + the output.
  EXPECT_LE(plan.arena_size[0], size_t(1024 + 1024 + 512 + 1024));
  check_no_overlap(g, splits, plan);
}

TEST(Alloc, TypedViewsAreChecked) {
  test::MiniConfig c;
  ComputeGraph g = test::build_mini(c, test::mini_params(3, 1)).g;
  for (CNode& n : g.nodes) n.backend = 0;
  sched::GraphAllocator alloc;
  EXPECT_FALSE(alloc.allocated());
  alloc.allocate(g, sched::make_splits(g), 1);
  EXPECT_EQ(alloc.input_i32(0).size(), 3u);
  EXPECT_THROW(alloc.tensor_f32(0), Error);    // token ids are i32
  EXPECT_THROW(alloc.input_i32(3), Error);     // the embedding is f32
  EXPECT_EQ(alloc.tensor_f32(3).size(), 3u * 8u);
  EXPECT_THROW(alloc.data(10), Error);         // kv_store: its data is the KV cache
  EXPECT_THROW(alloc.data(999), Error);
  EXPECT_THROW(sched::plan_allocation(g, sched::make_splits(g), 0), Error);
  EXPECT_GE(alloc.arena_capacity(0), alloc.plan().arena_size[0]);
  EXPECT_EQ(alloc.arena_base(3), nullptr);
}

TEST(KvStore, RegionsAreSizedFromTheGraphAndKeepTheirContents) {
  test::MiniConfig c;
  ComputeGraph g = test::build_mini(c, test::mini_params(3, 1)).g;
  sched::KvStore kv(GgmlType::Q8_0);
  EXPECT_THROW(kv.layer(0), Error);
  c.n_head = 1;
  c.n_head_kv = 1;
  c.head_dim = 32;  // k width 32: one head of a whole Q8_0 block (each head's rows are whole blocks)
  ComputeGraph wide = test::build_mini(c, test::mini_params(3, 1)).g;
  EXPECT_THROW(kv.ensure(g), Error) << "4-wide rows are not whole Q8_0 blocks";
  sched::KvStore q8(GgmlType::Q8_0);
  q8.ensure(wide);
  const sched::KvPair p = q8.layer(1);
  EXPECT_EQ(p.k.type, GgmlType::Q8_0);
  EXPECT_EQ(p.k.width, 32);
  EXPECT_EQ(p.k.n_ctx, 16);
  EXPECT_EQ(p.k.row_bytes, 34u);  // one block: fp16 scale + 32 int8
  EXPECT_EQ(q8.bytes(), size_t(c.n_layer) * (((34 * 16 + 63) / 64 * 64) + 34 * 16));

  sched::KvStore f16(GgmlType::F16);
  f16.ensure(g);
  EXPECT_EQ(f16.layer(0).v.row_bytes, 8u);
  f16.layer(0).k.data[5] = 42;
  f16.ensure(test::build_mini(test::MiniConfig{}, test::mini_params(1, 1)).g);  // a rebuild
  EXPECT_EQ(f16.layer(0).k.data[5], 42) << "regions survive a new graph";
  test::MiniConfig other;
  other.n_ctx = 32;
  EXPECT_THROW(f16.ensure(test::build_mini(other, test::mini_params(1, 1)).g), Error);
  f16.clear();
  EXPECT_EQ(f16.layer(0).k.data[5], 0);
  EXPECT_THROW(sched::KvStore{GgmlType::Q4_0}, Error);
}

// Each KV head's rows lie together (cpu::KvRegion): the heads come from the graph's KV nodes.
TEST(KvStore, RegionsAreHeadMajor) {
  sched::KvStore kv(GgmlType::F16);
  kv.ensure_layer(0, 16, 16, 8, 2);
  const sched::KvPair p = kv.layer(0);
  EXPECT_EQ(p.k.n_heads, 2);
  EXPECT_EQ(p.k.row_bytes, 16u);    // 8 F16 elements of one head
  EXPECT_EQ(p.v.head_bytes, 128u);  // 8 positions of them
  EXPECT_EQ(cpu::kv_row(p.v, 1, 3), p.v.data + 128 + 3 * 16);
  // F16 keys in blocks of 16 positions where the CPU wants them (AVX-512): the 8 positions take
  // a whole block.
  EXPECT_EQ(p.k.blocked, cpu::kv_keys_blocked(GgmlType::F16));
  EXPECT_FALSE(p.v.blocked);
  if (p.k.blocked) {
    EXPECT_EQ(p.k.head_bytes, 16u * 16u);
    EXPECT_EQ(reinterpret_cast<uint8_t*>(cpu::kv_key_block(p.k, 1, 0)), p.k.data + 256);
  } else {
    EXPECT_EQ(p.k.head_bytes, 128u);
  }
  EXPECT_THROW(kv.ensure_layer(0, 16, 16, 8, 4), Error) << "the layer holds 2 heads";
  EXPECT_THROW(kv.ensure_layer(1, 16, 16, 8, 3), Error) << "16 is not 3 heads";
  test::MiniConfig c;
  c.n_head = 4;
  c.n_head_kv = 2;
  sched::KvStore g(GgmlType::F32);
  g.ensure(test::build_mini(c, test::mini_params(3, 1)).g);
  EXPECT_EQ(g.layer(0).k.n_heads, 2);
  EXPECT_EQ(g.layer(0).k.row_bytes, size_t(c.head_dim) * 4);
}
