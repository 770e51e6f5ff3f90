// `minfer embed`: llama.cpp's llama-embedding. The prompt is split into inputs at the separator
// (a newline by default); each input's embedding (pooled as the model or --pooling says,
// normalized as --embd-normalize says) goes to stdout in llama-embedding's formats: lines of
// values with a cosine-similarity matrix for several inputs, or OpenAI-style JSON, or a bare
// JSON array.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/llama_flags.h"
#include "cli/run_common.h"
#include "cli/split.h"
#include "common/error.h"
#include "runtime/context.h"
#include "runtime/cpu_count.h"
#include "runtime/embed.h"
#include "runtime/model.h"
#include "tokenizer/tokenizer.h"

namespace minfer::cli {
namespace {

// llama.cpp's common_embd_similarity_cos (two zero vectors are alike, one is like nothing).
double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  if (na == 0 || nb == 0) return na == 0 && nb == 0 ? 1.0 : 0.0;
  return dot / (std::sqrt(na) * std::sqrt(nb));
}

// llama-embedding's plain output: each vector's values (all of one, the first 16 of several;
// the first and last three per token with pooling none), "%9.6f" or, for the int16 scaling,
// "%6.0f"; then for several inputs the cosine-similarity matrix.
std::string plain_text(const std::vector<std::vector<float>>& vecs, const std::vector<std::string>& inputs,
                       bool per_token, int norm) {
  auto value = [&](float v) { return norm == 0 ? fmt::format("{:6.0f} ", v) : fmt::format("{:9.6f} ", v); };
  std::string out = "\n";
  for (size_t j = 0; j < vecs.size(); ++j) {
    const std::vector<float>& v = vecs[j];
    out += fmt::format("embedding {}: ", j);
    if (per_token) {
      for (size_t i = 0; i < std::min<size_t>(3, v.size()); ++i) out += value(v[i]);
      out += " ... ";
      for (size_t i = v.size() > 3 ? v.size() - 3 : 0; i < v.size(); ++i) out += value(v[i]);
    } else {
      const size_t n = vecs.size() > 1 ? std::min<size_t>(16, v.size()) : v.size();
      for (size_t i = 0; i < n; ++i) out += value(v[i]);
    }
    out += "\n";
  }
  if (!per_token && vecs.size() > 1) {
    out += "\ncosine similarity matrix:\n\n";
    for (const std::string& in : inputs) out += fmt::format("{:>6.6} ", in);
    out += "\n";
    for (size_t i = 0; i < vecs.size(); ++i) {
      for (size_t j = 0; j < vecs.size(); ++j) out += fmt::format("{:6.2f} ", cosine(vecs[i], vecs[j]));
      out += fmt::format("{:.10}\n", inputs[i]);
    }
  }
  return out;
}

// llama-embedding's --embd-output-format json / json+ / array.
std::string json_text(const std::vector<std::vector<float>>& vecs, const std::vector<std::string>& inputs,
                      const std::string& format, int norm) {
  const bool list = format != "array";
  std::string out = list ? "{\n  \"object\": \"list\",\n  \"data\": [\n" : "[";
  for (size_t j = 0; j < vecs.size(); ++j) {
    if (list) out += fmt::format("    {{\n      \"object\": \"embedding\",\n      \"index\": {},\n      \"embedding\": ", j);
    out += "[";
    for (size_t i = 0; i < vecs[j].size(); ++i) {
      if (i) out += ',';
      out += norm == 0 ? fmt::format("{:.0f}", vecs[j][i]) : fmt::format("{:.7f}", vecs[j][i]);
    }
    out += list ? "]\n    }" : "]";
    if (j + 1 < vecs.size()) out += list ? ",\n" : ",";
  }
  out += list ? "\n  ]" : "]\n";
  if (format == "json+" && inputs.size() > 1) {
    out += ",\n  \"cosineSimilarity\": [\n";
    for (size_t i = 0; i < vecs.size(); ++i) {
      out += "    [";
      for (size_t j = 0; j < vecs.size(); ++j) out += fmt::format("{}{:6.2f}", j ? ", " : "", cosine(vecs[i], vecs[j]));
      out += i + 1 < vecs.size() ? "],\n" : "]\n";
    }
    out += "  ]";
  }
  if (list) out += "\n}\n";
  return out;
}

int run_embed(int argc, char** argv) {
  CLI::App app{"Embeddings of text, one per line of the prompt (like llama-embedding)", argv[0]};
  std::string model_path, model_pos, prompt, prompt_file, pooling, format, separator = "\n", kv_type = "f16";
  int norm = 2, threads = 0;
  int64_t n_ctx = 0, batch_size = 2048, ubatch_size = 512;
  bool escape = true, verbose = false, quiet = false, use_mmap = true;
  app.add_option("-m,--model", model_path, "GGUF model file");
  app.add_option("model", model_pos, "GGUF model file (instead of -m)");
  app.add_option("-p,--prompt", prompt, "text; each piece between separators is one input");
  app.add_option("-f,--file", prompt_file, "read the text from FILE");
  app.add_option("--pooling", pooling, "mean, cls, last or none (default: the model's pooling_type)")
      ->check(CLI::IsMember({"none", "mean", "cls", "last"}));
  app.add_option("--embd-normalize", norm,
                 "-1 none, 0 max-abs to int16, 1 taxicab, 2 euclidean, >2 p-norm")->capture_default_str();
  app.add_option("--embd-output-format", format, "'' (lines), array, json or json+ (with cosine similarities)")
      ->check(CLI::IsMember({"", "array", "json", "json+"}));
  app.add_option("--embd-separator", separator, "what separates the inputs (default: a newline)");
  app.add_option("-c,--ctx-size", n_ctx, "context size (0 = the model's, capped at 4096)")->capture_default_str();
  app.add_option("-t,--threads", threads, "threads (0 = the physical cores usable)")->capture_default_str();
  app.add_option("-b,--batch-size", batch_size, "tokens per decode call (with --ubatch-size, the smaller)")
      ->capture_default_str();
  app.add_option("--ubatch-size", ubatch_size, "-ub: tokens per decode call (with -b, the smaller)")
      ->capture_default_str();
  app.add_option("--kv-type", kv_type, "KV cache type: f32, f16, q8_0")->capture_default_str();
  app.add_flag("-e,--escape,!--no-escape", escape, "process escapes in the prompt (default: on, as llama.cpp)");
  app.add_flag("--mmap,!--no-mmap", use_mmap, "map the model file (default); --no-mmap reads it into memory");
  app.add_flag("--verbose", verbose, "model details on stderr");
  app.add_flag("-q,--quiet", quiet, "nothing on stderr but errors");
  parse(app, argc, argv);
  if (model_path.empty()) model_path = model_pos;
  if (model_path.empty()) {
    std::fprintf(stderr, "%s: no model given (minfer embed MODEL.gguf -p TEXT)\nRun '%s --help' for usage.\n",
                 argv[0], argv[0]);
    return 2;
  }
  if (prompt.empty() == prompt_file.empty()) {
    std::fprintf(stderr, "%s: give the text with one of -p and -f\n", argv[0]);
    return 2;
  }
  if (norm < -1) fail("--embd-normalize {}: must be -1 (none), 0, 1, 2 or a larger p", norm);
  if (batch_size < 1 || ubatch_size < 1) fail("-b/-ub: must be >= 1");
  if (threads < 0) fail("-t {}: the thread count must be > 0", threads);
  if (!prompt_file.empty()) {
    prompt = read_text_file(prompt_file, "prompt");
    if (prompt.ends_with('\n')) prompt.pop_back();
  }
  if (escape) prompt = process_escapes(prompt);

  Log log;
  log.quiet = quiet;
  log.verbose = verbose;
  Loaded loaded = load_model(model_path, log, use_mmap);
  const runtime::Model& model = *loaded.model;
  runtime::Pooling pool = runtime::Pooling::None;
  if (!pooling.empty()) pool = runtime::pooling_from_name(pooling);
  else if (model.hparams().pooling >= 0) pool = runtime::Pooling(model.hparams().pooling);
  else fail("{}: the model names no pooling type ({}.pooling_type): give --pooling mean, cls, last or none",
            model_path, model.arch());
  if (pool == runtime::Pooling::Rank) fail("{}: a reranking model (pooling rank) gives no embeddings", model_path);

  runtime::ContextParams cp;
  cp.embeddings = true;
  cp.kv_type = parse_kv_type(kv_type);
  cp.n_ctx = choose_n_ctx(model, n_ctx, cp.kv_type);
  cp.n_threads = threads > 0 ? threads : runtime::usable_physical_cores();
  runtime::Context ctx(model, cp);

  const std::vector<std::string> inputs = split(prompt, separator);
  const tok::Tokenizer& tok = model.tokenizer();
  const int64_t n_batch = std::min(batch_size, ubatch_size);
  std::vector<std::vector<float>> vecs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int32_t> ids = tok.encode(inputs[i], /*add_special=*/true, /*parse_special=*/true);
    if (ids.empty()) fail("input {} is empty after tokenization", i);
    if (int64_t(ids.size()) > ctx.n_ctx())
      fail("input {} is {} tokens, more than the context of {} (use -c)", i, ids.size(), ctx.n_ctx());
    log.detail("input {}: {} tokens", i, ids.size());
    if (pool == runtime::Pooling::None) {
      for (std::vector<float>& v : runtime::embed_tokens(ctx, ids, n_batch, norm)) vecs.push_back(std::move(v));
    } else {
      vecs.push_back(runtime::embed(ctx, ids, pool, n_batch, norm));
    }
  }
  const std::string out = format.empty() ? plain_text(vecs, inputs, pool == runtime::Pooling::None, norm)
                                         : json_text(vecs, inputs, format, norm);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace
}  // namespace minfer::cli

MINFER_COMMAND(embed, "embeddings of text, one per line (like llama-embedding)", minfer::cli::run_embed);
