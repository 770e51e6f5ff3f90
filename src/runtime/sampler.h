// Token sampling with llama.cpp's default chain and semantics:
//   logit bias -> penalties (repeat / frequency / presence over the last N tokens) -> top-k ->
//   top-p -> min-p -> temperature -> seeded draw.   temp <= 0 means greedy (argmax, ties ->
//   lowest id).
// Each stage is a free function over a candidate list so that tests can check it against
// hand-computed distributions; Sampler strings them together and owns the RNG and history.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <span>
#include <vector>

namespace minfer::runtime {

struct LogitBias {
  int32_t id;
  float bias;  // added to the token's logit; -inf bans it
};

struct SamplerParams {
  float temp = 0.8f;              // <= 0: greedy
  int32_t top_k = 40;             // <= 0: off
  float top_p = 0.95f;            // >= 1: off
  float min_p = 0.05f;            // <= 0: off
  float repeat_penalty = 1.0f;    // 1: off
  int32_t repeat_last_n = 64;     // 0: off, -1: the whole history
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  uint64_t seed = 0;              // used as given; random_seed() picks one
  std::vector<LogitBias> logit_bias;

  // minfer::Error naming the first out-of-range value (negative temperature, top_p > 1, ...).
  void validate() const;
};

uint64_t random_seed();

struct Candidate {
  int32_t id;
  float logit;
  float p;  // valid after softmax()
};

// Every token of the vocabulary, in id order, p = 0.
std::vector<Candidate> make_candidates(std::span<const float> logits);

// Adds each bias to its token's logit. Candidates must be in id order; Error for an id outside
// them (the vocabulary).
void apply_logit_bias(std::vector<Candidate>& c, std::span<const LogitBias> bias);
// llama.cpp semantics: for each distinct token in `recent` with count c, a positive logit is
// divided by `repeat`, a non-positive one multiplied, then c*freq + (c > 0)*presence is
// subtracted. Candidates must still be in id order (ids index the vocabulary).
void apply_penalties(std::vector<Candidate>& c, std::span<const int32_t> recent, float repeat,
                     float freq, float presence);
// Sorts by logit descending (ties: lower id first) and keeps the first k (k <= 0: no-op).
void apply_top_k(std::vector<Candidate>& c, int32_t k);
// Keeps the smallest most-probable prefix whose probability mass reaches p (p >= 1: no-op).
void apply_top_p(std::vector<Candidate>& c, float p, size_t min_keep = 1);
// Keeps the tokens whose probability is at least p times the top one (p <= 0: no-op).
void apply_min_p(std::vector<Candidate>& c, float p, size_t min_keep = 1);
void apply_temperature(std::vector<Candidate>& c, float temp);
// Sorts (as top-k does) and keeps, in that order, the candidates `allowed` accepts and whose
// logit is finite, at most k of them (k <= 0: all): top-k of what a grammar allows, checking no
// more tokens than it takes.
void apply_allowed(std::vector<Candidate>& c, const std::function<bool(int32_t)>& allowed, int32_t k);
// Sorts (as top-k does) and fills p with the softmax of the logits (max-subtracted, double sum).
void softmax(std::vector<Candidate>& c);
// Highest logit, ties -> lowest id. Error on an empty list.
int32_t argmax(std::span<const float> logits);
// Draws from c (after softmax) with u in [0, 1): the first candidate whose cumulative p > u.
int32_t draw(const std::vector<Candidate>& c, double u);

class Sampler {
 public:
  explicit Sampler(SamplerParams p);

  // Samples the next token from one row of logits (n_vocab entries). Does not accept it.
  // With `allowed` (a grammar's test), only tokens it accepts are candidates, as llama.cpp
  // applies its grammar sampler before the chain: -1 when it accepts none.
  int32_t sample(std::span<const float> logits, const std::function<bool(int32_t)>& allowed = {});
  // Adds a token (prompt or generated) to the penalty history.
  void accept(int32_t token);
  void reset_history() { history_.clear(); }
  const SamplerParams& params() const { return p_; }

 private:
  // A uniform double in [0, 1) from 53 bits of the generator: the same on every platform
  // (std::uniform_real_distribution is implementation-defined).
  double uniform();

  SamplerParams p_;
  std::mt19937 rng_;
  std::deque<int32_t> history_;
  std::vector<Candidate> cand_;
};

}  // namespace minfer::runtime
