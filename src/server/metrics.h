// llama-server's GET /metrics (its --metrics flag): Prometheus text of what the server has done.
// Totals count since the start; the two throughput gauges cover the time since the previous
// scrape, as llama-server resets its "bucket" on each read.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace minfer::server {

class ServerMetrics {
 public:
  // One finished request: its evaluated prompt tokens and generated tokens with their times,
  // the context's decode calls so far and what its cache now holds.
  void record(int64_t n_prompt, double prompt_ms, int64_t n_predicted, double predicted_ms,
              uint64_t n_decode_total, int64_t kv_tokens);
  // The exposition text (llamacpp:* names, HELP and TYPE lines); resets the throughput bucket.
  std::string scrape(int64_t n_ctx);

  std::atomic<int> processing{0};  // requests on the model now (0 or 1: one slot)
  std::atomic<int> deferred{0};    // requests waiting for it

 private:
  std::mutex mu_;
  int64_t n_prompt_total_ = 0, n_predicted_total_ = 0;
  double prompt_ms_total_ = 0, predicted_ms_total_ = 0;
  int64_t n_prompt_bucket_ = 0, n_predicted_bucket_ = 0;
  double prompt_ms_bucket_ = 0, predicted_ms_bucket_ = 0;
  uint64_t n_decode_total_ = 0;
  int64_t kv_tokens_ = 0;
};

// Holds the model's lock for one request: counted as deferred while it waits for it, as
// processing while it holds it.
class ModelTurn {
 public:
  ModelTurn(std::mutex& mu, ServerMetrics& m);
  ~ModelTurn();
  ModelTurn(const ModelTurn&) = delete;
  ModelTurn& operator=(const ModelTurn&) = delete;

 private:
  ServerMetrics& m_;
  std::unique_lock<std::mutex> lk_;
};

}  // namespace minfer::server
