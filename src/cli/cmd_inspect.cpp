// `minfer inspect MODEL [--json]`: what gguf-dump shows (version, metadata, tensor table)
// plus the hyper-parameters a loader would derive for the architecture.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "common/error.h"
#include "gguf/gguf.h"

namespace {

using minfer::gguf::File;
using minfer::gguf::Value;
using minfer::gguf::ValueType;
// Keys in file order (metadata) and in a reading order (hparams), not sorted.
using json = nlohmann::ordered_json;

constexpr size_t kTextArrayItems = 8;   // longer arrays are abbreviated in text mode
constexpr size_t kTextStringBytes = 120;  // and so are longer strings (chat templates)

json to_json(const Value& v) {
  switch (v.type) {
    case ValueType::STRING: return *v.as_string();
    case ValueType::BOOL: return std::get<bool>(v.v);
    // Through the shortest decimal that round-trips the float: 1e-05, not 9.99999974e-06.
    case ValueType::F32: {
      const float x = std::get<float>(v.v);
      if (!std::isfinite(x)) return json(double(x));
      return std::stod(fmt::format("{}", x));
    }
    case ValueType::F64: return std::get<double>(v.v);
    case ValueType::U64: return std::get<uint64_t>(v.v);
    case ValueType::ARRAY: {
      json a = json::array();
      for (const Value& item : v.as_array()->items) a.push_back(to_json(item));
      return a;
    }
    default: return *v.as_int();
  }
}

// Token texts are arbitrary bytes: invalid UTF-8 is replaced rather than aborting the dump.
std::string dump(const json& j, int indent = -1) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

std::string type_label(const Value& v) {
  if (const auto* a = v.as_array())
    return fmt::format("array<{}>[{}]", minfer::gguf::value_type_name(a->elem_type), a->items.size());
  return std::string(minfer::gguf::value_type_name(v.type));
}

std::string text_value(const Value& v) {
  const auto* a = v.as_array();
  if (const std::string* str = v.as_string(); str && str->size() > kTextStringBytes) {
    // Cut at a UTF-8 character boundary so the prefix stays valid.
    size_t n = kTextStringBytes;
    while (n > 0 && (uint8_t((*str)[n]) & 0xC0) == 0x80) --n;
    return dump(json(str->substr(0, n))) + fmt::format(" ... ({} bytes)", str->size());
  }
  if (!a) return dump(to_json(v));
  std::string s = "[";
  for (size_t i = 0; i < a->items.size() && i < kTextArrayItems; ++i) {
    if (i) s += ", ";
    s += text_value(a->items[i]);
  }
  if (a->items.size() > kTextArrayItems)
    s += fmt::format(", ... ({} items)", a->items.size());
  return s + "]";
}

// llama.cpp's llama_ftype names (general.file_type).
std::string file_type_name(uint64_t t) {
  static const char* names[] = {
      "ALL_F32", "MOSTLY_F16", "MOSTLY_Q4_0", "MOSTLY_Q4_1", nullptr, nullptr, nullptr,
      "MOSTLY_Q8_0", "MOSTLY_Q5_0", "MOSTLY_Q5_1", "MOSTLY_Q2_K", "MOSTLY_Q3_K_S",
      "MOSTLY_Q3_K_M", "MOSTLY_Q3_K_L", "MOSTLY_Q4_K_S", "MOSTLY_Q4_K_M", "MOSTLY_Q5_K_S",
      "MOSTLY_Q5_K_M", "MOSTLY_Q6_K", "MOSTLY_IQ2_XXS", "MOSTLY_IQ2_XS", "MOSTLY_Q2_K_S",
      "MOSTLY_IQ3_XS", "MOSTLY_IQ3_XXS", "MOSTLY_IQ1_S", "MOSTLY_IQ4_NL", "MOSTLY_IQ3_S",
      "MOSTLY_IQ3_M", "MOSTLY_IQ2_S", "MOSTLY_IQ2_M", "MOSTLY_IQ4_XS", "MOSTLY_IQ1_M",
      "MOSTLY_BF16", nullptr, nullptr, nullptr, "MOSTLY_TQ1_0", "MOSTLY_TQ2_0", "MOSTLY_MXFP4_MOE",
      "MOSTLY_NVFP4", "MOSTLY_Q1_0", "MOSTLY_Q2_0"};
  if (t < std::size(names) && names[t]) return names[t];
  return fmt::format("unknown ({})", t);
}

// The hyper-parameters a loader derives, with llama.cpp's defaults for absent keys. Values
// that are per-layer arrays in some models are shown as stored.
json hparams(const File& f) {
  json h = json::object();
  const auto arch = f.get_string("general.architecture");
  if (!arch) return h;
  auto key = [&](const char* k) { return *arch + "." + k; };
  auto raw = [&](const char* k) -> json {
    const Value* v = f.find(key(k));
    return v ? to_json(*v) : json();
  };
  h["block_count"] = raw("block_count");
  h["context_length"] = raw("context_length");
  h["embedding_length"] = raw("embedding_length");
  h["feed_forward_length"] = raw("feed_forward_length");
  h["head_count"] = raw("attention.head_count");
  json kv = raw("attention.head_count_kv");
  h["head_count_kv"] = kv.is_null() ? h["head_count"] : kv;
  const bool scalar_heads = h["head_count"].is_number_unsigned() || h["head_count"].is_number_integer();
  const int64_t n_embd = h["embedding_length"].is_number() ? h["embedding_length"].get<int64_t>() : 0;
  const int64_t n_head = scalar_heads ? h["head_count"].get<int64_t>() : 0;
  json kl = raw("attention.key_length"), vl = raw("attention.value_length");
  if (kl.is_null() && n_head > 0) kl = n_embd / n_head;
  if (vl.is_null() && n_head > 0) vl = n_embd / n_head;
  h["key_length"] = kl;
  h["value_length"] = vl;
  json fb = raw("rope.freq_base");
  h["rope_freq_base"] = fb.is_null() ? json(10000.0) : fb;
  json rd = raw("rope.dimension_count");
  h["rope_dimension_count"] = rd.is_null() ? kl : rd;
  h["rms_norm_eps"] = raw("attention.layer_norm_rms_epsilon");
  if (const Value* v = f.find(key("attention.layer_norm_epsilon"))) h["norm_eps"] = to_json(*v);
  const Value* tokens = f.find("tokenizer.ggml.tokens");
  h["vocab_size"] = tokens && tokens->as_array() ? json(tokens->as_array()->items.size()) : json();
  h["tied_output"] = f.find_tensor("output.weight") == nullptr;
  int64_t n_params = 0;
  for (const auto& t : f.tensors()) n_params += t.n_elements();
  h["n_params"] = n_params;
  if (auto ft = f.get_uint("general.file_type")) h["file_type"] = file_type_name(*ft);
  return h;
}

std::string shape_text(const minfer::gguf::TensorInfo& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
  return s + "]";
}

json tensor_json(const minfer::gguf::TensorInfo& t, bool split) {
  json j = {{"name", t.name},
            {"type", std::string(minfer::type_name(t.type))},
            {"shape", std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims)},
            {"offset", t.offset},
            {"bytes", t.nbytes}};
  if (split) j["split"] = t.split;
  return j;
}

