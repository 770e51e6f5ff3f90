#include "tools/quantize_rules.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cstdio>

#include "common/error.h"

namespace minfer::tools {
namespace {

// llama_ftype values (llama.h). Aliases map to the mix llama-quantize uses for them.
constexpr Ftype kFtypes[] = {
    {"F32", 0, GgmlType::F32},      {"F16", 1, GgmlType::F16},
    {"BF16", 32, GgmlType::BF16},   {"Q4_0", 2, GgmlType::Q4_0},
    {"Q4_1", 3, GgmlType::Q4_1},    {"Q5_0", 8, GgmlType::Q5_0},
    {"Q5_1", 9, GgmlType::Q5_1},    {"Q8_0", 7, GgmlType::Q8_0},
    {"Q2_K", 10, GgmlType::Q2_K},   {"Q3_K_S", 11, GgmlType::Q3_K},
    {"Q3_K_M", 12, GgmlType::Q3_K}, {"Q3_K_L", 13, GgmlType::Q3_K},
    {"Q4_K_S", 14, GgmlType::Q4_K}, {"Q4_K_M", 15, GgmlType::Q4_K},
    {"Q5_K_S", 16, GgmlType::Q5_K}, {"Q5_K_M", 17, GgmlType::Q5_K},
    {"Q6_K", 18, GgmlType::Q6_K},   {"IQ4_NL", 25, GgmlType::IQ4_NL},
    {"IQ4_XS", 30, GgmlType::IQ4_XS},
    {"Q3_K", 12, GgmlType::Q3_K},   {"Q4_K", 15, GgmlType::Q4_K},
    {"Q5_K", 17, GgmlType::Q5_K},
    {"TQ1_0", 36, GgmlType::TQ1_0}, {"TQ2_0", 37, GgmlType::TQ2_0},
    {"Q1_0", 40, GgmlType::Q1_0},   {"Q2_0", 41, GgmlType::Q2_0},
    {"Q2_K_S", 21, GgmlType::Q2_K}, {"MXFP4_MOE", 38, GgmlType::MXFP4},
    {"IQ3_XS", 22, GgmlType::IQ3_S}, {"IQ3_S", 26, GgmlType::IQ3_S},
    {"IQ3_M", 27, GgmlType::IQ3_S},  {"IQ3_XXS", 23, GgmlType::IQ3_XXS},
    {"IQ2_M", 29, GgmlType::IQ2_S},  {"IQ2_XXS", 19, GgmlType::IQ2_XXS},
    {"IQ2_XS", 20, GgmlType::IQ2_XS}, {"IQ2_S", 28, GgmlType::IQ2_XS},
    {"IQ1_S", 24, GgmlType::IQ1_S},  {"IQ1_M", 31, GgmlType::IQ1_M},
};

enum Ft : uint32_t {
  kQ4_0 = 2,
  kQ5_0 = 8,
  kQ2_K = 10,
  kQ3_K_S = 11,
  kQ3_K_M = 12,
  kQ3_K_L = 13,
  kQ4_K_S = 14,
  kQ4_K_M = 15,
  kQ5_K_M = 17,
  kIQ2_XXS = 19,
  kIQ2_XS = 20,
  kQ2_K_S = 21,
  kIQ3_XS = 22,
  kIQ3_XXS = 23,
  kIQ1_S = 24,
  kIQ4_NL = 25,
  kIQ3_S = 26,
  kIQ3_M = 27,
  kIQ2_S = 28,
  kIQ2_M = 29,
  kIQ4_XS = 30,
  kIQ1_M = 31,
  kTQ1_0 = 36,
  kTQ2_0 = 37,
  kMXFP4_MOE = 38,
  kQ2_0 = 41,
};

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper((unsigned char)x) == std::toupper((unsigned char)y);
         });
}

bool contains(std::string_view s, std::string_view sub) {
  return s.find(sub) != std::string_view::npos;
}

