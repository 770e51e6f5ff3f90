// The design's census (05-graph-build.md §2.5): qwen2.5-0.5b, 30-token prefill with n_out = 1
// is 440 nodes in a fixed order; the one-token graph without fusions is 437.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "graph/cache.h"
#include "graph/ir.h"
#include "models/hparams.h"
#include "models/llama_graph.h"
#include "synthetic.h"

using namespace minfer;
using minfer::graph::op_name;

namespace {

graph::GraphParams params(int64_t nt, int64_t n_out, bool fuse) {
  graph::GraphParams p;
  p.n_tokens = nt;
  p.n_out = n_out;
  p.gtype = nt == 1 ? graph::GraphType::Decode : graph::GraphType::Prefill;
  p.cparams.n_ctx = 4096;
  p.cparams.fuse_qkv = fuse;
  p.cparams.fuse_ffn = fuse;
  return p;
}

const std::vector<std::string> kLayerOps = {
    "RmsNorm", "MatMul", "MatMul", "MatMul", "RoPE", "RoPE", "KvStore", "KvLoad", "Attn",
    "MatMul",  "Add",    "RmsNorm", "MatMul", "MatMul", "Silu", "Mul", "MatMul", "Add"};
const std::vector<std::string> kLayerWeights = {
    "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "", "", "", "", "",
    "attn_output.weight", "", "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "", "",
    "ffn_down.weight", ""};

std::string weight_of(const graph::CNode& n) {
  if (auto* m = std::get_if<graph::MatMulMeta>(&n.meta)) return m->weight;
  if (auto* m = std::get_if<graph::NormMeta>(&n.meta)) return m->weight;
  return "";
}

}  // namespace

// The design's census: the unfused prefill graph (fuse_ffn off; with it, FusedFFN below).
TEST(Census, Qwen25Prefill30TokensIs440Nodes) {
  const auto hp = test::qwen25_05b_hparams();
  const auto t = test::qwen25_05b_tensors();
  models::check_tensors(hp, t);
  graph::ComputeGraph g = models::build_llama_graph(hp, t, params(30, 1, false), {true, true, true, true});
  ASSERT_EQ(g.nodes.size(), 440u);
  EXPECT_EQ(g.inputs, (std::vector<graph::NodeId>{0, 1, 2}));
  EXPECT_EQ(g.outputs, (std::vector<graph::NodeId>{439}));
  EXPECT_EQ(g.nodes[0].name, "token_ids");
  EXPECT_EQ(g.nodes[1].name, "positions");
  EXPECT_EQ(g.nodes[2].name, "tail_ids");
  EXPECT_EQ(op_name(g.nodes[3].op), "Embedding");
  for (int il = 0; il < 24; ++il) {
    const std::string blk = "blk." + std::to_string(il) + ".";
    int id = 4 + il * 18;
    for (size_t k = 0; k < kLayerOps.size(); ++k, ++id) {
      if (il == 23 && k == 10) {  // the tail rows: attention output and residual
        EXPECT_EQ(op_name(g.nodes[size_t(id)].op), "GetRows") << id;
        EXPECT_EQ(op_name(g.nodes[size_t(id + 1)].op), "GetRows") << id + 1;
        EXPECT_EQ(g.nodes[size_t(id)].src, (std::vector<graph::NodeId>{id - 1, 2}));
        id += 2;
      }
      const graph::CNode& n = g.nodes[size_t(id)];
      EXPECT_EQ(op_name(n.op), kLayerOps[k]) << "node " << id;
      if (!kLayerWeights[k].empty()) {
        EXPECT_EQ(weight_of(n), blk + kLayerWeights[k]) << id;
      }
    }
  }
  EXPECT_EQ(op_name(g.nodes[438].op), "RmsNorm");
  EXPECT_EQ(weight_of(g.nodes[438]), "output_norm.weight");
  EXPECT_EQ(op_name(g.nodes[439].op), "MatMul");
  EXPECT_EQ(weight_of(g.nodes[439]), "token_embd.weight");  // tied output
  EXPECT_EQ(g.nodes[439].shape, (graph::Shape{151936, 1, 1, 1}));
  // Layer 0 wiring as in the design's listing.
  EXPECT_EQ(g.nodes[5].name, "matmul_blk.0.attn_q.weight");
  EXPECT_EQ(std::get<graph::MatMulMeta>(g.nodes[5].meta).bias, "blk.0.attn_q.bias");
  EXPECT_EQ(g.nodes[5].shape, (graph::Shape{896, 30, 1, 1}));
  EXPECT_EQ(g.nodes[6].shape, (graph::Shape{128, 30, 1, 1}));
  EXPECT_EQ(g.nodes[10].src, (std::vector<graph::NodeId>{9, 7, 1}));   // kv_store <- K, V, pos
  EXPECT_TRUE(g.nodes[11].src.empty());                               // kv_load: a view
  EXPECT_EQ(g.nodes[12].src, (std::vector<graph::NodeId>{8, 11, 1}));  // attn <- Q, KV, pos
  EXPECT_EQ(g.nodes[14].src, (std::vector<graph::NodeId>{3, 13}));     // first residual add
  EXPECT_EQ(g.nodes[19].src, (std::vector<graph::NodeId>{18, 17}));    // mul <- silu, up
  EXPECT_EQ(g.nodes[21].src, (std::vector<graph::NodeId>{14, 20}));
  const auto& am = std::get<graph::AttnMeta>(g.nodes[12].meta);
  EXPECT_EQ(am.n_head, 14);
  EXPECT_EQ(am.n_head_kv, 2);
  EXPECT_EQ(am.nkt, 128);
  EXPECT_FLOAT_EQ(am.scale, 0.125f);
  EXPECT_EQ(std::get<graph::OpRope>(g.nodes[8].op).style, graph::RopeStyle::NeoX);
  // After the tail, the FFN of the last layer runs on one row.
  EXPECT_EQ(g.nodes[430].shape, (graph::Shape{896, 1, 1, 1}));
}

