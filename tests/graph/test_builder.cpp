#include <gtest/gtest.h>

#include "common/error.h"
#include "graph/builder.h"
#include "graph/cache.h"
#include "graph/mini_transformer.h"

using namespace minfer::graph;
using minfer::test::build_mini;
using minfer::test::MiniConfig;
using minfer::test::MiniGraph;

namespace {

GraphParams params(int64_t nt, int64_t n_out) {
  GraphParams p;
  p.n_tokens = nt;
  p.n_out = n_out;
  p.gtype = nt == 1 ? GraphType::Decode : GraphType::Prefill;
  p.cparams.n_ctx = 16;
  return p;
}

}  // namespace

TEST(Builder, CreatesTopologicallySortedGraph) {
  MiniConfig c;
  ComputeGraph g = build_mini(c, params(5, 1)).g;
  for (const CNode& n : g.nodes) {
    EXPECT_EQ(n.backend, -1) << "the builder assigns no backend";
    for (NodeId s : n.src) EXPECT_LT(s, n.id) << n.name;
  }
  std::vector<NodeId> expect(g.nodes.size());
  for (size_t i = 0; i < expect.size(); ++i) expect[i] = NodeId(i);
  EXPECT_EQ(g.topo_order(), expect);
}

TEST(Builder, IsPure) {
  MiniConfig c;
  const GraphParams p = params(4, 1);
  ComputeGraph a = build_mini(c, p).g;
  ComputeGraph b = build_mini(c, p).g;
  EXPECT_NO_THROW(GraphCache::verify_structural(a, b));
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) EXPECT_EQ(a.nodes[i].name, b.nodes[i].name);
  EXPECT_EQ(a.uid, 0u);
}

// The census of the design (§2.5) scaled down: 3 inputs+embed, 18 nodes a layer, 2 get_rows on
// the last layer, final norm and lm_head. With 24 layers this is 440 (prefill, n_out < nt) and
// 437 (one token).
TEST(Builder, NodeCensusAndLayerOrder) {
  for (int layers : {1, 2, 24}) {
    MiniConfig c;
    c.n_layer = layers;
    EXPECT_EQ(build_mini(c, params(30, 1)).g.nodes.size(), size_t(3 + 1 + 18 * layers + 2 + 2));
    EXPECT_EQ(build_mini(c, params(1, 1)).g.nodes.size(), size_t(2 + 1 + 18 * layers + 2));
  }
  MiniConfig c;
  c.n_layer = 24;
  EXPECT_EQ(build_mini(c, params(30, 1)).g.nodes.size(), 440u);
  EXPECT_EQ(build_mini(c, params(1, 1)).g.nodes.size(), 437u);

  c.n_layer = 2;
  MiniGraph m = build_mini(c, params(30, 1));
  const std::vector<std::string> layer0 = {
      "RmsNorm", "MatMul", "MatMul", "MatMul", "RoPE", "RoPE", "KvStore", "KvLoad", "Attn",
      "MatMul",  "Add",    "RmsNorm", "MatMul", "MatMul", "Silu", "Mul", "MatMul", "Add"};
  EXPECT_EQ(m.g.inputs, (std::vector<NodeId>{0, 1, 2}));
  EXPECT_EQ(op_name(m.g.nodes[3].op), "Embedding");
  for (size_t i = 0; i < layer0.size(); ++i)
    EXPECT_EQ(op_name(m.g.nodes[4 + i].op), layer0[i]) << "node " << 4 + i;
  // Last layer: get_rows of the attention output and of the residual before the add.
  const size_t l1 = 4 + 18;
  EXPECT_EQ(op_name(m.g.nodes[l1 + 9].op), "MatMul");
  EXPECT_EQ(op_name(m.g.nodes[l1 + 10].op), "GetRows");
  EXPECT_EQ(op_name(m.g.nodes[l1 + 11].op), "GetRows");
  EXPECT_EQ(op_name(m.g.nodes[l1 + 12].op), "Add");
  EXPECT_EQ(m.g.nodes[l1 + 12].shape, (Shape{8, 1, 1, 1}));
  EXPECT_EQ(m.g.outputs, (std::vector<NodeId>{m.logits}));
  EXPECT_EQ(m.logits, NodeId(m.g.nodes.size() - 1));
  EXPECT_EQ(m.g.nodes.back().shape, (Shape{11, 1, 1, 1}));
}

