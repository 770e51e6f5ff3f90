#include "server/metrics.h"

#include <fmt/format.h>

namespace minfer::server {

void ServerMetrics::record(int64_t n_prompt, double prompt_ms, int64_t n_predicted, double predicted_ms,
                           uint64_t n_decode_total, int64_t kv_tokens) {
  std::lock_guard lk(mu_);
  n_prompt_total_ += n_prompt;
  prompt_ms_total_ += prompt_ms;
  n_predicted_total_ += n_predicted;
  predicted_ms_total_ += predicted_ms;
  n_prompt_bucket_ += n_prompt;
  prompt_ms_bucket_ += prompt_ms;
  n_predicted_bucket_ += n_predicted;
  predicted_ms_bucket_ += predicted_ms;
  n_decode_total_ = n_decode_total;
  kv_tokens_ = kv_tokens;
}

std::string ServerMetrics::scrape(int64_t n_ctx) {
  std::lock_guard lk(mu_);
  std::string out;
  auto emit = [&out](const char* name, const char* help, const char* type, auto value) {
    out += fmt::format("# HELP llamacpp:{0} {1}\n# TYPE llamacpp:{0} {2}\nllamacpp:{0} {3}\n", name, help, type, value);
  };
  auto rate = [](int64_t n, double ms) { return ms > 0 ? 1e3 * double(n) / ms : 0.0; };
  emit("prompt_tokens_total", "Number of prompt tokens processed.", "counter", n_prompt_total_);
  emit("prompt_seconds_total", "Prompt process time", "counter", prompt_ms_total_ / 1e3);
  emit("tokens_predicted_total", "Number of generation tokens processed.", "counter", n_predicted_total_);
  emit("tokens_predicted_seconds_total", "Predict process time", "counter", predicted_ms_total_ / 1e3);
  emit("n_decode_total", "Total number of llama_decode() calls", "counter", n_decode_total_);
  // One slot: every decode call carries the one busy slot.
  emit("n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", "counter",
       n_decode_total_ > 0 ? 1 : 0);
  emit("prompt_tokens_seconds", "Average prompt throughput in tokens/s.", "gauge", rate(n_prompt_bucket_, prompt_ms_bucket_));
  emit("predicted_tokens_seconds", "Average generation throughput in tokens/s.", "gauge",
       rate(n_predicted_bucket_, predicted_ms_bucket_));
  emit("kv_cache_usage_ratio", "KV-cache usage. 1 means 100 percent usage.", "gauge",
       n_ctx > 0 ? double(kv_tokens_) / double(n_ctx) : 0.0);
  emit("kv_cache_tokens", "KV-cache tokens.", "gauge", kv_tokens_);
  emit("requests_processing", "Number of requests processing.", "gauge", processing.load());
  emit("requests_deferred", "Number of requests deferred.", "gauge", deferred.load());
  n_prompt_bucket_ = n_predicted_bucket_ = 0;
  prompt_ms_bucket_ = predicted_ms_bucket_ = 0;
  return out;
}

ModelTurn::ModelTurn(std::mutex& mu, ServerMetrics& m) : m_(m) {
  ++m_.deferred;
  lk_ = std::unique_lock(mu);
  --m_.deferred;
  ++m_.processing;
}

ModelTurn::~ModelTurn() { --m_.processing; }

}  // namespace minfer::server
