// The few text helpers the reply parsers (tool calls, reasoning) share: JSON's white space,
// trimming, and a marker that a streamed reply may be halfway through.
#pragma once
#include <algorithm>
#include <string_view>

namespace minfer::chat::reply_text {

// A thinking model's block (Qwen3, QwQ, DeepSeek R1).
inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline std::string_view ltrim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

inline std::string_view rtrim(std::string_view s) {
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

inline size_t skip_space(std::string_view s, size_t pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  return pos;
}

// How many bytes at the end of `s` are a proper start of `marker` (0 when none).
inline size_t marker_tail(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(marker.size() - 1, s.size()); n > 0; --n)
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

}  // namespace minfer::chat::reply_text
