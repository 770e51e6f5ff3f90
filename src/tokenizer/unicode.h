// The little Unicode that llama.cpp's tokenizers need: UTF-8 lengths by lead byte, lenient
// decoding with U+FFFD for what cannot be decoded, and GPT-2's byte <-> code point table.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace minfer::tok::detail {

// Length of the UTF-8 sequence a byte starts (llama.cpp's unicode_len_utf8; continuation
// bytes count as 1).
inline size_t utf8_len(uint8_t c) {
  static constexpr uint8_t lens[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lens[c >> 4];
}

void append_utf8(std::string& out, uint32_t cp);

// Calls f(cp) for each code point of s decoded like llama.cpp's unicode_cpts_from_utf8 (a byte
// that does not start a complete sequence becomes U+FFFD and decoding resumes at the next
// byte); surrogates and code points past U+10FFFF, which llama.cpp lets through, also become
// U+FFFD.
template <class F>
void for_each_cpt_lenient(std::string_view s, F f) {
  const size_t n = s.size();
  auto cont = [&](size_t k) { return k < n && (uint8_t(s[k]) & 0xC0) == 0x80; };
  for (size_t i = 0; i < n;) {
    const uint8_t b0 = uint8_t(s[i]);
    if (b0 < 0x80) {
      f(uint32_t(b0));
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
    f(cp);
    i += len;
  }
}

// s decoded as for_each_cpt_lenient and re-encoded: valid UTF-8 that PCRE2 accepts.
std::string sanitize_utf8(std::string_view s);

// GPT-2's bytes_to_unicode: the UTF-8 text of the code point that stands for byte b.
const std::string& byte_to_unicode(uint8_t b);
// The inverse: -1 when cp stands for no byte.
int unicode_to_byte(uint32_t cp);

}  // namespace minfer::tok::detail
