// Token sampling with llama.cpp's chain and semantics: logit bias, then the stages in llama.cpp's
// default order (--samplers): penalties (repeat / frequency / presence over the last N tokens) ->
// DRY (sampler_dry.h) ->
// top-n-sigma -> top-k -> typical -> top-p -> min-p -> XTC -> temperature (dynamic with a range)
// -> seeded draw; or, with mirostat 1 or 2, bias -> temperature -> mirostat's own draw (no
// penalties, as llama.cpp). temp <= 0 means greedy (argmax, ties -> lowest id).
// Each stage is a free function over a candidate list so that tests can check it against
// hand-computed distributions; Sampler strings them together and owns the RNG and history.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <vector>

namespace minfer::runtime {

struct LogitBias {
  int32_t id;
  float bias;  // added to the token's logit; -inf bans it
};

struct DryBreakers;  // sampler_dry.h

// A stage of the chain, llama.cpp's common_sampler_type.
enum class SamplerStage : uint8_t { Penalties, Dry, TopNSigma, TopK, TypicalP, TopP, MinP, Xtc, Temperature };
const char* sampler_stage_name(SamplerStage s);  // llama.cpp's: "top_k", "typ_p", ...
// llama.cpp's default order: penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature.
std::vector<SamplerStage> default_sampler_order();
// --samplers: names separated by ';' (llama.cpp's names and aliases: top_k/top-k, top_p/top-p/
// nucleus, typ_p/typical_p/typical, min_p, top_n_sigma, xtc, temperature/temp, penalties, dry).
std::vector<SamplerStage> parse_sampler_names(const std::string& names);
// --sampling-seq: one letter a stage (e d s k y p m x t), as llama.cpp's.
std::vector<SamplerStage> parse_sampler_letters(const std::string& letters);

struct SamplerParams {
  float temp = 0.8f;              // <= 0: greedy
  int32_t top_k = 40;             // <= 0: off
  float top_p = 0.95f;            // >= 1: off
  float min_p = 0.05f;            // <= 0: off
  float repeat_penalty = 1.0f;    // 1: off
  int32_t repeat_last_n = 64;     // 0: off, -1: the whole history
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  float typical_p = 1.0f;         // >= 1: off
  float top_n_sigma = -1.0f;      // <= 0: off
  float xtc_probability = 0.0f;   // <= 0: off
  float xtc_threshold = 0.1f;     // > 0.5: off
  float dynatemp_range = 0.0f;    // > 0: temperature in [temp - range, temp + range] by entropy
  float dynatemp_exponent = 1.0f;
  int mirostat = 0;               // 0: the chain; 1, 2: mirostat (v1 / v2) after the temperature
  float mirostat_tau = 5.0f;      // target surprise
  float mirostat_eta = 0.1f;      // learning rate
  int32_t min_keep = 0;           // top-p, min-p, typical and XTC keep at least this many
  // DRY (sampler_dry.h): off at multiplier 0; the window is the last dry_penalty_last_n accepted
  // tokens (-1: all); the breakers come from the tokenizer (make_dry_breakers), none when null.
  float dry_multiplier = 0.0f;
  float dry_base = 1.75f;
  int32_t dry_allowed_length = 2;
  int32_t dry_penalty_last_n = -1;
  std::shared_ptr<const DryBreakers> dry_breakers;
  std::vector<SamplerStage> order = default_sampler_order();
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
// temp <= 0: only the best candidate is left (greedy), else logits / temp.
void apply_temperature(std::vector<Candidate>& c, float temp);
// llama.cpp's temp_ext: with range > 0, the temperature min(0, t-r)..t+r by the normalized
// entropy of the candidates raised to `exponent`; probabilities recomputed.
void apply_dynamic_temperature(std::vector<Candidate>& c, float temp, float range, float exponent);
// Locally typical sampling: the candidates whose surprise is closest to the entropy, in that
// order, until their mass exceeds p (p >= 1: no-op).
void apply_typical(std::vector<Candidate>& c, float p, size_t min_keep = 1);
// Logits below max - n * (standard deviation of the finite logits) become -inf (n <= 0: no-op).
void apply_top_n_sigma(std::vector<Candidate>& c, float n);
// XTC: when u < probability, the candidates at least `threshold` probable leave, but the least
// probable of them (a no-op when that would leave fewer than min_keep or only one is above it).
void apply_xtc(std::vector<Candidate>& c, float probability, float threshold, size_t min_keep, double u);
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
  float mirostat_mu() const { return mu_; }
  void reset_history() {
    history_.clear();
    dry_history_.clear();
  }
  const SamplerParams& params() const { return p_; }

 private:
  // A uniform double in [0, 1) from 53 bits of the generator: the same on every platform
  // (std::uniform_real_distribution is implementation-defined).
  double uniform();
  int32_t mirostat_draw(int32_t n_vocab);

  SamplerParams p_;
  std::mt19937 rng_;
  std::deque<int32_t> history_;
  std::deque<int32_t> dry_history_;  // DRY's window (only with a multiplier)
  std::vector<Candidate> cand_;
  float mu_ = 0;  // mirostat's running maximum surprise, 2 tau at the start
};

}  // namespace minfer::runtime
