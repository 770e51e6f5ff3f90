// A thinking model's reply split as llama-server's --reasoning-format deepseek splits it, and
// the streaming rule: every partial split is a prefix of the final one, part by part.
#include <gtest/gtest.h>

#include "chat/reasoning.h"

using namespace minfer::chat;

TEST(Reasoning, SplitsTheThinkBlockFromTheAnswer) {
  ReasonedReply r = split_reasoning("<think>\nLet me see.\n</think>\n\nParis.", false);
  EXPECT_EQ(r.reasoning, "Let me see.");
  EXPECT_EQ(r.content, "Paris.");
  r = split_reasoning("  \n<think>a</think>b", false);
  EXPECT_EQ(r.reasoning, "a");
  EXPECT_EQ(r.content, "b");
  // No block: all answer, as written.
  r = split_reasoning(" Paris. <think>x</think>", false);
  EXPECT_EQ(r.reasoning, "");
  EXPECT_EQ(r.content, " Paris. <think>x</think>");
  // The prompt opened the block (DeepSeek R1, QwQ): the reply starts inside it.
  r = split_reasoning("Hmm.\n</think>\n\nParis.", true);
  EXPECT_EQ(r.reasoning, "Hmm.");
  EXPECT_EQ(r.content, "Paris.");
  // A block that never closes (cut off by max_tokens) is all reasoning.
  r = split_reasoning("<think>\nStill going", false);
  EXPECT_EQ(r.reasoning, "Still going");
  EXPECT_EQ(r.content, "");
  r = split_reasoning("Still going", true);
  EXPECT_EQ(r.reasoning, "Still going");
  // An empty block (Qwen3 with enable_thinking false writes one in the prompt, but a model may too).
  r = split_reasoning("<think>\n\n</think>\n\nHi", false);
  EXPECT_EQ(r.reasoning, "");
  EXPECT_EQ(r.content, "Hi");

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
