// Compare mode: the numerical difference, node by node, between two MINFER_GRAPH_DUMP
// directories (DIR/index.jsonl lists DIR/stepNNNN/IIII-name.f32 per executed node and step).
// Nodes are matched by (step, id, name); the first diverging node is the first, in step then
// execution (id) order, whose relative difference exceeds the tolerance.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace minfer::server {

struct NodeDiff {
  int64_t step = 0;
  int32_t id = 0;
  std::string name, op;
  std::vector<int64_t> shape;  // as the index lists it (activations: [d, n_tokens, 1, 1])
  int64_t n = 0;              // values compared (0 when the sizes differ)
  double max_abs = 0;         // max |a - b| (NaN vs number counts as infinite)
  double max_ref = 0;         // max |a|
  double rel = 0;             // max_abs / max(max_ref, tiny)
  bool size_mismatch = false;
};

struct DumpComparison {
  std::vector<NodeDiff> nodes;        // in (step, id) order
  std::vector<std::string> only_in_a, only_in_b;  // "step/id/name" keys present on one side
  std::optional<size_t> first_diverging;  // index into nodes
  double tol = 0;
};

// Error naming the directory when index.jsonl is missing or malformed, or a listed file is
// missing, unreadable, or points outside its directory.
DumpComparison compare_dumps(const std::string& dir_a, const std::string& dir_b, double tol);

std::string comparison_json(const DumpComparison& c);

}  // namespace minfer::server
