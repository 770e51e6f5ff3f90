// A tiny qwen2-shaped transformer written through GraphBuilder in the design's node order
// (§2.5 census): token_ids, positions, [tail_ids], embed, 18 nodes per layer, two get_rows on
// the last layer when n_out < nt, final rms_norm, lm_head. Random F32 weights live in a plain
// map so that the scheduler tests can run the graph with a scalar reference backend.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/params.h"

namespace minfer::test {

struct MiniConfig {
  int n_layer = 2;
  int64_t d = 8, n_head = 2, n_head_kv = 1, head_dim = 4, ff = 16, vocab = 11, n_ctx = 16;
  bool bias = true;           // qwen2: q/k/v biases
  bool fused_ffn = false;     // emit FusedFFN instead of gate/up/silu/mul
  enum class Qkv { Unfused, FusedQKV, BiasRopeStore } qkv = Qkv::Unfused;
  graph::RopeStyle rope = graph::RopeStyle::NeoX;
};

struct MiniGraph {
  graph::ComputeGraph g;
  graph::NodeId token_ids = -1, positions = -1, tail_ids = -1, logits = -1;
};

inline graph::WeightDesc mini_weight(const std::string& name, int64_t in, int64_t out) {
  return graph::WeightDesc{name, GgmlType::F32, {in, out, 1, 1}};
}

inline MiniGraph build_mini(const MiniConfig& c, const graph::GraphParams& p) {
  using namespace minfer::graph;
  GraphBuilder b;
  MiniGraph m;
  const int64_t nt = p.n_tokens;
  const int64_t kv_w = c.n_head_kv * c.head_dim;
  m.token_ids = b.input("token_ids", {nt, 1, 1, 1}, DType::I32);
  m.positions = b.input("positions", {nt, 1, 1, 1}, DType::I32);
  if (p.n_out < nt) m.tail_ids = b.input("tail_ids", {p.n_out, 1, 1, 1}, DType::I32);
  NodeId h = b.embedding(m.token_ids, mini_weight("token_embd.weight", c.d, c.vocab));
  for (int il = 0; il < c.n_layer; ++il) {
    const std::string blk = "blk." + std::to_string(il) + ".";
    const NodeId residual = h;
    NodeId x = b.rms_norm(h, 1e-6f, blk + "attn_norm.weight");
    KvMeta kvm{il, kv_w, kv_w, c.n_ctx, c.n_head_kv};
    FusedQkvMeta fq;
    fq.layer = il;
    fq.wq = blk + "attn_q.weight";
    fq.wk = blk + "attn_k.weight";
    fq.wv = blk + "attn_v.weight";
    if (c.bias) {
      fq.bq = blk + "attn_q.bias";
      fq.bk = blk + "attn_k.bias";
      fq.bv = blk + "attn_v.bias";
    }
    fq.in_dim = c.d;
    fq.n_head = c.n_head;
    fq.n_head_kv = c.n_head_kv;
    fq.head_dim = fq.head_dim_v = c.head_dim;
    fq.rope_style = c.rope;
    fq.n_rot = c.head_dim;
    fq.n_ctx = c.n_ctx;
    const bool split_bias = c.qkv == MiniConfig::Qkv::BiasRopeStore;  // biases in the epilogue
    NodeId q;
    if (c.qkv == MiniConfig::Qkv::FusedQKV) {
      q = b.fused_qkv(x, m.positions, fq);
    } else {
      q = b.matmul(x, mini_weight(fq.wq, c.d, c.n_head * c.head_dim), split_bias ? "" : fq.bq);
      NodeId k = b.matmul(x, mini_weight(fq.wk, c.d, kv_w), split_bias ? "" : fq.bk);
      NodeId v = b.matmul(x, mini_weight(fq.wv, c.d, kv_w), split_bias ? "" : fq.bv);
      if (split_bias) {
        q = b.qkv_bias_rope_store(q, k, v, m.positions, fq);
      } else {
        RopeMeta rq{c.n_head, c.head_dim, c.head_dim, 10000.0f, 1.0f, "", {}};
        RopeMeta rk{c.n_head_kv, c.head_dim, c.head_dim, 10000.0f, 1.0f, "", {}};
        q = b.rope(q, m.positions, c.rope, rq);
        k = b.rope(k, m.positions, c.rope, rk);
        b.kv_store(il, k, v, m.positions, kvm);
      }
    }
    NodeId kv = b.kv_load(il, kvm);
    AttnMeta am{il, c.n_head, c.n_head_kv, c.head_dim, c.head_dim, kv_w,
                1.0f / std::sqrt(float(c.head_dim))};
    NodeId a = b.attn(q, kv, m.positions, am);
    NodeId o = b.matmul(a, mini_weight(blk + "attn_output.weight", c.n_head * c.head_dim, c.d));
    if (il == c.n_layer - 1 && p.n_out < nt) {
      NodeId ot = b.get_rows(o, m.tail_ids, {c.d, p.n_out, 1, 1});
      NodeId rt = b.get_rows(residual, m.tail_ids, {c.d, p.n_out, 1, 1});
      h = b.add(rt, ot);
    } else {
      h = b.add(residual, o);
    }
    x = b.rms_norm(h, 1e-6f, blk + "ffn_norm.weight");
    NodeId ffn;
    if (c.fused_ffn) {
      FusedFfnMeta fm{blk + "ffn_gate.weight", blk + "ffn_up.weight", GgmlType::F32,
                      GgmlType::F32, c.d, c.ff};
      ffn = b.fused_ffn(x, fm);
    } else {
      NodeId gate = b.matmul(x, mini_weight(blk + "ffn_gate.weight", c.d, c.ff));
      NodeId up = b.matmul(x, mini_weight(blk + "ffn_up.weight", c.d, c.ff));
      ffn = b.mul(b.silu(gate), up);
    }
    NodeId down = b.matmul(ffn, mini_weight(blk + "ffn_down.weight", c.ff, c.d));
    h = b.add(h, down);
  }
  h = b.rms_norm(h, 1e-6f, "output_norm.weight");
  m.logits = b.matmul(h, mini_weight("output.weight", c.d, c.vocab));
  b.output(m.logits);
  m.g = b.build();
  return m;
}

// name -> F32 values, with the shapes build_mini references.
inline std::map<std::string, std::vector<float>> mini_weights(const MiniConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  std::map<std::string, std::vector<float>> w;
  auto fill = [&](const std::string& name, int64_t n, float offset = 0.0f) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng) + offset;
    w[name] = std::move(v);
  };
  const int64_t kv_w = c.n_head_kv * c.head_dim, q_w = c.n_head * c.head_dim;
  fill("token_embd.weight", c.d * c.vocab);
  for (int il = 0; il < c.n_layer; ++il) {
    const std::string blk = "blk." + std::to_string(il) + ".";
    fill(blk + "attn_norm.weight", c.d, 1.0f);
    fill(blk + "attn_q.weight", c.d * q_w);
    fill(blk + "attn_k.weight", c.d * kv_w);
    fill(blk + "attn_v.weight", c.d * kv_w);
    fill(blk + "attn_q.bias", q_w);
    fill(blk + "attn_k.bias", kv_w);
    fill(blk + "attn_v.bias", kv_w);
    fill(blk + "attn_output.weight", q_w * c.d);
    fill(blk + "ffn_norm.weight", c.d, 1.0f);
    fill(blk + "ffn_gate.weight", c.d * c.ff);
    fill(blk + "ffn_up.weight", c.d * c.ff);
    fill(blk + "ffn_down.weight", c.ff * c.d);
  }
  fill("output_norm.weight", c.d, 1.0f);
  fill("output.weight", c.d * c.vocab);
  return w;
}

}  // namespace minfer::test
