#include "server/openai_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <random>

#include "common/error.h"
#include "grammar/json_schema.h"
#include "runtime/generate.h"
#include "runtime/logprobs.h"
#include "runtime/model.h"
#include "runtime/prompt.h"
#include "runtime/sampler_dry.h"
#include "runtime/token_grammar.h"
#include "server/http_common.h"
#include "server/infill.h"
#include "server/reply_shaper.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace minfer::server {
namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// A slot file's name as llama-server takes it: a name, no folder, nothing a shell or another file
// system would read otherwise.
bool valid_slot_filename(const std::string& s) {
  if (s.empty() || s.size() > 255 || s == "." || s == ".." || s.front() == ' ' || s.back() == ' ' || s.back() == '.')
    return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f || std::strchr("/\\:*?\"<>|", c)) return false;
  return tok::detail::sanitize_utf8(s) == s;
}

json sampler_names(const std::vector<runtime::SamplerStage>& order) {
  json a = json::array();
  for (runtime::SamplerStage s : order) a.push_back(runtime::sampler_stage_name(s));
  return a;
}

void send_error(httplib::Response& res, int status, std::string_view msg) {
  res.status = status;
  res.set_content(dump(error_body(status, msg)), "application/json");
}

void send_json(httplib::Response& res, const json& j) { res.set_content(dump(j), "application/json"); }

std::string random_alnum(int n) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng(runtime::random_seed());
  std::string s;
  for (int i = 0; i < n; ++i) s += kChars[rng() % (sizeof(kChars) - 1)];
  return s;
}

// "chatcmpl-" / "cmpl-" and 32 random letters and digits, as llama-server's ids.
std::string response_id(ApiKind kind) {
  return (kind == ApiKind::Chat ? "chatcmpl-" : "cmpl-") + random_alnum(32);
}

// A call's id: Mistral's templates take 9 letters and digits only (and the model's own when it
// wrote one), the others llama-server's 32.
std::string tool_call_id(chat::ToolCallFormat f, const std::string& own) {
  if (f != chat::ToolCallFormat::MistralNemo) return random_alnum(32);
  const bool valid = own.size() == 9 && std::all_of(own.begin(), own.end(), [](char c) { return std::isalnum(uint8_t(c)); });
  return valid ? own : random_alnum(9);
}

const char* finish_reason(runtime::StopReason r) {
  switch (r) {
    case runtime::StopReason::Length:
    case runtime::StopReason::ContextFull: return "length";
    default: return "stop";
  }
}

}  // namespace

OpenAiServer::OpenAiServer(const runtime::Model& model, ServeOptions opts)
    : model_(model), opts_(std::move(opts)), http_(std::make_unique<httplib::Server>()) {
  created_ = int64_t(std::time(nullptr));
  if (opts_.chat_template) {
    tool_format_ = chat::detect_tool_call_format(*opts_.chat_template);
    tool_rendering_ = chat::probe_tool_call_rendering(*opts_.chat_template);
    for (const std::string& marker : chat::tool_call_control_markers(tool_format_))
      if (const auto id = model_.tokenizer().find_token(marker)) tool_markers_.push_back(*id);
  }
  opts_.ctx.embeddings = opts_.embeddings;
  ctx_ = std::make_unique<runtime::Context>(model_, opts_.ctx);
  setup_routes();
}

OpenAiServer::~OpenAiServer() { stop(); }

int OpenAiServer::bind() {
  port_ = bind_http(*http_, opts_.host, opts_.port, "serve");
  return port_;
}

void OpenAiServer::listen() { http_->listen_after_bind(); }

void OpenAiServer::stop() {
  stopping_ = true;
  cancel_ = true;
  http_->stop();
}

std::string OpenAiServer::url() const { return http_url(opts_.host, port_); }

