#include "chat/utf8.h"

#include <utf8proc.h>

namespace minfer::chat::utf8 {

std::vector<char32_t> decode(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp = 0;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                    utf8proc_ssize_t(s.size() - i), &cp);
    if (n <= 0) {
      out.push_back(0xFFFD);
      ++i;
    } else {
      out.push_back(char32_t(cp));
      i += size_t(n);
    }
  }
  return out;
}

void append(std::string& out, char32_t cp) {
  utf8proc_uint8_t buf[4];
  const auto n = utf8proc_encode_char(utf8proc_int32_t(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), size_t(n));
}

std::string encode(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t c : cps) append(out, c);
  return out;
}

size_t length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

size_t char_bytes(std::string_view s, size_t i) {
  size_t n = 1;
  while (i + n < s.size() && n < 4 && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) ++n;
  return n;
}

bool is_space(char32_t c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E:
    case 0x1F: case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool is_alpha(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  const auto cat = utf8proc_category(utf8proc_int32_t(c));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL ||
         cat == UTF8PROC_CATEGORY_LT || cat == UTF8PROC_CATEGORY_LM ||
         cat == UTF8PROC_CATEGORY_LO;
}

bool is_digit(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return utf8proc_category(utf8proc_int32_t(c)) == UTF8PROC_CATEGORY_ND;
}

bool is_printable(char32_t c) {
  if (c < 0x80) return c >= 0x20 && c < 0x7F;
  switch (utf8proc_category(utf8proc_int32_t(c))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS: return false;
    default: return true;
  }
}

char32_t to_upper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  return char32_t(utf8proc_toupper(utf8proc_int32_t(c)));
}

char32_t to_lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  return char32_t(utf8proc_tolower(utf8proc_int32_t(c)));
}

std::string upper(std::string_view s) {
  std::string out;
  for (char32_t c : decode(s)) {
    if (c == 0xDF) out += "SS";  // the one full case mapping common in chat text (German ß)
    else append(out, to_upper(c));
  }
  return out;
}

std::string lower(std::string_view s) {
  auto cps = decode(s);
  for (auto& c : cps) c = to_lower(c);
  return encode(cps);
}

std::string capitalize(std::string_view s) {
  auto cps = decode(s);
  for (size_t i = 0; i < cps.size(); ++i) cps[i] = i == 0 ? to_upper(cps[i]) : to_lower(cps[i]);
  return encode(cps);
}

std::string title(std::string_view s) {
  // Python: a letter following a cased letter is lowered, any other letter is uppered.
  auto cps = decode(s);
  bool prev_cased = false;
  for (auto& c : cps) {
    const bool alpha = is_alpha(c);
    if (alpha) c = prev_cased ? to_lower(c) : to_upper(c);
    prev_cased = alpha;
  }
  return encode(cps);
}

std::string strip(std::string_view s, bool left, bool right, const std::u32string* chars) {
  auto cps = decode(s);
  auto drop = [&](char32_t c) {
    return chars ? chars->find(c) != std::u32string::npos : is_space(c);
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && drop(cps[b])) ++b;
  if (right)
    while (e > b && drop(cps[e - 1])) --e;
  return encode(std::vector<char32_t>(cps.begin() + long(b), cps.begin() + long(e)));
}

}  // namespace minfer::chat::utf8
