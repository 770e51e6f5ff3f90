// Tool calls: each real template's format, how it wants calls in the history (its renders of a
// conversation with a call sent the OpenAI way equal Hugging Face's golden renders), the
// parsing of replies in each format, where streaming must hold text back, and the grammar of
// a reply that must be a call.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "chat/json_io.h"
#include "chat/template.h"
#include "chat/tool_calls.h"
#include "common/test_data.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

using namespace minfer;
using namespace minfer::chat;
using json = nlohmann::ordered_json;

namespace {

std::string read_text(const std::string& rel) {
  std::ifstream f(test::shared_path(rel), std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A mistral-style template's marker, enough for detection.
const char* kMistralLike =
    "{%- for m in messages %}{%- if m.tool_calls %}[TOOL_CALLS][{%- for c in m.tool_calls %}"
    "{\"name\": \"{{ c.function.name }}\", \"arguments\": {{ c.function.arguments | tojson }}, "
    "\"id\": \"{{ c.id }}\"}{%- endfor %}]{%- else %}{{ m.content }}{%- endif %}{%- endfor %}";

// Replies that are not well formed calls: each stays whole as text.
void expect_text_only(ToolCallFormat f, std::initializer_list<const char*> replies) {
  for (const char* reply : replies) {
    const ParsedReply p = parse_tool_calls(f, reply);
    EXPECT_TRUE(p.calls.empty()) << reply;
    EXPECT_EQ(p.content, reply);
  }
}

}  // namespace

TEST(ToolCalls, FormatOfEachTemplate) {
  MINFER_REQUIRE_SHARED();
  const std::pair<const char*, ToolCallFormat> cases[] = {
      {"templates/Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::Hermes},
      {"templates/Qwen-Qwen3-0.6B.jinja", ToolCallFormat::Hermes},
      {"templates/Qwen-QwQ-32B.jinja", ToolCallFormat::Hermes},
      {"templates/meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::Llama3Json},
      {"templates/meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::Llama3Json},
      {"templates/TinyLlama-TinyLlama-1.1B-Chat-v1.0.jinja", ToolCallFormat::None},
      {"templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", ToolCallFormat::None},
  };
  for (const auto& [file, format] : cases)
    EXPECT_EQ(detect_tool_call_format(read_text(file)), format) << file;
  EXPECT_EQ(detect_tool_call_format(kMistralLike), ToolCallFormat::MistralNemo);
}

TEST(ToolCalls, HowEachTemplateWantsCalls) {
  MINFER_REQUIRE_SHARED();
  // Qwen2.5 writes `arguments | tojson`; Qwen3 takes text or objects but raises on a content of
  // none; DeepSeek R1 concatenates the text and looks for content none; Llama 3.1 writes tojson.
  const ToolCallRendering qwen25 = probe_tool_call_rendering(read_text("templates/Qwen-Qwen2.5-7B-Instruct.jinja"));
  EXPECT_TRUE(qwen25.object_arguments);
  const ToolCallRendering qwen3 = probe_tool_call_rendering(read_text("templates/Qwen-Qwen3-0.6B.jinja"));
  EXPECT_FALSE(qwen3.object_arguments);
  EXPECT_FALSE(qwen3.null_content);
  const ToolCallRendering r1 = probe_tool_call_rendering(read_text("templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"));
  EXPECT_FALSE(r1.object_arguments);
  EXPECT_TRUE(r1.null_content);
  EXPECT_TRUE(probe_tool_call_rendering(read_text("templates/meta-llama-Llama-3.1-8B-Instruct.jinja")).object_arguments);
  EXPECT_TRUE(probe_tool_call_rendering(kMistralLike).object_arguments);
}

// The golden conversations with a call, sent as an OpenAI client sends them (arguments as JSON
// text, content null), render as Hugging Face renders the originals.
TEST(ToolCalls, WireMessagesRenderAsHuggingFaceDoes) {
  MINFER_REQUIRE_SHARED();
  const json cases = json::parse(read_text("golden/templates/CASES.json"));
  int checked = 0;
  for (const json& c : cases) {
    const std::string file = c["template_file"];
    if (c["case"] != "tools_call_and_result" || !c.contains("expected") || c.contains("fake_now") ||
        file.find('#') != std::string::npos)
      continue;
    SCOPED_TRACE(file);
    const std::string source = read_text(file);
    json vars = c["vars"];
    for (json& m : vars["messages"]) {
      if (!m.contains("tool_calls")) continue;
      if (m["content"] == "") m["content"] = nullptr;
      for (json& call : m["tool_calls"])
        if (json& args = call["function"]["arguments"]; args.is_object()) args = to_json(from_json(args));
    }
    vars["messages"] = messages_for_template(vars["messages"], probe_tool_call_rendering(source));
    EXPECT_EQ(Template(source).render(vars), c["expected"].get<std::string>()) << file;
    ++checked;
  }
  EXPECT_GE(checked, 5);  // Qwen2.5, Qwen3, QwQ, DeepSeek R1, Llama 3.1
}

TEST(ToolCalls, ParsesHermesReplies) {
  const auto f = ToolCallFormat::Hermes;
  expect_text_only(f, {"Just text, no <b>call</b>."});
  ParsedReply p = parse_tool_calls(f, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(p.calls[0].arguments), json({{"city", "Paris"}}));
  EXPECT_EQ(p.content, "");

  // Text before, two calls, arguments as JSON text, and a thought that mentions the syntax.
  p = parse_tool_calls(f,
                       "<think>\nI could write <tool_call> here.\n</think>\n\nLet me look.\n"
                       "<tool_call>\n{\"name\": \"a\", \"arguments\": \"{\\\"x\\\": 1}\"}\n</tool_call>\n"
                       "<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "a");
  EXPECT_EQ(json::parse(p.calls[0].arguments), json({{"x", 1}}));
  EXPECT_EQ(p.calls[1].name, "b");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  EXPECT_EQ(p.content, "<think>\nI could write <tool_call> here.\n</think>\n\nLet me look.");

  // The closing tag cut off by the end of generation: the call is whole all the same.
  p = parse_tool_calls(f, "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"s\": \"}\"}}");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(json::parse(p.calls[0].arguments), json({{"s", "}"}}));

  expect_text_only(f, {"<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}\n</tool_call>",
                       "<tool_call>\n{\"arguments\": {}}\n</tool_call>",
                       "<tool_call>\n{\"name\": \"a\", \"arguments\": [1]}\n</tool_call>",
                       "<tool_call>\n{\"name\": \"a\"} trailing\n</tool_call>", "<tool_call>"});
}

TEST(ToolCalls, ParsesLlama3AndMistralReplies) {
  auto f = ToolCallFormat::Llama3Json;
  ParsedReply p = parse_tool_calls(f, " {\"name\": \"f\", \"parameters\": {\"q\": \"x\"}}");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "f");
  EXPECT_EQ(json::parse(p.calls[0].arguments), json({{"q", "x"}}));
  p = parse_tool_calls(f, "<|python_tag|>{\"type\": \"function\", \"name\": \"f\", \"parameters\": {}}; "
                          "{\"name\": \"g\", \"arguments\": {\"n\": 2}}");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1].name, "g");
  EXPECT_EQ(json::parse(p.calls[1].arguments), json({{"n", 2}}));
  expect_text_only(f, {"Hello {\"name\": \"f\", \"parameters\": {}}", "{\"value\": 3}", "{\"name\": \"f\", ",
                       "<|python_tag|>brave_search.call(query=\"x\")"});

  f = ToolCallFormat::MistralNemo;
  p = parse_tool_calls(f, "Sure. [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": true}, \"id\": \"abcDEF123\"}, "
                          "{\"name\": \"g\", \"arguments\": {}}]");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.content, "Sure.");
  EXPECT_EQ(p.calls[0].id, "abcDEF123");
  EXPECT_EQ(json::parse(p.calls[0].arguments), json({{"a", true}}));
  EXPECT_EQ(p.calls[1].id, "");
  expect_text_only(f, {"[TOOL_CALLS][]", "[TOOL_CALLS]{\"name\": \"f\"}", "[TOOL_CALLS][{\"name\": \"f\"}] and more"});
}

TEST(ToolCalls, StreamingHoldsBackWhereACallMayBegin) {
  struct Case {
    ToolCallFormat f;
    const char* reply;
    size_t start;
  };
  const Case cases[] = {
      {ToolCallFormat::Hermes, "Hello <b>", 9},
      {ToolCallFormat::Hermes, "Hello <tool", 6},
      {ToolCallFormat::Hermes, "Hello <tool_call>\n{\"na", 6},
      {ToolCallFormat::Hermes, "a <", 2},
      {ToolCallFormat::MistralNemo, "ok [TOOL", 3},
      {ToolCallFormat::MistralNemo, "ok [1]", 6},
      // Llama 3: a call is the whole reply, so nothing goes out until its first character decides.
      {ToolCallFormat::Llama3Json, "", 0},
      {ToolCallFormat::Llama3Json, " \n", 0},
      {ToolCallFormat::Llama3Json, " {\"name", 0},
      {ToolCallFormat::Llama3Json, "<|python", 0},
      {ToolCallFormat::Llama3Json, "Hi {", 4},
      {ToolCallFormat::None, "<tool_call>", 11},
  };
  for (const Case& c : cases) EXPECT_EQ(tool_call_start(c.f, c.reply), c.start) << c.reply;
}

namespace {

bool grammar_takes(const grammar::Grammar& g, const std::string& text) {
  grammar::Matcher m(std::make_shared<const grammar::Grammar>(g));
  if (!m.allows(text)) return false;
  m.accept(text);
  return m.complete();
}

}  // namespace

TEST(ToolCalls, GrammarOfARequiredCall) {
  const json tools = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "now"}}])");
  auto grammar_of = [&](ToolCallFormat f, bool parallel) {
    const ToolCallGrammar g = tool_call_grammar(f, tools, parallel);
    return grammar::json_schema_in_gbnf(g.schema, kToolCallRule, g.root).grammar;
  };
  const std::string weather = R"({"name": "get_weather", "arguments": {"city": "Paris"}})";
  const std::string hermes = "<tool_call>\n" + weather + "\n</tool_call>";
  const auto one = grammar_of(ToolCallFormat::Hermes, false);
  EXPECT_TRUE(grammar_takes(one, hermes));
  EXPECT_TRUE(grammar_takes(one, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(grammar_takes(one, "<tool_call>\n{\"name\": \"now\", \"arguments\": {\"x\": 1}}\n</tool_call>"));
  EXPECT_FALSE(grammar_takes(one, hermes + "\n" + hermes));
  EXPECT_FALSE(grammar_takes(one, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(grammar_takes(one, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(grammar_takes(one, "Sure! " + hermes));
  EXPECT_TRUE(grammar_takes(grammar_of(ToolCallFormat::Hermes, true), hermes + "\n" + hermes));

  EXPECT_TRUE(grammar_takes(grammar_of(ToolCallFormat::Llama3Json, false),
                            R"({"name": "get_weather", "parameters": {"city": "Rome"}})"));
  const auto mistral = grammar_of(ToolCallFormat::MistralNemo, false);
  EXPECT_TRUE(grammar_takes(mistral, R"([TOOL_CALLS][{"name": "now", "arguments": {}, "id": "a1b2c3d4e"}])"));
  EXPECT_FALSE(grammar_takes(mistral, R"([TOOL_CALLS][{"name": "now", "arguments": {}, "id": "a1"}])"));

  // What the grammar makes, the parser reads back.
  const ParsedReply p = parse_tool_calls(ToolCallFormat::Hermes, hermes);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
}
