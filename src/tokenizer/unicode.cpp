#include "tokenizer/unicode.h"

#include <array>

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
  for_each_cpt_lenient(s, [&](uint32_t cp) { append_utf8(out, cp); });
  return out;
}

namespace {

// GPT-2's encoder.py: printable Latin-1 bytes stand for themselves; the others are moved to
// 256, 257, ... in byte order (0x00-0x20, 0x7F-0xA0 and 0xAD: 68 of them).
constexpr std::array<uint32_t, 256> kCodePointOfByte = [] {
  std::array<uint32_t, 256> t{};
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    t[b] = printable ? uint32_t(b) : next++;
  }
  return t;
}();
constexpr uint32_t kByteCodePoints = 256 + 68;
static_assert(kCodePointOfByte[255] == 255 && kCodePointOfByte[0xAD] == kByteCodePoints - 1);

// The inverse: the byte of each code point below kByteCodePoints, -1 for none.
constexpr std::array<int16_t, kByteCodePoints> kByteOfCodePoint = [] {
  std::array<int16_t, kByteCodePoints> t{};
  for (auto& v : t) v = -1;
  for (int b = 0; b < 256; ++b) t[kCodePointOfByte[b]] = int16_t(b);
  return t;
}();

struct ByteTables {
  std::array<std::string, 256> to_unicode;
  ByteTables() {
    for (int b = 0; b < 256; ++b) append_utf8(to_unicode[b], kCodePointOfByte[b]);
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return tables().to_unicode[b]; }

int unicode_to_byte(uint32_t cp) { return cp < kByteCodePoints ? kByteOfCodePoint[cp] : -1; }

}  // namespace minfer::tok::detail
