#include "chat/reasoning.h"

#include "chat/reply_text.h"

namespace minfer::chat {

using namespace reply_text;

bool prompt_opens_thinking(std::string_view prompt) { return rtrim(prompt).ends_with(kThinkOpen); }

ReasonedView split_reasoning_view(std::string_view reply, bool opened_in_prompt, bool partial, size_t* searched) {
  std::string_view rest = reply;
  if (!opened_in_prompt) {
    const std::string_view start = ltrim(reply);
    if (partial && start.size() < kThinkOpen.size() && kThinkOpen.starts_with(start)) return {};  // may still open
    if (!start.starts_with(kThinkOpen)) return {"", partial ? rtrim(reply) : reply};
    rest = start.substr(kThinkOpen.size());
  }
  // A marker that ends where the last search stopped may have begun just before it.
  const size_t offset = size_t(rest.data() - reply.data());
  size_t from = searched && *searched > offset + kThinkClose.size() ? *searched - offset - (kThinkClose.size() - 1) : 0;
  const size_t close = rest.find(kThinkClose, from);
  if (close == std::string_view::npos) {
    if (searched) *searched = reply.size();
    // Still thinking (or never stopped): all of it is reasoning.
    if (partial) rest.remove_suffix(marker_tail(rest, kThinkClose));
    return {rtrim(ltrim(rest)), ""};
  }
  if (searched) *searched = offset + close;  // found: the next call finds it again at once
  const std::string_view answer = ltrim(rest.substr(close + kThinkClose.size()));
  return {rtrim(ltrim(rest.substr(0, close))), partial ? rtrim(answer) : answer};
}

ReasonedReply split_reasoning(std::string_view reply, bool opened_in_prompt, bool partial) {
  const ReasonedView v = split_reasoning_view(reply, opened_in_prompt, partial);
  return {std::string(v.reasoning), std::string(v.content)};
}

}  // namespace minfer::chat
