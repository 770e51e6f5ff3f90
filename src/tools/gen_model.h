// Synthetic GGUF models: real architectures and shapes, llama.cpp tensor names and keys,
// deterministic pseudo-random weights. The weight stream is the one of the reference generator
// (/work/shared/oracle/make-model.mjs): each tensor has its own xoshiro128** stream seeded from
// (seed, tensor name), samples are Irwin-Hall(4) approximately normal values, so the same
// preset, seed and tokenizer give the same tensors bit for bit (and the shared synthetic
// models can be regenerated). Tensors are produced row block by row block while the file is
// written: a multi-GB model never sits in memory.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quant/types.h"

namespace minfer::tools {

struct ModelPreset {
  std::string name, arch;
  int64_t n_layer = 0, n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0, head_dim = 0;
  int64_t n_ctx_train = 0;
  double rope_base = 1e4, eps = 1e-5;
  bool tied = true, bias = false, qk_norm = false;
  // Weight scales: std of matrices, extra factor on attn_q/attn_k, mean of output_norm (sets
  // the logit spread of tied models), qwen2 bias std, mean of qwen3 q/k norm weights.
  double std = 0.02, qk_scale = 1, out_norm_scale = 1, bias_std = 0.1, qk_norm_scale = 1;
  // The checkpoint's embedding rows: a tokenizer read from a file is padded up to it with
  // "[PADi]" UNUSED tokens, as llama.cpp's converter does (0 = the tokenizer's own count).
  int64_t n_vocab = 0;
  // Llama 3 rope scaling (HF rope_scaling {rope_type llama3, factor, low/high_freq_factor,
  // original_max_position_embeddings}); factor 0 = none. Stored as rope_freqs.weight.
  double rope_llama3_factor = 0, rope_low_freq_factor = 1, rope_high_freq_factor = 4;
  int64_t rope_orig_ctx = 8192;
  std::string note;
};

const std::vector<ModelPreset>& presets();
const ModelPreset& find_preset(std::string_view name);  // Error listing the known names

struct GenModelOptions {
  std::string preset;
  GgmlType type = GgmlType::Q8_0;
  std::optional<GgmlType> embd_type;    // default: Q8_0 for Q4_0 models, else `type`
  std::optional<GgmlType> output_type;  // default: the embedding type (untied presets)
  uint64_t seed = 1;
  // "" = the built-in byte-level tokenizer; a HF tokenizer.json; or a .gguf whose tokenizer.*
  // keys are copied.
  std::string tokenizer;
  std::string chat_template_file;  // overrides the tokenizer's template when given
  int64_t n_layer = 0;             // 0 = the preset's
  std::function<void(double)> progress;  // fraction of tensor bytes written
};

struct GenModelInfo {
  std::string path;
  uint64_t n_params = 0;
  uint64_t n_bytes = 0;
  int64_t n_vocab = 0;
  GgmlType embd_type = GgmlType::F32;
};

// The tensors a preset's file holds, in file order, with the weight distribution of each.
struct TensorSpec {
  std::string name;
  GgmlType type;
  std::vector<int64_t> ne;  // ggml order
  double mean, std;
  std::vector<float> values;  // fixed contents instead of random ones (rope_freqs.weight)
};
std::vector<TensorSpec> tensor_plan(const ModelPreset& p, int64_t n_vocab, GgmlType type,
                                    GgmlType embd_type, GgmlType output_type);

// rope_freqs.weight of a Llama 3 preset as llama.cpp's converter computes it (float32, one
// factor per rotated pair: 1 for short wavelengths, `factor` for long ones, smoothed between).
std::vector<float> llama3_rope_factors(const ModelPreset& p);

// Writes the model (atomically: to OUT.tmp, then renamed). Error on a bad option.
GenModelInfo generate_model(const GenModelOptions& opts, const std::string& out_path);

// The special tokens of the built-in byte-level tokenizer and its ChatML chat template.
const std::vector<std::string>& byte_level_specials();
const std::string& byte_level_chat_template();

// The reference generator's weight stream: n values mean + std * z from the stream of
// (seed, name), continuing where the previous call on the same stream stopped.
class NormalStream {
 public:
  NormalStream(uint64_t seed, std::string_view name);
  void fill(float* dst, size_t n, double mean, double std);

 private:
  uint32_t s_[4];
};

}  // namespace minfer::tools
