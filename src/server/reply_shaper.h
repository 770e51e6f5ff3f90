// A chat reply as the client sees it, while it streams and once it is whole: the think block's
// text apart from the answer (--reasoning-format), and tool calls out of the text. Streamed
// pieces hold back what may still change (a marker forming, spaces the trimming may drop, text
// from where a call may begin), so that what went out is always a prefix of the final parts.
// Pure text: the server feeds it the generated text and sends what it gives.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/reasoning.h"
#include "chat/tool_calls.h"

namespace minfer::server {

class ReplyShaper {
 public:
  // `calls`: the syntax of the template's tool calls, None when the request calls no tools.
  ReplyShaper(bool extract_reasoning, bool thinking_open, chat::ToolCallFormat calls);

  struct Delta {
    std::string text, reasoning;
    bool empty() const { return text.empty() && reasoning.empty(); }
  };
  // The reply grew by `piece`: what of it can go out now.
  Delta push(std::string_view piece);

  struct Final {
    chat::ReasonedReply parts;        // content without the calls
    std::vector<chat::ToolCall> calls;
    Delta rest;  // what of the parts had not gone out (none of text the calls' parse trimmed)
  };
  Final finish();

 private:
  // Each push looks only at what is new (the think block's end, a call's marker), so a reply
  // costs its length, not its length squared.
  chat::ReasonedView visible(bool partial);
  size_t call_start(std::string_view content);
  Delta advance(const chat::ReasonedView& v);

  bool reasoning_, thinking_open_;
  chat::ToolCallFormat calls_;
  std::string reply_;
  size_t searched_ = 0;                // of reply_, for the think block's end
  size_t scanned_ = 0;                 // of the content, for a call's marker
  std::optional<size_t> call_at_;      // where a call began, once a whole marker is seen
  size_t sent_reasoning_ = 0, sent_content_ = 0;  // bytes of each part that went out
};

}  // namespace minfer::server
