// llama-quantize's per-tensor type rules (llama.cpp src/llama-quant.cpp: which tensors are
// quantized, llama_tensor_get_type's mixes and its fallback for rows that do not divide
// into 256-blocks). Pure decisions, no I/O: quantize.cpp applies them.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "quant/types.h"

namespace minfer::tools {

// A llama.cpp "file type" (llama_ftype): the name llama-quantize accepts, the value stored
// in general.file_type, and the tensor type most weights get.
struct Ftype {
  std::string_view name;
  uint32_t value;
  GgmlType default_type;
};

// By name (case-insensitive) or llama_ftype number; nullptr if unknown.
const Ftype* find_ftype(std::string_view name);
std::vector<std::string_view> ftype_names();

// Whether converting tensor `name` to `type` in an `ftype` file needs importance weights
// (llama.cpp's tensor_requires_imatrix): of the types minfer writes, only Q2_K in a Q2_K_S
// file, the embedding and the output excepted.
bool requires_imatrix(std::string_view name, GgmlType type, const Ftype& ftype);

// What the rules need to know about the model (from its metadata and tensor list).
struct ModelShape {
  std::string arch;
  int n_layer = 0;          // {arch}.block_count
  int n_head = 0;           // {arch}.attention.head_count
  int n_head_kv = 0;        // {arch}.attention.head_count_kv (n_head when absent)
  int n_expert = 0;         // {arch}.expert_count
  bool has_output = false;  // an "output.weight" tensor exists (else token_embd is tied)
  int n_attention_wv = 0;   // tensors named *attn_v.weight, *attn_qkv.weight, *attn_kv_b.weight
  bool has_imatrix = false; // quantizing with an importance matrix (a few rules depend on it)
};

// llama.cpp's processing order: tensors sorted by layer number ("blk.N."; others first),
// then by name. The per-layer counters below assume this order.
bool llama_tensor_order(const std::string& a, const std::string& b);

// Whether llama-quantize converts this tensor at all (2-D+ weights, not norms, not the
// small special tensors it keeps as they are).
bool should_quantize(std::string_view name, uint32_t n_dims);

// llama-quantize's --pure, --output-tensor-type, --token-embedding-type and --tensor-type.
struct TypeOverrides {
  bool pure = false;                     // every quantized tensor the ftype's type (then fallbacks)
  std::optional<GgmlType> output;        // output.weight (and a token_embd tied to it)
  std::optional<GgmlType> token_embd;    // token_embd.weight, per_layer_token_embd.weight
  // (ECMAScript regex, type): the first pattern found in a tensor's name gives its type, in
  // place of the mix (quantized targets only; the per-layer counters skip such tensors).
  std::vector<std::pair<std::string, GgmlType>> tensor_types;
};

class TypePlanner {
 public:
  TypePlanner(const Ftype& ftype, ModelShape shape, TypeOverrides overrides = {});
  // The type for a tensor that should_quantize() accepted; call once per such tensor in
  // llama_tensor_order. Throws minfer::Error for a row length no type in the fallback
  // chain can hold.
  GgmlType choose(const std::string& name, const std::array<int64_t, 4>& ne);
  int n_fallback() const { return n_fallback_; }
  int n_k_quantized() const { return n_k_quantized_; }

 private:
  GgmlType by_name(const std::string& name, const std::array<int64_t, 4>& ne);
  Ftype ftype_;
  ModelShape shape_;
  TypeOverrides overrides_;
  std::vector<std::pair<std::regex, GgmlType>> patterns_;  // overrides_.tensor_types, compiled
  int i_attention_wv_ = 0, i_ffn_down_ = 0, i_ffn_gate_ = 0, i_ffn_up_ = 0;
  int n_fallback_ = 0, n_k_quantized_ = 0;
};

}  // namespace minfer::tools