int layer_of(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

// Layers that get more bits in the _M mixes: the first and last eighth, and every third
// layer in between.
bool use_more_bits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

}  // namespace

const Ftype* find_ftype(std::string_view name) {
  for (const Ftype& f : kFtypes)
    if (iequal(f.name, name)) return &f;
  // llama-quantize also takes the llama_ftype number ("15" for Q4_K_M): the first name listed
  // for it, so an alias never stands for a mix.
  uint32_t v = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
  if (ec != std::errc() || end != name.data() + name.size() || name.empty()) return nullptr;
  for (const Ftype& f : kFtypes)
    if (f.value == v) return &f;
  return nullptr;
}

std::vector<std::string_view> ftype_names() {
  std::vector<std::string_view> v;
  for (const Ftype& f : kFtypes) v.push_back(f.name);
  return v;
}

bool requires_imatrix(std::string_view name, GgmlType type, const Ftype& ftype) {
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight" || name == "output.weight")
    return false;
  switch (type) {
    case GgmlType::IQ3_XXS:
    case GgmlType::IQ2_XXS:
    case GgmlType::IQ2_XS:
    case GgmlType::IQ2_S:
    case GgmlType::IQ1_M:
    case GgmlType::IQ1_S:
      return true;
    case GgmlType::Q2_K:
      return ftype.value == kQ2_K_S;
    default:
      return false;
  }
}

bool llama_tensor_order(const std::string& a, const std::string& b) {
  const int la = layer_of(a), lb = layer_of(b);
  if (la != lb) return la < lb;
  return a < b;
}

bool should_quantize(std::string_view name, uint32_t n_dims) {
  auto ends_with = [&](std::string_view suf) {
    return name.size() >= suf.size() && name.substr(name.size() - suf.size()) == suf;
  };
  if (!ends_with("weight") || n_dims < 2) return false;
  static constexpr std::string_view kKeep[] = {"_norm.weight",
                                               "ffn_gate_inp.weight",
                                               "altup",
                                               "laurel",
                                               "per_layer_model_proj",
                                               "ssm_conv1d.weight",
                                               "shortconv.conv.weight",
                                               "time_mix_first.weight",
                                               "time_mix_w0.weight",
                                               "time_mix_w1.weight",
                                               "time_mix_w2.weight",
                                               "time_mix_v0.weight",
                                               "time_mix_v1.weight",
                                               "time_mix_v2.weight",
                                               "time_mix_a0.weight",
                                               "time_mix_a1.weight",
                                               "time_mix_a2.weight",
                                               "time_mix_g1.weight",
                                               "time_mix_g2.weight",
                                               "time_mix_decay_w1.weight",
                                               "time_mix_decay_w2.weight",
                                               "time_mix_lerp_fused.weight",
                                               "attn_rel_b.weight",
                                               ".position_embd."};
  for (std::string_view k : kKeep)
    if (contains(name, k)) return false;
  return name != "position_embd.weight" && name != "token_types.weight";
}

TypePlanner::TypePlanner(const Ftype& ftype, ModelShape shape, TypeOverrides overrides)
    : ftype_(ftype), shape_(std::move(shape)), overrides_(std::move(overrides)) {
  for (const auto& [pattern, type] : overrides_.tensor_types) {
    try {
      patterns_.emplace_back(std::regex(pattern), type);
    } catch (const std::regex_error& e) {
      fail("tensor type pattern '{}' is not a valid regular expression: {}", pattern, e.what());
    }
  }
}

