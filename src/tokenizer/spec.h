// What a tokenizer is, as GGUF stores it: the tokenizer.* keys, optional ones as optional.
// Every source (a GGUF file, an HF tokenizer.json, the byte-level demo vocabulary) produces
// a Spec; one function (build_impl) then applies llama.cpp's loading rules, so a Spec
// written with write_gguf and read back gives the same tokenizer by construction.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace minfer::tok::detail {

struct Spec {
  std::string source;  // for messages: a path or a description
  std::string model;   // tokenizer.ggml.model
  std::optional<std::string> pre;
  std::vector<std::string> tokens;
  std::vector<float> scores;       // empty when absent
  std::vector<int32_t> types;      // empty when absent
  std::vector<std::string> merges; // "left right"
  std::optional<uint32_t> bos, eos, eot, eom, unk, sep, pad, mask;
  std::optional<uint32_t> fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
  std::optional<bool> add_bos, add_eos, add_space_prefix, remove_extra_whitespaces;
  std::optional<std::string> chat_template;
  std::string general_name;  // llama.cpp sets Phi-3 attributes from it; not written back
};

}  // namespace minfer::tok::detail
