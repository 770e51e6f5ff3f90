// `minfer eval`: evaluates a token sequence in ONE prefill and prints, for the last position
// (or every position with --all), one JSON line {"pos": i, "top": [{"id", "logprob"}, ...]}
// with log-probabilities over the whole vocabulary: the format the golden files compare.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/run_common.h"
#include "common/error.h"
#include "quant/types.h"
#include "runtime/context.h"
#include "runtime/logprobs.h"
#include "runtime/model.h"

namespace {

std::vector<int32_t> parse_tokens(const std::string& s) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(s);
  } catch (const nlohmann::json::exception& e) {
    minfer::fail("--tokens: not a JSON array of token ids: {}", e.what());
  }
  if (!j.is_array() || j.empty()) minfer::fail("--tokens: expected a non-empty JSON array of ids");
  std::vector<int32_t> ids;
  for (const auto& v : j) {
    if (!v.is_number_integer()) minfer::fail("--tokens: {} is not an integer token id", v.dump());
    const int64_t x = v.get<int64_t>();
    if (x < 0 || x > INT32_MAX) minfer::fail("--tokens: token id {} is out of range", x);
    ids.push_back(int32_t(x));
  }
  return ids;
}

int run_eval(int argc, char** argv) {
  CLI::App app{"Evaluate a token sequence in one batch and print next-token log-probabilities",
               "minfer eval"};
  std::string model_path, tokens, kv_type = "f32";
  int top = 20;
  bool all = false, verbose = false;
  int threads = 0;
  int64_t n_ctx = 0;
  app.add_option("-m,--model", model_path, "GGUF model file")->required();
  app.add_option("--tokens", tokens, "token ids as a JSON array, e.g. '[1, 15043]'")->required();
  app.add_option("--top", top, "how many of the most probable ids to print")->check(CLI::PositiveNumber);
  app.add_flag("--all", all, "print every position, not only the last");
  app.add_option("-t,--threads", threads, "threads (default: physical cores usable)");
  app.add_option("-c,--ctx-size", n_ctx, "context size (default: min(train context, 4096))");
  app.add_option("--kv-type", kv_type, "KV cache type: f32, f16 or q8_0");
  app.add_flag("-v,--verbose", verbose, "print model and graph statistics on stderr");
  minfer::cli::parse(app, argc, argv);

  const std::vector<int32_t> ids = parse_tokens(tokens);
  minfer::runtime::LoadOptions lo;
  lo.verbose = verbose;
  auto model = minfer::runtime::Model::load(model_path, lo);
  minfer::runtime::ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.n_threads = threads;
  cp.kv_type = minfer::cli::parse_kv_type(kv_type);
  minfer::runtime::Context ctx(*model, cp);
  const int64_t nt = int64_t(ids.size());
  const int64_t n_out = all ? nt : 1;
  std::span<const float> logits = ctx.decode(ids, n_out);
  const int64_t n_vocab = model->n_vocab();
  for (int64_t r = 0; r < n_out; ++r) {
    const auto lp = minfer::runtime::log_softmax(logits.subspan(size_t(r * n_vocab), size_t(n_vocab)));
    const auto best = minfer::runtime::top_logprobs(lp, size_t(top));
    std::string line = fmt::format("{{\"pos\": {}, \"top\": [", nt - n_out + r);
    for (size_t i = 0; i < best.size(); ++i) {
      line += fmt::format("{}{{\"id\": {}, \"logprob\": {:.6f}}}", i ? ", " : "", best[i].id,
                          best[i].logprob);
    }
    line += "]}\n";
    std::fputs(line.c_str(), stdout);
  }
  if (verbose) {
    const auto& s = ctx.stats();
    std::fprintf(stderr, "eval: %lld tokens in %.1f ms (graph build %.1f ms), graphs built %llu, reused %llu\n",
                 (long long)s.tokens_evaluated, s.t_eval_ms, s.t_build_ms,
                 (unsigned long long)s.graphs_built, (unsigned long long)s.graph_reuses);
  }
  return 0;
}

}  // namespace

MINFER_COMMAND(eval, "evaluate token ids in one batch and print next-token log-probabilities",
               run_eval);
