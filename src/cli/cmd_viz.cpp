// `minfer viz MODEL`: a local web page showing the compute graph as executed, with per-node
// statistics streamed while a prompt generates (src/server, viz/README.md).

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/run_common.h"
#include "cli/stop_signals.h"
#include "common/error.h"
#include "runtime/prompt.h"
#include "server/viz_server.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace minfer;

int run_viz(int argc, char** argv) {
  CLI::App app{"Serve a web page showing MODEL's compute graph as executed, with per-node "
               "statistics streamed (server-sent events) while a prompt generates.",
               argv[0]};
  std::string model_path, host = "127.0.0.1", kv_type = "f32";
  int port = 8090, threads = 0;
  int64_t n_ctx = 0;
  bool chat = false, quiet = false;
  app.add_option("model", model_path, "GGUF model file")->required();
  app.add_option("--port", port, "TCP port (0 = any free port)")->check(CLI::Range(0, 65535));
  app.add_option("--host", host, "address to bind (default 127.0.0.1: this machine only)");
  app.add_option("-c,--ctx-size", n_ctx, "context size (default: the model's, at most 4096)");
  app.add_option("-t,--threads", threads, "threads (default: the physical cores)");
  app.add_option("--kv-type", kv_type, "KV cache type: f32, f16, q8_0");
  app.add_flag("--chat", chat, "wrap each prompt in the model's chat template as a user message");
  app.add_flag("-q,--quiet", quiet, "no load line on stderr");
  cli::parse(app, argc, argv);

  cli::Log log;
  log.quiet = quiet;
  cli::Loaded loaded = cli::load_model(model_path, log);
  const runtime::Model& m = *loaded.model;

  server::VizOptions opts;
  opts.host = host;
  opts.port = port;
  opts.ctx.kv_type = cli::parse_kv_type(kv_type);
  opts.ctx.n_ctx = cli::choose_n_ctx(m, n_ctx, opts.ctx.kv_type);
  opts.ctx.n_threads = threads;
  std::optional<std::string> tmpl;
  if (chat) {
    tmpl = m.tokenizer().chat_template();
    if (!tmpl) fail("{}: --chat: the model has no chat template", model_path);
  }
  opts.tokenize = [&m, tmpl](const std::string& text) {
    if (!tmpl) return runtime::tokenize_prompt(m, text);
    const nlohmann::ordered_json msgs = nlohmann::ordered_json::array({{{"role", "user"}, {"content", text}}});
    return runtime::tokenize_prompt(m, runtime::render_chat(m, *tmpl, msgs, true));
  };

  const sigset_t set = cli::block_stop_signals();

  server::VizServer srv(m, opts);
  srv.bind();
  std::printf("minfer viz: %s\n", srv.url().c_str());
  std::fflush(stdout);
  cli::listen_until_signal(set, [&srv] { srv.listen(); }, [&srv] { srv.stop(); });
  return 0;
}

}  // namespace

MINFER_COMMAND(viz, "serve a live web view of the compute graph as executed", run_viz);
