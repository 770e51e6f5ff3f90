#include "graph/export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace minfer::graph {

namespace {

const char* kPalette[] = {"#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99", "#ffff99"};

std::string backend_label(const ExportInfo& info, int b) {
  if (b < 0) return "unassigned";
  if (size_t(b) < info.backend_names.size()) return info.backend_names[size_t(b)];
  return fmt::format("backend{}", b);
}

// DOT double-quoted strings: escape quotes and backslashes, keep \n as the label line break.
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

bool contains(const std::vector<NodeId>& v, NodeId id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}

}  // namespace

std::string to_dot(const ComputeGraph& g, const ExportInfo& info) {
  std::string out = "digraph minfer {\n  rankdir=TB;\n  node [style=filled, fontname=\"monospace\"];\n";
  if (info.params) out += fmt::format("  label=\"{}\";\n", dot_escape(info.params->to_string()));
  for (const CNode& n : g.nodes) {
    const bool io = contains(g.inputs, n.id) || contains(g.outputs, n.id);
    const char* color =
        n.backend < 0 ? "#ffffff" : kPalette[size_t(n.backend) % (sizeof kPalette / sizeof *kPalette)];
    std::string label = fmt::format("{} ({})\n{}\n[{}] {}", dot_escape(n.name), n.id,
                                    dot_escape(op_string(n.op)), fmt::join(n.shape, ", "),
                                    dtype_name(n.dtype));
    std::string meta = meta_string(n.meta);
    if (!meta.empty()) label += fmt::format("\n{}", dot_escape(meta));
    if (n.backend >= 0) label += fmt::format("\n@{}", dot_escape(backend_label(info, n.backend)));
    // Escape the newlines for DOT only after the parts were escaped.
    std::string dot_label;
    for (char c : label) {
      if (c == '\n') {
        dot_label += "\\n";
      } else {
        dot_label += c;
      }
    }
    out += fmt::format("  n{} [label=\"{}\", shape={}, fillcolor=\"{}\"];\n", n.id, dot_label,
                       io ? "doublecircle" : "box", color);
  }
  for (const CNode& n : g.nodes)
    for (NodeId s : n.src) out += fmt::format("  n{} -> n{};\n", s, n.id);
  out += "}\n";
  return out;
}

std::string to_json(const ComputeGraph& g, const ExportInfo& info) {
  using nlohmann::json;
  json j;
  if (info.params) {
    const GraphParams& p = *info.params;
    j["params"] = {
        {"n_tokens", p.n_tokens},
        {"n_out", p.n_out},
        {"gtype", graph_type_name(p.gtype)},
        {"weights_version", p.weights_version},
        {"cparams",
         {{"n_ctx", p.cparams.n_ctx},
          {"kv_type", std::string(type_name(p.cparams.kv_type))},
          {"fuse_qkv", p.cparams.fuse_qkv},
          {"fuse_ffn", p.cparams.fuse_ffn},
          {"backends", p.cparams.backends}}},
    };
  } else {
    j["params"] = nullptr;
  }
  json nodes = json::array();
  for (const CNode& n : g.nodes) {
    json jn = {{"id", n.id},
               {"name", n.name},
               {"op", op_name(n.op)},
               {"payload", op_payload(n.op)},
               {"src", n.src},
               {"shape", n.shape},
               {"dtype", dtype_name(n.dtype)},
               {"meta", meta_string(n.meta)}};
    jn["backend"] = n.backend < 0 ? json(nullptr) : json(backend_label(info, n.backend));
    const size_t i = size_t(n.id);
    if (i < info.buffers.size() && info.buffers[i])
      jn["buffer"] = {{"arena", info.buffers[i]->arena},
                      {"offset", info.buffers[i]->offset},
                      {"size", info.buffers[i]->size}};
    else
      jn["buffer"] = nullptr;
    nodes.push_back(std::move(jn));
  }
  j["nodes"] = std::move(nodes);
  j["inputs"] = g.inputs;
  j["outputs"] = g.outputs;
  j["uid"] = g.uid;
  return j.dump(1);
}

}  // namespace minfer::graph
