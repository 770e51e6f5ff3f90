#include "sched/fusion.h"

namespace minfer::sched {

using graph::CNode;
using graph::NodeId;

int FusionPass::run(graph::ComputeGraph& g, std::span<Backend* const> backends) {
  int rewrites = 0;
  for (CNode& n : g.nodes) {
    if (!std::holds_alternative<graph::OpMul>(n.op) || n.src.size() != 2) continue;
    if (n.backend < 0 || size_t(n.backend) >= backends.size() ||
        !backends[size_t(n.backend)]->has_fused(FusedKind::SwiGLU))
      continue;
    // mul is commutative: silu(gate) may be either operand; the other one is `up`.
    int which = -1;
    for (int k = 0; k < 2 && which < 0; ++k) {
      const NodeId s = n.src[size_t(k)];
      if (s >= 0 && s < n.id && std::holds_alternative<graph::OpSilu>(g.nodes[size_t(s)].op))
        which = k;
    }
    if (which < 0) continue;
    const CNode& silu = g.nodes[size_t(n.src[size_t(which)])];
    if (silu.src.size() != 1 || silu.shape != n.shape) continue;
    const NodeId gate = silu.src[0];
    const NodeId up = n.src[size_t(1 - which)];
    n.op = graph::OpSwiGLU{};
    n.src = {gate, up};
    n.name = "swiglu";
    ++rewrites;
  }
  return rewrites;
}

}  // namespace minfer::sched
