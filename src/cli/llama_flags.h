// llama.cpp's command-line conventions that CLI11 does not have: its short flags of two or more
// letters ("-ngl", "-md": CLI11 names short flags with one letter and would read "-ngl 99" as
// "-n gl 99"), and its escape sequences in prompts.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace minfer::cli {

// argv with llama.cpp's multi-letter short flags given as the long forms minfer's commands
// define ("-ngl" -> "--n-gpu-layers"); nothing after "--" is touched. A llama.cpp flag minfer
// has no counterpart for (-ot, -np, -hf, ...) is an Error that names its long form and why.
std::vector<char*> with_llama_cpp_flags(int argc, char** argv);

// llama.cpp's string_process_escapes (its -e, on by default): \n \r \t \' \" \\ and \xHH become
// the characters they name; any other backslash stays as written.
std::string process_escapes(const std::string& s);

// llama.cpp's flags for GPU offload, flash attention and the K and V cache types, which change
// nothing or one thing on minfer's CPU path: run, chat and serve take them, and bench (llama-bench
// spells them alike; its -fa takes 0/1 and lists).
struct HardwareFlags {
  std::string n_gpu_layers, n_gpu_layers_draft;  // -ngl, -ngld: N, auto or all (a warning for N > 0)
  std::string flash_attn;                        // -fa: on, off, auto, 1, 0 (a warning for off)
  std::string cache_type_k, cache_type_v;        // -ctk, -ctv: one type for both here

  void add_to(CLI::App& app);
  // Error for a value they do not take, or -ctk and -ctv apart; then `warn` for what would
  // change something on a GPU build of llama.cpp.
  void check(const std::function<void(const std::string&)>& warn) const;
  // The KV cache type -ctk/-ctv name, else `kv_type`.
  const std::string& kv_type_or(const std::string& kv_type) const;
};

}  // namespace minfer::cli
