// GraphCache: keeps the last built graph and decides reuse by comparing GraphParams only (no
// node walk). Sound because building is pure and the topology a function of GraphParams;
// verify_structural() is the tripwire that checks the claim in debug builds and tests.
#pragma once
#include <cstdint>
#include <optional>

#include "graph/ir.h"
#include "graph/params.h"

namespace minfer::graph {

// Process-wide monotonic graph id (never 0).
uint64_t next_graph_uid();

class GraphCache {
 public:
  // True when a graph built with params equal to `p` is stored; counts a reuse. The graph
  // (and its uid) is then used as is; only the input data changes.
  bool try_reuse(const GraphParams& p);
  // Stores a freshly built graph for `p`, gives it a new uid and counts a build.
  ComputeGraph& replace(ComputeGraph g, const GraphParams& p);

  bool has_graph() const { return graph_.has_value(); }
  ComputeGraph& graph();  // throws minfer::Error when empty
  const ComputeGraph& graph() const;
  const GraphParams* params() const { return params_ ? &*params_ : nullptr; }
  void clear();

  uint64_t builds() const { return builds_; }
  uint64_t reuses() const { return reuses_; }

  // Throws minfer::Error naming the first difference (node count, op + payload, sources,
  // shape, dtype, meta, inputs, outputs). Names, backends and uids are not structure.
  // The stored graph has been through FusionPass: compare a rebuilt graph after running the
  // same passes on it (assign_backends + FusionPass), or compare two fresh builds.
  static void verify_structural(const ComputeGraph& a, const ComputeGraph& b);

 private:
  std::optional<ComputeGraph> graph_;
  std::optional<GraphParams> params_;
  uint64_t builds_ = 0, reuses_ = 0;
};

}  // namespace minfer::graph
