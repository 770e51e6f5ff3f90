// The CPU Backend: maps every graph op to the kernels of backend/cpu/kernels.h. It holds no
// weights itself (they stay in the GGUF mapping, reached through TensorMap::weight) and has
// every fused kernel: the decode fusions are compositions of the same kernels, so a fused
// graph computes exactly what the unfused one does.
#pragma once
#include <string>
#include <vector>

#include "sched/backend.h"

namespace minfer::runtime {

class CpuBackend final : public sched::Backend {
 public:
  const std::string& name() const override { return name_; }
  bool supports(const graph::CNode& node) const override;
  bool has_fused(sched::FusedKind kind) const override { return true; }
  bool holds_weight(const std::string& name) const override { return true; }
  void compute(const graph::CNode& node, sched::TensorMap& tensors) override;
  void begin_run() override { prev_matmul_src_ = -1; }

 private:
  std::string name_ = "CPU";
  // The source of the node computed last when that node was a MatMul, else -1. A MatMul of the
  // same source right after it (a prompt's q, k and v; its gate and up) reads activations that
  // no node has written since, so it reuses their quantization (cpu::matmul's same_x).
  graph::NodeId prev_matmul_src_ = -1;
  std::vector<float> scratch_k_, scratch_v_;  // the fused QKV classes' K and V
};

}  // namespace minfer::runtime