GgmlType TypePlanner::choose(const std::string& name, const std::array<int64_t, 4>& ne) {
  // The user's types for the embedding and the output come first, whatever the ftype, and
  // without fallbacks (as llama_tensor_get_type returns them).
  if (overrides_.token_embd && (name == "token_embd.weight" || name == "per_layer_token_embd.weight"))
    return *overrides_.token_embd;
  if (overrides_.output && name == "output.weight") return *overrides_.output;
  const GgmlType def = ftype_.default_type;
  // F32/F16/BF16 files convert every quantizable weight, with no per-tensor mix.
  if (!type_traits(def).quantized) return def;

  GgmlType t = def;
  const auto manual = std::find_if(patterns_.begin(), patterns_.end(),
                                   [&](const auto& p) { return std::regex_search(name, p.first); });
  if (manual != patterns_.end())
    t = manual->second;
  else if (!overrides_.pure)
    t = by_name(name, ne);
  const int64_t nx = ne[0];
  if (nx % type_traits(t).block_size == 0) {
    ++n_k_quantized_;
    return t;
  }
  // Rows that do not divide into the chosen type's blocks (e.g. 896 = Qwen2.5-0.5B's width
  // with 256-blocks) take the nearest 32-block type.
  switch (t) {
    case GgmlType::IQ4_XS:
    case GgmlType::IQ3_S:
    case GgmlType::IQ3_XXS:
    case GgmlType::IQ2_S:
    case GgmlType::IQ2_XS:
    case GgmlType::IQ2_XXS:
    case GgmlType::IQ1_S:
    case GgmlType::IQ1_M:
      t = GgmlType::IQ4_NL;
      break;
    case GgmlType::Q2_K:  // (IQ4_NL before llama.cpp v0.4.0)
    case GgmlType::Q3_K:
    case GgmlType::Q2_0:
    case GgmlType::TQ1_0:
    case GgmlType::TQ2_0:
      t = GgmlType::Q4_0;
      break;
    case GgmlType::Q4_K:
      t = GgmlType::Q5_0;
      break;
    case GgmlType::Q5_K:
      t = GgmlType::Q5_1;
      break;
    case GgmlType::Q6_K:
      t = GgmlType::Q8_0;
      break;
    default:
      // A 32-block type has no smaller block to go to: F16 below, as llama-quantize's
      // "must use F16 due to unusual shape" (stories260K's 172-wide ffn_down).
      if (type_traits(t).block_size > 32)
        fail("tensor {}: row length {} is not a multiple of {}'s block size {}, and {} has no "
             "fallback type",
             name, nx, type_name(t), type_traits(t).block_size, type_name(t));
  }
  if (nx % type_traits(t).block_size != 0) t = GgmlType::F16;
  ++n_fallback_;
  return t;
}

