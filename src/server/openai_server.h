// `minfer serve`: an OpenAI-compatible HTTP server over one loaded model, as llama-server is.
//   GET  /health, /v1/health          {"status": "ok"}
//   GET  /v1/models, /models          the one model, OpenAI's list shape
//   GET  /props                       llama-server's: default settings, chat template, tokens
//   POST /v1/embeddings               with --embeddings (OpenAI's shape; float or base64)
//   POST /v1/chat/completions         messages rendered with the chat template; stream: SSE
//   POST /v1/completions              a raw prompt (text or token ids); stream: SSE
//   POST /completion, /infill         llama-server's own completion and code infilling
//   POST /tokenize, /detokenize       llama-server's: {"content", "add_special", "with_pieces"} <-> {"tokens"}
//   POST /apply-template              llama-server's: a chat request's prompt, rendered
// Errors are OpenAI's {"error": {"code", "message", "type"}}: 400 for a bad request (naming
// the field, or the prompt that does not fit the context), 401 without the --api-key, 403 for a
// foreign Host on a loopback server, 404, 413 above the body limit, 500 for the rest.
//
// One context serves every request, one request at a time (llama-server with one slot). It
// keeps what the last request left in the KV cache: a request that starts with the same tokens
// (the next turn of a chat, the same system prompt) prefills only what differs
// (usage.prompt_tokens_details.cached_tokens says how much was reused). A streaming client
// that goes away stops its generation at the next token.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_calls.h"
#include "runtime/context.h"
#include "runtime/embed.h"
#include "runtime/sampler.h"
#include "runtime/sampler_dry.h"
#include "server/metrics.h"
#include "server/openai_api.h"

namespace httplib {
class Server;
}
namespace minfer::runtime {
class Drafter;
class Model;
}

namespace minfer::server {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 = any free port
  std::string model_name;             // "model" in responses and /v1/models
  std::string model_path;             // /props' model_path
  std::string api_key;                // empty: none asked
  // Which web pages may read the responses (cors_allow_origin): pages served from this machine,
  // not llama-server's "*", since with "*" any site a browser visits could drive the server
  // (the Host check keeps out DNS rebinding for the same reason).
  std::string cors_origins = "localhost";
  std::optional<std::string> chat_template;  // nullopt: the chat endpoint answers 400
  runtime::ContextParams ctx;
  runtime::SamplerParams sampling;    // what a request's missing fields take
  std::optional<uint64_t> seed;       // for requests without one; nullopt: random per request
  int64_t n_predict = -1;             // max_tokens when a request gives none (-1: no limit)
  int64_t n_batch = 512;              // prompt tokens per decode call (-b / -ub)
  bool context_shift = false;         // --context-shift: a full context drops old tokens, the reply goes on
  int64_t n_keep = 0;                 // --keep: the default of a request's n_keep
  std::vector<std::string> stop;      // stop strings added to every request's
  bool ignore_eos = false;            // for every request (a request can also ask for it)
  std::string system;                 // a system message for chats that bring none
  nlohmann::ordered_json template_kwargs;  // --chat-template-kwargs: under each request's own
  // DRY's sequence breakers for requests that bring none (--dry-sequence-breaker; llama.cpp's).
  std::vector<std::string> dry_sequence_breakers = runtime::default_dry_breakers();
  std::shared_ptr<const grammar::Grammar> grammar;  // for requests that bring no grammar or JSON format
  // --reasoning-format: a chat reply's <think> block as message.reasoning_content (llama-server's
  // default "auto"), or left in the content ("none"); a request's reasoning_format overrides it.
  bool extract_reasoning = true;
  // --embeddings: the context computes embeddings (POST /v1/embeddings) instead of logits, and
  // the generating endpoints answer 501, as llama-server. --pooling overrides the model's
  // {arch}.pooling_type.
  bool embeddings = false;
  std::optional<runtime::Pooling> pooling;
  bool metrics = false;  // --metrics: GET /metrics answers (llama-server's Prometheus text), else 501
  bool slots = true;     // GET /slots answers (llama-server's default; --no-slots: 501)
  // --slot-save-path: the folder of POST /slots/0?action=save|restore files ("": those answer 501).
  std::string slot_save_path;
  // Speculative decoding for the generating endpoints (-md): the draft model's drafter, over a
  // context of its own; the caller keeps it alive as long as the server.
  runtime::Drafter* drafter = nullptr;
  size_t max_body = 8u << 20;
  std::function<void(const std::string&)> log;  // one line per request (stderr in the CLI)
};

