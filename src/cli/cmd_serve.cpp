// `minfer serve MODEL`: an OpenAI-compatible HTTP server (src/server/openai_server.h,
// docs/SERVER.md). The sampling flags are the defaults for what a request leaves out.
#include <cstdio>
#include <filesystem>

#include "cli/command.h"
#include "cli/run_common.h"
#include "cli/stop_signals.h"
#include "common/error.h"
#include "server/openai_server.h"

namespace {

using namespace minfer;

int run_serve(int argc, char** argv) {
  CLI::App app{"Serve MODEL over an OpenAI-compatible HTTP API (/v1/chat/completions, "
               "/v1/completions, /v1/models, /health), one request at a time. The sampling "
               "flags set the defaults of fields a request leaves out.",
               argv[0]};
  std::string model_path, model_pos, host = "127.0.0.1", api_key, alias, cors_origins = "localhost";
  int port = 8080;
  cli::GenFlags f;
  app.add_option("-m,--model", model_path, "GGUF model file");
  app.add_option("MODEL", model_pos, "GGUF model file");
  app.add_option("--host", host, "address to bind (default 127.0.0.1: this machine only)");
  app.add_option("--port", port, "TCP port (0 = any free port)")->check(CLI::Range(0, 65535))->capture_default_str();
  app.add_option("--api-key", api_key, "require 'Authorization: Bearer KEY' on every request but /health");
  app.add_option("-a,--alias", alias, "model name in responses (default: the file name)");
  app.add_option("--cors-origins", cors_origins,
                 "web pages that may read the responses: localhost (pages served from this machine), * (any), "
                 "none, or a comma-separated list of origins")
      ->capture_default_str();
  std::string reasoning_format = "auto";
  app.add_option("--reasoning-format", reasoning_format,
                 "a chat reply's <think> block: auto or deepseek (as message.reasoning_content), none "
                 "(left in the content)")
      ->check(CLI::IsMember({"auto", "deepseek", "none"}))
      ->capture_default_str();
  bool embeddings = false;
  std::string pooling;
  bool metrics = false, slots = true;
  app.add_flag("--metrics", metrics, "GET /metrics: Prometheus-compatible metrics (llama-server's)");
  std::string slot_save_path;
  app.add_option("--slot-save-path", slot_save_path,
                 "folder of POST /slots/0?action=save|restore files (created if missing; default: slot actions off)");
  app.add_flag("--slots,!--no-slots", slots, "GET /slots: the slot's task and progress (default: on, as llama-server)");
  app.add_flag("--embeddings,--embedding", embeddings,
               "compute embeddings (POST /v1/embeddings) instead of generating text");
  app.add_option("--pooling", pooling, "how --embeddings pools the tokens' hidden states: mean, cls, last, none (a vector per token, /embeddings) "
                                       "(default: the model's pooling_type)")
      ->check(CLI::IsMember({"none", "mean", "cls", "last", "rank"}));
  f.add_to(app);
  cli::parse(app, argc, argv);
  if (model_path.empty()) model_path = model_pos;
  if (model_path.empty()) {
    std::fprintf(stderr, "%s: no model given (minfer serve MODEL.gguf)\nRun '%s --help' for usage.\n",
                 argv[0], argv[0]);
    return 2;
  }
  f.validate();
  if (!slot_save_path.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(slot_save_path, ec);
    if (!std::filesystem::is_directory(slot_save_path))
      fail("--slot-save-path {}: cannot create the folder{}", slot_save_path, ec ? ": " + ec.message() : "");
  }
  if (embeddings && !f.model_draft.empty()) fail("--model-draft: not with --embeddings (nothing is generated)");
  const auto grammar_rules = f.grammar_rules();
  cli::Log log;
  f.setup_log(log);

  const sigset_t signals = cli::block_stop_signals();
  auto loaded = cli::load_model(model_path, log, f);
  const auto& model = *loaded.model;

  server::ServeOptions o;
  o.host = host;
  o.port = port;
  o.model_path = model_path;
  o.model_name = alias.empty() ? std::filesystem::path(model_path).filename().string() : alias;
  o.api_key = api_key;
  o.cors_origins = cors_origins;
  if (!f.no_template) o.chat_template = cli::chat_template_or_chatml(model, f, log);
  else log.warn("{}: /v1/chat/completions is off (--no-template); /v1/completions works", model_path);
  o.ctx = cli::context_params(model, f);
  const cli::Draft draft = cli::load_draft(f, model, o.ctx, log);
  o.drafter = draft.drafter.get();
  o.sampling = f.sampler_params();  // DRY's breakers: the server makes them (dry_sequence_breakers)
  o.dry_sequence_breakers = f.dry_breaker_texts();
  o.seed = f.seed;
  o.n_predict = f.n_predict;
  o.n_batch = f.n_batch();
  o.context_shift = f.context_shift;
  o.template_kwargs = f.template_vars();
  o.n_keep = f.keep;
  o.stop = f.stop;
  o.ignore_eos = f.ignore_eos;
  o.system = f.system;
  o.grammar = grammar_rules;
  o.extract_reasoning = reasoning_format != "none";
  o.embeddings = embeddings;
  o.metrics = metrics;
  o.slots = slots;
  o.slot_save_path = slot_save_path;
  if (!pooling.empty()) o.pooling = runtime::pooling_from_name(pooling);
  o.log = [&log](const std::string& line) { log.info("{}", line); };

  server::OpenAiServer srv(model, o);
  cli::lock_memory(f, model, draft.model.get(), log);
  srv.bind();
  log.info("serving {} with {} tokens of context; Ctrl-C stops", o.model_name, o.ctx.n_ctx);
  // The address on stdout, for scripts that start the server on --port 0.
  std::printf("minfer serve: %sv1\n", srv.url().c_str());
  std::fflush(stdout);
  cli::listen_until_signal(signals, [&srv] { srv.listen(); }, [&srv] { srv.stop(); });
  return 0;
}

}  // namespace

MINFER_COMMAND(serve, "serve a model over an OpenAI-compatible HTTP API", run_serve);
