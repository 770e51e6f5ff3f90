// The compute-graph IR: one forward pass as data. A ComputeGraph is a node list in which every
// node appears after its sources (the builder guarantees it by construction); execution order
// is node order. Nothing here computes, owns a buffer or knows a device.
//
// Invariant that everything else protects: positions are data, not structure. KV nodes carry
// only their layer; the positions arrive through an I32 input node, so the topology never
// depends on n_past and a graph can be replayed for every decode step.
//
// Sources of each op (the backends rely on this order):
//   Input            -                       filled from outside before each run
//   Embedding        [ids]                   EmbedMeta: rows of the weight (GetRows of a weight)
//   GetRows          [x, ids]                rows ids[i] of activation x
//   RmsNorm          [x]                     NormMeta (weight "" = none)
//   QkNorm           [x]                     NormMeta, per head of hd over nh heads
//   MatMul           [x]                     MatMulMeta (weight + optional bias by name)
//   Rope             [x, pos]                RopeMeta, in place semantics: out = rope(x)
//   KvStore          [k, v, pos]             KvMeta; writes K/V rows at pos; shape [k_width, n_ctx]
//   KvLoad           -                       KvMeta; a view of the layer's K/V regions
//   Attn             [q, kv, pos]            AttnMeta; kv is the KvLoad node
//   Silu [x]  Add/Mul [a, b]  SwiGLU [gate, up] (silu(gate) * up)
//   FusedQKV         [x, pos]                FusedQkvMeta: q/k/v matmuls + biases + rope + KV store;
//                                            output = roped Q
//   QkvBiasRopeStore [q, k, v, pos]          FusedQkvMeta: biases + rope + KV store of raw
//                                            matmul outputs (no bias in their MatMulMeta); output = Q
//   FusedFFN         [x]                     FusedFfnMeta: swiglu(gate x, up x), output [nf, nt]
//   FusedQkvNorm     [x, pos]                FusedQkvMeta with q_norm/k_norm: qwen3's fused QKV
//   KvShift          [shift]                 KvShiftMeta; the context shift of a layer's cache:
//                                            shift = I32 {n_keep, n_discard, n_past}; rows
//                                            n_keep + n_discard.. move n_discard down, keys
//                                            rotated by -n_discard (a graph of its own)
//
// I32 tensors (token ids, positions, tail ids) have their own int32 buffers of 4 bytes per
// element: a backend reads them through TensorMap::i32().
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "quant/types.h"

