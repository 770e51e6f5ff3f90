// `minfer chat MODEL`: an interactive conversation (or one reply per line of piped stdin).
// The KV cache is append-only across turns: the whole conversation is rendered with the chat
// template each turn, and only the text after what the cache already holds is tokenized and
// prefilled. When the rendering does not extend the cached text (the template rewrote an old
// message, /regen), the longest common token prefix is kept and the rest re-evaluated.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/run_common.h"
#include "runtime/prompt.h"
#include "runtime/token_grammar.h"
#include "common/error.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace minfer;
using json = nlohmann::ordered_json;

std::atomic<bool> g_interrupt{false};

extern "C" void on_sigint(int) { g_interrupt.store(true); }

// SIGINT stops the current reply (generate() polls the flag); without SA_RESTART a read
// waiting at the prompt returns, which ends the chat.
void install_sigint() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
}

// Templates and JSON need valid UTF-8; a reply cut mid-character (or a model emitting stray
// bytes) gets U+FFFD in the stored conversation. The cache then no longer matches the
// rendering byte for byte, and the next turn falls back to the common token prefix.
std::string valid_utf8(const std::string& s) {
  return json::parse(json(s).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
}

const char* kHelp =
    "commands:\n"
    "  /help    this text\n"
    "  /clear   forget the conversation (the system message stays)\n"
    "  /regen   generate the last reply again\n"
    "  /exit    leave (end of input does too)\n"
    "Ctrl+C stops the current reply; at the prompt it leaves.\n";

class ChatSession {
 public:
  ChatSession(const runtime::Model& m, runtime::Context& ctx, runtime::Sampler& s,
              std::string tmpl, cli::Log& log, const cli::GenFlags& f,
              std::shared_ptr<const grammar::Grammar> grammar, runtime::Drafter* drafter)
      : m_(m), ctx_(ctx), sampler_(s), tmpl_(std::move(tmpl)), log_(log), f_(f), grammar_(std::move(grammar)),
        drafter_(drafter) {
    clear();
  }

  void clear() {
    messages_ = json::array();
    if (!f_.system.empty()) messages_.push_back({{"role", "system"}, {"content", f_.system}});
    ctx_.truncate(0);
    kv_tokens_.clear();
    kv_text_.clear();
    sampler_.reset_history();
  }

  // One user turn (or a regeneration when `user` is nullopt): prints the reply on stdout.
  void turn(const std::optional<std::string>& user) {
    if (user) messages_.push_back({{"role", "user"}, {"content", valid_utf8(*user)}});
    std::vector<int32_t> fresh;
    try {
      fresh = prepare_prompt();
    } catch (const Error&) {
      if (user) messages_.erase(messages_.size() - 1);
      throw;
    }
    const int64_t before_eval = int64_t(ctx_.stats().tokens_evaluated);
    const int64_t kv_before = int64_t(kv_tokens_.size());

    runtime::GenerateOptions go;
    go.n_predict = f_.n_predict;
    go.stop = f_.stop;
    go.ignore_eog = f_.ignore_eos;
    go.render_special = f_.special;
    go.interrupt = &g_interrupt;
    go.drafter = drafter_;
    go.n_batch = f_.n_batch();
    // --keep counts from the start of the conversation's first prompt (-1: all of it), as llama-cli's.
    if (kv_before == 0) first_prompt_ = int64_t(fresh.size());
    f_.set_context_shift(go, first_prompt_, m_.tokenizer().add_bos());
    std::optional<runtime::TokenGrammar> grammar;  // each reply follows it from its start
    if (grammar_) go.grammar = &grammar.emplace(grammar_, m_.tokenizer());
    g_interrupt.store(false);
    int64_t evaluated_prefill = -1;
    go.prefill_progress = [&](double x) {
      if (x >= 1.0) evaluated_prefill = int64_t(ctx_.stats().tokens_evaluated) - before_eval;
    };
    auto res = runtime::generate(ctx_, m_.tokenizer(), sampler_, fresh, go, [&](std::string_view s) {
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
    });
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (res.reason == runtime::StopReason::Interrupted) log_.info("[reply stopped]");
    if (res.reason == runtime::StopReason::ContextFull)
      log_.info("[the context is full: the reply was cut; the oldest turns go next turn]");

    // What the cache now holds: the prompt plus the generated tokens that were decoded.
    kv_tokens_.insert(kv_tokens_.end(), fresh.begin(), fresh.end());
    const auto& tok = m_.tokenizer();
    for (int64_t i = 0; i < res.n_tokens_in_kv; ++i) {
      kv_tokens_.push_back(res.tokens[size_t(i)]);
      kv_text_ += tok.token_to_piece(res.tokens[size_t(i)], true);
    }
    if (res.n_context_shifts > 0) {
      // The cache lost tokens from its middle: no rendering starts with it any more, and the next
      // turn keeps only the prefix its tokens share with the conversation's.
      log_.info("[context full: shifted {} time{}, {} tokens dropped from the cache]", res.n_context_shifts,
                res.n_context_shifts > 1 ? "s" : "", res.n_discarded);
      kv_tokens_.assign(ctx_.tokens().begin(), ctx_.tokens().end());
      kv_text_.clear();
    }
    messages_.push_back({{"role", "assistant"}, {"content", valid_utf8(res.text)}});
    log_.detail("[turn: prefilled {} new tokens (evaluated {}) after {} cached; context {}/{}]",
                fresh.size(), evaluated_prefill, kv_before, ctx_.n_past(), ctx_.n_ctx());
    if (!f_.quiet && f_.verbose) cli::print_timings(log_, -1, res);
  }

  bool regen() {
    if (messages_.empty() || messages_.back()["role"] != "assistant") return false;
    messages_.erase(messages_.size() - 1);
    turn(std::nullopt);
    return true;
  }

  void save(const std::string& path) const {
    json j;
    j["format"] = "minfer-chat-session";
    j["version"] = 1;
    j["messages"] = messages_;
    j["tokens"] = kv_tokens_;
    j["text"] = kv_text_;
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) fail("{}: cannot write the session file", path);
      out << j.dump(1, ' ', false, json::error_handler_t::replace) << "\n";
      if (!out) fail("{}: cannot write the session file", path);
    }
    std::filesystem::rename(tmp, path);
  }

  void load(const std::string& path) {
    const std::string s = cli::read_text_file(path, "session");
    json j;
    try {
      j = json::parse(s);
    } catch (const std::exception& e) {
      fail("{}: not a chat session file ({})", path, e.what());
    }
    if (!j.is_object() || j.value("format", "") != "minfer-chat-session" ||
        !j.contains("messages") || !j["messages"].is_array())
      fail("{}: not a minfer chat session file", path);
    for (const auto& msg : j["messages"])
      if (!msg.is_object() || !msg.contains("role") || !msg["role"].is_string() ||
          !msg.contains("content") || !msg["content"].is_string())
        fail("{}: a message lacks a string role or content", path);
    messages_ = j["messages"];
    std::vector<int32_t> tokens;
    if (j.contains("tokens") && j["tokens"].is_array())
      for (const auto& t : j["tokens"]) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= m_.n_vocab())
          fail("{}: token {} is not in this model's vocabulary", path, t.dump());
        tokens.push_back(t.get<int32_t>());
      }
    // The cached tokens are reused only when they fit; otherwise the next turn re-renders.
    if (!tokens.empty() && int64_t(tokens.size()) < ctx_.n_ctx() && j.contains("text") &&
        j["text"].is_string()) {
      ctx_.decode(tokens, 1);
      kv_tokens_ = std::move(tokens);
      kv_text_ = j["text"].get<std::string>();
      for (int32_t t : kv_tokens_) sampler_.accept(t);
    }
    log_.info("[resumed {} messages from {}; {} tokens cached]", messages_.size(), path,
              kv_tokens_.size());
  }

  size_t n_messages() const { return messages_.size(); }

 private:
  // The tokens to prefill for the next reply, with the cache rolled back where needed and the
  // oldest turns dropped when the conversation no longer fits.
  std::vector<int32_t> prepare_prompt() {
    const int64_t n_ctx = ctx_.n_ctx();
    const int64_t reserve = std::min<int64_t>(n_ctx / 4, f_.n_predict > 0 ? f_.n_predict : 256);
    for (;;) {
      const std::string full = runtime::render_chat(m_, tmpl_, messages_, true, template_vars_);
      std::vector<int32_t> fresh;
      // SentencePiece vocabularies prefix a space to text that starts a tokenization, so a
      // suffix tokenized alone could differ from the same text inside the conversation: for
      // them the common-prefix path below decides (it still prefills only what is new).
      const bool suffix_ok = !m_.tokenizer().add_space_prefix();
      if (suffix_ok && !kv_tokens_.empty() && !kv_text_.empty() && full.size() > kv_text_.size() &&
          full.starts_with(kv_text_)) {
        fresh = runtime::tokenize_prompt(m_, full.substr(kv_text_.size()), /*allow_bos=*/false);
      } else {
        const auto all = runtime::tokenize_prompt(m_, full);
        size_t common = 0;
        while (common < all.size() && common < kv_tokens_.size() && all[common] == kv_tokens_[common])
          ++common;
        if (common == all.size() && common > 0) --common;  // the last token must give logits
        ctx_.truncate(int64_t(common));
        kv_tokens_.resize(common);
        fresh.assign(all.begin() + int64_t(common), all.end());
      }
      kv_text_ = full;
      if (int64_t(kv_tokens_.size() + fresh.size()) + reserve <= n_ctx) return fresh;

      // Drop the oldest turn (keeping a leading system message) and start the cache over.
      const size_t first = (!messages_.empty() && messages_[0]["role"] == "system") ? 1 : 0;
      if (messages_.size() <= first + 1) {
        const size_t need = fresh.size() + kv_tokens_.size();
        ctx_.truncate(0);
        kv_tokens_.clear();
        kv_text_.clear();
        fail("the message is {} tokens, too long for the context of {} tokens (use -c)",
             need, n_ctx);
      }
      size_t drop = 1;
      while (first + drop < messages_.size() - 1 && messages_[first + drop]["role"] != "user") ++drop;
      for (size_t i = 0; i < drop; ++i) messages_.erase(first);
      log_.info("[context full: dropped the oldest {} message{}]", drop, drop > 1 ? "s" : "");
      ctx_.truncate(0);
      kv_tokens_.clear();
      kv_text_.clear();
    }
  }

  const runtime::Model& m_;
  runtime::Context& ctx_;
  runtime::Sampler& sampler_;
  std::string tmpl_;
  int64_t first_prompt_ = 0;  // tokens of the prompt the cache started from
  cli::Log& log_;
  const cli::GenFlags& f_;
  const nlohmann::ordered_json template_vars_ = f_.template_vars();  // (after f_: initialized from it)
  const std::shared_ptr<const grammar::Grammar> grammar_;  // or none
  runtime::Drafter* drafter_;                               // or none
  json messages_;
  std::vector<int32_t> kv_tokens_;
  std::string kv_text_;
};