TEST(Builder, KvNodesCarryTheLayerOnly) {
  MiniConfig c;
  c.n_layer = 3;
  ComputeGraph g = build_mini(c, params(1, 1)).g;
  int stores = 0, loads = 0;
  for (const CNode& n : g.nodes) {
    if (auto* s = std::get_if<OpKvStore>(&n.op)) {
      EXPECT_EQ(n.op, Op(OpKvStore{stores}));
      EXPECT_EQ(n.src.size(), 3u);  // K, V, positions: positions are data
      EXPECT_EQ(n.src[2], 1);
      // Declared shape = the persistent region, independent of any position.
      EXPECT_EQ(n.shape, (Shape{4, 16, 1, 1}));
      EXPECT_EQ(std::get<KvMeta>(n.meta).layer, s->layer);
      ++stores;
    }
    if (std::get_if<OpKvLoad>(&n.op)) {
      EXPECT_EQ(n.op, Op(OpKvLoad{loads}));
      EXPECT_TRUE(n.src.empty());
      ++loads;
    }
  }
  EXPECT_EQ(stores, 3);
  EXPECT_EQ(loads, 3);
}

TEST(Builder, ShapesPropagate) {
  GraphBuilder b;
  NodeId ids = b.input("ids", {5, 1, 1, 1}, DType::I32);
  NodeId pos = b.input("pos", {5, 1, 1, 1}, DType::I32);
  NodeId e = b.embedding(ids, WeightDesc{"emb", minfer::GgmlType::Q8_0, {32, 100, 1, 1}});
  EXPECT_EQ(b.node(e).shape, (Shape{32, 5, 1, 1}));
  EXPECT_EQ(std::get<EmbedMeta>(b.node(e).meta).weight_type, minfer::GgmlType::Q8_0);
  NodeId m = b.matmul(e, WeightDesc{"wq", minfer::GgmlType::F32, {32, 64, 1, 1}}, "bq");
  EXPECT_EQ(b.node(m).shape, (Shape{64, 5, 1, 1}));
  const auto& mm = std::get<MatMulMeta>(b.node(m).meta);
  EXPECT_EQ(mm.in_dim, 32);
  EXPECT_EQ(mm.out_dim, 64);
  EXPECT_EQ(mm.bias, "bq");
  NodeId qn = b.qk_norm(m, 16, 4, 1e-6f, "qn");
  EXPECT_EQ(b.node(qn).shape, (Shape{64, 5, 1, 1}));
  NodeId r = b.rope(qn, pos, RopeStyle::NeoX, RopeMeta{4, 16, 16, 1e6f, 1.0f, "", {}});
  EXPECT_EQ(b.node(r).op, Op(OpRope{RopeStyle::NeoX}));
  KvMeta kvm{0, 16, 16, 64};
  NodeId k = b.matmul(e, WeightDesc{"wk", minfer::GgmlType::F32, {32, 16, 1, 1}});
  NodeId v = b.matmul(e, WeightDesc{"wv", minfer::GgmlType::F32, {32, 16, 1, 1}});
  NodeId st = b.kv_store(0, k, v, pos, kvm);
  EXPECT_EQ(b.node(st).shape, (Shape{16, 64, 1, 1}));
  NodeId kv = b.kv_load(0, kvm);
  // Attention's width comes from the metadata (Q may be a slice of a wider fused buffer).
  NodeId a = b.attn(r, kv, pos, AttnMeta{0, 4, 1, 16, 8, 16, 0.25f});
  EXPECT_EQ(b.node(a).shape, (Shape{32, 5, 1, 1}));
  NodeId f = b.fused_ffn(e, FusedFfnMeta{"g", "u", minfer::GgmlType::F32, minfer::GgmlType::F32,
                                         32, 96});
  EXPECT_EQ(b.node(f).shape, (Shape{96, 5, 1, 1}));
  FusedQkvMeta qm;
  qm.layer = 1;
  qm.in_dim = 32;
  qm.n_head = 4;
  qm.n_head_kv = 2;
  qm.head_dim = 8;
  qm.head_dim_v = 8;
  qm.n_rot = 8;
  qm.n_ctx = 64;
  NodeId fq = b.fused_qkv(e, pos, qm);
  EXPECT_EQ(b.node(fq).shape, (Shape{32, 5, 1, 1}));
  EXPECT_EQ(b.node(fq).op, Op(OpFusedQKV{1}));
  NodeId tail = b.input("tail", {2, 1, 1, 1}, DType::I32);
  NodeId gr = b.get_rows(e, tail, {32, 2, 1, 1});
  EXPECT_EQ(b.node(gr).shape, (Shape{32, 2, 1, 1}));
  b.output(gr);
  b.output(gr);  // idempotent
  ComputeGraph g = b.build();
  EXPECT_EQ(g.outputs, (std::vector<NodeId>{gr}));
  EXPECT_EQ(g.inputs, (std::vector<NodeId>{ids, pos, tail}));
  EXPECT_EQ(b.size(), 0u) << "build() leaves the builder empty";
}

