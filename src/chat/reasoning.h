// A thinking model's reply split into its reasoning and its answer, as llama-server's
// --reasoning-format deepseek (its default, "auto", for these models) returns them:
// "<think>R</think>A" gives reasoning_content R and content A, both trimmed. A prompt that
// already opened the block (DeepSeek R1's and QwQ's templates end with "<think>\n") makes the
// reply start inside it. A block that never closes is all reasoning.
// Pure text: the server streams the parts as they grow (see split_reasoning's `partial`).
#pragma once
#include <string>
#include <string_view>

namespace minfer::chat {

struct ReasonedReply {
  std::string reasoning;
  std::string content;
};

// Whether the prompt ends inside an open think block ("<think>" and white space at its end).
bool prompt_opens_thinking(std::string_view prompt);

// `partial`: the reply so far, of which more will come. What it returns then is only what can
// no longer change: a marker still forming, spaces that the trimming may yet drop and a reply
// that may still become a think block are held back, so that each part of a partial split is a
// prefix of the same part of the final one.
ReasonedReply split_reasoning(std::string_view reply, bool opened_in_prompt, bool partial = false);

// The same split as views into `reply`, for a reply that grows token by token: `searched` (0 at
// first, then kept by the caller between calls on the same growing reply) is how much of it has
// been searched for the block's end, so that each call looks only at what is new.
struct ReasonedView {
  std::string_view reasoning, content;
};
ReasonedView split_reasoning_view(std::string_view reply, bool opened_in_prompt, bool partial, size_t* searched = nullptr);

}  // namespace minfer::chat
