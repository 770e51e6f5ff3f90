// Executor: runs a scheduled graph split by split, in node order. Before a split it copies
// the split's cross-backend sources into the split's copy buffers; nodes without a buffer
// (not live: fusion orphans) are skipped. Positions read by KV and attention nodes are checked
// against n_ctx first: a position outside [0, n_ctx) is a minfer::Error, never a stray write.
#pragma once
#include <functional>
#include <string_view>
#include <vector>

#include "graph/ir.h"
#include "sched/alloc.h"
#include "sched/assign.h"
#include "sched/backend.h"

namespace minfer::sched {

struct NodeEvent {
  const graph::CNode* node = nullptr;
  int backend = -1;
  std::string_view backend_name;
  double ms = 0;                // wall time of the node's compute
  const void* data = nullptr;   // the node's output (nullptr for KV nodes)
  size_t bytes = 0;
};
using NodeObserver = std::function<void(const NodeEvent&)>;

class Executor {
 public:
  explicit Executor(std::vector<Backend*> backends);  // same list/order as assign_backends
  void set_observer(NodeObserver obs) { observer_ = std::move(obs); }

  void run(const graph::ComputeGraph& g, const std::vector<Split>& splits,
           GraphAllocator& alloc, const WeightStore& weights, KvStore& kv);

 private:
  std::vector<Backend*> backends_;
  NodeObserver observer_;
};

}  // namespace minfer::sched