TEST(Builder, RejectsBadShapesAndIds) {
  GraphBuilder b;
  NodeId ids = b.input("ids", {3, 1, 1, 1}, DType::I32);
  NodeId pos = b.input("pos", {3, 1, 1, 1}, DType::I32);
  NodeId x = b.embedding(ids, WeightDesc{"emb", minfer::GgmlType::F32, {8, 10, 1, 1}});
  EXPECT_THROW(b.matmul(x, WeightDesc{"w", minfer::GgmlType::F32, {9, 4, 1, 1}}), minfer::Error);
  EXPECT_THROW(b.add(x, 99), minfer::Error);
  EXPECT_THROW(b.silu(-1), minfer::Error);
  NodeId y = b.matmul(x, WeightDesc{"w", minfer::GgmlType::F32, {8, 4, 1, 1}});
  EXPECT_THROW(b.add(x, y), minfer::Error);
  EXPECT_THROW(b.embedding(x, WeightDesc{"emb", minfer::GgmlType::F32, {8, 10, 1, 1}}),
               minfer::Error);  // f32 ids
  EXPECT_THROW(b.rope(x, pos, RopeStyle::Normal, RopeMeta{3, 4, 4, 1e4f, 1, "", {}}), minfer::Error);
  EXPECT_THROW(b.rope(x, x, RopeStyle::Normal, RopeMeta{2, 4, 4, 1e4f, 1, "", {}}), minfer::Error);
  EXPECT_THROW(b.kv_store(0, x, x, pos, KvMeta{0, 8, 8, 0}), minfer::Error);
  EXPECT_THROW(b.kv_store(1, x, x, pos, KvMeta{0, 8, 8, 16}), minfer::Error);
  EXPECT_THROW(b.attn(x, x, pos, AttnMeta{0, 2, 1, 4, 4, 4, 0.5f}), minfer::Error);  // not a kv_load
  EXPECT_THROW(b.kv_store(0, x, x, pos, KvMeta{0, 8, 8, 16, 3}), minfer::Error);  // 8 is not 3 heads
  EXPECT_THROW(b.kv_load(0, KvMeta{0, 8, 8, 16, 0}), minfer::Error);
  NodeId kv = b.kv_load(1, KvMeta{1, 8, 8, 16});
  EXPECT_THROW(b.attn(x, kv, pos, AttnMeta{0, 2, 1, 4, 4, 4, 0.5f}), minfer::Error);  // wrong layer
  NodeId kv2 = b.kv_load(2, KvMeta{2, 8, 8, 16, 2});
  EXPECT_THROW(b.attn(x, kv2, pos, AttnMeta{2, 2, 1, 4, 4, 4, 0.5f}), minfer::Error);  // 1 vs 2 heads
  EXPECT_NO_THROW(b.attn(x, kv2, pos, AttnMeta{2, 2, 2, 4, 4, 8, 0.5f}));
  EXPECT_THROW(b.get_rows(x, pos, {8, 2, 1, 1}), minfer::Error);
  EXPECT_THROW(b.input("bad", {0, 1, 1, 1}, DType::F32), minfer::Error);
  EXPECT_THROW(b.output(1234), minfer::Error);
}

TEST(Builder, FusedFfnGraphIsSmallerByTwoPerLayer) {
  MiniConfig c;
  c.fused_ffn = true;
  MiniConfig u;
  EXPECT_EQ(build_mini(u, params(1, 1)).g.nodes.size() - build_mini(c, params(1, 1)).g.nodes.size(),
            size_t(3 * c.n_layer));  // gate, up, silu, mul -> fused_ffn
}
