#include "models/llama_graph.h"

#include <cmath>
#include <string>

#include "common/error.h"
#include "graph/builder.h"

namespace minfer::models {
namespace {

using graph::GraphBuilder;
using graph::NodeId;

struct LayerNames {
  std::string p;  // "blk.N."
  int il = 0;
  std::string operator()(const char* rest) const { return p + rest; }
  std::string tag(const char* what) const { return std::string(what) + "." + std::to_string(il); }
};

graph::WeightDesc desc(const TensorTable& t, const std::string& name) {
  const TensorRef& r = t.get(name);
  return {r.name, r.type, r.ne};
}

struct Ctx {
  const HParams& hp;
  const TensorTable& t;
  const graph::GraphParams& p;
  const FusedKernels& fused;
  GraphBuilder b;
  NodeId pos = -1;
  graph::RopeStyle style = graph::RopeStyle::Normal;
  std::string freq_factors;

  graph::RopeMeta rope_meta(int64_t n_head) const {
    graph::RopeMeta m;
    m.n_head = n_head;
    m.head_dim = hp.head_dim;
    m.n_rot = hp.n_rot;
    m.freq_base = hp.rope_freq_base;
    m.freq_scale = hp.rope_freq_scale;
    m.freq_factors = freq_factors;
    m.yarn = hp.rope_yarn;
    return m;
  }
  graph::KvMeta kv_meta(int il) const { return models::kv_meta(hp, p.cparams.n_ctx, il); }
  graph::AttnMeta attn_meta(int il) const {
    graph::AttnMeta m;
    m.layer = il;
    m.n_head = hp.n_head;
    m.n_head_kv = hp.n_head_kv;
    m.head_dim = hp.head_dim;
    m.head_dim_v = hp.head_dim_v;
    m.nkt = hp.n_embd_k();
    m.scale = float(1.0 / std::sqrt(double(hp.head_dim)));
    return m;
  }
  graph::FusedQkvMeta fused_qkv_meta(int il, const LayerNames& n) const {
    graph::FusedQkvMeta m;
    m.layer = il;
    m.wq = n("attn_q.weight");
    m.wk = n("attn_k.weight");
    m.wv = n("attn_v.weight");
    m.tq = t.get(m.wq).type;
    m.tk = t.get(m.wk).type;
    m.tv = t.get(m.wv).type;
    if (hp.qkv_bias) {
      m.bq = n("attn_q.bias");
      m.bk = n("attn_k.bias");
      m.bv = n("attn_v.bias");
    }
    if (hp.qk_norm) {
      m.q_norm = n("attn_q_norm.weight");
      m.k_norm = n("attn_k_norm.weight");
      m.norm_eps = hp.rms_eps;
    }
    m.in_dim = hp.n_embd;
    m.n_head = hp.n_head;
    m.n_head_kv = hp.n_head_kv;
    m.head_dim = hp.head_dim;
    m.head_dim_v = hp.head_dim_v;
    m.rope_style = style;
    m.n_rot = hp.n_rot;
    m.freq_base = hp.rope_freq_base;
    m.freq_scale = hp.rope_freq_scale;
    m.freq_factors = freq_factors;
    m.yarn = hp.rope_yarn;
    m.n_ctx = p.cparams.n_ctx;
    return m;
  }

  // Q (roped) and the layer's KV view, by the layer's fusion class.
  std::pair<NodeId, NodeId> attention_inputs(int il, const LayerNames& n, NodeId x) {
    const graph::KvMeta kvm = kv_meta(il);
    const std::string bq = hp.qkv_bias ? n("attn_q.bias") : "";
    const std::string bk = hp.qkv_bias ? n("attn_k.bias") : "";
    const std::string bv = hp.qkv_bias ? n("attn_v.bias") : "";
    NodeId q = -1;
    switch (qkv_class(hp, t, il, p, fused)) {
      case QkvClass::FusedQKV:
        q = b.fused_qkv(x, pos, fused_qkv_meta(il, n));
        break;
      case QkvClass::FusedQkvNorm:
        q = b.fused_qkv_norm(x, pos, fused_qkv_meta(il, n));
        break;
      case QkvClass::QkvBiasRopeStore: {
        // The biases move into the fused epilogue, so the matmuls carry none.
        NodeId mq = b.matmul(x, desc(t, n("attn_q.weight")));
        NodeId mk = b.matmul(x, desc(t, n("attn_k.weight")));
        NodeId mv = b.matmul(x, desc(t, n("attn_v.weight")));
        q = b.qkv_bias_rope_store(mq, mk, mv, pos, fused_qkv_meta(il, n));
        break;
      }
      case QkvClass::Unfused: {
        q = b.matmul(x, desc(t, n("attn_q.weight")), bq);
        NodeId k = b.matmul(x, desc(t, n("attn_k.weight")), bk);
        NodeId v = b.matmul(x, desc(t, n("attn_v.weight")), bv);
        if (hp.qk_norm) {
          q = b.named(b.qk_norm(q, hp.head_dim, hp.n_head, hp.rms_eps, n("attn_q_norm.weight")),
                      n.tag("q_norm"));
          k = b.named(b.qk_norm(k, hp.head_dim, hp.n_head_kv, hp.rms_eps, n("attn_k_norm.weight")),
                      n.tag("k_norm"));
        }
        q = b.named(b.rope(q, pos, style, rope_meta(hp.n_head)), n.tag("rope_q"));
        k = b.named(b.rope(k, pos, style, rope_meta(hp.n_head_kv)), n.tag("rope_k"));
        b.kv_store(il, k, v, pos, kvm);
        break;
      }
    }
    return {q, b.kv_load(il, kvm)};
  }

