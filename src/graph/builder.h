// GraphBuilder: the only way to construct a ComputeGraph. It is pure and append-only: each
// method checks its sources' shapes, computes the output shape, appends one node and returns
// its id. No compute, no buffers, no backend calls: building twice with the same inputs gives
// the same graph, which is what makes params-only graph reuse sound.
//
// Nodes can only reference ids the builder already returned, so the node list is topological
// by construction and execution follows it ("KV store before the attention that reads it").
// Bad shapes or unknown ids throw minfer::Error naming the node being built.
#pragma once
#include <array>
#include <string>

#include "graph/ir.h"

namespace minfer::graph {

// A weight as the graph sees it: by name only. ne in GGUF order: ne[0] = in, ne[1] = out.
struct WeightDesc {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::array<int64_t, 4> ne{1, 1, 1, 1};
};

class GraphBuilder {
 public:
  // Leaf filled from outside before every run (token ids, positions, tail ids, ...).
  NodeId input(const std::string& name, Shape shape, DType dtype);

  NodeId embedding(NodeId ids, const WeightDesc& w);                      // [w.ne[0], n_ids]
  NodeId rms_norm(NodeId x, float eps, const std::string& weight_name);   // weight "" = none
  NodeId qk_norm(NodeId x, int64_t hd, int64_t nh, float eps, const std::string& weight_name);
  NodeId matmul(NodeId x, const WeightDesc& w, const std::string& bias = "");  // [w.ne[1], nt]
  NodeId get_rows(NodeId x, NodeId ids, Shape shape);
  NodeId rope(NodeId x, NodeId pos, RopeStyle style, const RopeMeta& meta);
  NodeId kv_store(int layer, NodeId k, NodeId v, NodeId pos, const KvMeta& meta);
  NodeId kv_load(int layer, const KvMeta& meta);
  NodeId attn(NodeId q, NodeId kv, NodeId pos, const AttnMeta& meta);
  // The context shift of a layer's cache (ir.h: KvShift); `shift` is the I32 [3] input.
  NodeId kv_shift(int layer, NodeId shift, RopeStyle style, const KvShiftMeta& meta);  // [n_head*head_dim_v, nt]
  NodeId silu(NodeId x);
  NodeId mul(NodeId a, NodeId b);
  NodeId add(NodeId a, NodeId b);
  NodeId swiglu(NodeId gate, NodeId up);

  // Decode fusions (chosen by the model code from GraphParams; the builder only records them).
  NodeId fused_qkv(NodeId x, NodeId pos, const FusedQkvMeta& meta);            // -> Q
  NodeId qkv_bias_rope_store(NodeId q, NodeId k, NodeId v, NodeId pos,
                             const FusedQkvMeta& meta);                          // -> Q
  NodeId fused_ffn(NodeId x, const FusedFfnMeta& meta);                        // -> [nf, nt]
  NodeId fused_qkv_norm(NodeId x, NodeId pos, const FusedQkvMeta& meta);       // -> Q

  void output(NodeId id);
  // Renames a node (names are labels for dumps and traces, not structure).
  NodeId named(NodeId id, std::string name);

  const CNode& node(NodeId id) const;
  size_t size() const { return graph_.nodes.size(); }

  // Hands over the graph (validated with topo_order()) and leaves the builder empty.
  ComputeGraph build();

 private:
  NodeId append(std::string name, Op op, std::vector<NodeId> src, Shape shape, DType dtype,
                NodeMeta meta);
  const CNode& check(NodeId id, const char* what) const;

  ComputeGraph graph_;
};

}  // namespace minfer::graph
