// Speculative decoding with a draft model (llama.cpp's `--model-draft`): a small model of the
// same vocabulary guesses the next tokens; the target model evaluates its last sampled token and
// the guesses in one batch, and generate() samples from those rows in order, keeping each guess
// the target's own sampling agrees with. The text is what the target alone would have sampled
// (same sampler, same draws in the same order); only the number of target passes changes, and a
// pass over a few tokens reads the weights once, as a single token's does.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace minfer::tok {
class Tokenizer;
}

namespace minfer::runtime {

class Context;

// llama.cpp's defaults (--draft-max, --draft-min, --draft-p-min).
struct DraftParams {
  int n_max = 16;      // tokens drafted per step at most
  int n_min = 0;       // a shorter draft is dropped (the step decodes one token)
  float p_min = 0.75f; // drafting stops at a guess less likely than this (among the 40 best)

  void validate() const;  // minfer::Error naming the flag
};

// Why the draft model cannot stand in for the target, "" when it can: llama.cpp's test (same
// tokenizer kind, BOS/EOS and whether they are added, vocabularies at most 128 apart, every token
// text from id 5 on equal).
std::string draft_mismatch(const tok::Tokenizer& target, const tok::Tokenizer& draft);

// The most likely token (ties: the lowest id) and its probability among the 40 most likely, as
// llama.cpp's draft sampler (top-k 40) reports it; 0 when no logit is finite.
std::pair<int32_t, double> draft_choice(std::span<const float> logits);

class Drafter {
 public:
  // `ctx`: a context over the draft model (its KV cache is the drafter's: it keeps what it
  // shares with the next history and evaluates only the rest).
  Drafter(Context& ctx, DraftParams p);

  // Up to n tokens the draft model expects after `history` (the whole text so far, prompt
  // included): its most likely token each time, while that token's probability among the 40
  // most likely is at least p_min. Fewer when the draft context cannot hold them; none when
  // the history holds a token the draft's vocabulary does not.
  std::vector<int32_t> draft(std::span<const int32_t> history, int64_t n) { return draft(history, n, p_); }
  // The same with other settings (a server request's own; Error when they are out of range).
  std::vector<int32_t> draft(std::span<const int32_t> history, int64_t n, const DraftParams& p);

  const DraftParams& params() const { return p_; }

 private:
  Context& ctx_;
  DraftParams p_;
};

}  // namespace minfer::runtime
