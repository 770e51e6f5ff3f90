#include "graph/ir.h"

#include <fmt/format.h>

#include <queue>

#include "common/error.h"

namespace minfer::graph {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::I32: return "i32";
  }
  return "?";
}

size_t dtype_size(DType t) { return t == DType::F16 ? 2 : 4; }

const char* rope_style_name(RopeStyle s) { return s == RopeStyle::NeoX ? "NeoX" : "Normal"; }

const char* graph_type_name(GraphType t) {
  switch (t) {
    case GraphType::Prefill: return "Prefill";
    case GraphType::Decode: return "Decode";
    case GraphType::KvShift: return "KvShift";
  }
  return "?";
}

namespace {

struct NameOf {
  const char* operator()(const OpInput&) const { return "Input"; }
  const char* operator()(const OpAdd&) const { return "Add"; }
  const char* operator()(const OpMul&) const { return "Mul"; }
  const char* operator()(const OpSilu&) const { return "Silu"; }
  const char* operator()(const OpSwiGLU&) const { return "SwiGLU"; }
  const char* operator()(const OpRmsNorm&) const { return "RmsNorm"; }
  const char* operator()(const OpQkNorm&) const { return "QkNorm"; }
  const char* operator()(const OpMatMul&) const { return "MatMul"; }
  const char* operator()(const OpGetRows&) const { return "GetRows"; }
  const char* operator()(const OpEmbedding&) const { return "Embedding"; }
  const char* operator()(const OpRope&) const { return "RoPE"; }
  const char* operator()(const OpAttn&) const { return "Attn"; }
  const char* operator()(const OpKvStore&) const { return "KvStore"; }
  const char* operator()(const OpKvLoad&) const { return "KvLoad"; }
  const char* operator()(const OpFusedQKV&) const { return "FusedQKV"; }
  const char* operator()(const OpQkvBiasRopeStore&) const { return "QkvBiasRopeStore"; }
  const char* operator()(const OpFusedFFN&) const { return "FusedFFN"; }
  const char* operator()(const OpFusedQkvNorm&) const { return "FusedQkvNorm"; }
  const char* operator()(const OpKvShift&) const { return "KvShift"; }
};

struct PayloadOf {
  std::string operator()(const OpRmsNorm& o) const { return fmt::format("eps: {}", o.eps); }
  std::string operator()(const OpQkNorm& o) const {
    return fmt::format("hd: {}, nh: {}, eps: {}", o.hd, o.nh, o.eps);
  }
  std::string operator()(const OpMatMul& o) const {
    return fmt::format("transpose_b: {}", o.transpose_b);
  }
  std::string operator()(const OpRope& o) const {
    return fmt::format("style: {}", rope_style_name(o.style));
  }
  std::string operator()(const OpAttn& o) const { return fmt::format("mode: {}", o.mode); }
  std::string operator()(const OpKvStore& o) const { return fmt::format("layer: {}", o.layer); }
  std::string operator()(const OpKvLoad& o) const { return fmt::format("layer: {}", o.layer); }
  std::string operator()(const OpFusedQKV& o) const { return fmt::format("layer: {}", o.layer); }
  std::string operator()(const OpQkvBiasRopeStore& o) const {
    return fmt::format("layer: {}", o.layer);
  }
  std::string operator()(const OpFusedQkvNorm& o) const {
    return fmt::format("layer: {}", o.layer);
  }
  std::string operator()(const OpKvShift& o) const {
    return fmt::format("layer: {}, style: {}", o.layer, rope_style_name(o.style));
  }
  template <typename T>
  std::string operator()(const T&) const { return {}; }
};

// " yarn=..." when the rope is not plain (empty otherwise, so that plain graphs dump as before).
std::string yarn_text(const RopeYarn& y) {
  if (y.ext_factor == 0.0f && y.attn_factor == 1.0f) return {};
  return fmt::format(" yarn=ext:{},attn:{},beta:{}/{},orig_ctx:{}", y.ext_factor, y.attn_factor, y.beta_fast,
                     y.beta_slow, y.n_ctx_orig);
}

struct MetaString {
  std::string operator()(const std::monostate&) const { return {}; }
  std::string operator()(const MatMulMeta& m) const {
    return fmt::format("weight={} bias={} type={} {}->{}", m.weight,
                       m.bias.empty() ? "-" : m.bias, type_name(m.weight_type), m.in_dim,
                       m.out_dim);
  }
  std::string operator()(const NormMeta& m) const {
    return fmt::format("weight={}", m.weight.empty() ? "-" : m.weight);
  }
  std::string operator()(const RopeMeta& m) const {
    return fmt::format("n_head={} head_dim={} n_rot={} base={} scale={}{}{}", m.n_head, m.head_dim,
                       m.n_rot, m.freq_base, m.freq_scale,
                       m.freq_factors.empty() ? "" : " factors=" + m.freq_factors, yarn_text(m.yarn));
  }
  std::string operator()(const AttnMeta& m) const {
    return fmt::format("layer={} n_head={} n_head_kv={} head_dim={} head_dim_v={} nkt={} scale={}",
                       m.layer, m.n_head, m.n_head_kv, m.head_dim, m.head_dim_v, m.nkt, m.scale);
  }
  std::string operator()(const KvMeta& m) const {
    return fmt::format("layer={} k_width={} v_width={} n_ctx={} n_head_kv={}", m.layer, m.k_width,
                       m.v_width, m.n_ctx, m.n_head_kv);
  }
  std::string operator()(const EmbedMeta& m) const {
    return fmt::format("weight={} type={}", m.weight, type_name(m.weight_type));
  }
  std::string operator()(const FusedQkvMeta& m) const {
    return fmt::format("layer={} wq={} wk={} wv={} n_head={} n_head_kv={} head_dim={} n_ctx={}{}",
                       m.layer, m.wq, m.wk, m.wv, m.n_head, m.n_head_kv, m.head_dim, m.n_ctx, yarn_text(m.yarn));
  }
  std::string operator()(const FusedFfnMeta& m) const {
    return fmt::format("gate={} up={} {}->{}", m.gate, m.up, m.in_dim, m.nf);
  }
  std::string operator()(const KvShiftMeta& m) const {
    return (*this)(m.kv) + " " + (*this)(m.rope);
  }
};

struct WeightsOf {
  std::vector<std::string>& out;
  void add(const std::string& s) const {
    if (!s.empty()) out.push_back(s);
  }
  void operator()(const std::monostate&) const {}
  void operator()(const MatMulMeta& m) const { add(m.weight); add(m.bias); }
  void operator()(const NormMeta& m) const { add(m.weight); }
  void operator()(const RopeMeta& m) const { add(m.freq_factors); }
  void operator()(const AttnMeta&) const {}
  void operator()(const KvMeta&) const {}
  void operator()(const EmbedMeta& m) const { add(m.weight); }
  void operator()(const FusedQkvMeta& m) const {
    for (const std::string* s : {&m.wq, &m.wk, &m.wv, &m.bq, &m.bk, &m.bv, &m.q_norm, &m.k_norm,
                                 &m.freq_factors})
      add(*s);
  }
  void operator()(const FusedFfnMeta& m) const { add(m.gate); add(m.up); }
  void operator()(const KvShiftMeta& m) const { add(m.rope.freq_factors); }
};

}  // namespace

