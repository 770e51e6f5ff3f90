#include "sched/assign.h"

#include <algorithm>

#include "common/error.h"

namespace minfer::sched {

using graph::CNode;
using graph::ComputeGraph;
using graph::NodeId;

void assign_backends(ComputeGraph& g, std::span<Backend* const> backends) {
  const int nb = int(backends.size());
  if (nb == 0) fail("scheduler: no backend to assign graph nodes to");
  const int host = nb - 1;  // the CPU: graph inputs live there and it is the last resort
  auto supports = [&](int b, const CNode& n) { return backends[size_t(b)]->supports(n); };

  // Pass 1: keep valid pre-assignments; inputs to the host; weight readers to the weight.
  for (CNode& n : g.nodes) {
    if (n.backend >= 0) {
      if (n.backend < nb && supports(n.backend, n)) continue;
      n.backend = -1;
    }
    if (std::holds_alternative<graph::OpInput>(n.op)) {
      if (supports(host, n)) n.backend = host;
      continue;
    }
    // A weight no backend claims lives in host memory, i.e. on the CPU.
    for (const std::string& w : graph::node_weights(n.meta)) {
      int holder = host;
      for (int b = 0; b < nb; ++b)
        if (backends[size_t(b)]->holds_weight(w)) {
          holder = b;
          break;
        }
      if (supports(holder, n)) {
        n.backend = holder;
        break;
      }
    }
  }

  // Pass 2: grow each assignment over unassigned neighbours, accelerators first (so that the
  // host does not swallow the nodes between two accelerator runs), then everything.
  auto expand = [&](bool forward, bool accel_only) {
    int cur = -1;
    const int count = int(g.nodes.size());
    for (int k = 0; k < count; ++k) {
      CNode& n = g.nodes[size_t(forward ? k : count - 1 - k)];
      if (n.backend >= 0) {
        cur = (accel_only && n.backend == host) ? -1 : n.backend;
      } else if (cur >= 0 && supports(cur, n)) {
        n.backend = cur;
      }
    }
  };
  expand(true, true);
  expand(false, true);
  expand(true, false);
  expand(false, false);

  // Pass 3: what is left goes to the supporting backend holding most of its sources.
  for (CNode& n : g.nodes) {
    if (n.backend >= 0) continue;
    int best = -1, best_count = -1;
    for (int b = 0; b < nb; ++b) {
      if (!supports(b, n)) continue;
      int count = 0;
      for (NodeId s : n.src)
        if (s >= 0 && size_t(s) < g.nodes.size() && g.nodes[size_t(s)].backend == b) ++count;
      if (count > best_count) {
        best = b;
        best_count = count;
      }
    }
    if (best < 0)
      fail("scheduler: no backend supports node {} ('{}', {})", n.id, n.name,
           graph::op_string(n.op));
    n.backend = best;
  }
}

bool has_buffer(const ComputeGraph& g, const std::vector<bool>& live, NodeId id) {
  const CNode& n = g.nodes[size_t(id)];
  return live[size_t(id)] && !graph::is_kv_op(n.op);
}

std::vector<Split> make_splits(const ComputeGraph& g) {
  const std::vector<bool> live = g.live_mask();
  std::vector<Split> splits;
  for (const CNode& n : g.nodes) {
    if (!live[size_t(n.id)] || std::holds_alternative<graph::OpInput>(n.op)) continue;
    if (n.backend < 0)
      fail("scheduler: node {} ('{}') has no backend; run assign_backends first", n.id, n.name);
    if (splits.empty() || splits.back().backend != n.backend) splits.push_back({n.backend, {}, {}});
    Split& s = splits.back();
    s.nodes.push_back(n.id);
    for (NodeId src : n.src) {
      // Execution is node order: a source after its consumer would be read before written.
      if (src < 0 || src >= n.id)
        fail("scheduler: node {} ('{}') reads node {}, which does not come before it", n.id,
             n.name, src);
      const CNode& sn = g.nodes[size_t(src)];
      if (sn.backend != s.backend && has_buffer(g, live, src) &&
          std::find(s.copies.begin(), s.copies.end(), src) == s.copies.end())
        s.copies.push_back(src);
    }
  }
  return splits;
}

}  // namespace minfer::sched