  NodeId ffn(int il, const LayerNames& n, NodeId x) {
    if (fuse_ffn(hp, t, il, p, fused)) {
      graph::FusedFfnMeta m;
      m.gate = n("ffn_gate.weight");
      m.up = n("ffn_up.weight");
      m.gate_type = t.get(m.gate).type;
      m.up_type = t.get(m.up).type;
      m.in_dim = hp.n_embd;
      m.nf = hp.n_ff;
      return b.matmul(b.named(b.fused_ffn(x, m), n.tag("fused_ffn")), desc(t, n("ffn_down.weight")));
    }
    NodeId gate = b.matmul(x, desc(t, n("ffn_gate.weight")));
    NodeId up = b.matmul(x, desc(t, n("ffn_up.weight")));
    // silu then mul: FusionPass rewrites the mul into SwiGLU where the backend has it.
    NodeId act = b.named(b.mul(b.named(b.silu(gate), n.tag("ffn_silu")), up), n.tag("ffn_act"));
    return b.matmul(act, desc(t, n("ffn_down.weight")));
  }
};

}  // namespace

graph::KvMeta kv_meta(const HParams& hp, int64_t n_ctx, int layer) {
  return {layer, hp.n_embd_k(), hp.n_embd_v(), n_ctx, hp.n_head_kv};
}

graph::ComputeGraph build_llama_graph(const HParams& hp, const TensorTable& t,
                                      const graph::GraphParams& p, const FusedKernels& fused) {
  const int64_t nt = p.n_tokens;
  if (nt <= 0) fail("graph: n_tokens must be positive, got {}", nt);
  if (p.n_out <= 0 || p.n_out > nt) fail("graph: n_out = {} must be in [1, n_tokens = {}]", p.n_out, nt);
  if (p.cparams.n_ctx <= 0) fail("graph: n_ctx must be positive");

  Ctx c{hp, t, p, fused, GraphBuilder{}, -1, graph::RopeStyle::Normal, ""};
  GraphBuilder& b = c.b;
  c.style = hp.neox_rope ? graph::RopeStyle::NeoX : graph::RopeStyle::Normal;
  if (hp.rope_freqs) c.freq_factors = "rope_freqs.weight";

  const NodeId ids = b.input("token_ids", {nt, 1, 1, 1}, graph::DType::I32);
  c.pos = b.input("positions", {nt, 1, 1, 1}, graph::DType::I32);
  // Declared at the head although only the last layer reads it: an input mid-graph would
  // split execution into extra backend segments (design 05 §2.8).
  const NodeId tail_ids =
      p.n_out < nt ? b.input("tail_ids", {p.n_out, 1, 1, 1}, graph::DType::I32) : -1;

  NodeId h = b.embedding(ids, desc(t, "token_embd.weight"));
  for (int il = 0; il < int(hp.n_layer); ++il) {
    const LayerNames n{"blk." + std::to_string(il) + ".", il};
    const NodeId residual = h;
    const NodeId normed = b.named(b.rms_norm(h, hp.rms_eps, n("attn_norm.weight")), n.tag("attn_norm"));
    auto [q, kv] = c.attention_inputs(il, n, normed);
    const NodeId attn = b.named(b.attn(q, kv, c.pos, c.attn_meta(il)), n.tag("attn"));
    const NodeId wo = b.matmul(attn, desc(t, n("attn_output.weight")));
    if (il == hp.n_layer - 1 && tail_ids >= 0) {
      // From here on only the rows whose logits are wanted flow (llama.cpp's inp_out_ids).
      const graph::Shape tail{hp.n_embd, p.n_out, 1, 1};
      const NodeId cur_tail = b.named(b.get_rows(wo, tail_ids, tail), n.tag("attn_out_tail"));
      const NodeId res_tail = b.named(b.get_rows(residual, tail_ids, tail), n.tag("residual_tail"));
      h = b.add(res_tail, cur_tail);
    } else {
      h = b.add(residual, wo);
    }
    b.named(h, n.tag("attn_residual"));
    const NodeId ffn_in = b.named(b.rms_norm(h, hp.rms_eps, n("ffn_norm.weight")), n.tag("ffn_norm"));
    h = b.named(b.add(h, c.ffn(il, n, ffn_in)), n.tag("ffn_residual"));
  }
  h = b.named(b.rms_norm(h, hp.rms_eps, "output_norm.weight"), "output_norm");
  if (p.cparams.embeddings) {  // llama.cpp's embeddings: the hidden states the logits would come from
    b.output(h);
    return b.build();
  }
  const NodeId logits =
      b.matmul(h, desc(t, hp.tied_output ? "token_embd.weight" : "output.weight"));
  b.output(logits);
  return b.build();
}

graph::ComputeGraph build_kv_shift_graph(const HParams& hp, const TensorTable& t,
                                         const graph::CParams& cp) {
  graph::GraphParams p;
  p.gtype = graph::GraphType::KvShift;
  p.cparams = cp;
  Ctx c{hp, t, p, FusedKernels{}, GraphBuilder{}, -1, graph::RopeStyle::Normal, ""};
  c.style = hp.neox_rope ? graph::RopeStyle::NeoX : graph::RopeStyle::Normal;
  if (hp.rope_freqs) c.freq_factors = "rope_freqs.weight";
  GraphBuilder& b = c.b;
  const NodeId shift = b.input("kv_shift", {3, 1, 1, 1}, graph::DType::I32);
  for (int il = 0; il < int(hp.n_layer); ++il)
    b.kv_shift(il, shift, c.style, {c.kv_meta(il), c.rope_meta(hp.n_head_kv)});
  return b.build();
}

}  // namespace minfer::models
