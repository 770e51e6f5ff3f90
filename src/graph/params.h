// The structure-deciding knobs of a forward pass. The topology of a graph is a deterministic
// function of GraphParams: equal params => identical graph, node for node, which is what lets
// GraphCache reuse a graph after comparing params only.
//
// n_past is deliberately absent: it is execution data (the positions input), never structure.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "quant/types.h"

namespace minfer::graph {

struct CParams {
  int64_t n_ctx = 0;
  GgmlType kv_type = GgmlType::F32;  // F32, F16 or Q8_0
  bool fuse_qkv = true;
  bool fuse_ffn = true;
  // The graph's output: the final norm's hidden states (embeddings) instead of the logits.
  bool embeddings = false;
  std::vector<std::string> backends{"CPU"};  // participating backends, in priority order

  bool operator==(const CParams&) const = default;

  // `base` with the fusion toggles switched off by MINFER_NO_FUSE_QKV=1 / MINFER_NO_FUSE_FFN=1.
  static CParams from_env(CParams base);
  static CParams from_env();  // from_env(CParams{})
};

struct GraphParams {
  int64_t n_tokens = 0;
  int64_t n_out = 1;  // output rows wanted (the tail of the batch); n_out < n_tokens adds tail_ids
  GraphType gtype = GraphType::Prefill;
  CParams cparams;
  uint64_t weights_version = 0;

  bool operator==(const GraphParams&) const = default;
  std::string to_string() const;  // one line, for logs and dumps
};

}  // namespace minfer::graph
