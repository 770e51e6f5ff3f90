#include "server/reply_shaper.h"

namespace minfer::server {

ReplyShaper::ReplyShaper(bool extract_reasoning, bool thinking_open, chat::ToolCallFormat calls)
    : reasoning_(extract_reasoning), thinking_open_(thinking_open), calls_(calls) {}

chat::ReasonedReply ReplyShaper::visible(bool partial) const {
  chat::ReasonedReply v = reasoning_ ? chat::split_reasoning(reply_, thinking_open_, partial)
                                     : chat::ReasonedReply{"", reply_};
  if (partial && calls_ != chat::ToolCallFormat::None) v.content.resize(chat::tool_call_start(calls_, v.content));
  return v;
}

ReplyShaper::Delta ReplyShaper::advance(const chat::ReasonedReply& v) {
  Delta d;
  auto grow = [](const std::string& now, std::string& sent, std::string& out) {
    if (now.size() <= sent.size() || !now.starts_with(sent)) return;
    out = now.substr(sent.size());
    sent = now;
  };
  grow(v.reasoning, sent_.reasoning, d.reasoning);
  grow(v.content, sent_.content, d.text);
  return d;
}

ReplyShaper::Delta ReplyShaper::push(std::string_view piece) {
  reply_ += piece;
  return advance(visible(true));
}

ReplyShaper::Final ReplyShaper::finish() {
  Final f;
  f.parts = visible(false);
  if (calls_ != chat::ToolCallFormat::None) {
    chat::ParsedReply parsed = chat::parse_tool_calls(calls_, f.parts.content);
    if (!parsed.calls.empty()) {
      f.calls = std::move(parsed.calls);
      f.parts.content = std::move(parsed.content);
    }
  }
  f.rest = advance(f.parts);
  return f;
}

}  // namespace minfer::server
