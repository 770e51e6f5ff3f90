// Summary statistics of one node's f32 output, as the viz page shows them: range, mean, RMS,
// NaN/Inf counts and a small histogram over the finite values. Computed on the generating
// thread for every executed node, so it is two linear passes and no allocation beyond the bins.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace minfer::server {

struct NodeStats {
  int64_t n = 0;             // values seen (finite or not)
  float min = 0, max = 0;    // over the finite values (0 when there are none)
  double mean = 0, rms = 0;  // over the finite values
  int64_t nan = 0, inf = 0;
  // bins equal-width buckets over [min, max]; the max value falls in the last bucket.
  // Empty when there are no finite values.
  std::vector<int64_t> hist;
};

constexpr int kDefaultHistBins = 16;

NodeStats compute_node_stats(const float* x, size_t n, int bins = kDefaultHistBins);

// One "node" event payload: {"run","step","id","ms","n","min","max","mean","rms","nan","inf","hist"}.
// Nodes without f32 output (KV stores, I32) have n = 0 and no min/max/mean/rms/hist keys.
// Numbers are finite JSON (no NaN literals): the stats are over finite values only.
std::string node_event_json(uint64_t run, uint64_t step, int32_t id, double ms, const NodeStats* stats);

}  // namespace minfer::server
