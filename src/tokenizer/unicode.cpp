#include "tokenizer/unicode.h"

#include <array>
#include <unordered_map>

namespace minfer::tok::detail {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  const size_t n = s.size();
  auto cont = [&](size_t k) { return k < n && (uint8_t(s[k]) & 0xC0) == 0x80; };
  while (i < n) {
    const uint8_t b0 = uint8_t(s[i]);
    // ASCII runs are the common case: copy them without decoding.
    if (b0 < 0x80) {
      out.push_back(char(b0));
      ++i;
      continue;
    }
    uint32_t cp = 0xFFFD;
    size_t len = 1;
    if ((b0 & 0x40) == 0) {
      // stray continuation byte
    } else if ((b0 & 0x20) == 0) {
      if (cont(i + 1)) {
        cp = ((b0 & 0x1Fu) << 6) | (uint8_t(s[i + 1]) & 0x3Fu);
        len = 2;
      }
    } else if ((b0 & 0x10) == 0) {
      if (cont(i + 1) && cont(i + 2)) {
        cp = ((b0 & 0x0Fu) << 12) | ((uint8_t(s[i + 1]) & 0x3Fu) << 6) | (uint8_t(s[i + 2]) & 0x3Fu);
        len = 3;
      }
    } else if ((b0 & 0x08) == 0) {
      if (cont(i + 1) && cont(i + 2) && cont(i + 3)) {
        cp = ((b0 & 0x07u) << 18) | ((uint8_t(s[i + 1]) & 0x3Fu) << 12) |
             ((uint8_t(s[i + 2]) & 0x3Fu) << 6) | (uint8_t(s[i + 3]) & 0x3Fu);
        len = 4;
      }
    }
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
    append_utf8(out, cp);
    i += len;
  }
  return out;
}

namespace {

struct ByteTables {
  std::array<std::string, 256> to_unicode;
  std::unordered_map<uint32_t, uint8_t> to_byte;
  ByteTables() {
    // Printable Latin-1 bytes stand for themselves; the others are moved to 256, 257, ...
    // in byte order (GPT-2's encoder.py).
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? uint32_t(b) : next++;
      append_utf8(to_unicode[b], cp);
      to_byte[cp] = uint8_t(b);
    }
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return tables().to_unicode[b]; }

int unicode_to_byte(uint32_t cp) {
  const auto& m = tables().to_byte;
  auto it = m.find(cp);
  return it == m.end() ? -1 : int(it->second);
}

uint32_t next_cpt(std::string_view s, size_t& i) {
  const uint8_t b0 = uint8_t(s[i]);
  size_t len = utf8_len(b0);
  if (i + len > s.size()) len = s.size() - i;
  uint32_t cp;
  switch (len) {
    case 2: cp = b0 & 0x1Fu; break;
    case 3: cp = b0 & 0x0Fu; break;
    case 4: cp = b0 & 0x07u; break;
    default: cp = b0; break;
  }
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (uint8_t(s[i + k]) & 0x3Fu);
  i += len;
  return cp;
}

}  // namespace minfer::tok::detail
