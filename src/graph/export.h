// Graph dumps: Graphviz DOT (--dump-graph) and JSON (--dump-graph-json, the web viewer).
// The graph module knows no backends or buffers; the caller passes what it has in ExportInfo.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "graph/params.h"

namespace minfer::graph {

struct BufferInfo {
  int arena = 0;  // backend index
  size_t offset = 0, size = 0;
  bool operator==(const BufferInfo&) const = default;
};

struct ExportInfo {
  const GraphParams* params = nullptr;          // JSON "params" (null when absent)
  std::vector<std::string> backend_names;       // indexed by CNode::backend
  std::vector<std::optional<BufferInfo>> buffers;  // per node; empty = unknown, nullopt = bufferless
};

// Nodes coloured by backend; inputs and outputs drawn as double circles; payload in the label.
std::string to_dot(const ComputeGraph& g, const ExportInfo& info = {});

// {"params": {...} | null, "nodes": [{"id","name","op","payload","src","shape","dtype",
//  "backend","buffer"}], "inputs": [..], "outputs": [..], "uid": n}
// backend is the name (null when unassigned); buffer {"arena","offset","size"} or null.
std::string to_json(const ComputeGraph& g, const ExportInfo& info = {});

}  // namespace minfer::graph
