#include "server/reply_shaper.h"

#include <algorithm>

namespace minfer::server {

namespace {
// Longer than any marker tool_call_start looks for: a marker cut by the last scan's end is
// found again from this far back.
constexpr size_t kMarkerReach = 16;
}  // namespace

ReplyShaper::ReplyShaper(bool extract_reasoning, bool thinking_open, chat::ToolCallFormat calls)
    : reasoning_(extract_reasoning), thinking_open_(thinking_open), calls_(calls) {}

size_t ReplyShaper::call_start(std::string_view content) {
  // Llama 3's call is the whole reply: its start decides, and is all that is read.
  if (calls_ == chat::ToolCallFormat::Llama3Json) return chat::tool_call_start(calls_, content);
  if (call_at_) return *call_at_;
  // The text grows at its end only: scan what is new, and a marker's length before it.
  const size_t from = std::min(content.size(), scanned_ > kMarkerReach ? scanned_ - kMarkerReach : 0);
  const size_t at = from + chat::tool_call_start(calls_, content.substr(from));
  scanned_ = content.size();
  if (at + kMarkerReach <= content.size()) call_at_ = at;  // a whole marker (markers are shorter than the reach)
  return at;
}

chat::ReasonedView ReplyShaper::visible(bool partial) {
  chat::ReasonedView v = reasoning_ ? chat::split_reasoning_view(reply_, thinking_open_, partial, &searched_)
                                    : chat::ReasonedView{"", reply_};
  if (partial && calls_ != chat::ToolCallFormat::None) v.content = v.content.substr(0, call_start(v.content));
  return v;
}

ReplyShaper::Delta ReplyShaper::advance(const chat::ReasonedView& v) {
  // A partial view extends what went out (split_reasoning's and the hold-back's rule): only the
  // sizes need comparing.
  Delta d;
  if (v.reasoning.size() > sent_reasoning_) {
    d.reasoning = v.reasoning.substr(sent_reasoning_);
    sent_reasoning_ = v.reasoning.size();
  }
  if (v.content.size() > sent_content_) {
    d.text = v.content.substr(sent_content_);
    sent_content_ = v.content.size();
  }
  return d;
}

ReplyShaper::Delta ReplyShaper::push(std::string_view piece) {
  reply_ += piece;
  return advance(visible(true));
}

ReplyShaper::Final ReplyShaper::finish() {
  const chat::ReasonedView v = visible(false);
  Final f;
  f.parts = {std::string(v.reasoning), std::string(v.content)};
  if (calls_ != chat::ToolCallFormat::None) {
    chat::ParsedReply parsed = chat::parse_tool_calls(calls_, f.parts.content);
    if (!parsed.calls.empty()) {
      f.calls = std::move(parsed.calls);
      f.parts.content = std::move(parsed.content);
    }
  }
  // What went out is a prefix of the final parts, but for spaces the calls' parse trimmed:
  // the rest goes out only where it extends what was sent.
  auto rest = [&](const std::string& now, std::string_view sent_view, size_t sent) {
    return now.size() > sent && now.compare(0, sent, sent_view.substr(0, sent)) == 0 ? now.substr(sent) : std::string();
  };
  const chat::ReasonedView partial = reasoning_ ? chat::split_reasoning_view(reply_, thinking_open_, true)
                                                : chat::ReasonedView{"", reply_};
  f.rest.reasoning = rest(f.parts.reasoning, partial.reasoning, sent_reasoning_);
  f.rest.text = rest(f.parts.content, partial.content, sent_content_);
  return f;
}

}  // namespace minfer::server
