// `minfer gen-model`: writes a synthetic model (random weights, real shapes) for tests,
// benchmarks and the demo.
#include <cstdio>

#include "cli/command.h"
#include "cli/progress.h"
#include "common/error.h"
#include "tools/gen_model.h"

namespace {

minfer::GgmlType parse_type(const std::string& s, const char* flag) {
  auto t = minfer::type_from_name(s);
  if (!t) minfer::fail("{}: unknown type '{}' (e.g. f32, f16, q8_0, q4_0)", flag, s);
  return *t;
}

int run_gen_model(int argc, char** argv) {
  using namespace minfer;
  CLI::App app{"Write a synthetic GGUF model: real architecture and shapes, deterministic "
               "random weights (their output is gibberish).",
               argv[0]};
  std::string preset, type = "q8_0", embd_type, output_type, tokenizer, chat_template, out;
  uint64_t seed = 1;
  int64_t layers = 0;
  bool list = false, quiet = false;
  app.add_option("--preset", preset, "model shape (see --list)");
  app.add_option("--type", type, "weight type of the matrices: f32, f16, q8_0, q4_0, ...")
      ->capture_default_str();
  app.add_option("--embd-type", embd_type, "type of token_embd (default: q8_0 for q4_0, else --type)");
  app.add_option("--output-type", output_type, "type of output.weight (untied presets)");
  app.add_option("--tokenizer", tokenizer,
                 "HF tokenizer.json, or a .gguf to copy tokenizer.* from (default: built-in "
                 "byte-level tokenizer)");
  app.add_option("--chat-template", chat_template, "Jinja chat template file to embed");
  app.add_option("-s,--seed", seed, "weight seed")->capture_default_str();
  app.add_option("--layers", layers, "override the number of layers")->check(CLI::Range(1, 1000));
  app.add_option("-o,--output", out, "output .gguf path");
  app.add_flag("--list", list, "list the presets and exit");
  app.add_flag("-q,--quiet", quiet, "no progress output");
  cli::parse(app, argc, argv);

  if (list) {
    for (const auto& p : tools::presets())
      std::printf("%-15s %-6s layers %3lld  embd %5lld  ff %5lld  heads %2lld/%-2lld  head_dim %3lld  %s\n",
                  p.name.c_str(), p.arch.c_str(), (long long)p.n_layer, (long long)p.n_embd,
                  (long long)p.n_ff, (long long)p.n_head, (long long)p.n_head_kv,
                  (long long)p.head_dim, p.note.c_str());
    return 0;
  }
  if (preset.empty()) {
    std::fprintf(stderr, "%s: --preset is required (see --list)\n", argv[0]);
    return 2;
  }
  if (out.empty()) {
    std::fprintf(stderr, "%s: -o/--output is required\n", argv[0]);
    return 2;
  }
  tools::GenModelOptions o;
  o.preset = preset;
  o.type = parse_type(type, "--type");
  if (!embd_type.empty()) o.embd_type = parse_type(embd_type, "--embd-type");
  if (!output_type.empty()) o.output_type = parse_type(output_type, "--output-type");
  o.seed = seed;
  o.tokenizer = tokenizer;
  o.chat_template_file = chat_template;
  o.n_layer = layers;
  cli::Progress bar("writing", !quiet);
  o.progress = [&](double f) { bar.update(f); };
  const auto info = tools::generate_model(o, out);
  bar.finish();
  if (!quiet)
    std::fprintf(stderr, "wrote %s: preset %s, %s, %.1f M parameters, %.1f MB, vocab %lld, seed %llu\n",
                 out.c_str(), preset.c_str(), type.c_str(), double(info.n_params) / 1e6,
                 double(info.n_bytes) / 1e6, (long long)info.n_vocab, (unsigned long long)seed);
  return 0;
}

}  // namespace

// Registered by hand: the command word has a dash, which MINFER_COMMAND's identifier cannot.
static const bool gen_model_registered = minfer::cli::register_command(
    {"gen-model", "write a synthetic model with random weights (tests, benchmarks)", run_gen_model});
