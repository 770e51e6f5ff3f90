// The server's view of a chat reply while it streams: sending each delta as it comes gives,
// piece by piece, exactly the final reasoning and text (whatever the pieces' sizes), and the
// calls come out of the text whole.
#include <gtest/gtest.h>

#include "server/reply_shaper.h"

using namespace minfer;
using namespace minfer::server;
using chat::ToolCallFormat;

namespace {

struct Streamed {
  std::string text, reasoning;
  ReplyShaper::Final final;
};

Streamed stream(const std::string& reply, size_t piece, bool reasoning, bool opened, ToolCallFormat f) {
  ReplyShaper s(reasoning, opened, f);
  Streamed out;
  for (size_t i = 0; i < reply.size(); i += piece) {
    const ReplyShaper::Delta d = s.push(std::string_view(reply).substr(i, piece));
    out.text += d.text;
    out.reasoning += d.reasoning;
  }
  out.final = s.finish();
  out.text += out.final.rest.text;
  out.reasoning += out.final.rest.reasoning;
  return out;
}

}  // namespace

TEST(ReplyShaper, StreamedPiecesAddUpToTheFinalParts) {
  const std::string replies[] = {
      "<think>\nThe user wants weather.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"w\", \"arguments\": {\"c\": 1}}\n</tool_call>",
      "<think>\nJust talk.\n</think>\n\nHello <tool there.",
      "Plain reply with a < and trailing spaces   ",
      "{\"name\": \"f\", \"parameters\": {}}",
      "Sure. [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]",
      "Hmm...</think>Answer",
      // Long texts: markers far from the start, so each push sees only the new part of them.
      "<think>\n" + std::string(300, 'a') + " </thin k> " + std::string(50, 'b') + "\n</think>\n\n" + std::string(200, 'c') +
          " <tool_ca ll> " + std::string(40, 'd') + "\n<tool_call>\n{\"name\": \"w\", \"arguments\": {}}\n</tool_call>",
      std::string(120, 'x') + " [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]",
      // Spaces before the text went out as written: the content keeps them (the fuzzer's find).
      "\t\n3\no <tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1.5}}",
  };
  for (const std::string& reply : replies)
    for (bool reasoning : {false, true})
      for (bool opened : {false, true})
        for (ToolCallFormat f : {ToolCallFormat::None, ToolCallFormat::Hermes, ToolCallFormat::Llama3Json, ToolCallFormat::MistralNemo})
          for (size_t piece : {1, 3, 7, 1000}) {
            if (opened && !reasoning) continue;  // only the reasoning split reads the prompt's block
            const Streamed s = stream(reply, piece, reasoning, opened, f);
            SCOPED_TRACE(reply + " piece " + std::to_string(piece) + " format " + chat::tool_call_format_name(f) +
                         (reasoning ? " reasoning" : "") + (opened ? " opened" : ""));
            EXPECT_EQ(s.reasoning, s.final.parts.reasoning);
            // The text streamed before the calls keeps the spaces their parse trims.
            if (s.final.calls.empty()) EXPECT_EQ(s.text, s.final.parts.content);
            else EXPECT_TRUE(s.final.parts.content.empty() || s.text.starts_with(s.final.parts.content)) << s.text;
          }
}

TEST(ReplyShaper, ReasoningAndCallsComeApart) {
  const std::string reply =
      "<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n{\"name\": \"w\", \"arguments\": {\"c\": 1}}\n</tool_call>";
  Streamed s = stream(reply, 2, true, false, ToolCallFormat::Hermes);
  EXPECT_EQ(s.final.parts.reasoning, "The user wants weather.");
  EXPECT_EQ(s.final.parts.content, "");
  ASSERT_EQ(s.final.calls.size(), 1u);
  EXPECT_EQ(s.final.calls[0].name, "w");
  EXPECT_EQ(s.text, "");  // nothing of the call went out as text
  // Without the reasoning split the thoughts are text, and the call is still found after them.
  s = stream(reply, 2, false, false, ToolCallFormat::Hermes);
  EXPECT_EQ(s.final.parts.content, "<think>\nThe user wants weather.\n</think>");
  ASSERT_EQ(s.final.calls.size(), 1u);
  // No tools: a call's syntax is just text.
  s = stream(reply, 2, true, false, ToolCallFormat::None);
  EXPECT_TRUE(s.final.calls.empty());
  EXPECT_EQ(s.text, s.final.parts.content);
  EXPECT_TRUE(s.text.starts_with("<tool_call>"));

  // Text goes out as it comes: before the end only a marker's start can be waiting.
  ReplyShaper live(true, false, ToolCallFormat::Hermes);
  std::string out;
  const std::string text = std::string(500, 'w') + " and a <tool";
  for (char c : text) out += live.push(std::string(1, c)).text;
  EXPECT_EQ(out, std::string(500, 'w') + " and a ");
}

