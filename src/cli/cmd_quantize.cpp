// `minfer quantize IN.gguf OUT.gguf TYPE [--threads N] [--imatrix FILE] [--pure]
// [--output-tensor-type T] [--token-embedding-type T] [--tensor-type NAME=T ...]
// [--tensor-type-file FILE]`: llama-quantize's job (same mixes, same bytes), with a progress bar
// on a terminal and a size summary at the end.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/progress.h"
#include "common/error.h"
#include "tools/imatrix.h"
#include "tools/quantize.h"
#include "quant/quant.h"
#include "tools/quantize_rules.h"

namespace {

using namespace minfer;

double mib(uint64_t b) { return double(b) / (1024.0 * 1024.0); }

int run_quantize(int argc, char** argv) {
  std::string types;
  for (std::string_view n : tools::ftype_names())
    types += std::string(types.empty() ? "" : ", ") + std::string(n);
  CLI::App app{"Quantize a GGUF model with llama-quantize's per-tensor rules.\nTYPE: " + types,
               "minfer quantize"};
  std::string in, out, type, imatrix_path, output_type, embd_type, tensor_type_file;
  std::vector<std::string> tensor_types;
  tools::TypeOverrides overrides;
  int threads = 0;
  bool quiet = false;
  app.add_option("input", in, "input model (.gguf)")->required();
  app.add_option("output", out, "output model (.gguf)")->required();
  app.add_option("type", type, "target type, e.g. Q4_K_M, Q8_0, or its llama_ftype number (15)")->required();
  app.add_option("-t,--threads", threads, "threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--imatrix", imatrix_path, "importance matrix from llama-imatrix (GGUF or legacy .dat)");
  app.add_flag("--pure", overrides.pure, "no per-tensor mix: every quantized tensor gets TYPE's type");
  app.add_option("--output-tensor-type", output_type, "type of output.weight, e.g. q8_0");
  app.add_option("--token-embedding-type", embd_type, "type of token_embd.weight, e.g. q8_0");
  app.add_option("--tensor-type", tensor_types,
                 "NAME=TYPE: tensors whose name contains NAME (a regular expression) get TYPE; repeatable");
  app.add_option("--tensor-type-file", tensor_type_file, "NAME=TYPE entries, separated by spaces or newlines");
  app.add_flag("-q,--quiet", quiet, "no progress bar");
  cli::parse(app, argc, argv);
  if (!tools::find_ftype(type)) fail("unknown type '{}': expected one of {}", type, types);
  if (in == out) fail("output {} would overwrite the input", out);
  auto tensor_type = [](const std::string& flag, const std::string& name) -> std::optional<GgmlType> {
    if (name.empty()) return std::nullopt;
    const std::optional<GgmlType> t = type_from_name(name);
    if (!t || !quant::can_quantize(*t) || *t == GgmlType::Q8_1 || *t == GgmlType::Q8_K)
      fail("{}: '{}' is not a weight type minfer can write (e.g. f16, q8_0, q6_K, q4_K)", flag, name);
    return t;
  };
  overrides.output = tensor_type("--output-tensor-type", output_type);
  overrides.token_embd = tensor_type("--token-embedding-type", embd_type);
  if (!tensor_type_file.empty()) {
    std::ifstream f(tensor_type_file);
    if (!f) fail("--tensor-type-file: cannot open {}", tensor_type_file);
    for (std::string entry; f >> entry;) tensor_types.push_back(entry);
  }
  for (const std::string& entry : tensor_types) {  // NAME=TYPE, NAME lowercased as llama-quantize does
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size())
      fail("--tensor-type: '{}' is not NAME=TYPE", entry);
    std::string name = entry.substr(0, eq);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    overrides.tensor_types.emplace_back(name, *tensor_type("--tensor-type", entry.substr(eq + 1)));
  }

  std::optional<tools::Imatrix> imatrix;
  if (!imatrix_path.empty()) {
    imatrix = tools::load_imatrix(imatrix_path);
    if (!quiet)
      std::fprintf(stderr, "imatrix %s: %zu entries, %d chunks%s%s\n", imatrix_path.c_str(), imatrix->weights.size(),
                   imatrix->chunk_count, imatrix->datasets.empty() ? "" : ", dataset ",
                   imatrix->datasets.empty() ? "" : imatrix->datasets[0].c_str());
  }

  cli::Progress bar("quantizing", !quiet);
  const tools::QuantizeReport r = tools::quantize_model(
      in, out, type, threads,
      [&](int done, int total, const std::string&) { bar.update(double(done) / total); },
      imatrix ? &*imatrix : nullptr, &overrides);
  bar.finish();

  std::fprintf(stderr, "%s: %d tensors, %d converted", out.c_str(), r.n_tensors, r.n_converted);
  if (r.n_fallback > 0)
    std::fprintf(stderr, ", %d with fallback types (rows not divisible by the type's blocks)", r.n_fallback);
  std::fprintf(stderr, "\nmodel size: %.2f MiB -> %.2f MiB (tensors %.2f MiB -> %.2f MiB)\n",
               mib(r.file_bytes_in), mib(r.file_bytes_out), mib(r.bytes_in), mib(r.bytes_out));
  return 0;
}

}  // namespace

MINFER_COMMAND(quantize, "convert a model's weights to another format (Q4_K_M, Q8_0, ...)",
               run_quantize);
