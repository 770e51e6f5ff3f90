// Hyperparameters of a llama-family model (llama, qwen2, qwen3), read from a GGUF file's
// "{arch}.*" keys with llama.cpp's defaults, and checked against the tensors actually present.
#pragma once
#include <cstdint>
#include <string>

#include "graph/ir.h"
#include "quant/types.h"

namespace minfer::gguf {
class File;
}

namespace minfer::models {

class TensorTable;

enum class Arch : uint8_t { Llama, Qwen2, Qwen3 };

// Error "unsupported architecture 'phi3'" for anything else.
Arch arch_from_name(const std::string& name);
const char* arch_name(Arch a);

struct HParams {
  Arch arch = Arch::Llama;
  int64_t n_vocab = 0;       // rows of token_embd.weight
  int64_t n_ctx_train = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_ff = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;      // of Q and K (attention.key_length, default n_embd / n_head)
  int64_t head_dim_v = 0;    // of V (attention.value_length, default head_dim)
  int64_t n_rot = 0;         // rope.dimension_count, default head_dim
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor (linear and YaRN scaling)
  graph::RopeYarn rope_yarn;     // rope.scaling.type yarn, rope.scaling.attn_factor
  float rms_eps = 1e-5f;
  bool neox_rope = false;    // qwen2/qwen3 rotate pairs (i, i + n_rot/2); llama (2i, 2i+1)
  bool tied_output = false;  // no output.weight: the lm_head is token_embd.weight
  bool qkv_bias = false;     // attn_{q,k,v}.bias present
  bool qk_norm = false;      // qwen3: attn_q_norm / attn_k_norm per-head RMSNorm
  bool rope_freqs = false;   // rope_freqs.weight present (llama 3 frequency factors)
  // {arch}.pooling_type, how an embedding model pools its hidden states (llama.cpp's enum:
  // 0 none, 1 mean, 2 cls, 3 last, 4 rank); -1 when the file does not say (generative models).
  int pooling = -1;

  int64_t n_embd_q() const { return n_head * head_dim; }
  int64_t n_embd_k() const { return n_head_kv * head_dim; }
  int64_t n_embd_v() const { return n_head_kv * head_dim_v; }
  int64_t n_embd_attn_out() const { return n_head * head_dim_v; }
};

// Reads the keys (llama.cpp's defaults where optional), takes the optional features (tied
// output, biases, q/k norms, rope_freqs) from the tensors present in `t`, then runs
// check_tensors. Errors name the file and the key or tensor.
HParams hparams_from_gguf(const gguf::File& f, const TensorTable& t);

// Every tensor the forward pass needs is present with the right shape and a type the
// kernels compute with: "missing tensor blk.3.attn_k.weight", "tensor blk.0.attn_q.weight:
// shape [64, 32] but [64, 64] expected".
void check_tensors(const HParams& hp, const TensorTable& t);

}  // namespace minfer::models