std::string op_name(const Op& op) { return std::visit(NameOf{}, op); }

std::string op_payload(const Op& op) { return std::visit(PayloadOf{}, op); }

std::string op_string(const Op& op) {
  std::string p = op_payload(op);
  return p.empty() ? op_name(op) : fmt::format("{} {{ {} }}", op_name(op), p);
}

bool has_side_effects(const Op& op) {
  return std::holds_alternative<OpKvStore>(op) || std::holds_alternative<OpKvShift>(op) || std::holds_alternative<OpFusedQKV>(op) ||
         std::holds_alternative<OpQkvBiasRopeStore>(op) ||
         std::holds_alternative<OpFusedQkvNorm>(op);
}

int pos_src_index(const Op& op) {
  if (std::holds_alternative<OpRope>(op) || std::holds_alternative<OpFusedQKV>(op) ||
      std::holds_alternative<OpFusedQkvNorm>(op))
    return 1;
  if (std::holds_alternative<OpKvStore>(op) || std::holds_alternative<OpAttn>(op)) return 2;
  if (std::holds_alternative<OpQkvBiasRopeStore>(op)) return 3;
  return -1;
}

bool is_elementwise(const Op& op) {
  return std::holds_alternative<OpAdd>(op) || std::holds_alternative<OpMul>(op) ||
         std::holds_alternative<OpSilu>(op) || std::holds_alternative<OpSwiGLU>(op);
}

