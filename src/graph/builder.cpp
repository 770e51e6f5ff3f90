#include "graph/builder.h"

#include <fmt/format.h>

#include "common/error.h"

namespace minfer::graph {

namespace {

std::string shape_str(const Shape& s) {
  return fmt::format("[{}, {}, {}, {}]", s[0], s[1], s[2], s[3]);
}

}  // namespace

NodeId GraphBuilder::append(std::string name, Op op, std::vector<NodeId> src, Shape shape,
                            DType dtype, NodeMeta meta) {
  for (int64_t d : shape)
    if (d <= 0) fail("graph builder: node '{}' would have shape {}", name, shape_str(shape));
  CNode n;
  n.id = NodeId(graph_.nodes.size());
  n.name = std::move(name);
  n.op = std::move(op);
  n.src = std::move(src);
  n.shape = shape;
  n.dtype = dtype;
  n.meta = std::move(meta);
  graph_.nodes.push_back(std::move(n));
  return graph_.nodes.back().id;
}

const CNode& GraphBuilder::check(NodeId id, const char* what) const {
  if (id < 0 || size_t(id) >= graph_.nodes.size())
    fail("graph builder: {} reads node id {}, which was not built (graph has {} nodes)", what, id,
         graph_.nodes.size());
  return graph_.nodes[size_t(id)];
}

const CNode& GraphBuilder::node(NodeId id) const { return check(id, "node()"); }

NodeId GraphBuilder::input(const std::string& name, Shape shape, DType dtype) {
  NodeId id = append(name, OpInput{}, {}, shape, dtype, {});
  graph_.inputs.push_back(id);
  return id;
}

NodeId GraphBuilder::embedding(NodeId ids, const WeightDesc& w) {
  const CNode& in = check(ids, "embedding");
  if (in.dtype != DType::I32) fail("graph builder: embedding ids '{}' are not i32", in.name);
  return append("embed", OpEmbedding{}, {ids}, {w.ne[0], in.shape[0], 1, 1}, DType::F32,
                EmbedMeta{w.name, w.type});
}

NodeId GraphBuilder::rms_norm(NodeId x, float eps, const std::string& weight_name) {
  const CNode& in = check(x, "rms_norm");
  return append("rms_norm", OpRmsNorm{eps}, {x}, in.shape, DType::F32, NormMeta{weight_name});
}

NodeId GraphBuilder::qk_norm(NodeId x, int64_t hd, int64_t nh, float eps,
                             const std::string& weight_name) {
  const CNode& in = check(x, "qk_norm");
  if (hd <= 0 || nh <= 0 || hd * nh != in.shape[0])
    fail("graph builder: qk_norm of '{}' ({} wide) with {} heads of {}", in.name, in.shape[0], nh,
         hd);
  return append("qk_norm", OpQkNorm{hd, nh, eps}, {x}, in.shape, DType::F32,
                NormMeta{weight_name});
}

NodeId GraphBuilder::matmul(NodeId x, const WeightDesc& w, const std::string& bias) {
  const CNode& in = check(x, "matmul");
  if (in.shape[0] != w.ne[0])
    fail("graph builder: matmul of '{}' ({} wide) by weight '{}' expecting {} inputs", in.name,
         in.shape[0], w.name, w.ne[0]);
  return append("matmul_" + w.name, OpMatMul{}, {x}, {w.ne[1], in.shape[1], 1, 1}, DType::F32,
                MatMulMeta{w.name, bias, w.type, w.ne[0], w.ne[1]});
}

NodeId GraphBuilder::get_rows(NodeId x, NodeId ids, Shape shape) {
  const CNode& in = check(x, "get_rows");
  const CNode& idn = check(ids, "get_rows");
  if (idn.dtype != DType::I32) fail("graph builder: get_rows ids '{}' are not i32", idn.name);
  if (shape[0] != in.shape[0] || shape[1] != idn.shape[0])
    fail("graph builder: get_rows of '{}' {} by {} ids cannot give {}", in.name,
         shape_str(in.shape), idn.shape[0], shape_str(shape));
  return append("get_rows", OpGetRows{}, {x, ids}, shape, in.dtype, {});
}

NodeId GraphBuilder::rope(NodeId x, NodeId pos, RopeStyle style, const RopeMeta& meta) {
  const CNode& in = check(x, "rope");
  const CNode& p = check(pos, "rope");
  if (meta.n_head * meta.head_dim != in.shape[0])
    fail("graph builder: rope of '{}' ({} wide) with {} heads of {}", in.name, in.shape[0],
         meta.n_head, meta.head_dim);
  if (meta.n_rot <= 0 || meta.n_rot > meta.head_dim || meta.n_rot % 2 != 0)
    fail("graph builder: rope n_rot {} invalid for head_dim {}", meta.n_rot, meta.head_dim);
  if (p.dtype != DType::I32 || p.shape[0] != in.shape[1])
    fail("graph builder: rope positions '{}' must be {} i32 values", p.name, in.shape[1]);
  return append("rope", OpRope{style}, {x, pos}, in.shape, DType::F32, meta);
}

namespace {

// The KV regions hold each head's rows apart: the widths must be n_head_kv whole heads.
void check_kv_heads(const KvMeta& m, const char* what) {
  if (m.n_head_kv <= 0 || m.k_width % m.n_head_kv != 0 || m.v_width % m.n_head_kv != 0)
    fail("graph builder: {}.{}: widths {} / {} are not {} heads", what, m.layer, m.k_width,
         m.v_width, m.n_head_kv);
}

}  // namespace

NodeId GraphBuilder::kv_store(int layer, NodeId k, NodeId v, NodeId pos, const KvMeta& meta) {
  const CNode& kn = check(k, "kv_store");
  const CNode& vn = check(v, "kv_store");
  const CNode& p = check(pos, "kv_store");
  if (meta.layer != layer) fail("graph builder: kv_store layer {} with meta layer {}", layer, meta.layer);
  if (kn.shape[0] != meta.k_width || vn.shape[0] != meta.v_width || kn.shape[1] != vn.shape[1])
    fail("graph builder: kv_store.{}: K {} / V {} do not match widths {} / {}", layer,
         shape_str(kn.shape), shape_str(vn.shape), meta.k_width, meta.v_width);
  if (p.dtype != DType::I32 || p.shape[0] != kn.shape[1])
    fail("graph builder: kv_store.{} positions '{}' must be {} i32 values", layer, p.name,
         kn.shape[1]);
  if (meta.n_ctx <= 0) fail("graph builder: kv_store.{} with n_ctx {}", layer, meta.n_ctx);
  check_kv_heads(meta, "kv_store");
  // The declared shape mirrors the persistent K region: the allocator's sizing contract.
  return append(fmt::format("kv_store.{}", layer), OpKvStore{layer}, {k, v, pos},
                {meta.k_width, meta.n_ctx, 1, 1}, DType::F32, meta);
}

NodeId GraphBuilder::kv_load(int layer, const KvMeta& meta) {
  if (meta.layer != layer) fail("graph builder: kv_load layer {} with meta layer {}", layer, meta.layer);
  if (meta.n_ctx <= 0 || meta.k_width <= 0 || meta.v_width <= 0)
    fail("graph builder: kv_load.{} with n_ctx {} widths {} / {}", layer, meta.n_ctx,
         meta.k_width, meta.v_width);
  check_kv_heads(meta, "kv_load");
  return append(fmt::format("kv_load.{}", layer), OpKvLoad{layer}, {},
                {meta.k_width, meta.n_ctx, 1, 1}, DType::F32, meta);
}

NodeId GraphBuilder::kv_shift(int layer, NodeId shift, RopeStyle style, const KvShiftMeta& meta) {
  const CNode& sn = check(shift, "kv_shift");
  if (meta.kv.layer != layer)
    fail("graph builder: kv_shift layer {} with meta layer {}", layer, meta.kv.layer);
  if (sn.dtype != DType::I32 || sn.shape != Shape{3, 1, 1, 1})
    fail("graph builder: kv_shift.{} reads '{}', which is not 3 i32 values", layer, sn.name);
  if (meta.kv.n_ctx <= 0) fail("graph builder: kv_shift.{} with n_ctx {}", layer, meta.kv.n_ctx);
  check_kv_heads(meta.kv, "kv_shift");
  const RopeMeta& r = meta.rope;
  if (r.n_head != meta.kv.n_head_kv || r.n_head * r.head_dim != meta.kv.k_width)
    fail("graph builder: kv_shift.{}: rope over {} heads of {} for keys {} wide in {} heads", layer,
         r.n_head, r.head_dim, meta.kv.k_width, meta.kv.n_head_kv);
  if (r.n_rot <= 0 || r.n_rot > r.head_dim || r.n_rot % 2 != 0)
    fail("graph builder: kv_shift.{}: n_rot {} invalid for head_dim {}", layer, r.n_rot, r.head_dim);
  return append(fmt::format("kv_shift.{}", layer), OpKvShift{layer, style}, {shift},
                {meta.kv.k_width, meta.kv.n_ctx, 1, 1}, DType::F32, meta);
}

NodeId GraphBuilder::attn(NodeId q, NodeId kv, NodeId pos, const AttnMeta& meta) {
  const CNode& qn = check(q, "attn");
  const CNode& kvn = check(kv, "attn");
  const CNode& p = check(pos, "attn");
  if (meta.n_head <= 0 || meta.n_head_kv <= 0 || meta.n_head % meta.n_head_kv != 0)
    fail("graph builder: attn with {} heads over {} KV heads", meta.n_head, meta.n_head_kv);
  // Q may be a slice of a wider fused buffer, so the output width comes from the metadata.
  if (qn.shape[0] < meta.n_head * meta.head_dim)
    fail("graph builder: attn Q '{}' is {} wide, needs {}", qn.name, qn.shape[0],
         meta.n_head * meta.head_dim);
  if (!std::holds_alternative<OpKvLoad>(kvn.op))
    fail("graph builder: attn reads '{}', which is not a kv_load", kvn.name);
  if (std::get<OpKvLoad>(kvn.op).layer != meta.layer)
    fail("graph builder: attn of layer {} reads the KV of layer {}", meta.layer,
         std::get<OpKvLoad>(kvn.op).layer);
  if (const auto* km = std::get_if<KvMeta>(&kvn.meta); km && km->n_head_kv != meta.n_head_kv)
    fail("graph builder: attn over {} KV heads reads a cache of {}", meta.n_head_kv, km->n_head_kv);
  if (p.dtype != DType::I32 || p.shape[0] != qn.shape[1])
    fail("graph builder: attn positions '{}' must be {} i32 values", p.name, qn.shape[1]);
  return append("attn", OpAttn{}, {q, kv, pos}, {meta.n_head * meta.head_dim_v, qn.shape[1], 1, 1},
                DType::F32, meta);
}

NodeId GraphBuilder::silu(NodeId x) {
  const CNode& in = check(x, "silu");
  return append("silu", OpSilu{}, {x}, in.shape, DType::F32, {});
}

namespace {
void same_shape(const CNode& a, const CNode& b, const char* what) {
  if (a.shape != b.shape)
    fail("graph builder: {} of '{}' {} and '{}' {}", what, a.name, shape_str(a.shape), b.name,
         shape_str(b.shape));
}
}  // namespace

NodeId GraphBuilder::mul(NodeId a, NodeId b) {
  same_shape(check(a, "mul"), check(b, "mul"), "mul");
  return append("mul", OpMul{}, {a, b}, graph_.nodes[size_t(a)].shape, DType::F32, {});
}

NodeId GraphBuilder::add(NodeId a, NodeId b) {
  same_shape(check(a, "add"), check(b, "add"), "add");
  return append("add", OpAdd{}, {a, b}, graph_.nodes[size_t(a)].shape, DType::F32, {});
}

NodeId GraphBuilder::swiglu(NodeId gate, NodeId up) {
  same_shape(check(gate, "swiglu"), check(up, "swiglu"), "swiglu");
  return append("swiglu", OpSwiGLU{}, {gate, up}, graph_.nodes[size_t(gate)].shape, DType::F32,
                {});
}

namespace {
void check_qkv_meta(const FusedQkvMeta& m, const char* what) {
  if (m.n_head <= 0 || m.n_head_kv <= 0 || m.head_dim <= 0 || m.head_dim_v <= 0 || m.n_ctx <= 0)
    fail("graph builder: {}.{} with n_head {} n_head_kv {} head_dim {}/{} n_ctx {}", what,
         m.layer, m.n_head, m.n_head_kv, m.head_dim, m.head_dim_v, m.n_ctx);
  if (m.n_rot <= 0 || m.n_rot > m.head_dim || m.n_rot % 2 != 0)
    fail("graph builder: {}.{} rope n_rot {} invalid for head_dim {}", what, m.layer, m.n_rot,
         m.head_dim);
}
}  // namespace

NodeId GraphBuilder::fused_qkv(NodeId x, NodeId pos, const FusedQkvMeta& meta) {
  const CNode& in = check(x, "fused_qkv");
  const CNode& p = check(pos, "fused_qkv");
  check_qkv_meta(meta, "fused_qkv");
  if (in.shape[0] != meta.in_dim)
    fail("graph builder: fused_qkv.{} input '{}' is {} wide, weights expect {}", meta.layer,
         in.name, in.shape[0], meta.in_dim);
  if (p.dtype != DType::I32 || p.shape[0] != in.shape[1])
    fail("graph builder: fused_qkv.{} positions '{}' must be {} i32 values", meta.layer, p.name,
         in.shape[1]);
  return append(fmt::format("fused_qkv.{}", meta.layer), OpFusedQKV{meta.layer}, {x, pos},
                {meta.n_head * meta.head_dim, in.shape[1], 1, 1}, DType::F32, meta);
}

NodeId GraphBuilder::qkv_bias_rope_store(NodeId q, NodeId k, NodeId v, NodeId pos,
                                         const FusedQkvMeta& meta) {
  const CNode& qn = check(q, "qkv_bias_rope_store");
  const CNode& kn = check(k, "qkv_bias_rope_store");
  const CNode& vn = check(v, "qkv_bias_rope_store");
  const CNode& p = check(pos, "qkv_bias_rope_store");
  check_qkv_meta(meta, "qkv_bias_rope_store");
  const int64_t nt = qn.shape[1];
  if (qn.shape[0] != meta.n_head * meta.head_dim ||
      kn.shape[0] != meta.n_head_kv * meta.head_dim ||
      vn.shape[0] != meta.n_head_kv * meta.head_dim_v || kn.shape[1] != nt || vn.shape[1] != nt)
    fail("graph builder: qkv_bias_rope_store.{}: Q {} K {} V {} do not match the heads",
         meta.layer, shape_str(qn.shape), shape_str(kn.shape), shape_str(vn.shape));
  if (p.dtype != DType::I32 || p.shape[0] != nt)
    fail("graph builder: qkv_bias_rope_store.{} positions '{}' must be {} i32 values", meta.layer,
         p.name, nt);
  return append(fmt::format("qkv_bias_rope_store.{}", meta.layer), OpQkvBiasRopeStore{meta.layer},
                {q, k, v, pos}, qn.shape, DType::F32, meta);
}

NodeId GraphBuilder::fused_ffn(NodeId x, const FusedFfnMeta& meta) {
  const CNode& in = check(x, "fused_ffn");
  if (in.shape[0] != meta.in_dim || meta.nf <= 0)
    fail("graph builder: fused_ffn of '{}' ({} wide) with in_dim {} nf {}", in.name, in.shape[0],
         meta.in_dim, meta.nf);
  return append("fused_ffn", OpFusedFFN{}, {x}, {meta.nf, in.shape[1], 1, 1}, DType::F32, meta);
}

NodeId GraphBuilder::fused_qkv_norm(NodeId x, NodeId pos, const FusedQkvMeta& meta) {
  const CNode& in = check(x, "fused_qkv_norm");
  const CNode& p = check(pos, "fused_qkv_norm");
  check_qkv_meta(meta, "fused_qkv_norm");
  if (in.shape[0] != meta.in_dim)
    fail("graph builder: fused_qkv_norm.{} input '{}' is {} wide, weights expect {}", meta.layer,
         in.name, in.shape[0], meta.in_dim);
  if (p.dtype != DType::I32 || p.shape[0] != in.shape[1])
    fail("graph builder: fused_qkv_norm.{} positions '{}' must be {} i32 values", meta.layer,
         p.name, in.shape[1]);
  return append(fmt::format("fused_qkv_norm.{}", meta.layer), OpFusedQkvNorm{meta.layer},
                {x, pos}, {meta.n_head * meta.head_dim, in.shape[1], 1, 1}, DType::F32, meta);
}

void GraphBuilder::output(NodeId id) {
  check(id, "output");
  for (NodeId o : graph_.outputs)
    if (o == id) return;
  graph_.outputs.push_back(id);
}

NodeId GraphBuilder::named(NodeId id, std::string name) {
  check(id, "named");
  graph_.nodes[size_t(id)].name = std::move(name);
  return id;
}

ComputeGraph GraphBuilder::build() {
  ComputeGraph g = std::move(graph_);
  graph_ = ComputeGraph{};
  g.topo_order();
  return g;
}

}  // namespace minfer::graph
