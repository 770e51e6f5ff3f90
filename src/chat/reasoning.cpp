#include "chat/reasoning.h"

#include <algorithm>

namespace minfer::chat {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view ltrim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

std::string_view rtrim(std::string_view s) {
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// How many characters at the end of `s` are a proper start of `marker`.
size_t marker_tail(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(marker.size() - 1, s.size()); n > 0; --n)
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

}  // namespace

bool prompt_opens_thinking(std::string_view prompt) { return rtrim(prompt).ends_with(kOpen); }

ReasonedView split_reasoning_view(std::string_view reply, bool opened_in_prompt, bool partial, size_t* searched) {
  std::string_view rest = reply;
  if (!opened_in_prompt) {
    const std::string_view start = ltrim(reply);
    if (partial && start.size() < kOpen.size() && kOpen.starts_with(start)) return {};  // may still open
    if (!start.starts_with(kOpen)) return {"", partial ? rtrim(reply) : reply};
    rest = start.substr(kOpen.size());
  }
  // A marker that ends where the last search stopped may have begun just before it.
  const size_t offset = size_t(rest.data() - reply.data());
  size_t from = searched && *searched > offset + kClose.size() ? *searched - offset - (kClose.size() - 1) : 0;
  const size_t close = rest.find(kClose, from);
  if (close == std::string_view::npos) {
    if (searched) *searched = reply.size();
    // Still thinking (or never stopped): all of it is reasoning.
    if (partial) rest.remove_suffix(marker_tail(rest, kClose));
    return {rtrim(ltrim(rest)), ""};
  }
  if (searched) *searched = offset + close;  // found: the next call finds it again at once
  const std::string_view answer = ltrim(rest.substr(close + kClose.size()));
  return {rtrim(ltrim(rest.substr(0, close))), partial ? rtrim(answer) : answer};
}

ReasonedReply split_reasoning(std::string_view reply, bool opened_in_prompt, bool partial) {
  const ReasonedView v = split_reasoning_view(reply, opened_in_prompt, partial);
  return {std::string(v.reasoning), std::string(v.content)};
}

}  // namespace minfer::chat