GgmlType TypePlanner::by_name(const std::string& name, const std::array<int64_t, 4>& ne) {
  const uint32_t ft = ftype_.value;
  const bool falcon = shape_.arch == "falcon";
  const int n_gqa = shape_.n_head_kv > 0 ? shape_.n_head / shape_.n_head_kv : 0;
  GgmlType t = ftype_.default_type;
  const bool iq4 = ft == kIQ4_NL || ft == kIQ4_XS;  // the two share every rule
  const bool iq2 = ft == kIQ2_XXS || ft == kIQ2_XS || ft == kIQ2_S || ft == kIQ2_M || ft == kIQ1_S || ft == kIQ1_M;
  const bool iq2_s = ft == kIQ2_S || ft == kIQ2_M;  // (IQ3_S where the others take Q2_K)
  // llama.cpp's attention-v-like tensors: a fused QKV and an MLA KV projection take attn_v's
  // rules (its separate attn_qkv rules come after them in v0.4.0, never reached).
  const bool attn_v = contains(name, "attn_v.weight") || contains(name, "attn_qkv.weight") ||
                      contains(name, "attn_kv_b.weight");

  // ffn_* counters stand for the layer index, except with experts, whose tensors are not
  // in layer order: there the layer comes from the name.
  auto layer_info = [&](int counter) {
    int i_layer = counter;
    if (shape_.n_expert > 1) {
      i_layer = layer_of(name);
      if (i_layer < 0 || i_layer >= shape_.n_layer)
        fail("tensor {}: cannot determine its layer (block_count {})", name, shape_.n_layer);
    }
    return i_layer;
  };

  if (name == "output.weight" || (!shape_.has_output && name == "token_embd.weight")) {
    if (overrides_.output) return *overrides_.output;  // (a tied token_embd: not returned early)
    // The output projection (or the token embedding tied to it) keeps 6 bits.
    if (ft == kMXFP4_MOE || falcon || ne[0] % type_traits(t).block_size != 0) return GgmlType::Q8_0;
    if (ft == kIQ3_XXS || iq2) return GgmlType::Q5_K;  // (llama.cpp's very-low-bit mixes)
    return t != GgmlType::Q8_0 ? GgmlType::Q6_K : t;
  }
  // MXFP4 for the experts' 3-d tensors, Q8_0 for everything else (token_embd included).
  if (ft == kMXFP4_MOE) return ne[2] > 1 ? GgmlType::MXFP4 : GgmlType::Q8_0;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") {
    if (ft == kIQ3_XXS || iq2_s) return GgmlType::IQ3_S;
    if (iq2) return GgmlType::Q2_K;
    return ft == kTQ1_0 || ft == kTQ2_0 || ft == kQ2_0 ? GgmlType::Q4_K : t;
  }
  // The IQ2 and IQ1 mixes have rules of their own, and none from the general ones below.
  if (iq2) {
    const GgmlType more = iq2_s ? GgmlType::IQ3_S : GgmlType::Q2_K;
    if (attn_v) {
      t = n_gqa >= 4 || shape_.n_expert >= 4 ? GgmlType::Q4_K : more;
      ++i_attention_wv_;
    } else if (shape_.n_expert == 8 && contains(name, "attn_k.weight")) {
      t = GgmlType::Q4_K;
    } else if (contains(name, "ffn_down")) {
      if (i_ffn_down_ < shape_.n_layer / 8) t = more;
      ++i_ffn_down_;
    } else if (contains(name, "attn_output.weight")) {
      if (shape_.n_expert == 8)
        t = GgmlType::Q5_K;
      else if (ft == kIQ1_S || ft == kIQ1_M)
        t = GgmlType::IQ2_XXS;
      else if (iq2_s)
        t = GgmlType::IQ3_S;
    }
    return t;
  }

  if (attn_v) {
    if (ft == kQ2_K)
      t = n_gqa >= 4 ? GgmlType::Q4_K : GgmlType::Q3_K;
    else if (ft == kQ2_K_S && n_gqa >= 4)
      t = GgmlType::Q4_K;
    else if (ft == kIQ3_XXS)
      t = n_gqa >= 4 ? GgmlType::Q4_K : !shape_.has_imatrix ? GgmlType::IQ3_S : GgmlType::IQ3_XXS;
    else if ((ft == kIQ3_XS || ft == kIQ3_S) && n_gqa >= 4)
      t = GgmlType::Q4_K;
    else if (ft == kIQ3_M)
      t = GgmlType::Q4_K;
    else if (ft == kQ3_K_M)
      t = i_attention_wv_ < 2 ? GgmlType::Q5_K : GgmlType::Q4_K;
    else if (ft == kQ3_K_L)
      t = GgmlType::Q5_K;
    else if (iq4 && n_gqa >= 4)
      t = GgmlType::Q5_K;
    else if ((ft == kQ4_K_M || ft == kQ5_K_M) &&
             use_more_bits(i_attention_wv_, shape_.n_attention_wv))
      t = GgmlType::Q6_K;
    else if (ft == kQ4_K_S && i_attention_wv_ < 4)
      t = GgmlType::Q5_K;
    if (shape_.n_expert == 8) t = GgmlType::Q8_0;
    ++i_attention_wv_;
  } else if (contains(name, "attn_k.weight")) {
    if (shape_.n_expert == 8)
      t = GgmlType::Q8_0;
    else if (ft == kIQ3_XS)
      t = GgmlType::IQ3_XXS;
    else if (ft == kIQ3_XXS)
      t = GgmlType::IQ2_S;
  } else if (contains(name, "attn_q.weight")) {
    if (ft == kIQ3_XS)
      t = GgmlType::IQ3_XXS;
    else if (ft == kIQ3_XXS)
      t = GgmlType::IQ2_S;
  } else if (contains(name, "ffn_down")) {
    const int i_layer = layer_info(i_ffn_down_), n_layer = shape_.n_layer;
    if (ft == kQ2_K)
      t = GgmlType::Q3_K;
    else if (ft == kQ2_K_S) {
      if (i_layer < n_layer / 8) t = GgmlType::Q4_K;
    } else if (ft == kIQ3_XXS && !shape_.has_imatrix)
      t = i_layer < n_layer / 8 ? GgmlType::Q4_K : GgmlType::Q3_K;
    else if (ft == kQ3_K_M)
      t = i_layer < n_layer / 16                         ? GgmlType::Q5_K
          : (!falcon || use_more_bits(i_layer, n_layer)) ? GgmlType::Q4_K
                                                         : GgmlType::Q3_K;
    else if (ft == kIQ3_M && (i_layer < n_layer / 8 || (shape_.n_expert == 8 && use_more_bits(i_layer, n_layer))))
      t = GgmlType::Q4_K;
    else if (ft == kQ3_K_L)
      t = falcon ? GgmlType::Q4_K : GgmlType::Q5_K;
    else if (ft == kQ4_K_M) {
      if (falcon)
        t = i_layer < n_layer / 16            ? GgmlType::Q6_K
            : use_more_bits(i_layer, n_layer) ? GgmlType::Q5_K
                                              : GgmlType::Q4_K;
      else if (use_more_bits(i_layer, n_layer))
        t = GgmlType::Q6_K;
    } else if (i_layer < n_layer / 8 && iq4 && !shape_.has_imatrix) {
      t = GgmlType::Q5_K;
    } else if (ft == kQ5_K_M && use_more_bits(i_layer, n_layer)) {
      t = GgmlType::Q6_K;
    } else if (ft == kQ4_K_S && !falcon && i_layer < n_layer / 8) {
      t = GgmlType::Q5_K;
    } else if ((ft == kQ4_0 || ft == kQ5_0) && shape_.has_imatrix && i_layer < n_layer / 8) {
      // llama.cpp guards the first layers' ffn_down against Q4_0/Q5_0 only with an imatrix.
      t = ft == kQ4_0 ? GgmlType::Q4_1 : GgmlType::Q5_1;
    }
    ++i_ffn_down_;
  } else if (contains(name, "attn_output.weight")) {
    if (!falcon) {
      if (shape_.n_expert == 8) {
        if (ft == kQ2_K || ft == kIQ3_XS || ft == kIQ3_XXS || ft == kQ3_K_S || ft == kQ3_K_M || iq4 || ft == kQ4_K_S ||
            ft == kQ4_K_M || ft == kIQ3_S || ft == kIQ3_M)
          t = GgmlType::Q5_K;
      } else {
        if (ft == kQ2_K)
          t = GgmlType::Q3_K;
        else if (ft == kIQ3_XXS)
          t = GgmlType::IQ3_S;
        else if (ft == kQ3_K_M || ft == kIQ3_M)
          t = GgmlType::Q4_K;
        else if (ft == kQ3_K_L)
          t = GgmlType::Q5_K;
      }
    } else if (ft == kQ3_K_L) {
      t = GgmlType::Q4_K;
    }
  } else if (contains(name, "ffn_gate") || contains(name, "ffn_up")) {
    // IQ3_XS: the middle three quarters of the layers' gate and up at IQ3_XXS. (A name with
    // both, a fused gate_up, counts as up, as llama.cpp categorizes it.)
    int& counter = contains(name, "ffn_up") ? i_ffn_up_ : i_ffn_gate_;
    const int i_layer = layer_info(counter), n_layer = shape_.n_layer;
    if (ft == kIQ3_XS && i_layer >= n_layer / 8 && i_layer < 7 * n_layer / 8) t = GgmlType::IQ3_XXS;
    ++counter;
  }
  return t;
}

}  // namespace minfer::tools
