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

// The incremental form (a growing reply searched only where it is new) splits every prefix as
// the plain one does.
TEST(Reasoning, IncrementalSearchGivesTheSameSplits) {
  std::string reply = "<think>\n";
  for (int i = 0; i < 40; ++i) reply += "step " + std::to_string(i) + " </thin k> ";
  reply += "\n</think>\n\nThe answer.";
  for (bool opened : {false, true}) {
    size_t searched = 0;
    for (size_t k = 0; k <= reply.size(); k += 3) {
      const std::string_view part = std::string_view(reply).substr(0, k);
      const ReasonedView fast = split_reasoning_view(part, opened, true, &searched);
      const ReasonedReply plain = split_reasoning(part, opened, true);
      ASSERT_EQ(fast.reasoning, plain.reasoning) << "at " << k;
      ASSERT_EQ(fast.content, plain.content) << "at " << k;
    }
  }
}
