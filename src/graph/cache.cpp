#include "graph/cache.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>

#include "common/error.h"

namespace minfer::graph {

uint64_t next_graph_uid() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

bool GraphCache::try_reuse(const GraphParams& p) {
  if (!graph_ || !params_ || !(*params_ == p)) return false;
  ++reuses_;
  return true;
}

ComputeGraph& GraphCache::replace(ComputeGraph g, const GraphParams& p) {
  g.uid = next_graph_uid();
  graph_ = std::move(g);
  params_ = p;
  ++builds_;
  return *graph_;
}

ComputeGraph& GraphCache::graph() {
  if (!graph_) fail("graph cache: no graph has been built yet");
  return *graph_;
}

const ComputeGraph& GraphCache::graph() const {
  if (!graph_) fail("graph cache: no graph has been built yet");
  return *graph_;
}

void GraphCache::clear() {
  graph_.reset();
  params_.reset();
}

namespace {
std::string ids(const std::vector<NodeId>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }
}  // namespace

void GraphCache::verify_structural(const ComputeGraph& a, const ComputeGraph& b) {
  if (a.nodes.size() != b.nodes.size())
    fail("graph structure differs: {} nodes vs {}", a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const CNode& x = a.nodes[i];
    const CNode& y = b.nodes[i];
    if (!(x.op == y.op))
      fail("graph structure differs at node {} ('{}'): op {} vs {}", i, x.name, op_string(x.op),
           op_string(y.op));
    if (x.src != y.src)
      fail("graph structure differs at node {} ('{}'): sources {} vs {}", i, x.name, ids(x.src),
           ids(y.src));
    if (x.shape != y.shape)
      fail("graph structure differs at node {} ('{}'): shape [{}] vs [{}]", i, x.name,
           fmt::join(x.shape, ", "), fmt::join(y.shape, ", "));
    if (x.dtype != y.dtype)
      fail("graph structure differs at node {} ('{}'): dtype {} vs {}", i, x.name,
           dtype_name(x.dtype), dtype_name(y.dtype));
    if (!(x.meta == y.meta))
      fail("graph structure differs at node {} ('{}'): meta '{}' vs '{}'", i, x.name,
           meta_string(x.meta), meta_string(y.meta));
  }
  if (a.inputs != b.inputs)
    fail("graph structure differs: inputs {} vs {}", ids(a.inputs), ids(b.inputs));
  if (a.outputs != b.outputs)
    fail("graph structure differs: outputs {} vs {}", ids(a.outputs), ids(b.outputs));
}

}  // namespace minfer::graph
