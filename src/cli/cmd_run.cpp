// `minfer run -m MODEL -p PROMPT` (also `minfer MODEL [PROMPT]`): one-shot generation with
// llama.cpp's conventions. stdout holds only the generated text; everything else is stderr.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <span>
#include <iostream>
#include <iterator>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/llama_flags.h"
#include "cli/progress.h"
#include "cli/run_common.h"
#include "runtime/prompt.h"
#include "runtime/token_grammar.h"
#include "common/error.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace minfer;

std::string read_stdin() {
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail("{}: cannot create the file", path);
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) fail("{}: write failed", path);
}

int run_run(int argc, char** argv) {
  CLI::App app{"Generate text from a prompt. stdout gets only the generated text; timings go "
               "to stderr.",
               argv[0]};
  std::string model_path, prompt, prompt_file, dump_dot, dump_json;
  std::vector<std::string> positional;
  cli::GenFlags f;
  app.add_option("-m,--model", model_path, "GGUF model file");
  app.add_option("-p,--prompt", prompt, "prompt text (default: the positional PROMPT, or stdin)");
  app.add_option("-f,--file", prompt_file, "read the prompt from FILE");
  f.add_to(app);
  app.add_option("--dump-graph", dump_dot, "write the graph for this prompt as Graphviz DOT, then exit");
  app.add_option("--dump-graph-json", dump_json, "write the graph for this prompt as JSON, then exit");
  app.add_option("args", positional, "[MODEL] [PROMPT]");
  // llama-cli's prompt cache: the context's state saved after the prompt, reused by the next run.
  std::string prompt_cache;
  bool prompt_cache_all = false, prompt_cache_ro = false;
  app.add_option("--prompt-cache", prompt_cache,
                 "keep the prompt's evaluated state in FILE: a later run whose prompt starts the same "
                 "evaluates only the rest");
  app.add_flag("--prompt-cache-all", prompt_cache_all, "save the generated text's state too");
  app.add_flag("--prompt-cache-ro", prompt_cache_ro, "use the --prompt-cache file, do not update it");
  bool conversation = false, no_conversation = false;
  app.add_flag("--conversation", conversation, "-cnv: llama-cli's conversation mode is 'minfer chat'");
  app.add_flag("--no-conversation", no_conversation, "-no-cnv: accepted (run is one prompt, one reply)");
  cli::parse(app, argc, argv);
  if (conversation) {
    std::fprintf(stderr, "%s: -cnv: run answers one prompt; for a conversation use 'minfer chat MODEL'\n", argv[0]);
    return 2;
  }

  // Positional forms: MODEL PROMPT, or just PROMPT when -m is given.
  size_t pi = 0;
  bool have_prompt = app.count("--prompt") > 0;
  if (model_path.empty() && pi < positional.size()) model_path = positional[pi++];
  if (pi < positional.size()) {
    if (!prompt.empty() || !prompt_file.empty()) {
      std::fprintf(stderr, "%s: a positional prompt and -p/-f both given\n", argv[0]);
      return 2;
    }
    prompt = positional[pi++];
    have_prompt = true;
  }
  if (pi < positional.size()) {
    std::fprintf(stderr, "%s: unexpected argument '%s' (quote the prompt)\nRun '%s --help' for usage.\n",
                 argv[0], positional[pi].c_str(), argv[0]);
    return 2;
  }
  if (model_path.empty()) {
    std::fprintf(stderr, "%s: no model given (minfer MODEL.gguf \"prompt\")\nRun '%s --help' for usage.\n",
                 argv[0], argv[0]);
    return 2;
  }
  if (!prompt.empty() && !prompt_file.empty()) {
    std::fprintf(stderr, "%s: -p and -f are exclusive\n", argv[0]);
    return 2;
  }
  f.validate();
  if (prompt_cache.empty() && (prompt_cache_all || prompt_cache_ro))
    fail("--prompt-cache-all and --prompt-cache-ro need --prompt-cache FILE");
  const auto grammar_rules = f.grammar_rules();

  cli::Log log;
  f.setup_log(log);

  if (!prompt_file.empty()) prompt = cli::read_text_file(prompt_file, "prompt");
  else if (!have_prompt) {
    if (isatty(STDIN_FILENO)) {
      std::fprintf(stderr, "%s: no prompt: give one after the model, with -p or -f, or pipe it on stdin\n",
                   argv[0]);
      return 2;
    }
    prompt = read_stdin();
  }
  // `echo text | minfer MODEL` and files end with a newline that is not part of the prompt.
  if ((!prompt_file.empty() || !have_prompt) && prompt.ends_with('\n')) {
    prompt.pop_back();
    if (prompt.ends_with('\r')) prompt.pop_back();
  }
  // As llama.cpp (-e, on by default): "\n" in -p or a -f file is a newline. Piped text is taken as it is.
  if (f.escape && (have_prompt || !prompt_file.empty())) prompt = cli::process_escapes(prompt);

  auto loaded = cli::load_model(model_path, log, f);
  const auto& model = *loaded.model;
  const auto& tok = model.tokenizer();

  std::string text = prompt;
  bool templated = false;
  if (!f.no_template) {
    if (auto tmpl = cli::chat_template(model, f)) {
      nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
      if (!f.system.empty()) msgs.push_back({{"role", "system"}, {"content", f.system}});
      msgs.push_back({{"role", "user"}, {"content", prompt}});
      text = runtime::render_chat(model, *tmpl, msgs, true, f.template_vars());
      templated = true;
    }
  }
  if (!templated && !f.system.empty())
    log.warn("--system is ignored: {}", f.no_template ? "--no-template was given" : "the model has no chat template");
  const auto tokens = runtime::tokenize_prompt(model, text);
  log.detail("prompt: {} tokens{}", tokens.size(), templated ? " (chat template applied)" : "");
  if (tokens.empty()) fail("the prompt is empty after tokenization");

  auto cp = cli::context_params(model, f);
  runtime::Context ctx(model, cp);
  log.detail("context: {} tokens, {} threads, KV {}", ctx.n_ctx(), cp.n_threads,
             type_name(cp.kv_type));
  const cli::Draft draft = cli::load_draft(f, model, cp, log);
  cli::lock_memory(f, model, draft.model.get(), log);

  if (!dump_dot.empty() || !dump_json.empty()) {
    const int64_t nt = int64_t(tokens.size());
    if (nt > ctx.n_ctx()) fail("prompt is {} tokens, longer than the context ({})", nt, ctx.n_ctx());
    const auto& g = ctx.graph_for(nt, 1);
    if (!dump_dot.empty()) write_file(dump_dot, ctx.graph_dot(nt, 1));
    if (!dump_json.empty()) write_file(dump_json, ctx.graph_json(nt, 1));
    std::fprintf(stderr, "graph for %lld prompt tokens: %zu nodes\n", (long long)nt, g.nodes.size());
    return 0;
  }

  runtime::Sampler sampler(f.sampler_params(&tok));
  log.detail("sampling: seed {}, temp {}, top-k {}, top-p {}, min-p {}, repeat {} over {}",
             sampler.params().seed, f.temp, f.top_k, f.top_p, f.min_p, f.repeat_penalty,
             f.repeat_last_n);

  // The prompt cache: its tokens that begin the prompt stay in the cache (the prompt's last token
  // is always evaluated again: its logits are wanted).
  size_t cached = 0;
  if (!prompt_cache.empty() && std::filesystem::exists(prompt_cache)) {
    const int64_t n = ctx.load_state(prompt_cache);
    while (cached + 1 < tokens.size() && cached < size_t(n) && ctx.tokens()[cached] == tokens[cached]) ++cached;
    ctx.truncate(int64_t(cached));
    log.detail("prompt cache: {} of the prompt's {} tokens from {} ({} saved)", cached, tokens.size(),
               prompt_cache, n);
    if (cached < tokens.size() / 2)
      log.info("warning: {} matches {} of the prompt's {} tokens: the rest is evaluated again", prompt_cache,
               cached, tokens.size());
  } else if (!prompt_cache.empty()) {
    log.detail("prompt cache: {} does not exist yet, the prompt's state will be saved there", prompt_cache);
  }
  for (size_t i = 0; i < cached; ++i) sampler.accept(tokens[i]);
  const bool save_cache = !prompt_cache.empty() && !prompt_cache_ro;

  runtime::GenerateOptions go;
  go.n_predict = f.n_predict;
  go.stop = f.stop;
  go.ignore_eog = f.ignore_eos;
  go.render_special = f.special;
  go.strip_leading_space = tok.add_space_prefix() && !templated;
  go.drafter = draft.drafter.get();
  go.n_batch = f.n_batch();
  f.set_context_shift(go, int64_t(tokens.size()), tok.add_bos());
  std::optional<runtime::TokenGrammar> grammar;
  if (grammar_rules) go.grammar = &grammar.emplace(grammar_rules, tok);
  cli::Progress bar("prompt", !f.quiet && tokens.size() >= 256);
  go.prefill_progress = [&](double x) {
    bar.update(x);
    if (x >= 1.0 && save_cache) ctx.save_state(prompt_cache);
  };
  bool first = true;
  auto res = runtime::generate(ctx, tok, sampler, std::span(tokens).subspan(cached), go, [&](std::string_view s) {
    if (first) bar.finish(), first = false;
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  });
  bar.finish();
  if (!res.text.empty() && isatty(STDOUT_FILENO)) std::fputc('\n', stdout);
  std::fflush(stdout);
  log.info("");
  if (save_cache && prompt_cache_all) ctx.save_state(prompt_cache);
  cli::print_timings(log, loaded.load_ms, res);
  // Graph reuse made visible: over a whole generation each graph type is built once.
  const auto& st = ctx.stats();
  log.detail("graphs: prefill built {}x, decode built {}x, reused {}x over {} evaluations",
             st.prefill_builds, st.decode_builds, st.graph_reuses, st.decode_calls);
  return 0;
}

}  // namespace

MINFER_COMMAND(run, "generate text from a prompt (same as 'minfer MODEL.gguf PROMPT')", run_run);