TEST(Census, OneTokenUnfusedIs437Nodes) {
  const auto hp = test::qwen25_05b_hparams();
  const auto t = test::qwen25_05b_tensors();
  graph::ComputeGraph g =
      models::build_llama_graph(hp, t, params(1, 1, false), {true, true, true, true});
  ASSERT_EQ(g.nodes.size(), 437u);
  EXPECT_EQ(g.inputs, (std::vector<graph::NodeId>{0, 1}));
  for (int il = 0; il < 24; ++il)
    for (size_t k = 0; k < kLayerOps.size(); ++k)
      EXPECT_EQ(op_name(g.nodes[size_t(3 + il * 18) + k].op), kLayerOps[k]);
  EXPECT_EQ(g.outputs, (std::vector<graph::NodeId>{436}));
}

TEST(Census, DecodeFusionsShrinkEachLayer) {
  const auto hp = test::qwen25_05b_hparams();
  const auto t = test::qwen25_05b_tensors();
  graph::ComputeGraph g =
      models::build_llama_graph(hp, t, params(1, 1, true), {true, true, true, true});
  // Per layer: rms_norm, fused_qkv, kv_load, attn, matmul o, add, rms_norm, fused_ffn,
  // matmul down, add.
  ASSERT_EQ(g.nodes.size(), 3u + 24 * 10 + 2);
  const std::vector<std::string> ops = {"RmsNorm", "FusedQKV", "KvLoad", "Attn", "MatMul",
                                        "Add",     "RmsNorm",  "FusedFFN", "MatMul", "Add"};
  for (size_t k = 0; k < ops.size(); ++k) EXPECT_EQ(op_name(g.nodes[3 + k].op), ops[k]);
  // Without the fused kernels the same params give the unfused topology.
  EXPECT_EQ(models::build_llama_graph(hp, t, params(1, 1, true), {}).nodes.size(), 437u);
  // Mixed q/k/v types take the bias+rope+store epilogue class.
  auto mixed = t;
  mixed.add({"blk.0.attn_v.weight", GgmlType::Q4_0, {896, 128, 1, 1}, nullptr});
  graph::ComputeGraph gm =
      models::build_llama_graph(hp, mixed, params(1, 1, true), {true, true, true, true});
  EXPECT_EQ(op_name(gm.nodes[7].op), "QkvBiasRopeStore");
  EXPECT_EQ(std::get<graph::MatMulMeta>(gm.nodes[4].meta).bias, "");  // bias moved to the epilogue
  // The design's gate: FusedFFN only up to nf 16384.
  auto wide_hp = hp;
  wide_hp.n_ff = 18944;
  EXPECT_FALSE(models::fuse_ffn(wide_hp, t, 0, params(1, 1, true), {true, true, true, true}));
}

