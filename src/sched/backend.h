// The Backend interface the scheduler drives, and what a backend sees while it computes a
// node: TensorMap (raw buffers by node id, weights by name, the KV regions of a layer).
//
// A backend computes one node at a time, reading and writing host-addressable memory. The
// executor guarantees that every source id of the node resolves, through TensorMap::data(),
// to memory of the backend running the node (a cross-backend source is a copy made at the
// start of the split), and that positions read by KV ops are within [0, n_ctx).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "backend/cpu/kernels.h"
#include "graph/ir.h"

namespace minfer::sched {

// Kernels a backend may have for the fusions (FusionPass and the model's decode fusions ask).
enum class FusedKind : uint8_t { SwiGLU, FusedQKV, QkvBiasRopeStore, FusedFFN, FusedQkvNorm };

// A weight tensor as stored: ne in GGUF order (ne[0] = row length = in).
struct WeightRef {
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;
  std::array<int64_t, 4> ne{1, 1, 1, 1};
  size_t nbytes = 0;
  const uint8_t* packed = nullptr;  // a load-time repacked copy for the CPU kernels, or nullptr
};

class WeightStore {
 public:
  virtual ~WeightStore();
  virtual const WeightRef* find(const std::string& name) const = 0;  // nullptr when unknown
  // Throws minfer::Error "weight '<name>' is not loaded" when unknown.
  const WeightRef& get(const std::string& name) const;
};

// The persistent K and V regions of one layer (owned by KvStore, see alloc.h).
struct KvPair {
  cpu::KvRegion k, v;
};

class TensorMap {
 public:
  virtual ~TensorMap();
  // The buffer of node `id` as the running backend sees it: the node's own output buffer
  // for the node being computed, the (possibly copied) output of a source. Throws
  // minfer::Error for a bufferless node (KvStore/KvLoad outputs are the KV regions: use kv()).
  virtual void* data(graph::NodeId id) = 0;
  virtual size_t bytes(graph::NodeId id) const = 0;
  virtual const WeightRef& weight(const std::string& name) const = 0;  // throws when unknown
  virtual KvPair kv(int layer) = 0;                                    // throws when unknown
  // Any node of the graph being run: a backend reads its sources' shapes here (e.g. the
  // token count of a KvStore is its K source's shape[1]; its own shape is the region's).
  virtual const graph::CNode& node(graph::NodeId id) const = 0;

  float* f32(graph::NodeId id) { return static_cast<float*>(data(id)); }
  int32_t* i32(graph::NodeId id) { return static_cast<int32_t*>(data(id)); }
};

class Backend {
 public:
  virtual ~Backend();
  virtual const std::string& name() const = 0;
  virtual bool supports(const graph::CNode& node) const = 0;
  virtual bool has_fused(FusedKind kind) const { return false; }
  // True when the weight lives in this backend's memory: nodes reading it are assigned here
  // first (ggml's "the node goes where its weight is").
  virtual bool holds_weight(const std::string& name) const { return false; }
  virtual void compute(const graph::CNode& node, TensorMap& tensors) = 0;
  // Called by the executor before each run of a graph: what a backend carries from one node to
  // the next (the CPU backend: which node's activations its last matmul quantized) holds within
  // one run only, since a rerun refills the same buffers with new data.
  virtual void begin_run() {}
};

}  // namespace minfer::sched
