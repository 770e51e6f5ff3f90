// `minfer demo`: the whole pipeline with nothing but the binary. Generates (once, into the
// cache directory) a small synthetic model with the built-in byte-level tokenizer, then loads
// it, tokenizes a prompt, generates and reports what happened. The weights are random: the
// point is to show the machinery working (and its speed), not the text.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/command.h"
#include "cli/progress.h"
#include "cli/run_common.h"
#include "runtime/prompt.h"
#include "common/error.h"
#include "runtime/cpu_count.h"
#include "tokenizer/tokenizer.h"
#include "tools/gen_model.h"

namespace {

using namespace minfer;
namespace fs = std::filesystem;

// Bumped whenever the demo model's recipe changes, so that a stale cached file is not reused.
constexpr const char* kDemoFile = "demo-tiny-llama-q8_0-v1.gguf";

fs::path cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "minfer";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "minfer";
  return fs::temp_directory_path() / "minfer-cache";
}

// Random weights emit arbitrary bytes: show printable text, a middle dot for the rest.
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok && len == 1 && (c < 0x20 || c == 0x7f) && c != '\n') ok = false;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xC2\xB7";
      i += 1;
    }
  }
  return out;
}

int run_demo(int argc, char** argv) {
  CLI::App app{"Run the whole pipeline on a small synthetic model (random weights) that is "
               "generated once into the cache directory.",
               argv[0]};
  std::string dir, prompt = "Once upon a time";
  int64_t n_predict = 48;
  int threads = 0;
  uint64_t seed = 42;
  bool regenerate = false;
  app.add_option("--cache-dir", dir, "where the demo model is kept (default: $XDG_CACHE_HOME/minfer or ~/.cache/minfer)");
  app.add_option("-p,--prompt", prompt, "prompt")->capture_default_str();
  app.add_option("-n,--n-predict", n_predict, "tokens to generate")->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("-t,--threads", threads, "threads (0 = the physical cores usable)")->check(CLI::Range(0, 1024));
  app.add_option("-s,--seed", seed, "sampling seed")->capture_default_str();
  app.add_flag("--regenerate", regenerate, "write the demo model again even when cached");
  cli::parse(app, argc, argv);

  const fs::path d = dir.empty() ? cache_dir() : fs::path(dir);
  const fs::path file = d / kDemoFile;
  std::error_code ec;
  fs::create_directories(d, ec);
  if (ec) fail("{}: cannot create the cache directory ({})", d.string(), ec.message());

  std::printf("minfer demo: the whole pipeline on a synthetic model.\n"
              "NOTE: its weights are RANDOM, so the text it writes is gibberish.\n\n");
  const auto t_gen0 = std::chrono::steady_clock::now();
  if (regenerate || !fs::exists(file)) {
    std::printf("1. writing the demo model (once) to %s\n", file.string().c_str());
    std::fflush(stdout);
    tools::GenModelOptions o;
    o.preset = "tiny-llama";
    o.type = GgmlType::Q8_0;
    o.seed = 1;
    cli::Progress bar("writing");
    o.progress = [&](double f) { bar.update(f); };
    const auto info = tools::generate_model(o, file.string());
    bar.finish();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_gen0).count();
    std::printf("   preset tiny-llama (llama architecture: 4 layers, n_embd 256, 8/4 heads), Q8_0,\n"
                "   %.2f M parameters, %.1f MB, built-in byte-level tokenizer (%lld tokens), %.2f s\n",
                double(info.n_params) / 1e6, double(info.n_bytes) / 1e6, (long long)info.n_vocab, s);
  } else {
    std::printf("1. using the cached demo model %s\n", file.string().c_str());
  }

  cli::Log log;
  log.quiet = true;
  auto loaded = cli::load_model(file.string(), log);
  const auto& model = *loaded.model;
  const auto& hp = model.hparams();
  std::printf("2. loaded it in %.1f ms: %s, %lld layers, vocab %lld\n", loaded.load_ms,
              model.arch().c_str(), (long long)hp.n_layer, (long long)hp.n_vocab);

  const auto tokens = runtime::tokenize_prompt(model, prompt);
  if (tokens.empty()) fail("the demo prompt is empty");
  std::printf("3. tokenized \"%s\" into %zu tokens (one per byte)\n", prompt.c_str(), tokens.size());

  runtime::ContextParams cp;
  cp.n_ctx = 512;
  cp.n_threads = threads > 0 ? threads : runtime::usable_physical_cores();
  runtime::Context ctx(model, cp);
  runtime::SamplerParams sp;
  sp.seed = seed;
  runtime::Sampler sampler(sp);
  runtime::GenerateOptions go;
  go.n_predict = n_predict;
  go.ignore_eog = true;
  auto res = runtime::generate(ctx, model.tokenizer(), sampler, tokens, go, nullptr);
  std::printf("4. generated %zu tokens (seed %llu, temperature %.1f, %d threads):\n\n   %s%s\n\n",
              res.tokens.size(), (unsigned long long)seed, double(sp.temp), cp.n_threads,
              prompt.c_str(), printable(res.text).c_str());
  std::printf("5. timings: prompt %lld tokens in %.1f ms (%.1f tok/s), generation %lld tokens in "
              "%.1f ms (%.1f tok/s)\n",
              (long long)res.n_prompt, res.t_prompt_ms,
              res.t_prompt_ms > 0 ? 1000.0 * double(res.n_prompt) / res.t_prompt_ms : 0.0,
              (long long)res.n_gen_evals, res.t_gen_ms,
              res.t_gen_ms > 0 ? 1000.0 * double(res.n_gen_evals) / res.t_gen_ms : 0.0);
  std::printf("\nThe weights are random, so the text above means nothing. To run a real model:\n"
              "  minfer path/to/model.gguf \"Once upon a time\" -n 64\n"
              "  minfer chat path/to/instruct-model.gguf\n");
  return 0;
}

}  // namespace

MINFER_COMMAND(demo, "generate a small random-weight model once and run it (no download)", run_demo);