bool is_kv_op(const Op& op) {
  return std::holds_alternative<OpKvStore>(op) || std::holds_alternative<OpKvLoad>(op) ||
         std::holds_alternative<OpKvShift>(op);
}

std::string meta_string(const NodeMeta& m) { return std::visit(MetaString{}, m); }

std::vector<std::string> node_weights(const NodeMeta& m) {
  std::vector<std::string> out;
  std::visit(WeightsOf{out}, m);
  return out;
}

const CNode& ComputeGraph::node(NodeId id) const {
  if (id < 0 || size_t(id) >= nodes.size())
    fail("graph: node id {} out of range (graph has {} nodes)", id, nodes.size());
  return nodes[size_t(id)];
}

CNode& ComputeGraph::node(NodeId id) {
  return const_cast<CNode&>(static_cast<const ComputeGraph&>(*this).node(id));
}

std::vector<NodeId> ComputeGraph::topo_order() const {
  const size_t n = nodes.size();
  std::vector<int> indegree(n, 0);
  std::vector<std::vector<NodeId>> users(n);
  for (size_t i = 0; i < n; ++i) {
    const CNode& nd = nodes[i];
    if (nd.id != NodeId(i))
      fail("graph: node at position {} ('{}') has id {}", i, nd.name, nd.id);
    for (NodeId s : nd.src) {
      if (s < 0 || size_t(s) >= n)
        fail("graph: node {} ('{}') reads dangling node id {}", i, nd.name, s);
      ++indegree[i];
      users[size_t(s)].push_back(NodeId(i));
    }
  }
  for (NodeId id : inputs)
    if (id < 0 || size_t(id) >= n) fail("graph: input id {} does not exist", id);
  for (NodeId id : outputs)
    if (id < 0 || size_t(id) >= n) fail("graph: output id {} does not exist", id);

  // Kahn with a min-heap: a builder graph comes back as 0..n-1, anything else still in a
  // stable order.
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push(NodeId(i));
  std::vector<NodeId> order;
  order.reserve(n);
  while (!ready.empty()) {
    NodeId id = ready.top();
    ready.pop();
    order.push_back(id);
    for (NodeId u : users[size_t(id)])
      if (--indegree[size_t(u)] == 0) ready.push(u);
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i)
      if (indegree[i] > 0)
        fail("graph: cycle through node {} ('{}'): {} of {} nodes cannot be ordered", i,
             nodes[i].name, n - order.size(), n);
  }
  return order;
}

std::vector<std::vector<NodeId>> ComputeGraph::consumers() const {
  std::vector<std::vector<NodeId>> users(nodes.size());
  for (const CNode& nd : nodes)
    for (NodeId s : nd.src)
      if (s >= 0 && size_t(s) < nodes.size()) {
        auto& u = users[size_t(s)];
        if (u.empty() || u.back() != nd.id) u.push_back(nd.id);
      }
  return users;
}

std::vector<bool> ComputeGraph::live_mask() const {
  const size_t n = nodes.size();
  std::vector<bool> live(n, false);
  std::vector<NodeId> stack;
  auto mark = [&](NodeId id) {
    if (id >= 0 && size_t(id) < n && !live[size_t(id)]) {
      live[size_t(id)] = true;
      stack.push_back(id);
    }
  };
  for (NodeId id : outputs) mark(id);
  for (NodeId id : inputs) mark(id);  // filled from outside: always has a buffer
  for (const CNode& nd : nodes)
    if (has_side_effects(nd.op)) mark(nd.id);
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    for (NodeId s : nodes[size_t(id)].src) mark(s);
  }
  return live;
}

}  // namespace minfer::graph
