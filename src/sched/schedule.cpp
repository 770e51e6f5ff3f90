#include "sched/schedule.h"

namespace minfer::sched {

Schedule prepare(graph::ComputeGraph& g, std::span<Backend* const> backends,
                 GraphAllocator& alloc, KvStore& kv) {
  g.topo_order();  // validates: a malformed graph fails here, not inside a kernel
  Schedule s;
  assign_backends(g, backends);
  s.fusions = FusionPass::run(g, backends);
  s.splits = make_splits(g);
  alloc.allocate(g, s.splits, int(backends.size()));
  kv.ensure(g);
  return s;
}

}  // namespace minfer::sched
