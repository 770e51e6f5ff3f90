// Runs the mini transformer through the whole scheduler path (prepare + executor) with
// reference backends, as the runtime will with the real CPU backend.
#pragma once
#include <numeric>
#include <vector>

#include "graph/mini_transformer.h"
#include "sched/executor.h"
#include "sched/ref_backend.h"
#include "sched/schedule.h"

namespace minfer::test {

inline graph::GraphParams mini_params(int64_t nt, int64_t n_out, int64_t n_ctx = 16) {
  graph::GraphParams p;
  p.n_tokens = nt;
  p.n_out = n_out;
  p.gtype = nt == 1 ? graph::GraphType::Decode : graph::GraphType::Prefill;
  p.cparams.n_ctx = n_ctx;
  return p;
}

struct MiniRun {
  std::vector<sched::Backend*> backends;
  sched::GraphAllocator alloc;
  sched::KvStore kv;
  sched::Schedule schedule;
  sched::NodeObserver observer;

  // Builds, prepares and runs `tokens` at positions n_past.. and returns the n_out logits rows.
  std::vector<float> run(const MiniConfig& c, const MapWeights& w, const std::vector<int32_t>& tokens,
                         int32_t n_past, int64_t n_out, MiniGraph* keep = nullptr) {
    const int64_t nt = int64_t(tokens.size());
    MiniGraph m = build_mini(c, mini_params(nt, n_out, c.n_ctx));
    schedule = sched::prepare(m.g, backends, alloc, kv);
    std::copy(tokens.begin(), tokens.end(), alloc.input_i32(m.token_ids).begin());
    auto pos = alloc.input_i32(m.positions);
    std::iota(pos.begin(), pos.end(), n_past);
    if (m.tail_ids >= 0) {
      auto tail = alloc.input_i32(m.tail_ids);
      std::iota(tail.begin(), tail.end(), int32_t(nt - n_out));
    }
    sched::Executor ex(backends);
    if (observer) ex.set_observer(observer);
    ex.run(m.g, schedule.splits, alloc, w, kv);
    auto logits = alloc.tensor_f32(m.logits);
    std::vector<float> out(logits.begin(), logits.end());
    if (keep) *keep = std::move(m);
    return out;
  }
};

inline void expect_close(const std::vector<float>& a, const std::vector<float>& b, float tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << "at " << i;
}

}  // namespace minfer::test
