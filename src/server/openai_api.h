// The OpenAI API's wire format, as `minfer serve` speaks it: request bodies of
// POST /v1/chat/completions and /v1/completions checked field by field into a
// CompletionRequest, and the response objects (whole, and the chunks of a stream) built from
// a generation's result. Pure data: no HTTP, no model.
//
// Request fields taken (OpenAI's names, plus llama-server's extensions in brackets):
//   chat:        messages (role + content: a string, null, or text parts), max_tokens,
//                max_completion_tokens [chat_template_kwargs, e.g. {"enable_thinking": false}]
//   completions: prompt (a string, a one-string array, or an array of token ids), max_tokens
//   both:        temperature, top_p, frequency_penalty, presence_penalty, seed, stop, stream,
//                stream_options.include_usage, n (only 1) [top_k, min_p, repeat_penalty,
//                repeat_last_n, n_predict, ignore_eos, n_probs], logit_bias ({"id": bias} or
//                llama-server's [[id, bias]], false for -inf)
//   log-probabilities: chat logprobs: true + top_logprobs (default 20, as llama-server);
//                completions logprobs: N (or n_probs); returned in llama-server's shape
//   grammars:    [grammar] (GBNF), [json_schema], response_format {"type": "json_object"}
//                (with or without a "schema") or {"type": "json_schema", "json_schema":
//                {"schema": ...}}: a schema becomes llama.cpp's grammar for it
//   reasoning:   [reasoning_format] "none" (thoughts stay in content), "deepseek" or "auto"
//                (a <think> block becomes message.reasoning_content)
//   tools:       tools (OpenAI's [{"type": "function", "function": {"name", "description",
//                "parameters"}}]), tool_choice ("auto", "none", "required" or {"type":
//                "function", "function": {"name"}}), parallel_tool_calls; assistant messages
//                with tool_calls and "tool" messages; replies carry message.tool_calls
//   llama-server's own endpoints, same fields as completions: /completion ([return_tokens]) and
//   /infill ([input_prefix], [input_suffix], [input_extra], prompt optional); their responses
//   are llama-server's (content, stop, stop_type, tokens_predicted, ...), not OpenAI's
// Fields asking for what minfer does not do (n > 1, functions, echo,
// suffix, best_of > 1, non-text content parts) are refused with a message naming them;
// other fields (model, user, metadata, ...) are ignored, as llama-server does.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_calls.h"
#include "grammar/gbnf.h"
#include "runtime/generate.h"
#include "server/infill.h"
#include "runtime/sampler.h"
#include "runtime/speculative.h"

