// A thinking model's reply split as llama-server's --reasoning-format deepseek splits it, and
// the streaming rule: every partial split is a prefix of the final one, part by part.
#include <gtest/gtest.h>

#include "chat/reasoning.h"

using namespace minfer::chat;

TEST(Reasoning, SplitsTheThinkBlockFromTheAnswer) {
  struct Case {
    const char* reply;
    bool opened;  // the prompt opened the block
    const char* reasoning;
    const char* content;
  };
  const Case cases[] = {
      {"<think>\nLet me see.\n</think>\n\nParis.", false, "Let me see.", "Paris."},
      {"  \n<think>a</think>b", false, "a", "b"},
      // No block: all answer, as written.
      {" Paris. <think>x</think>", false, "", " Paris. <think>x</think>"},
      // The prompt opened the block (DeepSeek R1, QwQ): the reply starts inside it.
      {"Hmm.\n</think>\n\nParis.", true, "Hmm.", "Paris."},
      // A block that never closes (cut off by max_tokens) is all reasoning.
      {"<think>\nStill going", false, "Still going", ""},
      {"Still going", true, "Still going", ""},
      // An empty block (Qwen3 with enable_thinking false writes one in the prompt; a model may too).
      {"<think>\n\n</think>\n\nHi", false, "", "Hi"},
  };
  for (const Case& c : cases) {
    const ReasonedReply r = split_reasoning(c.reply, c.opened);
    EXPECT_EQ(r.reasoning, c.reasoning) << c.reply;
    EXPECT_EQ(r.content, c.content) << c.reply;
  }

  EXPECT_TRUE(prompt_opens_thinking("<|im_start|>assistant\n<think>\n"));
  EXPECT_TRUE(prompt_opens_thinking("<｜Assistant｜><think>"));
  EXPECT_FALSE(prompt_opens_thinking("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_thinking("<|im_start|>assistant\n"));
}

TEST(Reasoning, EveryPartialSplitIsAPrefixOfTheFinalOne) {
  const char* replies[] = {
      "<think>\nLet me see. 2 < 3, and </thin is no tag.\n</think>\n\nParis. \n",
      "  <think>a</think>",
      "<thi",
      "<b>bold</b> text  ",
      "Hmm </think> x",
      "<think>\n\n</think>\n\n  Hi <think>",
      "",
  };
  for (const char* text : replies) {
    for (bool opened : {false, true}) {
      const std::string reply = text;
      const ReasonedReply whole = split_reasoning(reply, opened);
      for (size_t k = 0; k <= reply.size(); ++k) {
        const ReasonedReply part = split_reasoning(std::string_view(reply).substr(0, k), opened, true);
        EXPECT_TRUE(whole.reasoning.starts_with(part.reasoning)) << reply << " at " << k << " opened " << opened;
        EXPECT_TRUE(whole.content.starts_with(part.content)) << reply << " at " << k << " opened " << opened;
      }
    }
  }
}