int run_chat(int argc, char** argv) {
  CLI::App app{"Chat with a model: type a message, get the reply. Commands: /help /clear "
               "/regen /exit.",
               argv[0]};
  std::string model_path, model_pos, session_path;
  cli::GenFlags f;
  app.add_option("-m,--model", model_path, "GGUF model file");
  app.add_option("MODEL", model_pos, "GGUF model file");
  f.add_to(app);
  app.add_option("--session", session_path, "save the conversation to FILE after each turn, resume it when FILE exists");
  cli::parse(app, argc, argv);
  if (model_path.empty()) model_path = model_pos;
  if (model_path.empty()) {
    std::fprintf(stderr, "%s: no model given (minfer chat MODEL.gguf)\nRun '%s --help' for usage.\n",
                 argv[0], argv[0]);
    return 2;
  }
  if (f.no_template) {
    std::fprintf(stderr, "%s: --no-template makes no sense for chat\n", argv[0]);
    return 2;
  }
  f.validate();
  const auto grammar_rules = f.grammar_rules();
  cli::Log log;
  f.setup_log(log);

  auto loaded = cli::load_model(model_path, log, f);
  const auto& model = *loaded.model;
  const std::string tmpl = cli::chat_template_or_chatml(model, f, log);
  auto cp = cli::context_params(model, f);
  runtime::Context ctx(model, cp);
  const cli::Draft draft = cli::load_draft(f, model, cp, log);
  cli::lock_memory(f, model, draft.model.get(), log);
  runtime::Sampler sampler(f.sampler_params(&model.tokenizer()));
  ChatSession chat(model, ctx, sampler, tmpl, log, f, grammar_rules, draft.drafter.get());
  if (!session_path.empty() && std::filesystem::exists(session_path)) chat.load(session_path);

  const bool interactive = isatty(STDIN_FILENO);
  if (interactive)
    log.info("chatting with {} ({} tokens of context). /help for commands, /exit to leave.",
             model_path, ctx.n_ctx());
  install_sigint();
  std::string line;
  for (;;) {
    if (interactive) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    g_interrupt.store(false);
    if (!std::getline(std::cin, line)) break;  // end of input, or Ctrl+C at the prompt
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/help") {
      std::fputs(kHelp, stderr);
      continue;
    }
    if (line == "/clear") {
      chat.clear();
      log.info("[conversation cleared]");
    } else if (line == "/regen") {
      if (!chat.regen()) log.info("[nothing to regenerate]");
    } else if (line[0] == '/' && line.find(' ') == std::string::npos) {
      log.info("[unknown command {}; /help lists them]", line);
      continue;
    } else {
      try {
        chat.turn(line);
      } catch (const Error& e) {
        // A message that cannot fit is this turn's problem, not the chat's.
        log.warn("{}", e.what());
        continue;
      }
    }
    if (!session_path.empty()) chat.save(session_path);
  }
  if (!session_path.empty()) chat.save(session_path);
  if (interactive) std::fputc('\n', stdout);
  return 0;
}

}  // namespace

MINFER_COMMAND(chat, "chat with a model (interactive, or one reply per line of stdin)", run_chat);
