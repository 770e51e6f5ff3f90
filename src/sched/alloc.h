// Memory for a scheduled graph.
//
// plan_allocation(): one buffer per live node with an output, placed in the arena of the
// node's backend by liveness over execution order (node order): a buffer is taken when its
// node runs and released after its last consumer; released ranges are reused best-fit.
// Elementwise ops (Add, Mul, Silu, SwiGLU) write into their first source's buffer when that
// source dies at them (and is not a graph input/output, same size, same backend). Graph
// inputs and outputs live for the whole run. Cross-backend copies get buffers in the
// consuming split's arena, live from the split's start to their last use inside it.
//
// KvStore: the persistent per-layer K and V regions, sized from the graph's KvStore/KvLoad
// metadata and kv_type. Held by the runtime, not by the graph plan: rebuilding a graph (and
// its plan) keeps the KV contents.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "graph/export.h"
#include "graph/ir.h"
#include "quant/types.h"
#include "sched/assign.h"
#include "sched/backend.h"

namespace minfer::sched {

inline constexpr size_t kBufferAlign = 64;

struct CopyBuffer {
  graph::NodeId src = -1;
  graph::BufferInfo buf;
};

struct AllocPlan {
  std::vector<std::optional<graph::BufferInfo>> node_buf;  // per node; nullopt = bufferless
  std::vector<graph::NodeId> alias_of;                     // in-place: node whose buffer it took
  std::vector<std::vector<CopyBuffer>> split_copies;       // per split, same order as Split::copies
  std::vector<size_t> arena_size;                          // per backend (bytes)
};

// n_backends: arenas to plan (>= 1 + the largest CNode::backend).
AllocPlan plan_allocation(const graph::ComputeGraph& g, const std::vector<Split>& splits,
                          int n_backends);

class GraphAllocator {
 public:
  GraphAllocator();
  ~GraphAllocator();
  GraphAllocator(GraphAllocator&&) noexcept;
  GraphAllocator& operator=(GraphAllocator&&) noexcept;

  // Plans `g` and makes the arenas at least that large (arenas only grow, so a rebuild to a
  // smaller graph reallocates nothing). Keeps a pointer to nothing: pass the graph again.
  void allocate(const graph::ComputeGraph& g, const std::vector<Split>& splits, int n_backends);
  const AllocPlan& plan() const { return plan_; }
  bool allocated() const { return !plan_.node_buf.empty(); }

  void* data(graph::NodeId id);  // throws minfer::Error for a bufferless node
  size_t bytes(graph::NodeId id) const;
  bool has_buffer(graph::NodeId id) const;
  void* copy_data(size_t split, graph::NodeId src);  // the copy of `src` made for `split`

  // Typed views, checked against the node's dtype and size (runtime fills inputs with these).
  std::span<int32_t> input_i32(graph::NodeId id);
  std::span<float> tensor_f32(graph::NodeId id);

  std::vector<std::optional<graph::BufferInfo>> buffer_info() const { return plan_.node_buf; }
  size_t arena_bytes() const;  // total of all arenas
  // Base and capacity of a backend's arena (nullptr/0 when it has none): tests and traces
  // use it to check which memory a backend reads.
  const uint8_t* arena_base(int backend) const;
  size_t arena_capacity(int backend) const;

 private:
  struct Arena;
  AllocPlan plan_;
  std::vector<graph::DType> dtypes_;
  std::vector<std::unique_ptr<Arena>> arenas_;
};

class KvStore {
 public:
  explicit KvStore(GgmlType kv_type = GgmlType::F32);  // F32, F16 or Q8_0, else Error
  ~KvStore();

  // Creates the regions of every layer named by a KvStore/KvLoad/fused KV node of `g` that
  // does not exist yet (zero-filled; head-major, cpu::KvRegion). Existing regions keep their
  // contents; a layer whose geometry (widths, n_ctx, heads) differs from its existing region is
  // an Error.
  void ensure(const graph::ComputeGraph& g);
  void ensure_layer(int layer, int64_t k_width, int64_t v_width, int64_t n_ctx, int64_t n_heads = 1);

  bool has_layer(int layer) const;
  KvPair layer(int layer);  // throws minfer::Error when the layer has no regions
  GgmlType type() const { return type_; }
  size_t bytes() const;
  void clear();  // zero all regions (forgets the context, keeps the memory)

 private:
  struct Layer;
  GgmlType type_;
  std::vector<std::unique_ptr<Layer>> layers_;
};

}  // namespace minfer::sched