std::vector<int32_t> OpenAiServer::prompt_tokens(const CompletionRequest& r, std::string* rendered) const {
  std::vector<int32_t> tokens;
  if (r.kind == ApiKind::Chat) {
    if (!opts_.chat_template)
      fail("the model has no chat template: use /v1/completions, or start the server with "
           "--chat-template-file");
    if (r.calls_tools() && tool_format_ == chat::ToolCallFormat::None)
      fail("'tools': the model's chat template has no tool-call format minfer knows (Hermes "
           "<tool_call>, Llama 3's JSON, Mistral's [TOOL_CALLS]); start the server with a "
           "--chat-template-file that has one, or send tool_choice \"none\"");
    const std::string text = render_chat(r);
    tokens = runtime::tokenize_prompt(model_, text);
    if (rendered) *rendered = text;
  } else if (r.infill) {
    tokens = infill_tokens(model_.tokenizer(), *r.infill, ctx_->n_ctx(), r.max_tokens.value_or(opts_.n_predict));
  } else if (!r.prompt_tokens.empty()) {
    tokens = r.prompt_tokens;
    for (int32_t t : tokens)
      if (t >= model_.n_vocab()) fail("prompt token {} is not in the vocabulary of {}", t, model_.n_vocab());
  } else {
    tokens = runtime::tokenize_prompt(model_, r.prompt);
  }
  if (tokens.empty()) fail("the prompt is empty after tokenization");
  for (const runtime::LogitBias& b : r.logit_bias)
    if (b.id >= model_.n_vocab()) fail("'logit_bias' names token {}; the vocabulary has {}", b.id, model_.n_vocab());
  if (int64_t(tokens.size()) >= ctx_->n_ctx())
    fail("the prompt is {} tokens, which does not fit the context of {} tokens with room for a "
         "reply (start the server with a larger -c)",
         tokens.size(), ctx_->n_ctx());
  return tokens;
}

std::string OpenAiServer::render_chat(const CompletionRequest& r) const {
  json messages = r.messages;
  if (!opts_.system.empty() && (messages.empty() || messages[0]["role"] != "system"))
    messages.insert(messages.begin(), json{{"role", "system"}, {"content", opts_.system}});
  messages = chat::messages_for_template(std::move(messages), tool_rendering_);
  json vars = opts_.template_kwargs.is_object() ? opts_.template_kwargs : json::object();
  if (r.template_kwargs.is_object()) vars.update(r.template_kwargs);
  if (!r.tools.is_null() && !vars.contains("tools")) vars["tools"] = r.tools;
  return runtime::render_chat(model_, *opts_.chat_template, messages, true, vars);
}

json OpenAiServer::generation_settings(const CompletionRequest& r) const {
  const runtime::SamplerParams p = sampler_params(r, opts_.sampling, 0);
  std::vector<std::string> stop = opts_.stop;
  stop.insert(stop.end(), r.stop.begin(), r.stop.end());
  const std::optional<uint64_t> seed = r.seed ? r.seed : opts_.seed;
  const runtime::DraftParams d = draft_params(r, opts_.drafter ? opts_.drafter->params() : runtime::DraftParams{});
  return json{{"n_ctx", ctx_->n_ctx()},
              {"n_predict", r.max_tokens.value_or(opts_.n_predict)},
              {"model", opts_.model_name},
              {"seed", seed ? *seed : uint64_t(0xFFFFFFFF)},  // llama-server's "random"
              {"temperature", p.temp},
              {"top_k", p.top_k},
              {"top_p", p.top_p},
              {"min_p", p.min_p},
              {"typical_p", p.typical_p},
              {"top_n_sigma", p.top_n_sigma},
              {"xtc_probability", p.xtc_probability},
              {"xtc_threshold", p.xtc_threshold},
              {"dynatemp_range", p.dynatemp_range},
              {"dynatemp_exponent", p.dynatemp_exponent},
              {"mirostat", p.mirostat},
              {"mirostat_tau", p.mirostat_tau},
              {"mirostat_eta", p.mirostat_eta},
              {"min_keep", p.min_keep},
              {"dry_multiplier", p.dry_multiplier},
              {"dry_base", p.dry_base},
              {"dry_allowed_length", p.dry_allowed_length},
              {"dry_penalty_last_n", p.dry_penalty_last_n},
              {"dry_sequence_breakers", r.dry_sequence_breakers ? *r.dry_sequence_breakers : opts_.dry_sequence_breakers},
              {"samplers", sampler_names(p.order)},
              {"repeat_last_n", p.repeat_last_n},
              {"repeat_penalty", p.repeat_penalty},
              {"presence_penalty", p.presence_penalty},
              {"frequency_penalty", p.frequency_penalty},
              {"stop", stop},
              {"ignore_eos", r.ignore_eos || opts_.ignore_eos},
              {"stream", r.stream},
              {"n_probs", r.logprobs ? r.top_logprobs : 0},
              {"n_keep", r.n_keep.value_or(opts_.n_keep)},
              {"n_discard", r.n_discard},
              {"speculative.n_max", d.n_max},
              {"speculative.n_min", d.n_min},
              {"speculative.p_min", d.p_min}};
}

