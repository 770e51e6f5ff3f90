// The generation loop shared by `run`, `chat` and the server: prefill the prompt (in batches,
// appended at the context's current position), then sample, detokenize UTF-8-safely, match
// stop strings on the byte stream and stream text out, until a stop condition.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/speculative.h"

namespace minfer::tok {
class Tokenizer;
}

namespace minfer::runtime {

class Context;
class Sampler;
class TokenGrammar;

enum class StopReason { Eog, StopString, Length, ContextFull, Interrupted };
const char* stop_reason_name(StopReason r);

struct GenerateOptions {
  int64_t n_predict = -1;              // -1: until end of generation or a full context
  std::vector<std::string> stop;       // stop strings (never printed)
  bool ignore_eog = false;             // keep going past end-of-generation tokens
  bool render_special = false;         // print control tokens' text (llama-cli --special)
  std::vector<int32_t> keep_special;   // control tokens printed all the same (a tool call's markers)
  // llama_detokenize drops the first token's leading space for SPM vocabularies that add a
  // space prefix: "The sun" continues as "was shining", as llama.cpp's reference text has it.
  bool strip_leading_space = false;
  int64_t n_batch = 512;               // prompt tokens per decode call
  std::function<void(double)> prefill_progress;  // 0..1 over the prompt
  const std::atomic<bool>* interrupt = nullptr;  // set (e.g. by SIGINT) to stop early
  // Each sampled token with the logits row it was drawn from (for log-probabilities).
  std::function<void(int32_t, std::span<const float>)> on_sample;
  // The grammar the text must follow (llama.cpp's order: the chain samples; a token the grammar
  // does not allow is sampled again with the grammar applied first). It advances with each
  // token; once it is complete and nothing can extend it, end-of-generation ends the text even
  // with ignore_eog.
  TokenGrammar* grammar = nullptr;
  // Speculative decoding (speculative.h): each step decodes the sampled token with the draft
  // model's guesses after it, and the rows are sampled in order while the guesses hold. The text
  // is the same as without it.
  Drafter* drafter = nullptr;
  std::optional<DraftParams> draft_params;  // the drafter's own when absent
  // llama.cpp's --context-shift: when the next decode would not fit the context, the tokens
  // after the first n_keep of the cache are halved (n_discard of them when > 0, or more when a
  // prompt batch needs more room) by Context::shift and the text goes on. Off: a full context
  // ends the text (StopReason::ContextFull) and a prompt that does not fit is an error.
  bool context_shift = false;
  int64_t n_keep = 0;
  int64_t n_discard = 0;
};

struct GenerateResult {
  std::string text;                 // everything passed to on_text
  std::vector<int32_t> tokens;      // every sampled token, the final one (EOG, ...) included
  int64_t n_tokens_in_kv = 0;       // how many of `tokens` were decoded into the context
  StopReason reason = StopReason::Length;
  std::string stop_string;          // the one that matched, when reason is StopString
  int64_t n_prompt = 0;
  double t_prompt_ms = 0;           // prefill
  double t_gen_ms = 0;              // sampling + decoding of generated tokens
  int64_t n_gen_evals = 0;          // decode calls for generated tokens
  bool speculative = false;         // a drafter was given
  int64_t n_drafted = 0;            // draft tokens evaluated by the target (with a drafter)
  int64_t n_draft_accepted = 0;     // of them, the ones sampling agreed with
  int64_t n_context_shifts = 0;     // Context::shift calls (with context_shift)
  int64_t n_discarded = 0;          // tokens they dropped from the cache
};

// Prefills `prompt` (must not be empty: its last logits seed the first sample), then generates.
// Error "prompt is N tokens, ..." when it does not fit the context with room for one more (with
// context_shift: when it does not fit behind the n_keep tokens kept).
GenerateResult generate(Context& ctx, const tok::Tokenizer& tok, Sampler& sampler,
                        std::span<const int32_t> prompt, const GenerateOptions& opts,
                        const std::function<void(std::string_view)>& on_text);

}  // namespace minfer::runtime
