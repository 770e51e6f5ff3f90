#include "runtime/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace minfer::runtime {

std::vector<double> log_softmax(std::span<const float> logits) {
  std::vector<double> out(logits.size());
  if (logits.empty()) return out;
  double mx = -std::numeric_limits<double>::infinity();
  for (float x : logits) mx = std::max(mx, double(x));
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x) - mx);
  const double log_z = mx + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = double(logits[i]) - log_z;
  return out;
}

std::vector<TokenLogprob> top_logprobs(std::span<const double> logprobs, size_t k) {
  std::vector<int32_t> ids(logprobs.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
  k = std::min(k, ids.size());
  auto better = [&](int32_t a, int32_t b) {
    return logprobs[size_t(a)] > logprobs[size_t(b)] ||
           (logprobs[size_t(a)] == logprobs[size_t(b)] && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + ptrdiff_t(k), ids.end(), better);
  std::vector<TokenLogprob> out(k);
  for (size_t i = 0; i < k; ++i) out[i] = {ids[i], logprobs[size_t(ids[i])]};
  return out;
}

}  // namespace minfer::runtime