// A prompt takes FusedFFN too (the QKV classes stay decode-only): gate, up, silu and mul of
// each layer become one node over the same input, 440 - 3 x 24 nodes.
TEST(Census, PrefillFusesTheFfnOnly) {
  const auto hp = test::qwen25_05b_hparams();
  const auto t = test::qwen25_05b_tensors();
  graph::ComputeGraph g = models::build_llama_graph(hp, t, params(30, 1, true), {true, true, true, true});
  ASSERT_EQ(g.nodes.size(), 440u - 3 * 24);
  const std::vector<std::string> ops = {"RmsNorm", "MatMul", "MatMul", "MatMul", "RoPE", "RoPE", "KvStore", "KvLoad",
                                        "Attn", "MatMul", "Add", "RmsNorm", "FusedFFN", "MatMul", "Add"};
  for (size_t k = 0; k < ops.size(); ++k) EXPECT_EQ(op_name(g.nodes[4 + k].op), ops[k]) << k;
  const graph::CNode& f = g.nodes[4 + 12];
  EXPECT_EQ(f.src, (std::vector<graph::NodeId>{4 + 11}));  // the ffn_norm output
  EXPECT_EQ(f.shape, (graph::Shape{4864, 30, 1, 1}));
  const auto& m = std::get<graph::FusedFfnMeta>(f.meta);
  EXPECT_EQ(m.gate, "blk.0.ffn_gate.weight");
  EXPECT_EQ(m.up, "blk.0.ffn_up.weight");
}

TEST(Census, BuildIsPure) {
  const auto hp = test::qwen25_05b_hparams();
  const auto t = test::qwen25_05b_tensors();
  auto a = models::build_llama_graph(hp, t, params(30, 1, true), {});
  auto b = models::build_llama_graph(hp, t, params(30, 1, true), {});
  EXPECT_NO_THROW(graph::GraphCache::verify_structural(a, b));
  auto c = models::build_llama_graph(hp, t, params(29, 1, true), {});
  EXPECT_THROW(graph::GraphCache::verify_structural(a, c), Error);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].op, b.nodes[i].op);
    EXPECT_EQ(a.nodes[i].src, b.nodes[i].src);
    EXPECT_EQ(a.nodes[i].meta, b.nodes[i].meta);
  }
}

TEST(Census, Qwen3AddsPerHeadNorms) {
  auto hp = test::qwen25_05b_hparams();
  hp.arch = models::Arch::Qwen3;
  hp.qkv_bias = false;
  hp.qk_norm = true;
  hp.n_layer = 1;
  models::TensorTable t("qwen3 (synthetic)");
  const models::TensorTable full = test::qwen25_05b_tensors();
  for (const auto& r : full.all())
    if (r.name.rfind("blk.", 0) != 0 || r.name.rfind("blk.0.", 0) == 0)
      if (r.name.find(".bias") == std::string::npos) t.add(r);
  t.add({"blk.0.attn_q_norm.weight", GgmlType::F32, {64, 1, 1, 1}, nullptr});
  t.add({"blk.0.attn_k_norm.weight", GgmlType::F32, {64, 1, 1, 1}, nullptr});
  models::check_tensors(hp, t);
  auto g = models::build_llama_graph(hp, t, params(4, 4, false), {});
  // inputs(2) embed, rms_norm, 3 matmuls, q_norm, k_norm, rope, rope, kv_store ...
  EXPECT_EQ(op_name(g.nodes[7].op), "QkNorm");
  EXPECT_EQ(op_name(g.nodes[8].op), "QkNorm");
  EXPECT_EQ(g.nodes[7].src, (std::vector<graph::NodeId>{4}));
  EXPECT_EQ(g.nodes[9].src[0], 7);
  EXPECT_EQ(std::get<graph::OpQkNorm>(g.nodes[7].op).nh, 14);
  EXPECT_EQ(std::get<graph::OpQkNorm>(g.nodes[8].op).nh, 2);
  EXPECT_EQ(g.nodes.size(), 3u + 20 + 2);
  auto gf = models::build_llama_graph(hp, t, params(1, 1, true), {true, true, true, true});
  EXPECT_EQ(op_name(gf.nodes[4].op), "FusedQkvNorm");
}