namespace minfer::server {

// Chat and Completion: OpenAI's /v1/chat/completions and /v1/completions. Native and Infill:
// llama-server's /completion and /infill.
enum class ApiKind { Chat, Completion, Native, Infill };

struct CompletionRequest {
  ApiKind kind = ApiKind::Chat;
  nlohmann::ordered_json messages;     // chat: each message's content made a string
  nlohmann::ordered_json template_kwargs;  // chat: extra template variables, or null
  // chat: the tools the model may call (checked), or null; with tool_choice "required" or a
  // named function the reply must be calls (tools then holds just that function).
  nlohmann::ordered_json tools;
  enum class ToolChoice { Auto, None, Required } tool_choice = ToolChoice::Auto;
  bool parallel_tool_calls = false;  // llama-server's default: one call per reply
  std::optional<bool> extract_reasoning;  // reasoning_format; absent: the server's
  // Set by the server from the rendered prompt: it ends inside an open think block.
  bool thinking_open = false;
  bool calls_tools() const { return !tools.is_null() && tool_choice != ToolChoice::None; }
  std::string prompt;                  // completion, as text
  std::vector<int32_t> prompt_tokens;  // completion, as token ids (then prompt is empty)
  std::optional<InfillInput> infill;   // infill: the code around the cursor
  bool return_tokens = false;          // native: the generated token ids in the response
  bool cache_prompt = true;            // llama-server's: false evaluates the whole prompt again
  std::optional<int64_t> max_tokens;   // -1: until end of generation or a full context
  std::optional<float> temperature, top_p, min_p, repeat_penalty, frequency_penalty,
      presence_penalty;
  // llama-server's other samplers: typical_p, top_n_sigma, xtc_*, dynatemp_*, mirostat*, min_keep,
  // samplers (names, or a string of letters), dry_multiplier (0 only).
  std::optional<float> typical_p, top_n_sigma, xtc_probability, xtc_threshold, dynatemp_range,
      dynatemp_exponent, mirostat_tau, mirostat_eta, dry_multiplier, dry_base;
  std::optional<int32_t> mirostat, min_keep, dry_allowed_length, dry_penalty_last_n;
  std::optional<std::vector<std::string>> dry_sequence_breakers;  // the server makes them tokens
  std::optional<std::vector<runtime::SamplerStage>> samplers;
  std::optional<int32_t> top_k, repeat_last_n;
  std::optional<uint64_t> seed;  // absent (or -1 in the request): a random seed
  // llama-server's "speculative.n_max", "speculative.n_min", "speculative.p_min": the draft
  // model's settings for this request (absent: the server's -md flags).
  std::optional<int32_t> spec_n_max, spec_n_min;
  std::optional<float> spec_p_min;
  // llama-server's "n_keep" (prompt tokens a context shift keeps, -1: all; absent: the server's
  // --keep) and "n_discard" (tokens a shift drops; 0: half of those after n_keep).
  std::optional<int64_t> n_keep;
  int64_t n_discard = 0;
  std::vector<std::string> stop;
  std::vector<runtime::LogitBias> logit_bias;
  bool ignore_eos = false;
  bool logprobs = false;  // each generated token's log-probability
  int32_t top_logprobs = 0;  // and the most probable this many at its position
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage
  // The grammar the reply must follow (llama-server's "grammar", or the grammar of a JSON
  // schema: "json_schema", response_format json_object or json_schema), parsed; none when null.
  std::shared_ptr<const grammar::Grammar> grammar;
  std::vector<std::string> grammar_warnings;  // the schema's constraints it does not hold
  // Set by the server for tool_choice auto: the grammar holds from one of these texts on.
  std::vector<std::string> grammar_triggers;
};

// A request body that must be a JSON object: Error when it is not JSON, or not an object.
nlohmann::ordered_json parse_json_object(std::string_view body);

// minfer::Error naming the field: not JSON, not an object, a missing or ill-typed field, a
// value out of range, a feature minfer does not have.
CompletionRequest parse_completion_request(std::string_view body, ApiKind kind);

// The request's sampling fields over the server's defaults. A request without a seed (or with
// -1) gets `random_seed` when the server has no fixed one. Error when the result is out of range.
runtime::SamplerParams sampler_params(const CompletionRequest& r, runtime::SamplerParams defaults,
                                      uint64_t random_seed);
// The request's speculative.* fields over the server's draft settings; n_min clamped to n_max as
// llama-server does. Error when p_min is outside [0, 1].
runtime::DraftParams draft_params(const CompletionRequest& r, runtime::DraftParams defaults);

// A token's log-probability (from the softmax of the raw logits, as llama-server's default).
struct LogprobEntry {
  int32_t id = 0;
  std::string bytes;  // the token's piece as the tokenizer gives it (may end inside a character)
  std::string text;   // its complete UTF-8 characters
  double logprob = 0;
};
struct SampledLogprobs {
  LogprobEntry sampled;
  std::vector<LogprobEntry> top;  // most probable first
};

// {"content": [{"id", "token", "bytes", "logprob", "top_logprobs": [{"id", "token", "bytes",
// "logprob"}]}]}: OpenAI's chat shape with llama-server's ids, for both endpoints as llama-server.
nlohmann::ordered_json logprobs_json(std::span<const SampledLogprobs> tokens);

// What one generation produced, for the response objects.
struct CompletionResult {
  std::string text;            // chat: the reply's text that is no reasoning and no call
  std::string reasoning;       // chat: the think block's text, when taken out of the reply
  std::vector<chat::ToolCall> tool_calls;  // ids set
  std::string finish_reason;  // "stop", "length" or "tool_calls"
  runtime::StopReason stop_reason = runtime::StopReason::Length;  // (llama-server's stop_type)
  std::string stopping_word;  // the stop string that ended the text
  std::vector<int32_t> tokens;  // the generated ids (an ending end-of-generation token aside)
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // of prompt_tokens, reused from the previous request's cache
  int64_t completion_tokens = 0;
  int64_t prompt_evaluated = 0;  // prompt tokens run through the model (the rest was cached)
  double prompt_ms = 0, predicted_ms = 0;
  int64_t draft_n = 0, draft_n_accepted = 0;  // speculative decoding's guesses, and those kept
  int64_t context_shifts = 0;  // --context-shift: times the full context dropped old tokens
  bool has_logprobs = false;  // asked for: then one entry per generated token (an ending EOG aside)
  std::vector<SampledLogprobs> logprobs;
};

// llama-server's "timings" object: prompt and generation counts, times and rates.
nlohmann::ordered_json timings_json(const CompletionResult& r);

// The fields every object of one response shares.
struct ResponseHead {
  std::string id;  // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

nlohmann::ordered_json completion_response(ApiKind kind, const ResponseHead& h,
                                           const CompletionResult& r);
// One streamed chunk: the first chat chunk carries the role, later ones text; the last one
// (finish_reason set, text empty) closes the choice. `logprobs`: the entries of the tokens
// sampled since the previous chunk (none: not asked, "logprobs": null).
// `reasoning`: chat's reasoning_content that came with the text.
nlohmann::ordered_json completion_chunk(ApiKind kind, const ResponseHead& h, std::string_view text,
                                        bool first, const std::string* finish_reason,
                                        std::optional<std::span<const SampledLogprobs>> logprobs = {},
                                        std::string_view reasoning = {});
// A chat chunk whose delta holds the reply's tool calls, whole (index, id, type, function
// {name, arguments}).
nlohmann::ordered_json tool_calls_chunk(const ResponseHead& h, std::span<const chat::ToolCall> calls);
// stream_options.include_usage's final chunk: no choices, the usage.
nlohmann::ordered_json usage_chunk(ApiKind kind, const ResponseHead& h, const CompletionResult& r);

// llama-server's own response to /completion and /infill: content, stop, stop_type,
// stopping_word, tokens_predicted, tokens_evaluated, tokens_cached, truncated, timings, prompt,
// generation_settings, completion_probabilities (n_probs), tokens (return_tokens).
struct NativeExtras {
  std::string prompt;  // the prompt as text
  nlohmann::ordered_json generation_settings;
  bool return_tokens = false;
};
nlohmann::ordered_json native_response(const ResponseHead& h, const CompletionResult& r, const NativeExtras& x);
// A streamed piece: {"index", "content", "tokens", "stop": false} (+ completion_probabilities).
nlohmann::ordered_json native_chunk(std::string_view text, std::span<const int32_t> tokens,
                                    std::optional<std::span<const SampledLogprobs>> probs);

// POST /v1/embeddings: "input" as a string, strings, token ids, or lists of token ids;
// "encoding_format" "float" (default) or "base64" (the float32 bytes, as OpenAI's SDKs ask).
struct EmbeddingsRequest {
  struct Input {
    std::string text;             // when !is_tokens
    std::vector<int32_t> tokens;  // when is_tokens
    bool is_tokens = false;
  };
  std::vector<Input> inputs;
  bool base64 = false;
  int embd_normalize = 2;  // llama-server's field: -1 none, 0 int16 range, 1 taxicab, 2 Euclidean, p
};
// OpenAI's request ("input"); `native`: llama-server's /embeddings, which also takes "content".
EmbeddingsRequest parse_embeddings_request(std::string_view body, bool native = false);
// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}.
nlohmann::ordered_json embeddings_response(const std::string& model, const std::vector<std::vector<float>>& vectors,
                                           int64_t prompt_tokens, bool base64);
// llama-server's /embeddings: [{"index", "embedding": [vector, ...]}], a vector per token for
// pooling none, else the input's one.
nlohmann::ordered_json native_embeddings_response(const std::vector<std::vector<std::vector<float>>>& per_input);

// {"error": {"code": status, "message": ..., "type": ...}}, llama-server's shape of OpenAI's.
nlohmann::ordered_json error_body(int status, std::string_view message);

// "data: <json>\n\n": one server-sent event of an OpenAI stream (invalid UTF-8 becomes U+FFFD).
std::string sse_data(const nlohmann::ordered_json& j);

}  // namespace minfer::server