json OpenAiServer::default_settings() const {
  CompletionRequest r;
  r.kind = ApiKind::Native;
  return generation_settings(r);
}

void OpenAiServer::set_tool_call_grammar(CompletionRequest& r) const {
  const chat::ToolCallGrammar g = chat::tool_call_grammar(tool_format_, r.tools, r.parallel_tool_calls);
  const bool lazy = r.tool_choice == CompletionRequest::ToolChoice::Auto;
  if (lazy && g.triggers.empty()) return;  // Llama 3's calls: read from the reply only
  try {
    r.grammar = std::make_shared<const grammar::Grammar>(
        grammar::json_schema_in_gbnf(g.schema, chat::kToolCallRule, g.root).grammar);
  } catch (const Error& e) {
    fail("'tools': a function's parameters: {}", e.what());
  }
  if (lazy) r.grammar_triggers = g.triggers;
}

std::vector<int32_t> OpenAiServer::prepare(CompletionRequest& r) const {
  std::string rendered;
  std::vector<int32_t> tokens = prompt_tokens(r, &rendered);
  r.thinking_open = chat::prompt_opens_thinking(rendered);
  if (r.calls_tools()) set_tool_call_grammar(r);
  return tokens;
}

CompletionResult OpenAiServer::complete(const CompletionRequest& r,
                                        const std::vector<int32_t>& prompt, const TextSink& on_text) {
  const ModelTurn turn(ctx_mu_, metrics_);
  {
    std::lock_guard lk(slot_mu_);
    slot_.id_task = next_task_++;
    slot_.params = generation_settings(r);
    slot_.prompt = model_.tokenizer().detokenize(prompt, false, true);
    slot_.n_predict = r.max_tokens.value_or(opts_.n_predict);
  }
  slot_decoded_ = 0;
  slot_busy_ = true;
  struct Idle {
    std::atomic<bool>& busy;
    ~Idle() { busy = false; }
  } idle{slot_busy_};
  cancel_ = stopping_.load();
  runtime::SamplerParams sp = sampler_params(r, opts_.sampling, opts_.seed ? *opts_.seed : runtime::random_seed());
  if (sp.dry_multiplier > 0) {
    // DRY's breakers as tokens: a request's own, or the server's (made once).
    if (r.dry_sequence_breakers) {
      sp.dry_breakers = std::make_shared<const runtime::DryBreakers>(
          runtime::make_dry_breakers(model_.tokenizer(), *r.dry_sequence_breakers));
    } else {
      if (!default_dry_breakers_)
        default_dry_breakers_ = std::make_shared<const runtime::DryBreakers>(
            runtime::make_dry_breakers(model_.tokenizer(), opts_.dry_sequence_breakers));
      sp.dry_breakers = default_dry_breakers_;
    }
  }
  runtime::Sampler sampler(sp);

  // Keep the longest common prefix of the cache; the last prompt token is always evaluated,
  // since its logits seed the first sample.
  if (!r.cache_prompt) ctx_->truncate(0);
  const size_t common = size_t(ctx_->keep_prefix(prompt));
  for (size_t i = 0; i < common; ++i) sampler.accept(prompt[i]);

  runtime::GenerateOptions go;
  go.n_predict = r.max_tokens ? *r.max_tokens : opts_.n_predict;
  go.stop = opts_.stop;
  go.stop.insert(go.stop.end(), r.stop.begin(), r.stop.end());
  go.ignore_eog = r.ignore_eos || opts_.ignore_eos;
  go.interrupt = &cancel_;
  go.drafter = opts_.drafter;
  if (opts_.drafter) go.draft_params = draft_params(r, opts_.drafter->params());
  go.n_batch = opts_.n_batch;
  // llama-server's count: -1 is the whole prompt, otherwise BOS and n_keep more, at most n_ctx - 4.
  go.context_shift = opts_.context_shift;
  const int64_t keep = r.n_keep.value_or(opts_.n_keep);
  go.n_keep = std::clamp<int64_t>(keep < 0 ? int64_t(prompt.size()) : keep + (model_.tokenizer().add_bos() ? 1 : 0), 0,
                                  std::max<int64_t>(0, ctx_->n_ctx() - 4));
  go.n_discard = r.n_discard;
  std::optional<runtime::TokenGrammar> grammar;
  const bool calls = r.calls_tools();
  // The server's default grammar is for replies, not for calls.
  if (const auto& rules = r.grammar ? r.grammar : calls ? nullptr : opts_.grammar)
    go.grammar = &grammar.emplace(rules, model_.tokenizer(), r.grammar_triggers);
  if (opts_.log)
    for (const std::string& w : r.grammar_warnings) opts_.log("warning: JSON schema: " + w);
  CompletionResult out;
  out.has_logprobs = r.logprobs;
  const tok::Tokenizer& tok = model_.tokenizer();
  go.on_sample = [&](int32_t id, std::span<const float> logits) {
    ++slot_decoded_;
    if (!go.ignore_eog && tok.is_eog(id)) return;  // the token that ends the reply is not in it
    out.tokens.push_back(id);
    if (r.logprobs) {
      const std::vector<double> lp = runtime::log_softmax(logits);
      auto entry = [&](int32_t t, double logprob) {
        LogprobEntry e{t, tok.token_to_piece(t, true), {}, logprob};
        e.text = e.bytes.substr(0, e.bytes.size() - tok::incomplete_utf8_tail(e.bytes));
        return e;
      };
      SampledLogprobs s{entry(id, lp[size_t(id)]), {}};
      for (const runtime::TokenLogprob& t : runtime::top_logprobs(lp, size_t(r.top_logprobs)))
        s.top.push_back(entry(t.id, t.logprob));
      out.logprobs.push_back(std::move(s));
    }
  };
  size_t sent = 0, sent_tokens = 0;  // log-probability entries and tokens already passed to on_text
  auto release = [&](std::string_view text, std::string_view reasoning) {
    const TextPiece piece{text, reasoning, std::span(out.tokens).subspan(sent_tokens), std::span(out.logprobs).subspan(sent)};
    if (on_text && !on_text(piece)) cancel_ = true;
    sent = out.logprobs.size();
    sent_tokens = out.tokens.size();
  };
  if (calls) go.keep_special = tool_markers_;
  // A chat reply's reasoning and tool calls come apart from its text; other text goes out as is.
  const bool reasoning = r.kind == ApiKind::Chat && r.extract_reasoning.value_or(opts_.extract_reasoning);
  std::optional<ReplyShaper> shaper;
  if (reasoning || calls)
    shaper.emplace(reasoning, r.thinking_open, calls ? tool_format_ : chat::ToolCallFormat::None);
  runtime::GenerateResult g;
  try {
    g = runtime::generate(*ctx_, tok, sampler, std::span(prompt).subspan(common), go,
                          [&](std::string_view s) {
                            if (!shaper) return release(s, {});
                            const ReplyShaper::Delta d = shaper->push(s);
                            if (!d.empty()) release(d.text, d.reasoning);
                          });
  } catch (...) {
    // Whatever the context holds now is unknown: start the next request afresh.
    ctx_->truncate(0);
    throw;
  }

  out.text = std::move(g.text);
  out.finish_reason = finish_reason(g.reason);
  out.stop_reason = g.reason;
  out.context_shifts = g.n_context_shifts;
  out.stopping_word = std::move(g.stop_string);
  if (shaper) {
    ReplyShaper::Final f = shaper->finish();
    out.text = std::move(f.parts.content);
    out.reasoning = std::move(f.parts.reasoning);
    if (!f.calls.empty()) {
      for (chat::ToolCall& c : f.calls) c.id = tool_call_id(tool_format_, c.id);
      out.tool_calls = std::move(f.calls);
      out.finish_reason = "tool_calls";
    }
    if (!f.rest.empty()) release(f.rest.text, f.rest.reasoning);
  }
  out.prompt_tokens = int64_t(prompt.size());
  out.cached_tokens = int64_t(common);
  out.prompt_evaluated = g.n_prompt;
  out.completion_tokens = int64_t(g.tokens.size());
  out.prompt_ms = g.t_prompt_ms;
  out.predicted_ms = g.t_gen_ms;
  out.draft_n = g.n_drafted;
  out.draft_n_accepted = g.n_draft_accepted;
  if (opts_.log)
    opts_.log(fmt::format("{}: prompt {} tokens ({} cached, {:.1f} t/s), {} generated ({:.1f} t/s), "
                          "stopped: {}{}",
                          r.kind == ApiKind::Chat ? "chat" : r.kind == ApiKind::Infill ? "infill" : "completion", out.prompt_tokens,
                          out.cached_tokens,
                          out.prompt_ms > 0 ? 1000.0 * double(out.prompt_evaluated) / out.prompt_ms : 0.0,
                          out.completion_tokens,
                          out.predicted_ms > 0 ? 1000.0 * double(out.completion_tokens) / out.predicted_ms : 0.0,
                          runtime::stop_reason_name(g.reason),
                          g.speculative ? fmt::format(", draft {} of {} accepted", g.n_draft_accepted, g.n_drafted) : ""));
  metrics_.record(g.n_prompt, g.t_prompt_ms, out.completion_tokens, g.t_gen_ms, ctx_->stats().decode_calls,
                  ctx_->n_past());
  return out;
}

