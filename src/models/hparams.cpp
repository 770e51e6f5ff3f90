#include "models/hparams.h"

#include <cmath>
#include <optional>

#include "common/error.h"
#include "gguf/gguf.h"
#include "models/tensors.h"

namespace minfer::models {
namespace {

// Some converters write per-layer arrays (head_count_kv, feed_forward_length); we only
// support models whose layers agree, as llama.cpp's llama/qwen2/qwen3 graphs assume.
std::optional<int64_t> get_uniform_int(const gguf::File& f, const std::string& key) {
  const gguf::Value* v = f.find(key);
  if (v == nullptr) return std::nullopt;
  if (const gguf::Array* a = v->as_array()) {
    if (a->items.empty()) fail("{}: key {} is an empty array", f.path(), key);
    std::optional<int64_t> first = a->items[0].as_int();
    for (const gguf::Value& item : a->items) {
      std::optional<int64_t> x = item.as_int();
      if (!x || *x != *first) fail("{}: key {} varies per layer, which is not supported", f.path(), key);
    }
    return first;
  }
  std::optional<int64_t> x = v->as_int();
  if (!x) fail("{}: key {} is not an integer", f.path(), key);
  return x;
}

int64_t require_positive(const gguf::File& f, const std::string& key) {
  std::optional<int64_t> x = get_uniform_int(f, key);
  if (!x) fail("{}: missing key {}", f.path(), key);
  if (*x <= 0) fail("{}: key {} must be positive, got {}", f.path(), key, *x);
  return *x;
}

}  // namespace

Arch arch_from_name(const std::string& name) {
  if (name == "llama") return Arch::Llama;
  if (name == "qwen2") return Arch::Qwen2;
  if (name == "qwen3") return Arch::Qwen3;
  fail("unsupported architecture '{}' (supported: llama, qwen2, qwen3)", name);
}

const char* arch_name(Arch a) {
  switch (a) {
    case Arch::Llama: return "llama";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
  }
  return "?";
}

HParams hparams_from_gguf(const gguf::File& f, const TensorTable& t) {
  HParams hp;
  const std::string arch = f.architecture();
  hp.arch = arch_from_name(arch);
  const std::string p = arch + ".";

  // llama.cpp runs Mixtral-style files (arch llama, expert_count > 0, ffn_*_exps tensors) as
  // mixture-of-experts models; minfer has dense feed-forward layers only.
  if (std::optional<int64_t> experts = get_uniform_int(f, p + "expert_count"); experts && *experts > 0)
    fail("{}: mixture-of-experts models ({}expert_count = {}) are not supported", f.path(), p, *experts);
  hp.n_ctx_train = require_positive(f, p + "context_length");
  if (const auto pool = get_uniform_int(f, p + "pooling_type")) {
    if (*pool < 0 || *pool > 4) fail("{}: {}pooling_type {} is not one of llama.cpp's (0-4)", f.path(), p, *pool);
    hp.pooling = int(*pool);
  }
  hp.n_embd = require_positive(f, p + "embedding_length");
  hp.n_layer = require_positive(f, p + "block_count");
  hp.n_ff = require_positive(f, p + "feed_forward_length");
  hp.n_head = require_positive(f, p + "attention.head_count");
  hp.n_head_kv = get_uniform_int(f, p + "attention.head_count_kv").value_or(hp.n_head);
  if (hp.n_head_kv <= 0 || hp.n_head % hp.n_head_kv != 0) {
    fail("{}: attention.head_count_kv = {} does not divide head_count = {}", f.path(), hp.n_head_kv,
         hp.n_head);
  }
  if (hp.n_embd % hp.n_head != 0 && !f.find(p + "attention.key_length")) {
    fail("{}: embedding_length {} is not a multiple of head_count {}", f.path(), hp.n_embd, hp.n_head);
  }
  hp.head_dim = get_uniform_int(f, p + "attention.key_length").value_or(hp.n_embd / hp.n_head);
  hp.head_dim_v = get_uniform_int(f, p + "attention.value_length").value_or(hp.head_dim);
  hp.n_rot = get_uniform_int(f, p + "rope.dimension_count").value_or(hp.head_dim);
  if (hp.head_dim <= 0 || hp.head_dim_v <= 0) fail("{}: head dimensions must be positive", f.path());
  if (hp.n_rot <= 0 || hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0) {
    fail("{}: rope.dimension_count = {} must be even and at most the head size {}", f.path(),
         hp.n_rot, hp.head_dim);
  }

  hp.rope_freq_base = float(f.get_float(p + "rope.freq_base").value_or(10000.0));
  if (!(hp.rope_freq_base > 0)) fail("{}: rope.freq_base must be positive", f.path());
  // Rope scaling as llama.cpp reads it (llama_model::load_hparams, llama_context's cparams): the
  // type defaults to linear, "none" ignores the factor, YaRN mixes the scaled and unscaled angles
  // (ext_factor 1) and scales cos/sin by get_mscale(factor) / (1 + 0.1 ln factor); float
  // arithmetic as llama.cpp's.
  const std::string scaling = f.get_string(p + "rope.scaling.type").value_or("linear");
  if (scaling != "none" && scaling != "linear" && scaling != "yarn") {
    fail("{}: rope scaling type '{}' is not supported (none, linear, yarn)", f.path(), scaling);
  }
  double factor = f.get_float(p + "rope.scaling.factor").value_or(0.0);
  if (factor == 0.0) factor = f.get_float(p + "rope.scale_linear").value_or(0.0);
  if (factor < 0.0 || !std::isfinite(factor)) fail("{}: invalid rope scaling factor {}", f.path(), factor);
  const float ropescale = float(factor);
  hp.rope_freq_scale = ropescale == 0.0f || scaling == "none" ? 1.0f : 1.0f / ropescale;
  graph::RopeYarn& y = hp.rope_yarn;
  y.n_ctx_orig = get_uniform_int(f, p + "rope.scaling.original_context_length").value_or(hp.n_ctx_train);
  if (y.n_ctx_orig <= 0) fail("{}: rope.scaling.original_context_length must be positive", f.path());
  if (scaling == "yarn") {
    y.ext_factor = 1.0f;
    const float fac = 1.0f / hp.rope_freq_scale;
    y.attn_factor = fac <= 1.0f ? 1.0f : 0.1f * 1.0f * std::log(fac) + 1.0f;
    y.attn_factor *= 1.0f / (1.0f + 0.1f * std::log(fac));
  }
  const double attn = f.get_float(p + "rope.scaling.attn_factor").value_or(1.0);
  if (!(attn > 0) || !std::isfinite(attn)) fail("{}: invalid rope.scaling.attn_factor {}", f.path(), attn);
  y.attn_factor *= float(attn);

  std::optional<double> eps = f.get_float(p + "attention.layer_norm_rms_epsilon");
  if (!eps) fail("{}: missing key {}attention.layer_norm_rms_epsilon", f.path(), p);
  if (!(*eps > 0)) fail("{}: attention.layer_norm_rms_epsilon must be positive", f.path());
  hp.rms_eps = float(*eps);

  hp.neox_rope = hp.arch != Arch::Llama;
  hp.n_vocab = t.get("token_embd.weight").ne[1];
  hp.tied_output = !t.has("output.weight");
  hp.qkv_bias = hp.arch == Arch::Qwen2 || t.has("blk.0.attn_q.bias");
  hp.qk_norm = hp.arch == Arch::Qwen3;
  hp.rope_freqs = t.has("rope_freqs.weight");
  check_tensors(hp, t);
  return hp;
}

}  // namespace minfer::models