namespace minfer::graph {

using NodeId = int32_t;
using Shape = std::array<int64_t, 4>;  // [d, nt, 1, 1]: ne[0] fastest (token-major memory)

enum class DType : uint8_t { F32, F16, I32 };
enum class RopeStyle : uint8_t { Normal = 0, NeoX = 2 };  // ggml's rope mode values
enum class GraphType : uint8_t { Prefill, Decode, KvShift };

const char* dtype_name(DType t);
size_t dtype_size(DType t);
const char* rope_style_name(RopeStyle s);
const char* graph_type_name(GraphType t);

// ---- operations: payloads compare by value (RmsNorm{1e-5} != RmsNorm{1e-6}) ----
struct OpInput { bool operator==(const OpInput&) const = default; };
struct OpAdd { bool operator==(const OpAdd&) const = default; };
struct OpMul { bool operator==(const OpMul&) const = default; };
struct OpSilu { bool operator==(const OpSilu&) const = default; };
struct OpSwiGLU { bool operator==(const OpSwiGLU&) const = default; };
struct OpRmsNorm { float eps = 0; bool operator==(const OpRmsNorm&) const = default; };
struct OpQkNorm {
  int64_t hd = 0, nh = 0;
  float eps = 0;
  bool operator==(const OpQkNorm&) const = default;
};
struct OpMatMul { bool transpose_b = false; bool operator==(const OpMatMul&) const = default; };
struct OpGetRows { bool operator==(const OpGetRows&) const = default; };
struct OpEmbedding { bool operator==(const OpEmbedding&) const = default; };
struct OpRope { RopeStyle style = RopeStyle::Normal; bool operator==(const OpRope&) const = default; };
struct OpAttn { int mode = 0; bool operator==(const OpAttn&) const = default; };
struct OpKvStore { int layer = 0; bool operator==(const OpKvStore&) const = default; };
struct OpKvLoad { int layer = 0; bool operator==(const OpKvLoad&) const = default; };
struct OpFusedQKV { int layer = 0; bool operator==(const OpFusedQKV&) const = default; };
struct OpQkvBiasRopeStore { int layer = 0; bool operator==(const OpQkvBiasRopeStore&) const = default; };
struct OpFusedFFN { bool operator==(const OpFusedFFN&) const = default; };
struct OpFusedQkvNorm { int layer = 0; bool operator==(const OpFusedQkvNorm&) const = default; };
struct OpKvShift {
  int layer = 0;
  RopeStyle style = RopeStyle::Normal;
  bool operator==(const OpKvShift&) const = default;
};

using Op = std::variant<OpInput, OpAdd, OpMul, OpSilu, OpSwiGLU, OpRmsNorm, OpQkNorm, OpMatMul,
                        OpGetRows, OpEmbedding, OpRope, OpAttn, OpKvStore, OpKvLoad, OpFusedQKV,
                        OpQkvBiasRopeStore, OpFusedFFN, OpFusedQkvNorm, OpKvShift>;

std::string op_name(const Op& op);     // "RmsNorm"
std::string op_payload(const Op& op);  // "eps: 1e-06" ("" when the op has no payload)
std::string op_string(const Op& op);   // "RmsNorm { eps: 1e-06 }" / "Add"

// Ops with an effect beyond their output (KV writes): live even when nothing consumes them.
bool has_side_effects(const Op& op);
// Index in src of the positions input of ops that read positions, -1 for the others.
int pos_src_index(const Op& op);
// Elementwise ops whose output may share the buffer of their first source.
bool is_elementwise(const Op& op);
// Ops whose data is a layer's KV regions (KvStore, KvLoad, KvShift): no buffer of their own.
bool is_kv_op(const Op& op);

// ---- node metadata: a closed variant, compared by value like the ops ----
struct MatMulMeta {
  std::string weight;
  std::string bias;  // "" = none
  GgmlType weight_type = GgmlType::F32;
  int64_t in_dim = 0, out_dim = 0;
  bool operator==(const MatMulMeta&) const = default;
};
struct NormMeta {
  std::string weight;  // "" = none
  bool operator==(const NormMeta&) const = default;
};
// YaRN context extension, as ggml_rope_ext takes it (ext_factor 0: none) and the cos/sin
// magnitude attn_factor (rope.scaling.attn_factor; YaRN's own factor included).
struct RopeYarn {
  float ext_factor = 0.0f, attn_factor = 1.0f, beta_fast = 32.0f, beta_slow = 1.0f;
  int64_t n_ctx_orig = 0;
  bool operator==(const RopeYarn&) const = default;
};
struct RopeMeta {
  int64_t n_head = 0, head_dim = 0, n_rot = 0;
  float freq_base = 10000.0f, freq_scale = 1.0f;
  std::string freq_factors;  // weight name of Llama-3 rope_freqs ("" = none)
  RopeYarn yarn;
  bool operator==(const RopeMeta&) const = default;
};
struct AttnMeta {
  int layer = 0;
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0, head_dim_v = 0;
  int64_t nkt = 0;  // KV row stride = n_head_kv * head_dim
  float scale = 1.0f;
  bool operator==(const AttnMeta&) const = default;
};
struct KvMeta {
  int layer = 0;
  int64_t k_width = 0, v_width = 0;  // elements per K row / V row (n_head_kv * head dims)
  int64_t n_ctx = 0;
  int64_t n_head_kv = 1;  // the regions hold each KV head's rows apart (cpu::KvRegion)
  bool operator==(const KvMeta&) const = default;
};
struct EmbedMeta {
  std::string weight;
  GgmlType weight_type = GgmlType::F32;
  bool operator==(const EmbedMeta&) const = default;
};
struct FusedQkvMeta {
  int layer = 0;
  std::string wq, wk, wv;            // weight names
  GgmlType tq = GgmlType::F32, tk = GgmlType::F32, tv = GgmlType::F32;
  std::string bq, bk, bv;            // bias names ("" = none)
  std::string q_norm, k_norm;        // FusedQkvNorm only
  float norm_eps = 0;
  int64_t in_dim = 0;
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0, head_dim_v = 0;
  RopeStyle rope_style = RopeStyle::Normal;
  int64_t n_rot = 0;
  float freq_base = 10000.0f, freq_scale = 1.0f;
  std::string freq_factors;
  RopeYarn yarn;
  int64_t n_ctx = 0;
  bool operator==(const FusedQkvMeta&) const = default;
};
// A layer's cache geometry and its keys' rotation (rope's n_head = the KV heads).
struct KvShiftMeta {
  KvMeta kv;
  RopeMeta rope;
  bool operator==(const KvShiftMeta&) const = default;
};
struct FusedFfnMeta {
  std::string gate, up;
  GgmlType gate_type = GgmlType::F32, up_type = GgmlType::F32;
  int64_t in_dim = 0, nf = 0;
  bool operator==(const FusedFfnMeta&) const = default;
};

using NodeMeta = std::variant<std::monostate, MatMulMeta, NormMeta, RopeMeta, AttnMeta, KvMeta,
                              EmbedMeta, FusedQkvMeta, FusedFfnMeta, KvShiftMeta>;

std::string meta_string(const NodeMeta& m);  // one line, for dumps ("" for monostate)
// Names of the weights (and biases, norm weights, freq factors) a node reads.
std::vector<std::string> node_weights(const NodeMeta& m);

struct CNode {
  NodeId id = 0;
  std::string name;
  Op op;
  std::vector<NodeId> src;
  Shape shape{1, 1, 1, 1};
  DType dtype = DType::F32;
  int backend = -1;  // index into the scheduler's backend list; -1 = not assigned yet
  NodeMeta meta;

  int64_t n_elements() const { return shape[0] * shape[1] * shape[2] * shape[3]; }
  size_t n_bytes() const { return size_t(n_elements()) * dtype_size(dtype); }
};

struct ComputeGraph {
  std::vector<CNode> nodes;
  std::vector<NodeId> inputs, outputs;
  uint64_t uid = 0;  // set by GraphCache::replace (monotonic per process); 0 = not cached

  // Validates the graph (ids equal positions, sources exist, no cycle) and returns a
  // topological order (Kahn, lowest id first, so a valid builder graph yields 0..n-1).
  // Throws minfer::Error naming the offending node. Not used as the execution order.
  std::vector<NodeId> topo_order() const;

  // live[i]: node i contributes to an output or has side effects (reverse reachability).
  // A node that is not live (e.g. the Silu orphaned by the SwiGLU fusion) gets no buffer
  // and is skipped by the executor.
  std::vector<bool> live_mask() const;

  // consumers[i]: ids of the nodes that read node i, in node order.
  std::vector<std::vector<NodeId>> consumers() const;

  const CNode& node(NodeId id) const;  // bounds-checked (throws minfer::Error)
  CNode& node(NodeId id);
};

}  // namespace minfer::graph
