// The tokenizer.* GGUF keys: reading them into a Spec, and writing a Spec back.
#include "common/error.h"
#include "gguf/gguf.h"
#include "tokenizer/impl.h"

namespace minfer::tok {

namespace {

constexpr const char* kBos = "tokenizer.ggml.bos_token_id";
constexpr const char* kEos = "tokenizer.ggml.eos_token_id";
constexpr const char* kEot = "tokenizer.ggml.eot_token_id";
constexpr const char* kEom = "tokenizer.ggml.eom_token_id";
constexpr const char* kUnk = "tokenizer.ggml.unknown_token_id";
constexpr const char* kSep = "tokenizer.ggml.seperator_token_id";  // sic, as llama.cpp spells it
constexpr const char* kPad = "tokenizer.ggml.padding_token_id";
constexpr const char* kMask = "tokenizer.ggml.mask_token_id";
constexpr const char* kFimPre = "tokenizer.ggml.fim_pre_token_id";
constexpr const char* kFimSuf = "tokenizer.ggml.fim_suf_token_id";
constexpr const char* kFimMid = "tokenizer.ggml.fim_mid_token_id";
constexpr const char* kFimPad = "tokenizer.ggml.fim_pad_token_id";
constexpr const char* kFimRep = "tokenizer.ggml.fim_rep_token_id";
constexpr const char* kFimSep = "tokenizer.ggml.fim_sep_token_id";

std::optional<uint32_t> read_id(const gguf::File& f, const char* key) {
  const gguf::Value* v = f.find(key);
  if (!v) return std::nullopt;
  if (!v->is_integer()) fail("{}: key '{}' should be an integer token id", f.path(), key);
  const auto x = v->as_int();
  // Negative or huge ids (e.g. 4294967295 for "none") are out of range: llama.cpp ignores them.
  if (!x || *x < 0 || *x > int64_t(UINT32_MAX)) return std::nullopt;
  return uint32_t(*x);
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::File& f) {
  detail::Spec s;
  s.source = f.path();
  s.model = f.get_string("tokenizer.ggml.model").value_or("");
  if (s.model.empty()) fail("{}: no tokenizer in this file (tokenizer.ggml.model is missing)", f.path());
  s.pre = f.get_string("tokenizer.ggml.pre");
  s.tokens = f.get_string_array("tokenizer.ggml.tokens");
  if (s.tokens.empty()) fail("{}: tokenizer.ggml.tokens is missing or empty", f.path());
  s.scores = f.get_float_array("tokenizer.ggml.scores");
  for (int64_t t : f.get_int_array("tokenizer.ggml.token_type"))
    s.types.push_back(t < INT32_MIN || t > INT32_MAX ? 0 : int32_t(t));
  s.merges = f.get_string_array("tokenizer.ggml.merges");
  s.bos = read_id(f, kBos);
  s.eos = read_id(f, kEos);
  s.eot = read_id(f, kEot);
  s.eom = read_id(f, kEom);
  s.unk = read_id(f, kUnk);
  s.sep = read_id(f, kSep);
  s.pad = read_id(f, kPad);
  s.mask = read_id(f, kMask);
  s.fim_pre = read_id(f, kFimPre);
  s.fim_suf = read_id(f, kFimSuf);
  s.fim_mid = read_id(f, kFimMid);
  s.fim_pad = read_id(f, kFimPad);
  s.fim_rep = read_id(f, kFimRep);
  s.fim_sep = read_id(f, kFimSep);
  // Deprecated names of the FIM ids, read when the new ones are absent.
  if (!s.fim_pre) s.fim_pre = read_id(f, "tokenizer.ggml.prefix_token_id");
  if (!s.fim_suf) s.fim_suf = read_id(f, "tokenizer.ggml.suffix_token_id");
  if (!s.fim_mid) s.fim_mid = read_id(f, "tokenizer.ggml.middle_token_id");
  s.add_bos = f.get_bool("tokenizer.ggml.add_bos_token");
  s.add_eos = f.get_bool("tokenizer.ggml.add_eos_token");
  s.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix");
  s.remove_extra_whitespaces = f.get_bool("tokenizer.ggml.remove_extra_whitespaces");
  s.chat_template = f.get_string("tokenizer.chat_template");
  if (const gguf::Value* name = f.find("general.name"); name && name->as_string())
    s.general_name = *name->as_string();
  return std::unique_ptr<Tokenizer>(new Tokenizer(build_impl(std::move(s))));
}

void Tokenizer::write_gguf(gguf::Writer& w) const {
  const detail::Spec& s = impl_->spec;
  using gguf::Value;
  using gguf::ValueType;
  w.set("tokenizer.ggml.model", Value::str(s.model));
  if (s.pre) w.set("tokenizer.ggml.pre", Value::str(*s.pre));
  w.set("tokenizer.ggml.tokens", Value::string_array(s.tokens));
  if (!s.scores.empty()) {
    std::vector<Value> xs;
    xs.reserve(s.scores.size());
    for (float x : s.scores) xs.push_back(Value::f32(x));
    w.set("tokenizer.ggml.scores", Value::array(ValueType::F32, std::move(xs)));
  }
  if (!s.types.empty()) {
    std::vector<Value> xs;
    xs.reserve(s.types.size());
    for (int32_t x : s.types) xs.push_back(Value::i32(x));
    w.set("tokenizer.ggml.token_type", Value::array(ValueType::I32, std::move(xs)));
  }
  // llama.cpp requires the merges key for gpt2 vocabularies, even when empty.
  if (s.model == "gpt2" || !s.merges.empty())
    w.set("tokenizer.ggml.merges", Value::string_array(s.merges));
  auto id = [&](const char* key, const std::optional<uint32_t>& v) {
    if (v) w.set(key, Value::u32(*v));
  };
  id(kBos, s.bos);
  id(kEos, s.eos);
  id(kEot, s.eot);
  id(kEom, s.eom);
  id(kUnk, s.unk);
  id(kSep, s.sep);
  id(kPad, s.pad);
  id(kMask, s.mask);
  id(kFimPre, s.fim_pre);
  id(kFimSuf, s.fim_suf);
  id(kFimMid, s.fim_mid);
  id(kFimPad, s.fim_pad);
  id(kFimRep, s.fim_rep);
  id(kFimSep, s.fim_sep);
  auto flag = [&](const char* key, const std::optional<bool>& v) {
    if (v) w.set(key, Value::boolean(*v));
  };
  flag("tokenizer.ggml.add_bos_token", s.add_bos);
  flag("tokenizer.ggml.add_eos_token", s.add_eos);
  flag("tokenizer.ggml.add_space_prefix", s.add_space_prefix);
  flag("tokenizer.ggml.remove_extra_whitespaces", s.remove_extra_whitespaces);
  if (s.chat_template) w.set("tokenizer.chat_template", Value::str(*s.chat_template));
}

}  // namespace minfer::tok
