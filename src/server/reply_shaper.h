// A chat reply as the client sees it, while it streams and once it is whole: the think block's
// text apart from the answer (--reasoning-format), and tool calls out of the text. Streamed
// pieces hold back what may still change (a marker forming, spaces the trimming may drop, text
// from where a call may begin), so that what went out is always a prefix of the final parts.
// Pure text: the server feeds it the generated text and sends what it gives.
#pragma once
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
  chat::ReasonedReply visible(bool partial) const;
  Delta advance(const chat::ReasonedReply& v);

  bool reasoning_, thinking_open_;
  chat::ToolCallFormat calls_;
  std::string reply_;
  chat::ReasonedReply sent_;
};

}  // namespace minfer::server
