#include "tools/gen_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/error.h"
#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tokenizer/tokenizer.h"

namespace minfer::tools {

// Shapes of the public checkpoints; scales follow the reference generator (std 0.02 with a
// doubled q/k, output_norm mean 5-6 for the full-size models: logits with a std of a few units).
static ModelPreset shape(std::string name, std::string arch, int64_t n_layer, int64_t n_embd,
                         int64_t n_ff, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                         int64_t n_ctx_train, double rope_base, double eps) {
  ModelPreset m;
  m.name = std::move(name), m.arch = std::move(arch);
  m.n_layer = n_layer, m.n_embd = n_embd, m.n_ff = n_ff, m.n_head = n_head;
  m.n_head_kv = n_head_kv, m.head_dim = head_dim, m.n_ctx_train = n_ctx_train;
  m.rope_base = rope_base, m.eps = eps;
  return m;
}

const std::vector<ModelPreset>& presets() {
  static const std::vector<ModelPreset> p = [] {
    std::vector<ModelPreset> v;
    auto add = [&](ModelPreset m) { v.push_back(std::move(m)); };
    ModelPreset m;
    m = shape("qwen2.5-0.5b", "qwen2", 24, 896, 4864, 14, 2, 64, 32768, 1e6, 1e-6);
    m.bias = true, m.qk_scale = 2, m.out_norm_scale = 5, m.bias_std = 0.1;
    m.n_vocab = 151936;
    m.note = "Qwen2.5-0.5B(-Instruct) shape";
    add(m);
    m = shape("qwen2.5-1.5b", "qwen2", 28, 1536, 8960, 12, 2, 128, 32768, 1e6, 1e-6);
    m.bias = true, m.qk_scale = 2, m.out_norm_scale = 5, m.bias_std = 0.1;
    m.n_vocab = 151936;
    m.note = "Qwen2.5-1.5B(-Instruct) shape";
    add(m);
    m = shape("qwen3-0.6b", "qwen3", 28, 1024, 3072, 16, 8, 128, 40960, 1e6, 1e-6);
    m.qk_norm = true, m.out_norm_scale = 5, m.qk_norm_scale = 1.5;
    m.n_vocab = 151936;
    m.note = "Qwen3-0.6B shape (q/k head_dim 128 != n_embd/n_head)";
    add(m);
    m = shape("llama-3.2-1b", "llama", 16, 2048, 8192, 32, 8, 64, 131072, 5e5, 1e-5);
    m.qk_scale = 2, m.out_norm_scale = 6, m.n_vocab = 128256;
    m.rope_llama3_factor = 32, m.rope_low_freq_factor = 1, m.rope_high_freq_factor = 4;
    m.rope_orig_ctx = 8192;
    m.note = "Llama-3.2-1B shape, tied output, llama3 rope scaling (rope_freqs.weight)";
    add(m);
    m = shape("tinyllama-1.1b", "llama", 22, 2048, 5632, 32, 4, 64, 2048, 1e4, 1e-5);
    m.tied = false, m.qk_scale = 2, m.out_norm_scale = 6, m.n_vocab = 32000;
    m.note = "TinyLlama-1.1B shape, untied output.weight";
    add(m);
    m = shape("llama", "llama", 30, 576, 1536, 9, 3, 64, 2048, 1e5, 1e-5);
    m.tied = false, m.qk_scale = 2, m.out_norm_scale = 6;
    m.note = "SmolLM2-135M dims, untied output.weight";
    add(m);
    m = shape("tiny-qwen2", "qwen2", 2, 128, 384, 4, 2, 32, 32768, 1e6, 1e-6);
    m.bias = true, m.std = 0.06, m.qk_scale = 2, m.out_norm_scale = 4, m.bias_std = 0.2;
    m.n_vocab = 151936;
    m.note = "2 layers, GQA 4/2, biases, tied output";
    add(m);
    m = shape("tiny-qwen3", "qwen3", 3, 128, 384, 4, 2, 64, 40960, 1e6, 1e-6);
    m.qk_norm = true, m.std = 0.06, m.out_norm_scale = 4, m.qk_norm_scale = 1.5;
    m.n_vocab = 151936;
    m.note = "3 layers, head_dim 64 (q dim 256 != n_embd 128), qk-norm, tied output";
    add(m);
    m = shape("tiny-llama", "llama", 4, 256, 768, 8, 4, 32, 4096, 1e4, 1e-5);
    m.tied = false, m.std = 0.04, m.qk_scale = 2, m.out_norm_scale = 4;
    m.note = "4 layers, GQA 8/4, untied output.weight";
    add(m);
    return v;
  }();
  return p;
}

const ModelPreset& find_preset(std::string_view name) {
  std::string names;
  for (const auto& p : presets()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  fail("unknown preset '{}' (known: {})", name, names);
}

const std::vector<std::string>& byte_level_specials() {
  static const std::vector<std::string> s{"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  return s;
}

const std::string& byte_level_chat_template() {
  static const std::string t =
      "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
      "{{ '<|im_start|>assistant\\n' }}{% endif %}";
  return t;
}

// ---- the reference generator's PRNG (integer arithmetic only: identical everywhere) ----

static uint32_t fnv1a(std::string_view s) {
  uint32_t h = 0x811c9dc5u;
  for (unsigned char b : s) {
    h ^= b;
    h *= 0x01000193u;
  }
  return h;
}

static uint32_t splitmix32(uint32_t& state) {
  uint32_t z = (state += 0x9e3779b9u);
  z = (z ^ (z >> 16)) * 0x85ebca6bu;
  z = (z ^ (z >> 13)) * 0xc2b2ae35u;
  return z ^ (z >> 16);
}

static inline uint32_t rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

NormalStream::NormalStream(uint64_t seed, std::string_view name) {
  uint32_t st = fnv1a(name) ^ (uint32_t(seed) * 0x27d4eb2du);
  for (auto& s : s_) s = splitmix32(st);
  if ((s_[0] | s_[1] | s_[2] | s_[3]) == 0) s_[0] = 1;
}

void NormalStream::fill(float* dst, size_t n, double mean, double std) {
  // Irwin-Hall sum of four 16-bit uniforms, scaled to unit variance.
  static const double kScale = 1.0 / std::sqrt(4.0 * (65536.0 * 65536.0 - 1.0) / 12.0);
  uint32_t s0 = s_[0], s1 = s_[1], s2 = s_[2], s3 = s_[3];
  auto next = [&] {
    const uint32_t r = rotl(s1 * 5u, 7) * 9u;
    const uint32_t t = s1 << 9;
    s2 ^= s0, s3 ^= s1, s1 ^= s2, s0 ^= s3, s2 ^= t;
    s3 = rotl(s3, 11);
    return r;
  };
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r1 = next(), r2 = next();
    const double sum = double((r1 & 0xFFFFu) + (r1 >> 16) + (r2 & 0xFFFFu) + (r2 >> 16));
    dst[i] = float(mean + std * ((sum - 131070.0) * kScale));
  }
  s_[0] = s0, s_[1] = s1, s_[2] = s2, s_[3] = s3;
}

// ---- model ----

static uint32_t file_type_of(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return 0;
    case GgmlType::F16: return 1;
    case GgmlType::Q4_0: return 2;
    case GgmlType::Q4_1: return 3;
    case GgmlType::Q8_0: return 7;
    case GgmlType::Q5_0: return 8;
    case GgmlType::Q5_1: return 9;
    case GgmlType::Q2_K: return 10;
    case GgmlType::Q3_K: return 12;  // *_M in llama.cpp's numbering
    case GgmlType::Q4_K: return 15;
    case GgmlType::Q5_K: return 17;
    case GgmlType::Q6_K: return 18;
    case GgmlType::IQ4_NL: return 25;
    case GgmlType::IQ4_XS: return 30;
    case GgmlType::BF16: return 32;
    case GgmlType::TQ1_0: return 36;
    case GgmlType::TQ2_0: return 37;
    case GgmlType::MXFP4: return 38;  // MOSTLY_MXFP4_MOE, the one ftype of MXFP4 matrices
    case GgmlType::NVFP4: return 39;
    case GgmlType::Q1_0: return 40;
    case GgmlType::Q2_0: return 41;
    default: fail("gen-model: type {} is not a model file type", type_name(t));
  }
}

static std::unique_ptr<tok::Tokenizer> load_tokenizer(const std::string& spec) {
  if (spec.empty()) return tok::Tokenizer::byte_level(byte_level_specials());
  if (!std::filesystem::exists(spec)) fail("{}: tokenizer file not found", spec);
  if (spec.ends_with(".gguf")) {
    auto f = gguf::File::open(spec);
    return tok::Tokenizer::from_gguf(*f);
  }
  return tok::Tokenizer::from_hf(spec);
}

static std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot read the chat template file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<TensorSpec> tensor_plan(const ModelPreset& p, int64_t n_vocab, GgmlType wtype,
                                    GgmlType etype, GgmlType otype) {
  std::vector<TensorSpec> plan;
  const int64_t q_dim = p.n_head * p.head_dim, kv_dim = p.n_head_kv * p.head_dim;
  auto mat = [&](std::string n, int64_t ne0, int64_t ne1, double s, GgmlType t) {
    plan.push_back({std::move(n), t, {ne0, ne1}, 0.0, s, {}});
  };
  auto vec = [&](std::string n, int64_t len, double mean, double s) {
    plan.push_back({std::move(n), GgmlType::F32, {len}, mean, s, {}});
  };
  // The converter yields its derived tensors before the checkpoint's: rope_freqs comes first.
  if (p.rope_llama3_factor > 0) {
    std::vector<float> f = llama3_rope_factors(p);
    const int64_t n = int64_t(f.size());
    plan.push_back({"rope_freqs.weight", GgmlType::F32, {n}, 0.0, 0.0, std::move(f)});
  }
  mat("token_embd.weight", p.n_embd, n_vocab, p.std, etype);
  vec("output_norm.weight", p.n_embd, p.out_norm_scale, 0.05 * p.out_norm_scale);
  if (!p.tied) mat("output.weight", p.n_embd, n_vocab, p.std, otype);
  for (int64_t i = 0; i < p.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    vec(b + "attn_norm.weight", p.n_embd, 1, 0.05);
    mat(b + "attn_q.weight", p.n_embd, q_dim, p.std * p.qk_scale, wtype);
    if (p.bias) vec(b + "attn_q.bias", q_dim, 0, p.bias_std);
    mat(b + "attn_k.weight", p.n_embd, kv_dim, p.std * p.qk_scale, wtype);
    if (p.bias) vec(b + "attn_k.bias", kv_dim, 0, p.bias_std);
    mat(b + "attn_v.weight", p.n_embd, kv_dim, p.std, wtype);
    if (p.bias) vec(b + "attn_v.bias", kv_dim, 0, p.bias_std);
    if (p.qk_norm) {
      vec(b + "attn_q_norm.weight", p.head_dim, p.qk_norm_scale, 0.05);
      vec(b + "attn_k_norm.weight", p.head_dim, p.qk_norm_scale, 0.05);
    }
    mat(b + "attn_output.weight", q_dim, p.n_embd, p.std, wtype);
    vec(b + "ffn_norm.weight", p.n_embd, 1, 0.05);
    mat(b + "ffn_gate.weight", p.n_embd, p.n_ff, p.std, wtype);
    mat(b + "ffn_up.weight", p.n_embd, p.n_ff, p.std, wtype);
    mat(b + "ffn_down.weight", p.n_ff, p.n_embd, p.std, wtype);
  }
  return plan;
}

std::vector<float> llama3_rope_factors(const ModelPreset& p) {
  // Float32 throughout, as the converter's torch tensors are.
  const int64_t dim = p.head_dim;
  const float factor = float(p.rope_llama3_factor);
  const float low = float(p.rope_low_freq_factor), high = float(p.rope_high_freq_factor);
  const float old_ctx = float(p.rope_orig_ctx);
  const double low_wavelen = double(p.rope_orig_ctx) / p.rope_low_freq_factor;
  const double high_wavelen = double(p.rope_orig_ctx) / p.rope_high_freq_factor;
  std::vector<float> out;
  for (int64_t i = 0; i < dim; i += 2) {
    const float freq = 1.0f / std::pow(float(p.rope_base), float(i) / float(dim));
    const float wavelen = float(2 * M_PI) / freq;
    if (wavelen < high_wavelen) out.push_back(1.0f);
    else if (wavelen > low_wavelen) out.push_back(factor);
    else {
      const float smooth = (old_ctx / wavelen - low) / (high - low);
      out.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return out;
}

// A file tokenizer padded to the checkpoint's embedding rows, the way llama.cpp's converter
// fills the ids the tokenizer does not use: "[PADi]", type UNUSED, score 0.
static void pad_vocab(gguf::Writer& w, int64_t from, int64_t to) {
  using gguf::Value;
  using gguf::ValueType;
  constexpr int32_t kUnused = 5;
  for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.scores"}) {
    const Value* v = w.find(key);
    if (!v || !v->as_array()) continue;
    gguf::Array a = *v->as_array();
    if (int64_t(a.items.size()) != from) fail("gen-model: {} has {} entries, {} expected", key, a.items.size(), from);
    for (int64_t i = from; i < to; ++i) {
      switch (a.elem_type) {
        case ValueType::STRING: a.items.push_back(Value::str(fmt::format("[PAD{}]", i))); break;
        case ValueType::I32: a.items.push_back(Value::i32(kUnused)); break;
        case ValueType::U32: a.items.push_back(Value::u32(kUnused)); break;
        case ValueType::F32: a.items.push_back(Value::f32(0.0f)); break;
        default: fail("gen-model: {}: unexpected element type {}", key, value_type_name(a.elem_type));
      }
    }
    const ValueType et = a.elem_type;
    w.set(key, Value::array(et, std::move(a.items)));
  }
}

GenModelInfo generate_model(const GenModelOptions& opts, const std::string& out_path) {
  ModelPreset p = find_preset(opts.preset);
  if (opts.n_layer < 0 || opts.n_layer > 1000) fail("gen-model: --layers {} is out of range", opts.n_layer);
  if (opts.n_layer) p.n_layer = opts.n_layer;
  const GgmlType wtype = opts.type;
  const GgmlType etype = opts.embd_type.value_or(wtype == GgmlType::Q4_0 ? GgmlType::Q8_0 : wtype);
  const GgmlType otype = opts.output_type.value_or(etype);
  for (GgmlType t : {wtype, etype, otype})
    if (t != GgmlType::F32 && !type_traits(t).has_quant)
      fail("gen-model: minfer cannot write {} weights", type_name(t));
  const uint32_t ftype = file_type_of(wtype);

  auto tok = load_tokenizer(opts.tokenizer);
  // The built-in tokenizer stays small (demo and test models); a file's is padded.
  const int64_t n_vocab =
      opts.tokenizer.empty() ? tok->n_vocab() : std::max<int64_t>(tok->n_vocab(), p.n_vocab);

  gguf::Writer w(32);
  using gguf::Value;
  const std::string& A = p.arch;
  w.set("general.architecture", Value::str(A));
  w.set("general.type", Value::str("model"));
  const std::string tname(type_name(wtype));
  std::string lower = tname;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  w.set("general.name", Value::str(fmt::format("synthetic-{}-{}", p.name, lower)));
  w.set("general.description",
        Value::str(fmt::format("Synthetic random-weight model (minfer gen-model, preset {}, type "
                               "{}, seed {}). {}",
                               p.name, lower, opts.seed, p.note)));
  auto u32 = [&](const std::string& k, int64_t v) { w.set(A + "." + k, Value::u32(uint32_t(v))); };
  u32("block_count", p.n_layer);
  u32("context_length", p.n_ctx_train);
  u32("embedding_length", p.n_embd);
  u32("feed_forward_length", p.n_ff);
  u32("attention.head_count", p.n_head);
  u32("attention.head_count_kv", p.n_head_kv);
  w.set(A + ".rope.freq_base", Value::f32(float(p.rope_base)));
  w.set(A + ".attention.layer_norm_rms_epsilon", Value::f32(float(p.eps)));
  if (p.head_dim * p.n_head != p.n_embd || A == "qwen3") {
    u32("attention.key_length", p.head_dim);
    u32("attention.value_length", p.head_dim);
  }
  if (A == "llama") {
    u32("vocab_size", n_vocab);
    u32("rope.dimension_count", p.head_dim);
  }
  w.set("general.file_type", Value::u32(ftype));
  if (type_traits(wtype).quantized) w.set("general.quantization_version", Value::u32(2));
  tok->write_gguf(w);
  if (n_vocab > tok->n_vocab()) pad_vocab(w, tok->n_vocab(), n_vocab);
  if (!opts.chat_template_file.empty())
    w.set("tokenizer.chat_template", Value::str(read_text(opts.chat_template_file)));
  else if (opts.tokenizer.empty())
    w.set("tokenizer.chat_template", Value::str(byte_level_chat_template()));

  GenModelInfo info;
  info.path = out_path;
  info.n_vocab = n_vocab;
  info.embd_type = etype;

  const std::vector<TensorSpec> plan = tensor_plan(p, n_vocab, wtype, etype, otype);

  uint64_t total_bytes = 0;
  for (const auto& t : plan) {
    const int64_t bs = type_traits(t.type).block_size;
    if (t.ne[0] % bs != 0)
      fail("gen-model: {} has rows of {} values, not a multiple of {}'s block size {}", t.name,
           t.ne[0], type_name(t.type), bs);
    const int64_t rows = t.ne.size() > 1 ? t.ne[1] : 1;
    total_bytes += row_size(t.type, t.ne[0]) * uint64_t(rows);
    info.n_params += uint64_t(t.ne[0] * rows);
  }
  info.n_bytes = total_bytes;

  auto done = std::make_shared<uint64_t>(0);
  for (const auto& t : plan) {
    const uint64_t seed = opts.seed;
    const auto progress = opts.progress;
    w.add_tensor(t.name, t.type, t.ne, [t, seed, progress, done, total_bytes](uint8_t* dst, size_t nbytes) {
      const int64_t n0 = t.ne[0], rows = t.ne.size() > 1 ? t.ne[1] : 1;
      const size_t rs = row_size(t.type, n0);
      if (nbytes != rs * size_t(rows)) fail("gen-model: {}: size mismatch", t.name);
      if (!t.values.empty()) {
        if (t.type != GgmlType::F32 || nbytes != t.values.size() * sizeof(float))
          fail("gen-model: {}: size mismatch", t.name);
        std::memcpy(dst, t.values.data(), nbytes);
        return;
      }
      NormalStream stream(seed, t.name);
      // Row blocks of about 1M values: bounded memory whatever the tensor size.
      const int64_t chunk = std::max<int64_t>(1, (int64_t(1) << 20) / n0);
      std::vector<float> buf(size_t(std::min(chunk, rows) * n0));
      for (int64_t r = 0; r < rows; r += chunk) {
        const int64_t nr = std::min(chunk, rows - r);
        stream.fill(buf.data(), size_t(nr * n0), t.mean, t.std);
        uint8_t* out = dst + size_t(r) * rs;
        if (t.type == GgmlType::F32) std::memcpy(out, buf.data(), size_t(nr * n0) * 4);
        else quant::quantize_rows(t.type, buf.data(), out, nr, n0);
        *done += rs * size_t(nr);
        if (progress && total_bytes) progress(double(*done) / double(total_bytes));
      }
    });
  }
  std::filesystem::path out(out_path);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  w.write(out_path);
  return info;
}

}  // namespace minfer::tools