int run_inspect(int argc, char** argv) {
  CLI::App app{"Show a GGUF file's header, metadata, tensors and derived hyper-parameters", argv[0]};
  std::string path;
  bool as_json = false;
  app.add_option("MODEL", path, "GGUF file (the first part of a split model)")->required();
  app.add_flag("--json", as_json, "print one JSON object (arrays in full)");
  minfer::cli::parse(app, argc, argv);

  auto f = File::open(path);
  const bool split = f->n_splits() > 1;
  const auto arch = f->get_string("general.architecture");

  if (as_json) {
    json j;
    j["version"] = f->version();
    j["architecture"] = arch ? json(*arch) : json();
    j["alignment"] = f->alignment();
    j["data_offset"] = f->data_offset();
    j["splits"] = f->n_splits();
    json md = json::object();
    for (const auto& kv : f->metadata()) md[kv.key] = to_json(kv.value);
    j["metadata"] = std::move(md);
    json ts = json::array();
    for (const auto& t : f->tensors()) ts.push_back(tensor_json(t, split));
    j["tensors"] = std::move(ts);
    j["hparams"] = hparams(*f);
    std::string out = dump(j, 2) + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }

  std::string out;
  out += fmt::format("file:         {}\n", f->path());
  out += fmt::format("version:      {}\n", f->version());
  out += fmt::format("architecture: {}\n", arch.value_or("(none)"));
  out += fmt::format("alignment:    {}\n", f->alignment());
  out += fmt::format("data offset:  {}\n", f->data_offset());
  if (split) out += fmt::format("splits:       {}\n", f->n_splits());
  out += fmt::format("\nmetadata ({} keys):\n", f->metadata().size());
  for (const auto& kv : f->metadata())
    out += fmt::format("  {:<44} {:<20} = {}\n", kv.key, type_label(kv.value), text_value(kv.value));
  const json h = hparams(*f);
  if (!h.empty()) {
    out += "\nhyper-parameters:\n";
    for (const auto& [k, v] : h.items()) out += fmt::format("  {:<22} {}\n", k, dump(v));
  }
  out += fmt::format("\ntensors ({}):\n", f->tensors().size());
  out += fmt::format("  {:>5}  {:<34} {:<8} {:<22} {:>12} {:>12}{}\n", "#", "name", "type", "shape",
                     "bytes", "offset", split ? "  split" : "");
  for (size_t i = 0; i < f->tensors().size(); ++i) {
    const auto& t = f->tensors()[i];
    out += fmt::format("  {:>5}  {:<34} {:<8} {:<22} {:>12} {:>12}{}\n", i, t.name,
                       minfer::type_name(t.type), shape_text(t), t.nbytes, t.offset,
                       split ? fmt::format("  {}", t.split + 1) : "");
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

MINFER_COMMAND(inspect, "show a GGUF file's metadata and tensors", run_inspect);