void OpenAiServer::setup_routes() {
  httplib::Server& s = *http_;
  s.set_payload_max_length(opts_.max_body);

  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!host_header_allowed(opts_.host, req)) {
      send_error(res, 403, kHostRefused);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (const std::string allow = cors_allow_origin(opts_.cors_origins, req.get_header_value("Origin")); !allow.empty()) {
      res.set_header("Access-Control-Allow-Origin", allow);
      if (allow != "*") res.set_header("Vary", "Origin");
    }
    if (req.method == "OPTIONS") {  // a browser's preflight: it sends no API key
      res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
      const std::string asked = req.get_header_value("Access-Control-Request-Headers");
      res.set_header("Access-Control-Allow-Headers", asked.empty() ? "Content-Type, Authorization" : asked);
      res.set_header("Access-Control-Max-Age", "600");
      res.status = 204;
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!opts_.api_key.empty() && req.path != "/health" && req.path != "/v1/health" &&
        req.get_header_value("Authorization") != "Bearer " + opts_.api_key) {
      send_error(res, 401, "invalid API key (send 'Authorization: Bearer KEY')");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  auto health = [](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"status", "ok"}});
  };
  s.Get("/health", health);
  s.Get("/v1/health", health);

  auto models = [this](const httplib::Request&, httplib::Response& res) {
    json meta = {{"n_ctx", ctx_->n_ctx()},
                 {"n_ctx_train", model_.hparams().n_ctx_train},
                 {"n_vocab", model_.n_vocab()},
                 {"arch", model_.arch()}};
    send_json(res, {{"object", "list"},
                    {"data", json::array({{{"id", opts_.model_name},
                                           {"object", "model"},
                                           {"created", created_},
                                           {"owned_by", "minfer"},
                                           {"meta", meta}}})}});
  };
  s.Get("/v1/models", models);
  s.Get("/models", models);

  // llama-server's GET /slots: its one slot.
  s.Get("/slots", [this](const httplib::Request&, httplib::Response& res) {
    if (!opts_.slots) {
      send_error(res, 501, "this server does not show its slots: start it without --no-slots");
      return;
    }
    std::lock_guard lk(slot_mu_);
    const bool busy = slot_busy_;
    const int64_t decoded = slot_decoded_;
    send_json(res, json::array({json{
                       {"id", 0},
                       {"id_task", slot_.id_task},
                       {"n_ctx", ctx_->n_ctx()},
                       {"speculative", opts_.drafter != nullptr},
                       {"is_processing", busy},
                       {"params", slot_.params.is_null() ? default_settings() : slot_.params},
                       {"prompt", slot_.prompt},
                       {"next_token",
                        {{"has_next_token", busy},
                         {"has_new_line", false},
                         {"n_remain", slot_.n_predict < 0 ? int64_t(-1) : std::max<int64_t>(0, slot_.n_predict - decoded)},
                         {"n_decoded", decoded},
                         {"stopping_word", ""}}}}}));
  });

  // llama-server's slot actions: the KV cache saved to or restored from a file of
  // --slot-save-path (runtime/kv_state.h), or erased.
  s.Post(R"(/slots/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (opts_.slot_save_path.empty()) {
      send_error(res, 501, "this server does not support slot actions: start it with --slot-save-path DIR");
      return;
    }
    try {
      const std::string id = req.matches[1];
      if (id != "0") fail("invalid slot id '{}': this server has one slot, 0", id);
      const std::string action = req.get_param_value("action");
      if (action != "save" && action != "restore" && action != "erase")
        fail("'action' must be save, restore or erase (as ?action=...)");
      const auto t0 = std::chrono::steady_clock::now();
      auto ms = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); };
      if (action == "erase") {
        const ModelTurn turn(ctx_mu_, metrics_);
        const int64_t n = ctx_->n_past();
        ctx_->truncate(0);
        return send_json(res, {{"id_slot", 0}, {"n_erased", n}});
      }
      const json j = parse_json_object(req.body);
      if (!j.contains("filename") || !j["filename"].is_string()) fail("'filename' must be a string");
      const std::string name = j["filename"].get<std::string>();
      if (!valid_slot_filename(name))
        fail("invalid filename '{}': a file name in --slot-save-path, without a folder", name);
      const std::string path = (std::filesystem::path(opts_.slot_save_path) / name).string();
      const ModelTurn turn(ctx_mu_, metrics_);
      if (action == "save") {
        const int64_t n = ctx_->n_past();
        const size_t bytes = ctx_->save_state(path);
        return send_json(res, {{"id_slot", 0}, {"filename", name}, {"n_saved", n}, {"n_written", bytes},
                               {"timings", {{"save_ms", ms()}}}});
      }
      if (!std::filesystem::exists(path)) fail("no saved slot '{}'", name);
      size_t bytes = 0;
      const int64_t n = ctx_->load_state(path, &bytes);
      send_json(res, {{"id_slot", 0}, {"filename", name}, {"n_restored", n}, {"n_read", bytes},
                      {"timings", {{"restore_ms", ms()}}}});
    } catch (const Error& e) {
      send_error(res, 400, e.what());
    }
  });

  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    if (!opts_.metrics) {
      send_error(res, 501, "this server does not give metrics: start it with --metrics");
      return;
    }
    res.set_content(metrics_.scrape(ctx_->n_ctx()), "text/plain; version=0.0.4");
  });

  // llama-server's /props: what its web UI and clients read at start (one slot, no images).
  s.Get("/props", [this](const httplib::Request&, httplib::Response& res) {
    const tok::Tokenizer& tok = model_.tokenizer();
    send_json(res, {{"default_generation_settings", {{"n_ctx", ctx_->n_ctx()}, {"params", default_settings()}}},
                    {"total_slots", 1},
                    {"model_path", opts_.model_path},
                    {"modalities", {{"vision", false}, {"audio", false}}},
                    {"chat_template", opts_.chat_template.value_or("")},
                    {"bos_token", tok.bos() >= 0 ? tok.token_text(tok.bos()) : ""},
                    {"eos_token", tok.eos() >= 0 ? tok.token_text(tok.eos()) : ""},
                    {"build_info", "minfer"}});
  });

  auto completion = [this](ApiKind kind) {
    return [this, kind](const httplib::Request& req, httplib::Response& res) {
      if (opts_.embeddings) {
        send_error(res, 501, "this server computes embeddings only: start it without --embeddings to generate text");
        return;
      }
      auto r = std::make_shared<CompletionRequest>();
      auto prompt = std::make_shared<std::vector<int32_t>>();
      try {
        *r = parse_completion_request(req.body, kind);
        (void)sampler_params(*r, opts_.sampling, 0);  // out-of-range values: 400 before any work
        (void)draft_params(*r, {});
        *prompt = prepare(*r);
      } catch (const Error& e) {
        send_error(res, 400, e.what());
        return;
      }
      const ResponseHead head{response_id(kind), int64_t(std::time(nullptr)), opts_.model_name};
      const bool native = kind == ApiKind::Native || kind == ApiKind::Infill;
      // llama-server's own responses: the prompt as text and the settings come along.
      auto extras = std::make_shared<NativeExtras>();
      if (native) *extras = {model_.tokenizer().detokenize(*prompt, false, true), generation_settings(*r), r->return_tokens};
      if (!r->stream) {
        const CompletionResult out = complete(*r, *prompt, nullptr);
        send_json(res, native ? native_response(head, out, *extras) : completion_response(kind, head, out));
        return;
      }
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider(
          "text/event-stream", [this, r, prompt, head, native, extras](size_t, httplib::DataSink& sink) {
            auto send = [&sink](const json& j) {
              const std::string s = sse_data(j);
              return sink.write(s.data(), s.size());
            };
            if (native) {  // llama-server's: pieces, then the whole response with stop true; no [DONE]
              try {
                CompletionResult out = complete(*r, *prompt, [&](const TextPiece& p) {
                  return send(native_chunk(p.text, p.tokens, r->logprobs ? std::optional(p.logprobs) : std::nullopt));
                });
                out.text.clear();  // it went out in the pieces
                out.has_logprobs = false;
                send(native_response(head, out, *extras));
              } catch (const std::exception& e) {
                send(error_body(500, e.what()));
              }
              sink.done();
              return true;
            }
            // OpenAI's first chat chunk names the role; the text follows in later ones.
            if (r->kind == ApiKind::Chat) send(completion_chunk(r->kind, head, "", true, nullptr));
            try {
              size_t sent = 0;  // log-probability entries sent
              const CompletionResult out =
                  complete(*r, *prompt, [&](const TextPiece& p) {
                    sent += p.logprobs.size();
                    return send(completion_chunk(r->kind, head, p.text, false, nullptr,
                                                 r->logprobs ? std::optional(p.logprobs) : std::nullopt, p.reasoning));
                  });
              if (!out.tool_calls.empty()) send(tool_calls_chunk(head, out.tool_calls));
              const std::span<const SampledLogprobs> rest = std::span(out.logprobs).subspan(sent);
              send(completion_chunk(r->kind, head, "", false, &out.finish_reason,
                                    r->logprobs ? std::optional(rest) : std::nullopt));
              if (r->include_usage) send(usage_chunk(r->kind, head, out));
              const std::string done = "data: [DONE]\n\n";
              sink.write(done.data(), done.size());
            } catch (const std::exception& e) {
              send(error_body(500, e.what()));
            }
            sink.done();
            return true;
          });
    };
  };
  s.Post("/v1/chat/completions", completion(ApiKind::Chat));
  s.Post("/chat/completions", completion(ApiKind::Chat));
  s.Post("/v1/completions", completion(ApiKind::Completion));
  s.Post("/completions", completion(ApiKind::Completion));
  s.Post("/completion", completion(ApiKind::Native));

  // OpenAI's /v1/embeddings (one pooled vector per input) and llama-server's /embeddings (with
  // pooling none, a vector per token, not normalized, as llama-server's).
  auto embeddings = [this](bool native) {
    return [this, native](const httplib::Request& req, httplib::Response& res) {
      if (!opts_.embeddings) {
        send_error(res, 501, fmt::format("this server generates text: start it with --embeddings for {}", req.path));
        return;
      }
      const int pool = model_.hparams().pooling;
      const runtime::Pooling pooling =
          opts_.pooling ? *opts_.pooling : pool >= 0 ? runtime::Pooling(pool) : runtime::Pooling::None;
      try {
        const EmbeddingsRequest r = parse_embeddings_request(req.body, native);
        if (pooling == runtime::Pooling::Rank || (!native && pooling == runtime::Pooling::None))
          fail("pooling '{}' gives no single vector per input: start the server with --pooling mean, cls or last{}",
               runtime::pooling_name(pooling), pooling == runtime::Pooling::None ? " (or use /embeddings)" : "");
        const tok::Tokenizer& tok = model_.tokenizer();
        std::vector<std::vector<int32_t>> inputs;
        int64_t n_tokens = 0;
        for (const EmbeddingsRequest::Input& in : r.inputs) {
          inputs.push_back(in.is_tokens ? in.tokens : tok.encode(in.text, /*add_special=*/true, /*parse_special=*/true));
          for (int32_t t : inputs.back())
            if (t >= model_.n_vocab()) fail("input token {} is not in the vocabulary of {}", t, model_.n_vocab());
          if (inputs.back().empty()) fail("an input is empty after tokenization");
          if (int64_t(inputs.back().size()) > ctx_->n_ctx())
            fail("an input is {} tokens, more than the context of {} (start the server with a larger -c)",
                 inputs.back().size(), ctx_->n_ctx());
          n_tokens += int64_t(inputs.back().size());
        }
        std::vector<std::vector<std::vector<float>>> per_input;
        {
          const ModelTurn turn(ctx_mu_, metrics_);
          const auto t0 = std::chrono::steady_clock::now();
          for (const std::vector<int32_t>& t : inputs)
            per_input.push_back(pooling == runtime::Pooling::None
                                    ? runtime::embed_tokens(*ctx_, t, opts_.n_batch, -1)
                                    : std::vector<std::vector<float>>{
                                          runtime::embed(*ctx_, t, pooling, opts_.n_batch, r.embd_normalize)});
          metrics_.record(n_tokens, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
                          0, 0, ctx_->stats().decode_calls, ctx_->n_past());
        }
        if (native) {
          send_json(res, native_embeddings_response(per_input));
        } else {
          std::vector<std::vector<float>> vectors;
          for (auto& v : per_input) vectors.push_back(std::move(v.front()));
          send_json(res, embeddings_response(opts_.model_name, vectors, n_tokens, r.base64));
        }
      } catch (const Error& e) {
        send_error(res, 400, e.what());
      }
    };
  };
  s.Post("/v1/embeddings", embeddings(false));
  s.Post("/embeddings", embeddings(true));
  s.Post("/embedding", embeddings(true));
  s.Post("/infill", completion(ApiKind::Infill));

  s.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      const json j = parse_json_object(req.body);
      if (!j.contains("content") || !j["content"].is_string()) fail("'content' must be a string");
      bool add_special = false;
      if (j.contains("add_special")) {
        if (!j["add_special"].is_boolean()) fail("'add_special' must be true or false");
        add_special = j["add_special"].get<bool>();
      }
      bool with_pieces = false;
      if (j.contains("with_pieces")) {
        if (!j["with_pieces"].is_boolean()) fail("'with_pieces' must be true or false");
        with_pieces = j["with_pieces"].get<bool>();
      }
      const auto& tok = model_.tokenizer();
      const std::vector<int32_t> ids = tok.encode(j["content"].get<std::string>(), add_special, /*parse_special=*/true);
      if (!with_pieces) return send_json(res, {{"tokens", ids}});
      // llama-server's: each id with its piece, as text when it is whole UTF-8, else its bytes.
      json tokens = json::array();
      for (int32_t id : ids) {
        const std::string piece = tok.token_to_piece(id, true);
        tokens.push_back({{"id", id},
                          {"piece", tok::detail::sanitize_utf8(piece) == piece
                                        ? json(piece)
                                        : json(std::vector<uint8_t>(piece.begin(), piece.end()))}});
      }
      send_json(res, {{"tokens", tokens}});
    } catch (const Error& e) {
      send_error(res, 400, e.what());
    }
  });
  // llama-server's: the chat prompt a request would run, rendered and not generated from.
  s.Post("/apply-template", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      const CompletionRequest r = parse_completion_request(req.body, ApiKind::Chat);
      if (!opts_.chat_template) fail("the model has no chat template");
      send_json(res, {{"prompt", render_chat(r)}});
    } catch (const Error& e) {
      send_error(res, 400, e.what());
    }
  });
  s.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      const json j = parse_json_object(req.body);
      if (!j.contains("tokens") || !j["tokens"].is_array()) fail("'tokens' must be an array of token ids");
      std::vector<int32_t> ids;
      for (const json& t : j["tokens"]) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= model_.n_vocab())
          fail("'tokens' must hold token ids in [0, {})", model_.n_vocab());
        ids.push_back(t.get<int32_t>());
      }
      send_json(res, {{"content", model_.tokenizer().decode(ids)}});
    } catch (const Error& e) {
      send_error(res, 400, e.what());
    }
  });

  // Refused requests get a line too (generations log their own when they end).
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    if (res.status >= 400 && opts_.log) opts_.log(fmt::format("{} {}: {} {}", req.method, req.path, res.status, res.body));
  });

  // httplib's own errors (404, 413, ...) get OpenAI's error body too.
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    send_error(res, res.status, res.status == 404   ? "not found"
                                : res.status == 413 ? "the request body is too large"
                                                    : fmt::format("HTTP status {}", res.status));
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    send_error(res, 500, exception_message(ep));
  });
}

}  // namespace minfer::server
