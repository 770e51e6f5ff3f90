// MINFER_TRACE and MINFER_GRAPH_DUMP: per-node records of a live run, for comparing an
// execution offline (against llama.cpp's GGML_SCHED debug output, or between two builds).
//   MINFER_TRACE=FILE      one JSON line per executed node and step: step, id, name, op,
//                          shape, backend, ms and min/max/mean/rms/nan/inf of its f32 output
//   MINFER_GRAPH_DUMP=DIR  the raw f32 output of every node per step:
//                          DIR/step0003/0042-matmul_blk.0.attn_q.weight.f32, listed in
//                          DIR/index.jsonl (step, id, name, op, shape, file)
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "sched/executor.h"

namespace minfer::runtime {

struct OutputStats {
  float min = 0, max = 0;
  double mean = 0, rms = 0;
  int64_t nan = 0, inf = 0;
};
OutputStats output_stats(const float* x, size_t n);

class NodeTrace {
 public:
  // nullptr when neither variable is set. Error when the file or folder cannot be created.
  static std::unique_ptr<NodeTrace> from_env();
  NodeTrace(std::string trace_file, std::string dump_dir);
  ~NodeTrace();

  // Starts a step; the trace gets a line saying which graph runs and whether it was reused:
  // {"step", "event": "graph", "uid", "reused", "built_total", "reused_total", "params"}.
  void begin_step(uint64_t step, uint64_t uid, bool reused, uint64_t built_total,
                  uint64_t reused_total, const std::string& params);
  void record(const sched::NodeEvent& e);

 private:
  std::FILE* trace_ = nullptr;
  std::FILE* index_ = nullptr;
  std::string dump_dir_;
  uint64_t step_ = 0;
};

}  // namespace minfer::runtime
