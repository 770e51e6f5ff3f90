// Ids to text: token pieces (llama_token_to_piece) and llama_detokenize with its clean-up
// passes.
#include <cstdlib>

#include "common/error.h"
#include "tokenizer/impl.h"
#include "tokenizer/unicode.h"

namespace minfer::tok {

std::string Tokenizer::Impl::compute_piece(int32_t id) const {
  const Token& t = tokens[id];
  if (t.attr & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED)) return t.text;
  if (kind == Kind::Spm) {
    if (t.attr & ATTR_NORMAL) {
      std::string out;
      const std::string_view s = t.text;
      for (size_t i = 0; i < s.size();) {
        if (s.compare(i, 3, "\xE2\x96\x81") == 0) {
          out.push_back(' ');
          i += 3;
        } else {
          out.push_back(s[i++]);
        }
      }
      return out;
    }
    if (t.attr & ATTR_BYTE) {
      // "<0xNN>"
      if (t.text.size() >= 5) {
        char hex[3] = {t.text[3], t.text[4], 0};
        return std::string(1, char(std::strtol(hex, nullptr, 16)));
      }
      return {};
    }
    return {};
  }
  if (t.attr & ATTR_NORMAL) {
    // GPT-2 code points back to bytes; llama.cpp marks what is not a byte code point.
    std::string out, unk;
    detail::for_each_cpt_lenient(t.text, [&](uint32_t cp) {
      const int b = detail::unicode_to_byte(cp);
      if (b >= 0) {
        out.push_back(char(b));
        return;
      }
      unk.clear();
      detail::append_utf8(unk, cp);  // (the code point's bytes as the sanitized text has them)
      out += "[UNK_BYTE_0x";
      for (char c : unk) out += fmt::format("{:02x}", uint8_t(c));
      out += t.text + "]";
    });
    return out;
  }
  return {};
}

const std::string& Tokenizer::token_piece(int32_t id) const {
  impl_->check_id(id);
  return impl_->pieces[id];
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  impl_->check_id(id);
  if (!render_special && (impl_->tokens[id].attr & (ATTR_UNKNOWN | ATTR_CONTROL))) return {};
  return impl_->pieces[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool remove_special) const {
  return detokenize(ids, remove_special, !remove_special);
}

std::string Tokenizer::detokenize(std::span<const int32_t> ids, bool remove_special,
                                  bool unparse_special) const {
  const Impl& v = *impl_;
  for (int32_t id : ids) v.check_id(id);
  bool remove_space = v.add_space_prefix;
  if (remove_special && v.add_bos && !ids.empty() && ids.front() == v.bos) {
    remove_space = false;
    ids = ids.subspan(1);
  }
  if (remove_special && v.add_eos && !ids.empty() && ids.back() == v.eos)
    ids = ids.subspan(0, ids.size() - 1);

  std::string text;
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, unparse_special);
    // The SPM space prefix of the first token is not part of the text.
    if (remove_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    remove_space = false;
    text += piece;
  }
  if (!v.clean_spaces || text.empty()) return text;

  // llama.cpp's three clean-up passes, in place over the same buffer (later passes see the
  // earlier ones' output, including a NUL the second pass leaves behind).
  std::string& t = text;
  size_t total = t.size();
  size_t w = 1;
  for (size_t i = 1; i < total; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --w;
    t[w++] = x;
  }
  total = w;
  w = 1;
  for (size_t i = 1; i < total; ++i) {
    const char x = t[i];
    if (x == '\'' && i + 1 < total && t[i - 1] == ' ' && t[i + 1] == ' ') {
      --w;
      t[++i] = '\0';
    }
    t[w++] = x;
  }
  total = w;
  w = 1;
  for (size_t i = 1; i < total; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < total) {
      const char x1 = t[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --w;
      } else if (x1 != 't' && x1 != 'd' && i + 2 < total) {
        const char x2 = t[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --w;
      }
    }
    t[w++] = x;
  }
  t.resize(w);
  return text;
}

}  // namespace minfer::tok
