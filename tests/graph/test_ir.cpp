#include <gtest/gtest.h>

#include "common/error.h"
#include "graph/ir.h"

using namespace minfer::graph;

namespace {

CNode make(NodeId id, Op op, std::vector<NodeId> src) {
  CNode n;
  n.id = id;
  n.name = "n" + std::to_string(id);
  n.op = op;
  n.src = std::move(src);
  return n;
}

}  // namespace

TEST(Ir, TopoOrderValidatesChain) {
  ComputeGraph g;
  g.nodes.push_back(make(0, OpInput{}, {}));
  g.nodes.push_back(make(1, OpSilu{}, {0}));
  g.nodes.push_back(make(2, OpAdd{}, {0, 1}));
  g.inputs = {0};
  g.outputs = {2};
  EXPECT_EQ(g.topo_order(), (std::vector<NodeId>{0, 1, 2}));
}

TEST(Ir, TopoOrderSortsForwardReferences) {
  // Acyclic but not in node order: topo_order still finds an order (it validates, the
  // executor's node-order check is separate).
  ComputeGraph g;
  g.nodes.push_back(make(0, OpSilu{}, {2}));
  g.nodes.push_back(make(1, OpAdd{}, {0, 2}));
  g.nodes.push_back(make(2, OpInput{}, {}));
  EXPECT_EQ(g.topo_order(), (std::vector<NodeId>{2, 0, 1}));
}

TEST(Ir, TopoOrderDetectsCycle) {
  ComputeGraph g;
  g.nodes.push_back(make(0, OpInput{}, {}));
  g.nodes.push_back(make(1, OpAdd{}, {0, 2}));
  g.nodes.push_back(make(2, OpSilu{}, {1}));
  try {
    g.topo_order();
    FAIL() << "cycle not detected";
  } catch (const minfer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
}

TEST(Ir, TopoOrderDetectsSelfLoopDanglingAndBadIds) {
  ComputeGraph self;
  self.nodes.push_back(make(0, OpSilu{}, {0}));
  EXPECT_THROW(self.topo_order(), minfer::Error);

  ComputeGraph dangling;
  dangling.nodes.push_back(make(0, OpInput{}, {}));
  dangling.nodes.push_back(make(1, OpSilu{}, {7}));
  try {
    dangling.topo_order();
    FAIL();
  } catch (const minfer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("dangling"), std::string::npos) << e.what();
  }

  ComputeGraph negative;
  negative.nodes.push_back(make(0, OpSilu{}, {-1}));
  EXPECT_THROW(negative.topo_order(), minfer::Error);

  ComputeGraph misnumbered;
  misnumbered.nodes.push_back(make(5, OpInput{}, {}));
  EXPECT_THROW(misnumbered.topo_order(), minfer::Error);

  ComputeGraph bad_output;
  bad_output.nodes.push_back(make(0, OpInput{}, {}));
  bad_output.outputs = {3};
  EXPECT_THROW(bad_output.topo_order(), minfer::Error);
}

TEST(Ir, OpEqualityComparesPayloads) {
  EXPECT_NE(Op(OpRmsNorm{1e-5f}), Op(OpRmsNorm{1e-6f}));
  EXPECT_EQ(Op(OpRmsNorm{1e-6f}), Op(OpRmsNorm{1e-6f}));
  EXPECT_NE(Op(OpKvLoad{2}), Op(OpKvLoad{3}));
  EXPECT_EQ(Op(OpKvLoad{3}), Op(OpKvLoad{3}));
  EXPECT_NE(Op(OpKvStore{3}), Op(OpKvLoad{3}));  // same payload, different op
  EXPECT_NE(Op(OpRope{RopeStyle::Normal}), Op(OpRope{RopeStyle::NeoX}));
  EXPECT_NE(Op(OpQkNorm{64, 8, 1e-6f}), Op(OpQkNorm{64, 4, 1e-6f}));
  EXPECT_EQ(Op(OpAdd{}), Op(OpAdd{}));
  EXPECT_NE(Op(OpAdd{}), Op(OpMul{}));
}

TEST(Ir, MetaEqualityComparesValues) {
  NodeMeta a = MatMulMeta{"blk.0.attn_q.weight", "blk.0.attn_q.bias", minfer::GgmlType::Q8_0, 8, 8};
  NodeMeta b = a;
  EXPECT_EQ(a, b);
  std::get<MatMulMeta>(b).bias = "";
  EXPECT_NE(a, b);
  EXPECT_NE(NodeMeta(KvMeta{1, 8, 8, 16}), NodeMeta(KvMeta{1, 8, 8, 32}));
  EXPECT_NE(NodeMeta(NormMeta{"x"}), NodeMeta(std::monostate{}));
}

