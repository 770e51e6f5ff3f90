// Log-probabilities from logits as the golden files compute them: a log-softmax over the whole
// vocabulary whose normalizer is summed in double (a float running sum over 151936 entries
// drifts by up to ~5e-4), and the k most probable ids (ties -> lower id).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace minfer::runtime {

std::vector<double> log_softmax(std::span<const float> logits);

struct TokenLogprob {
  int32_t id = 0;
  double logprob = 0;
};
std::vector<TokenLogprob> top_logprobs(std::span<const double> logprobs, size_t k);

}  // namespace minfer::runtime
