// The whole preparation of a freshly built graph in the order the design fixes: assign
// backends -> FusionPass -> splits -> allocate buffers -> make sure the KV regions exist.
// A reused graph skips all of it: only its input data is refreshed before Executor::run.
#pragma once
#include <span>
#include <vector>

#include "graph/ir.h"
#include "sched/alloc.h"
#include "sched/assign.h"
#include "sched/backend.h"
#include "sched/fusion.h"

namespace minfer::sched {

struct Schedule {
  std::vector<Split> splits;
  int fusions = 0;  // FusionPass rewrites
};

Schedule prepare(graph::ComputeGraph& g, std::span<Backend* const> backends,
                 GraphAllocator& alloc, KvStore& kv);

}  // namespace minfer::sched