TEST(Ir, Printers) {
  EXPECT_EQ(op_name(OpRmsNorm{1e-6f}), "RmsNorm");
  EXPECT_EQ(op_payload(OpRmsNorm{1e-6f}), "eps: 1e-06");
  EXPECT_EQ(op_string(OpKvStore{23}), "KvStore { layer: 23 }");
  EXPECT_EQ(op_string(OpAdd{}), "Add");
  EXPECT_EQ(op_payload(OpAdd{}), "");
  EXPECT_EQ(op_string(OpRope{RopeStyle::NeoX}), "RoPE { style: NeoX }");
  EXPECT_EQ(op_string(OpQkNorm{64, 8, 1e-6f}), "QkNorm { hd: 64, nh: 8, eps: 1e-06 }");
  EXPECT_EQ(op_name(OpFusedQkvNorm{1}), "FusedQkvNorm");
  EXPECT_EQ(std::string(dtype_name(DType::I32)), "i32");
  EXPECT_EQ(meta_string(NodeMeta(KvMeta{2, 128, 64, 4096})),
            "layer=2 k_width=128 v_width=64 n_ctx=4096 n_head_kv=1");
  // A plain rope (any original context) prints no YaRN part; a YaRN one does.
  RopeMeta rope{4, 64, 64, 1e6f, 0.25f, "", {0.0f, 1.0f, 32.0f, 1.0f, 40960}};
  EXPECT_EQ(meta_string(NodeMeta(rope)), "n_head=4 head_dim=64 n_rot=64 base=1000000 scale=0.25");
  rope.yarn.ext_factor = 1.0f;
  EXPECT_EQ(meta_string(NodeMeta(rope)),
            "n_head=4 head_dim=64 n_rot=64 base=1000000 scale=0.25 yarn=ext:1,attn:1,beta:32/1,orig_ctx:40960");
}

TEST(Ir, OpClassification) {
  EXPECT_TRUE(has_side_effects(OpKvStore{0}));
  EXPECT_TRUE(has_side_effects(OpFusedQKV{0}));
  EXPECT_FALSE(has_side_effects(OpKvLoad{0}));
  EXPECT_FALSE(has_side_effects(OpAttn{}));
  EXPECT_EQ(pos_src_index(OpKvStore{0}), 2);
  EXPECT_EQ(pos_src_index(OpAttn{}), 2);
  EXPECT_EQ(pos_src_index(OpRope{}), 1);
  EXPECT_EQ(pos_src_index(OpQkvBiasRopeStore{0}), 3);
  EXPECT_EQ(pos_src_index(OpMatMul{}), -1);
  EXPECT_TRUE(is_elementwise(OpSwiGLU{}));
  EXPECT_FALSE(is_elementwise(OpMatMul{}));
}

TEST(Ir, NodeWeightsListsEveryNamedTensor) {
  EXPECT_EQ(node_weights(MatMulMeta{"w", "b", minfer::GgmlType::F32, 1, 1}),
            (std::vector<std::string>{"w", "b"}));
  EXPECT_EQ(node_weights(MatMulMeta{"w", "", minfer::GgmlType::F32, 1, 1}),
            (std::vector<std::string>{"w"}));
  EXPECT_TRUE(node_weights(NormMeta{""}).empty());
  EXPECT_TRUE(node_weights(KvMeta{}).empty());
}

TEST(Ir, LiveMaskFollowsOutputsAndSideEffects) {
  ComputeGraph g;
  g.nodes.push_back(make(0, OpInput{}, {}));
  g.nodes.push_back(make(1, OpSilu{}, {0}));       // dead: nobody reads it
  g.nodes.push_back(make(2, OpKvStore{0}, {0}));   // side effect: live
  g.nodes.push_back(make(3, OpMul{}, {0, 0}));     // read by the output
  g.nodes.push_back(make(4, OpAdd{}, {3, 0}));
  g.inputs = {0};
  g.outputs = {4};
  EXPECT_EQ(g.live_mask(), (std::vector<bool>{true, false, true, true, true}));
  auto users = g.consumers();
  EXPECT_EQ(users[0], (std::vector<NodeId>{1, 2, 3, 4}));  // Mul reads 0 twice: listed once
  EXPECT_EQ(users[3], (std::vector<NodeId>{4}));
  EXPECT_THROW(g.node(5), minfer::Error);
}
