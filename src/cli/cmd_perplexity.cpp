// `minfer perplexity` (llama.cpp's llama-perplexity): the perplexity of a text file, chunk by
// chunk (runtime/perplexity.h), in llama-perplexity's output: "[1]5.1234,[2]..." then
// "Final estimate: PPL = X +/- Y".
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/run_common.h"
#include "common/error.h"
#include "runtime/context.h"
#include "runtime/kl_divergence.h"
#include "runtime/model.h"
#include "runtime/perplexity.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace minfer;

int run_perplexity(int argc, char** argv) {
  CLI::App app{"Perplexity of a text file, as llama-perplexity computes it (chunks of -c tokens, the "
               "second half of each scored)",
               "minfer perplexity"};
  std::string model_path, model_pos, file, kv_type = "f16";
  int64_t n_ctx = 512, n_batch = 2048, chunks = -1;
  int threads = 0;
  bool verbose = false, quiet = false, kl_divergence = false;
  std::string kl_base;
  app.add_option("-m,--model", model_path, "GGUF model file");
  app.add_option("model", model_pos, "GGUF model file (instead of -m)");
  app.add_option("-f,--file", file, "the text (e.g. wiki.test.raw)");
  app.add_option("--kl-divergence-base", kl_base,
                 "without --kl-divergence: also write every scored position's log-probabilities to FILE; with "
                 "it: the base to compare with (its text and -c are used)");
  app.add_flag("--kl-divergence", kl_divergence, "compare with --kl-divergence-base: KL divergence, delta-p, same top token");
  app.add_option("-c,--ctx-size", n_ctx, "tokens a chunk (llama-perplexity's default)")->capture_default_str();
  app.add_option("-b,--batch-size", n_batch, "tokens a decode call (at most -c)")->capture_default_str();
  app.add_option("--chunks", chunks, "chunks at most (-1: all)")->capture_default_str();
  app.add_option("-t,--threads", threads, "threads (0 = the physical cores usable)")->capture_default_str();
  app.add_option("--kv-type", kv_type, "KV cache type: f32, f16, q8_0")->capture_default_str();
  app.add_flag("--verbose", verbose, "model details on stderr");
  app.add_flag("-q,--quiet", quiet, "nothing on stderr but errors");
  cli::parse(app, argc, argv);
  if (model_path.empty()) model_path = model_pos;
  if (model_path.empty()) {
    std::fprintf(stderr, "%s: no model given (minfer perplexity MODEL.gguf -f TEXT)\n", argv[0]);
    return 2;
  }
  if (n_ctx < 2 || n_ctx > (int64_t(1) << 20)) fail("-c {}: a chunk must be 2 to 1048576 tokens", n_ctx);
  if (n_batch < 1) fail("-b {}: must be >= 1", n_batch);
  if (threads < 0) fail("-t {}: the thread count must be > 0", threads);
  const GgmlType kv = cli::parse_kv_type(kv_type);
  if (kl_divergence && kl_base.empty()) fail("--kl-divergence needs --kl-divergence-base FILE (written by a run of the base model)");
  if (!kl_divergence && file.empty()) fail("-f FILE: the text to measure is required");

  cli::Log log;
  log.quiet = quiet;
  log.verbose = verbose;
  const cli::Loaded loaded = cli::load_model(model_path, log);
  const runtime::Model& model = *loaded.model;
  const tok::Tokenizer& tok = model.tokenizer();
  std::unique_ptr<runtime::KldBaseReader> base;
  std::vector<int32_t> tokens;
  if (kl_divergence) {  // the base run's text and chunks
    base = std::make_unique<runtime::KldBaseReader>(kl_base, model.n_vocab());
    tokens = base->tokens();
    n_ctx = base->n_ctx();
  } else {
    // llama-perplexity's tokenization: BOS as the vocabulary says, special tokens as text.
    tokens = tok.encode(cli::read_text_file(file, "text"), tok.add_bos(), /*parse_special=*/false);
  }
  runtime::ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.n_threads = threads;
  cp.kv_type = kv;
  runtime::Context ctx(model, cp);
  log.detail("perplexity: {} tokens, {} chunks of {}, batch {}", tokens.size(),
             runtime::perplexity_chunks(int64_t(tokens.size()), n_ctx, chunks), n_ctx,
             std::min(n_batch, n_ctx));
  std::unique_ptr<runtime::KldBaseWriter> writer;
  if (!kl_base.empty() && !kl_divergence) writer = std::make_unique<runtime::KldBaseWriter>(kl_base, n_ctx, model.n_vocab(), tokens);
  runtime::KldStats stats;
  runtime::ScoredPosition on_scored;
  if (writer) on_scored = [&](int64_t, std::span<const double> lp, int32_t) { writer->add(lp); };
  if (base) on_scored = [&](int64_t, std::span<const double> lp, int32_t next) { stats.add(base->next(), lp, next); };
  const runtime::PerplexityResult r =
      runtime::perplexity(ctx, tokens, n_ctx, n_batch, tok.add_bos() ? tok.bos() : -1, chunks,
                          [](int64_t chunk, double running) {
                            std::printf("[%lld]%.4f,", (long long)chunk + 1, running);
                            std::fflush(stdout);
                          }, on_scored);
  std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.stderr_ppl);
  if (writer) {
    writer->finish();
    log.info("KL-divergence base: {} positions written to {}", r.n_scored, kl_base);
  }
  if (base) std::printf("\n%s", stats.summary().c_str());
  return 0;
}

}  // namespace

MINFER_COMMAND(perplexity, "perplexity of a text file, chunk by chunk (like llama-perplexity)", run_perplexity);
