// Tokenizer: encode (special-token partition, then SPM or BPE per text fragment) and the
// accessors.
#include "tokenizer/tokenizer.h"

#include <cctype>

#include "common/error.h"
#include "tokenizer/impl.h"

namespace minfer::tok {

std::string Tokenizer::Impl::merge_key(std::string_view left, std::string_view right) {
  // Length-prefixed so that no two (left, right) pairs share a key.
  std::string k;
  k.reserve(left.size() + right.size() + 4);
  const uint32_t n = uint32_t(left.size());
  k.append(reinterpret_cast<const char*>(&n), 4);
  k.append(left);
  k.append(right);
  return k;
}

int32_t Tokenizer::Impl::text_to_token(std::string_view text) const {
  return text_ids.find(text, [this](size_t i) { return std::string_view(tokens[i].text); });
}

void Tokenizer::Impl::check_id(int32_t id) const {
  if (id < 0 || size_t(id) >= tokens.size())
    fail("token id {} is out of range (the vocabulary has {} tokens)", id, tokens.size());
}

namespace {

struct Fragment {
  int32_t token;  // -1: raw text
  size_t off, len;
};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  const Impl& v = *impl_;
  std::vector<Fragment> frags;
  if (!text.empty()) frags.push_back({-1, 0, text.size()});

  // llama.cpp's tokenizer_st_partition: each special token in turn (longest text first)
  // is cut out of every remaining raw fragment, leftmost occurrence first.
  std::vector<Fragment> next;
  for (int32_t sid : v.special_cache) {
    const auto& tok = v.tokens[sid];
    if (!parse_special && (tok.attr & (ATTR_CONTROL | ATTR_UNKNOWN))) continue;
    const std::string_view needle = tok.text;
    bool any = false;
    for (const Fragment& f : frags) {
      if (f.token < 0 && text.substr(f.off, f.len).find(needle) != std::string_view::npos) {
        any = true;
        break;
      }
    }
    if (!any) continue;
    next.clear();
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t pos = f.off;
      const size_t end = f.off + f.len;
      while (pos < end) {
        const size_t m = text.substr(0, end).find(needle, pos);
        if (m == std::string_view::npos) break;
        size_t left_len = m - pos;
        if (tok.attr & ATTR_LSTRIP)
          while (left_len > 0 && is_space(text[pos + left_len - 1])) --left_len;
        if (left_len > 0) next.push_back({-1, pos, left_len});
        next.push_back({sid, 0, 0});
        pos = m + needle.size();
        if (tok.attr & ATTR_RSTRIP)
          while (pos < end && is_space(text[pos])) ++pos;
      }
      if (pos < end) next.push_back({-1, pos, end - pos});
    }
    frags.swap(next);
  }

  std::vector<int32_t> out;
  if (add_special && v.add_bos && v.bos >= 0) out.push_back(v.bos);
  if (v.kind == Impl::Kind::Spm) {
    bool prev_special = true;  // the first fragment gets the space prefix too
    std::string buf;
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      buf.clear();
      if (v.add_space_prefix && prev_special) buf = "\xE2\x96\x81";
      for (char c : text.substr(f.off, f.len)) {
        if (c == ' ')
          buf += "\xE2\x96\x81";
        else
          buf.push_back(c);
      }
      v.tokenize_spm(buf, out);
      prev_special = false;
    }
  } else {
    for (const Fragment& f : frags) {
      if (f.token >= 0)
        out.push_back(f.token);
      else
        v.tokenize_bpe(text.substr(f.off, f.len), out);
    }
  }
  if (add_special && v.add_eos && v.eos >= 0) out.push_back(v.eos);
  return out;
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

int32_t Tokenizer::n_vocab() const { return int32_t(impl_->tokens.size()); }
int32_t Tokenizer::bos() const { return impl_->bos; }
int32_t Tokenizer::eos() const { return impl_->eos; }
int32_t Tokenizer::eot() const { return impl_->eot; }
Tokenizer::FimTokens Tokenizer::fim() const {
  const Impl& v = *impl_;
  return {v.fim_pre, v.fim_suf, v.fim_mid, v.fim_pad, v.fim_rep, v.fim_sep};
}
int32_t Tokenizer::unk() const { return impl_->unk; }
int32_t Tokenizer::pad() const { return impl_->pad; }
bool Tokenizer::add_bos() const { return impl_->add_bos; }
bool Tokenizer::add_eos() const { return impl_->add_eos; }
bool Tokenizer::add_space_prefix() const { return impl_->add_space_prefix; }
bool Tokenizer::is_eog(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->is_eog.size() && impl_->is_eog[id];
}
const std::vector<int32_t>& Tokenizer::eog_ids() const { return impl_->eog; }
bool Tokenizer::is_control(int32_t id) const {
  impl_->check_id(id);
  return (impl_->tokens[id].attr & (ATTR_CONTROL | ATTR_UNKNOWN)) != 0;
}
const std::string& Tokenizer::token_text(int32_t id) const {
  impl_->check_id(id);
  return impl_->tokens[id].text;
}
TokenType Tokenizer::token_type(int32_t id) const {
  impl_->check_id(id);
  return impl_->tokens[id].type;
}
float Tokenizer::token_score(int32_t id) const {
  impl_->check_id(id);
  return impl_->tokens[id].score;
}
std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  const int32_t id = impl_->text_to_token(text);
  if (id < 0) return std::nullopt;
  return id;
}
const std::optional<std::string>& Tokenizer::chat_template() const {
  return impl_->spec.chat_template;
}
const std::string& Tokenizer::model() const { return impl_->spec.model; }
const std::string& Tokenizer::pre() const {
  static const std::string none;
  return impl_->spec.pre ? *impl_->spec.pre : none;
}


}  // namespace minfer::tok
