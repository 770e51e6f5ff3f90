// UTF-8 helpers giving Python's str semantics (code point indexing, str.isspace, case maps).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace minfer::chat::utf8 {

// Invalid bytes decode as U+FFFD one byte at a time, so any input is accepted.
std::vector<char32_t> decode(std::string_view s);
std::string encode(const std::vector<char32_t>& cps);
void append(std::string& out, char32_t cp);
size_t length(std::string_view s);
// The bytes of the character that starts at s[i]: its first byte and the continuation bytes
// after it (at most 4 in all; 1 for a stray byte).
size_t char_bytes(std::string_view s, size_t i);

bool is_space(char32_t c);  // Python's str.isspace()
bool is_alpha(char32_t c);
bool is_digit(char32_t c);
bool is_printable(char32_t c);  // Python's str.isprintable() of one character
char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);  // str.capitalize()
std::string title(std::string_view s);       // str.title()

// chars empty (not given): Python whitespace.
std::string strip(std::string_view s, bool left, bool right, const std::u32string* chars);

}  // namespace minfer::chat::utf8
