// FusionPass: rewrites Mul(Silu(x), y) into SwiGLU(x, y) in place wherever the Mul's backend
// has the SwiGLU kernel. The Silu stays in the node list; when nothing else reads it, it is
// no longer live, gets no buffer and is skipped by the executor (node counts stay stable).
#pragma once
#include <span>

#include "graph/ir.h"
#include "sched/backend.h"

namespace minfer::sched {

struct FusionPass {
  // Returns the number of rewrites. Nodes must be assigned (assign_backends) first.
  static int run(graph::ComputeGraph& g, std::span<Backend* const> backends);
};

}  // namespace minfer::sched
