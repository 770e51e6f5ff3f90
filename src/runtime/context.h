// An inference context over a Model: the KV cache (persistent per-layer regions that survive
// graph rebuilds), one cached graph per graph type (prefill, decode), each with its allocator,
// and the executor running them on the CPU backend.
//
// Graph reuse: a graph is rebuilt only when its GraphParams change (n_tokens, n_out, type,
// cparams); positions are input data. Over a long generation the prefill graph and the decode
// graph are each built once (Stats counts builds and reuses).
//
// Observability: MINFER_TRACE=FILE writes one JSON line per executed node and step (name,
// op, shape, backend, time, min/max/mean/rms/nan/inf of its output); MINFER_GRAPH_DUMP=DIR
// writes each node's raw f32 output per step (DIR/step0003/0042-<name>.f32, DIR/index.jsonl).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "quant/types.h"

namespace minfer::runtime {

class Model;

struct ContextParams {
  int64_t n_ctx = 0;        // 0 = min(train context, 4096)
  int n_threads = 0;        // 0 = the physical cores this process may use
  GgmlType kv_type = GgmlType::F32;  // F32, F16 or Q8_0
  bool fuse_qkv = true;     // MINFER_NO_FUSE_QKV=1 turns it off
  bool fuse_ffn = true;     // MINFER_NO_FUSE_FFN=1 turns it off
  bool embeddings = false;  // decode() returns the final norm's hidden states, not logits
};

struct Stats {
  uint64_t graphs_built = 0;
  uint64_t graph_reuses = 0;
  uint64_t prefill_builds = 0;  // graphs_built split by graph type (--verbose prints them)
  uint64_t decode_builds = 0;
  uint64_t tokens_evaluated = 0;
  uint64_t decode_calls = 0;
  uint64_t kv_shifts = 0;   // shift() calls
  double t_eval_ms = 0;     // inside decode(), graph building included
  double t_build_ms = 0;    // building + scheduling + allocating graphs
};

// Called for every executed node with its f32 output (nullptr, 0 for KV and I32 nodes).
using NodeObserver =
    std::function<void(const graph::CNode& node, const float* data, size_t n, double ms)>;

class Context {
 public:
  Context(const Model& model, ContextParams params = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Appends tokens at positions n_past().., returns the logits of the last n_out tokens,
  // row-major [n_out][n_vocab] (with ContextParams::embeddings their hidden states, [n_out]
  // [n_embd]), valid until the next call. Error when n_past + tokens > n_ctx, a token id is out
  // of range, tokens is empty or n_out is not in [1, tokens].
  std::span<const float> decode(std::span<const int32_t> tokens, int64_t n_out = 1);

  int64_t n_past() const { return n_past_; }
  // The tokens the KV cache holds, by position (n_past() of them).
  std::span<const int32_t> tokens() const { return tokens_; }
  int64_t n_ctx() const;
  int64_t n_vocab() const;
  int64_t row_width() const;  // of decode()'s rows: n_vocab, or n_embd with embeddings
  const ContextParams& params() const { return params_; }
  // Forgets the KV entries at positions >= n (their rows are overwritten on the next decode).
  void truncate(int64_t n);
  // Keeps the longest prefix of the cache that `tokens` starts with, short of the whole of
  // `tokens` (the last one is always decoded: its logits are wanted), and forgets the rest.
  // Returns how many stay; the caller decodes tokens[n..].
  int64_t keep_prefix(std::span<const int32_t> tokens);
  // The context shift (llama.cpp's --context-shift): forgets the n_discard tokens after the
  // first n_keep and moves the rest down, their keys re-rotated to the new positions, so that a
  // generation can go on past a full context. Runs the model's KV-shift graph (one KvShift node
  // per layer, built once). n_past() drops by n_discard. Error unless n_keep >= 0, n_discard >= 1
  // and n_keep + n_discard <= n_past().
  void shift(int64_t n_keep, int64_t n_discard);
  // The cache's tokens and rows saved to a file (llama.cpp's session / slot save, kv_state.h);
  // returns the bytes written.
  size_t save_state(const std::string& path);
  // A saved state loaded in place of the cache's contents (same model and KV type; this context
  // must hold its tokens); returns how many tokens it holds. Error naming the file, with the
  // cache left as it was, when the file does not fit.
  int64_t load_state(const std::string& path, size_t* bytes_read = nullptr);

  const Stats& stats() const { return stats_; }
  void set_observer(NodeObserver obs);

  // The scheduled graph (built, backends assigned, fused) that decode() would run for this
  // batch shape; for --dump-graph. Counts as a build or a reuse like decode().
  const graph::ComputeGraph& graph_for(int64_t n_tokens, int64_t n_out);
  // Its buffers as the allocator placed them (for the JSON export).
  std::string graph_json(int64_t n_tokens, int64_t n_out);
  std::string graph_dot(int64_t n_tokens, int64_t n_out);

  struct Impl;

 private:
  const Model& model_;
  ContextParams params_;
  std::unique_ptr<Impl> impl_;
  int64_t n_past_ = 0;
  std::vector<int32_t> tokens_;
  Stats stats_;
};

}  // namespace minfer::runtime
