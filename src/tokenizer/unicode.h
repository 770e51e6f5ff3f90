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

// Decodes like llama.cpp's unicode_cpts_from_utf8 (a byte that does not start a complete
// sequence becomes U+FFFD and decoding resumes at the next byte) and re-encodes, so the
// result is valid UTF-8 that PCRE2 accepts. Surrogates and code points past U+10FFFF, which
// llama.cpp lets through, also become U+FFFD.
std::string sanitize_utf8(std::string_view s);

// GPT-2's bytes_to_unicode: the UTF-8 text of the code point that stands for byte b.
const std::string& byte_to_unicode(uint8_t b);
// The inverse: -1 when cp stands for no byte.
int unicode_to_byte(uint32_t cp);

// Next code point of valid UTF-8 at s[i]; advances i.
uint32_t next_cpt(std::string_view s, size_t& i);

}  // namespace minfer::tok::detail