class OpenAiServer {
 public:
  OpenAiServer(const runtime::Model& model, ServeOptions opts);
  ~OpenAiServer();
  OpenAiServer(const OpenAiServer&) = delete;
  OpenAiServer& operator=(const OpenAiServer&) = delete;

  int bind();     // returns the port; Error when the address cannot be bound
  void listen();  // serves until stop()
  void stop();    // also stops a generation in progress
  std::string url() const;

  // A request's prompt as tokens: chat messages through the template, text through the
  // tokenizer (BOS as the model asks). Error (400) when it is empty, when it or the logit bias
  // names a token outside the vocabulary, when it leaves no room in the context for one
  // generated token, or when it brings tools the template has no call format for.
  // `rendered`: the chat prompt's text, when wanted.
  std::vector<int32_t> prompt_tokens(const CompletionRequest& r, std::string* rendered = nullptr) const;
  // Readies a checked request for complete(): tools get the grammar of their calls (see
  // set_tool_call_grammar), and thinking_open is found from the prompt. Error
  // (400) as prompt_tokens; returns the prompt.
  std::vector<int32_t> prepare(CompletionRequest& r) const;
  // Generates for `r` with the context (waiting for the one in progress); on_text gets the text
  // as it comes, with the log-probabilities of the tokens sampled since its previous call (when
  // asked), and returns false to stop (a client that went away). A chat reply's reasoning comes
  // apart from its text (with the pieces of a marker held back); with tools, text from where a
  // call may begin waits for the end of the reply; the calls found are in the result, and
  // on_text gets only the reply's text that is no call.
  // What on_text gets: the text since its previous call (and the think block's, when the
  // reasoning is taken out of the reply), the tokens sampled since then and their
  // log-probabilities (when asked).
  struct TextPiece {
    std::string_view text, reasoning;
    std::span<const int32_t> tokens;
    std::span<const SampledLogprobs> logprobs;
  };
  using TextSink = std::function<bool(const TextPiece&)>;
  CompletionResult complete(const CompletionRequest& r, const std::vector<int32_t>& prompt,
                            const TextSink& on_text);

 private:
  void setup_routes();
  // The request's messages and variables as its template wants them (calls' arguments as
  // objects for templates that write them with tojson), rendered.
  std::string render_chat(const CompletionRequest& r) const;
  // llama-server's generation_settings of a request (/completion's response).
  nlohmann::ordered_json generation_settings(const CompletionRequest& r) const;
  nlohmann::ordered_json default_settings() const;  // those of a request that sets nothing (/props, /slots)
  // The grammar of the reply's calls: from the start for tool_choice "required" or a named
  // function; for "auto" from a call's opening marker on (lazy), where the syntax has one.
  void set_tool_call_grammar(CompletionRequest& r) const;

  const runtime::Model& model_;
  ServeOptions opts_;
  chat::ToolCallFormat tool_format_ = chat::ToolCallFormat::None;  // the chat template's
  chat::ToolCallRendering tool_rendering_;  // how the template wants calls in the history
  std::vector<int32_t> tool_markers_;  // control tokens of tool_format_ kept in replies
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
  int64_t created_ = 0;  // load time, for /v1/models
  std::mutex ctx_mu_;    // one generation at a time (taken through a ModelTurn)
  ServerMetrics metrics_;
  // GET /slots: the one slot's task, as llama-server shows its slots. The request's fields are
  // set under slot_mu_ when it takes the model; the token count moves on as it generates.
  struct SlotState {
    int64_t id_task = -1;
    nlohmann::ordered_json params;  // generation_settings of the last request
    std::string prompt;
    int64_t n_predict = -1;
  };
  std::mutex slot_mu_;
  // dry_sequence_breakers as tokens, made at the first DRY request (under the model's turn).
  std::shared_ptr<const runtime::DryBreakers> default_dry_breakers_;
  SlotState slot_;
  std::atomic<int64_t> slot_decoded_{0};
  std::atomic<bool> slot_busy_{false};
  int64_t next_task_ = 0;
  std::unique_ptr<runtime::Context> ctx_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> stopping_{false};
};

}  // namespace minfer::server
