// The OpenAI wire format: request bodies as the API reference writes them are taken, every
// ill-formed or unsupported one is refused naming its field, and the response objects have the
// reference's shapes (chat.completion, chat.completion.chunk, text_completion).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "common/error.h"
#include "grammar/matcher.h"
#include "server/openai_api.h"

using namespace minfer;
using namespace minfer::server;
using json = nlohmann::ordered_json;

namespace {

std::string refusal(const std::string& body, ApiKind kind = ApiKind::Chat) {
  try {
    parse_completion_request(body, kind);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OpenAiRequest, ChatRequestAsTheReferenceWritesIt) {
  const auto r = parse_completion_request(R"({
    "model": "gpt-4o", "user": "u1",
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "there"}]},
      {"role": "assistant", "content": null},
      {"role": "user", "content": "Go", "name": "bob"}],
    "max_completion_tokens": 7, "max_tokens": 99, "temperature": 0.5, "top_p": 0.9,
    "frequency_penalty": 0.25, "presence_penalty": -0.5, "seed": 42, "stop": "END",
    "stream": true, "stream_options": {"include_usage": true}, "n": 1, "logprobs": false,
    "tools": [], "response_format": {"type": "text"},
    "chat_template_kwargs": {"enable_thinking": false}})",
                                          ApiKind::Chat);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[1]["content"], "Hello\nthere");  // text parts joined as llama-server does
  EXPECT_EQ(r.messages[2]["content"], "");
  EXPECT_EQ(r.messages[3]["name"], "bob");  // other fields stay for the template
  EXPECT_EQ(r.max_tokens, 7);               // the current name wins over the old one
  EXPECT_FLOAT_EQ(*r.temperature, 0.5f);
  EXPECT_FLOAT_EQ(*r.top_p, 0.9f);
  EXPECT_FLOAT_EQ(*r.frequency_penalty, 0.25f);
  EXPECT_FLOAT_EQ(*r.presence_penalty, -0.5f);
  EXPECT_EQ(r.seed, 42u);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_FALSE(r.top_k.has_value());
  EXPECT_EQ(r.template_kwargs, (json{{"enable_thinking", false}}));
  EXPECT_EQ(r.grammar, nullptr);
}

// llama-server's "grammar" and OpenAI's JSON mode, which llama-server serves with the grammar
// of a JSON object; JSON schemas are refused.
TEST(OpenAiRequest, GrammarAndJsonMode) {
  const std::string msg = R"("messages": [{"role": "user", "content": "x"}])";
  auto chat = [&](const std::string& extra) { return parse_completion_request("{" + msg + ", " + extra + "}", ApiKind::Chat); };
  // Whether the request's grammar takes `text` whole.
  auto takes = [](const CompletionRequest& r, const std::string& text) {
    grammar::Matcher m(r.grammar);
    if (!m.allows(text)) return false;
    m.accept(text);
    return m.complete();
  };
  const auto digits = chat(R"("grammar": "root ::= [0-9]+")");
  ASSERT_NE(digits.grammar, nullptr);
  EXPECT_TRUE(takes(digits, "123"));
  EXPECT_FALSE(takes(digits, "12a"));
  EXPECT_TRUE(takes(parse_completion_request(R"({"prompt": "x", "grammar": "root ::= \"a\""})", ApiKind::Completion), "a"));
  for (const char* format : {R"("response_format": {"type": "json_object"})", R"("response_format": {"type": "json_object", "schema": {}})"}) {
    const auto json_mode = chat(format);
    ASSERT_NE(json_mode.grammar, nullptr) << format;
    EXPECT_TRUE(takes(json_mode, R"({"a": [1, -2.5e3, "x\n", true, null, {}]})")) << format;
    EXPECT_FALSE(takes(json_mode, "[1]")) << format;  // an object, as llama-server's grammar
    EXPECT_FALSE(takes(json_mode, R"({"a": 01})")) << format;
  }
  EXPECT_EQ(chat(R"("response_format": {"type": "text"}, "grammar": "")").grammar, nullptr);
  // A schema, in each of the three places a request can give it: its grammar.
  for (const char* schema : {R"("json_schema": {"type": "array", "items": {"type": "integer"}, "maxItems": 2})",
                             R"("response_format": {"type": "json_object", "schema": {"type": "array", "items": {"type": "integer"}, "maxItems": 2}})",
                             R"("response_format": {"type": "json_schema", "json_schema": {"name": "ints", "strict": true,
                                 "schema": {"type": "array", "items": {"type": "integer"}, "maxItems": 2}}})"}) {
    const auto r = chat(schema);
    ASSERT_NE(r.grammar, nullptr) << schema;
    EXPECT_TRUE(takes(r, "[1, -2]")) << schema;
    EXPECT_TRUE(takes(r, "[]")) << schema;
    EXPECT_FALSE(takes(r, "[1, 2, 3]")) << schema;
    EXPECT_FALSE(takes(r, R"({"a": 1})")) << schema;
    EXPECT_TRUE(r.grammar_warnings.empty());
  }
  EXPECT_EQ(chat(R"("json_schema": {"type": "string", "pattern": "^\\w+$"})").grammar_warnings.size(), 1u);
}

TEST(OpenAiRequest, ToolsAndCallsInTheHistory) {
  const char* tools = R"([{"type": "function", "function": {"name": "f", "description": "F.",
      "parameters": {"type": "object"}}}, {"type": "function", "function": {"name": "g"}}])";
  auto r = parse_completion_request(fmt::format(R"({{"tools": {}, "messages": [
      {{"role": "user", "content": "x"}},
      {{"role": "assistant", "content": null, "tool_calls": [{{"id": "c1", "type": "function",
        "function": {{"name": "f", "arguments": "{{\"a\": 1}}"}}}}]}},
      {{"role": "tool", "tool_call_id": "c1", "content": [{{"type": "text", "text": "42"}}]}}]}})", tools),
                                    ApiKind::Chat);
  EXPECT_EQ(r.tools, json::parse(tools));
  EXPECT_EQ(r.tool_choice, CompletionRequest::ToolChoice::Auto);
  EXPECT_FALSE(r.parallel_tool_calls);
  EXPECT_TRUE(r.calls_tools());
  // A reply that was only calls keeps content null (templates test for none); the calls and
  // the tool message's id reach the template as sent.
  EXPECT_TRUE(r.messages[1]["content"].is_null());
  EXPECT_EQ(r.messages[1]["tool_calls"][0]["function"]["arguments"], "{\"a\": 1}");
  EXPECT_EQ(r.messages[2]["content"], "42");
  EXPECT_EQ(r.messages[2]["tool_call_id"], "c1");

  // A named function: the reply must call it, and only it is offered.
  r = parse_completion_request(fmt::format(R"({{"tools": {}, "messages": [{{"role": "user", "content": "x"}}],
      "tool_choice": {{"type": "function", "function": {{"name": "g"}}}}, "parallel_tool_calls": true}})", tools),
                               ApiKind::Chat);
  EXPECT_EQ(r.tool_choice, CompletionRequest::ToolChoice::Required);
  ASSERT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tools[0]["function"]["name"], "g");
  EXPECT_TRUE(r.parallel_tool_calls);
  // "none": the tools are still shown to the template, but no call is looked for, and a grammar
  // may come along.
  r = parse_completion_request(fmt::format(R"({{"tools": {}, "messages": [{{"role": "user", "content": "x"}}],
      "tool_choice": "none", "grammar": "root ::= \"a\""}})", tools),
                               ApiKind::Chat);
  EXPECT_FALSE(r.calls_tools());
  EXPECT_TRUE(r.grammar);
  EXPECT_FALSE(parse_completion_request(R"({"tools": [], "messages": [{"role": "user", "content": "x"}]})", ApiKind::Chat)
                   .calls_tools());

  // reasoning_format: absent leaves the server's choice.
  const char* chat = R"({"messages": [{"role": "user", "content": "x"}]})";
  EXPECT_FALSE(parse_completion_request(chat, ApiKind::Chat).extract_reasoning.has_value());
  EXPECT_EQ(parse_completion_request(R"({"messages": [{"role": "user", "content": "x"}], "reasoning_format": "none"})",
                                     ApiKind::Chat).extract_reasoning, false);
  EXPECT_EQ(parse_completion_request(R"({"messages": [{"role": "user", "content": "x"}], "reasoning_format": "auto"})",
                                     ApiKind::Chat).extract_reasoning, true);
}

TEST(OpenAiRequest, LlamaServersOwnCompletionAndInfill) {
  auto r = parse_completion_request(R"({"prompt": "x", "n_predict": 5, "n_probs": 3, "return_tokens": true})", ApiKind::Native);
  EXPECT_EQ(r.prompt, "x");
  EXPECT_EQ(r.max_tokens, 5);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_TRUE(r.return_tokens);
  r = parse_completion_request(R"({"input_prefix": "def f():\n", "input_suffix": "\n", "prompt": "  ",
      "input_extra": [{"filename": "a.py", "text": "x = 1"}, {"text": "y"}]})", ApiKind::Infill);
  ASSERT_TRUE(r.infill);
  EXPECT_EQ(r.infill->prefix, "def f():\n");
  EXPECT_EQ(r.infill->suffix, "\n");
  EXPECT_EQ(r.infill->prompt, "  ");
  ASSERT_EQ(r.infill->extra.size(), 2u);
  EXPECT_EQ(r.infill->extra[0].filename, "a.py");
  EXPECT_EQ(r.infill->extra[1].filename, "tmp");  // llama-server's name for a chunk without one
  EXPECT_TRUE(parse_completion_request("{}", ApiKind::Infill).infill.has_value());  // all optional
  for (const auto& [body, want] : std::vector<std::pair<const char*, const char*>>{
           {R"({"input_prefix": 3})", "'input_prefix' must be a string"},
           {R"({"input_extra": {"text": "x"}})", "'input_extra' must be an array"},
           {R"({"input_extra": [{"filename": "a"}]})", "input_extra[0] must be"},
           {R"({"prompt": ["x"]})", "'prompt' must be a string"}}) {
    const std::string got = refusal(body, ApiKind::Infill);
    EXPECT_NE(got.find(want), std::string::npos) << body << "\n  gave: " << got;
  }
  EXPECT_NE(refusal(R"({"tools": [{"type": "function", "function": {"name": "f"}}], "prompt": "x"})", ApiKind::Native)
                .find("'tools' needs the chat endpoint"),
            std::string::npos);
}

TEST(OpenAiRequest, CompletionPromptForms) {
  auto r = parse_completion_request(R"({"prompt": "Once", "max_tokens": 5.0, "seed": -1,
                                       "top_k": 20, "min_p": 0.1, "repeat_penalty": 1.1,
                                       "repeat_last_n": -1, "ignore_eos": true,
                                       "stop": ["a", "b"]})",
                                    ApiKind::Completion);
  EXPECT_EQ(r.prompt, "Once");
  EXPECT_EQ(r.max_tokens, 5);
  EXPECT_FALSE(r.seed.has_value());  // -1: random
  EXPECT_EQ(r.top_k, 20);
  EXPECT_EQ(r.repeat_last_n, -1);
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_EQ(r.stop.size(), 2u);
  r = parse_completion_request(R"({"prompt": ["Twice"]})", ApiKind::Completion);
  EXPECT_EQ(r.prompt, "Twice");
  r = parse_completion_request(R"({"prompt": [1, 403, 407], "n_predict": -1})", ApiKind::Completion);
  EXPECT_EQ(r.prompt_tokens, (std::vector<int32_t>{1, 403, 407}));
  EXPECT_EQ(r.max_tokens, -1);
  // The completions API has no max_completion_tokens: it is ignored there like any unknown field.
  r = parse_completion_request(R"({"prompt": "x", "max_completion_tokens": 3})", ApiKind::Completion);
  EXPECT_FALSE(r.max_tokens.has_value());
  r = parse_completion_request(R"({"prompt": "x", "seed": 18446744073709551615})", ApiKind::Completion);
  EXPECT_EQ(r.seed, 18446744073709551615ull);
}

TEST(OpenAiRequest, BadOrUnsupportedFieldsAreRefusedByName) {
  const std::pair<const char*, const char*> chat[] = {
      {R"({"messages": )", "not valid JSON"},
      {R"([1, 2])", "JSON object"},
      {R"({})", "'messages' is required"},
      {R"({"messages": []})", "non-empty array"},
      {R"({"messages": ["hi"]})", "messages[0] must be an object"},
      {R"({"messages": [{"content": "x"}]})", "messages[0] needs a string 'role'"},
      {R"({"messages": [{"role": "user"}]})", "messages[0] needs a 'content'"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content must be"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "'image_url' parts are not supported"},
      {R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})", "needs a string 'text'"},
      {R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{}]}]})", "messages[0].tool_calls[0] must be"},
      {R"({"messages": [{"role": "assistant", "tool_calls": {"id": "a"}}]})", "messages[0].tool_calls must be an array"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": 3}}]}]})",
       "messages[0].tool_calls[0] must be"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", "'n' must be 1"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": "yes"})", "'logprobs' must be true or false"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 3})", "'top_logprobs' needs 'logprobs': true"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 101})",
       "'top_logprobs' must be in"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})", "tools[0] needs a 'function' object"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": {"type": "function"}})", "'tools' must be an array"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "code_interpreter"}]})", "tools[0] must have \"type\": \"function\""},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": ""}}]})", "tools[0].function needs a string 'name'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]})",
       "tools[0].function.parameters must be"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "auto"})", "'tool_choice' needs 'tools'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "any"})",
       "'tool_choice' must be"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": {"type": "function", "function": {"name": "g"}}})",
       "'tool_choice' names 'g', which is not in 'tools'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}], "response_format": {"type": "json_object"}})",
       "'tools' with a grammar"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}], "parallel_tool_calls": 1})",
       "'parallel_tool_calls' must be true or false"},
      {R"({"messages": [{"role": "user", "content": "x"}], "functions": [{"name": "f"}]})", "'functions'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "reasoning_format": "raw"})", "'reasoning_format' must be"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema"}})",
       "needs a 'json_schema' object"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "foo"}}}})",
       "JSON schema: unknown type 'foo'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}, "json_schema": {}})",
       "give one of them"},
      {R"({"messages": [{"role": "user", "content": "x"}], "json_schema": {"$ref": "#/nowhere"}})", "does not resolve"},
      {R"({"messages": [{"role": "user", "content": "x"}], "json_schema": {}, "grammar": "root ::= \"a\""})", "give one of them"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "yaml"}})", "'response_format' must be"},
      {R"({"messages": [{"role": "user", "content": "x"}], "grammar": 3})", "'grammar' must be a string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "grammar": "root ::= x"})",
       "'grammar': undefined rule 'x' at line 1, column 10"},
      {R"({"messages": [{"role": "user", "content": "x"}], "grammar": "root ::= \"a\"", "response_format": {"type": "json_object"}})",
       "give one of them"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "'temperature' must be a number"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1})", "'max_tokens' must be in"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 1.5})",
       "'max_completion_tokens' must be an integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "seed": -2})", "'seed'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "seed": 1.5})", "'seed'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})", "'stop' must be"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ""})", "must not be empty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "'stream' must be true or false"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": 3})", "'stream_options'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_k": 1e40})", "'top_k'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": [1]})",
       "'chat_template_kwargs' must be an object"},
  };
  for (const auto& [body, want] : chat) {
    const std::string got = refusal(body, ApiKind::Chat);
    EXPECT_NE(got.find(want), std::string::npos) << body << "\n  gave: " << got;
  }
  const std::pair<const char*, const char*> completion[] = {
      {R"({})", "'prompt' is required"},
      {R"({"prompt": ""})", "'prompt' is empty"},
      {R"({"prompt": 7})", "'prompt' must be"},
      {R"({"prompt": ["a", "b"]})", "several prompts"},
      {R"({"prompt": [1, -1]})", "non-negative integers"},
      {R"({"prompt": "x", "echo": true})", "'echo'"},
      {R"({"prompt": "x", "suffix": "y"})", "'suffix'"},
      {R"({"prompt": "x", "best_of": 2})", "'best_of'"},
      {R"({"prompt": "x", "logprobs": -1})", "'logprobs' must be in"},
      {R"({"prompt": "x", "logprobs": true})", "'logprobs' must be an integer"},
      {R"({"prompt": "x", "n_predict": -2})", "'n_predict' must be in"},
      {R"({"prompt": "x", "max_tokens": 18446744073709551615})", "'max_tokens' must be in"},
      {R"({"prompt": "x", "n": 0})", "'n' must be in"},
      {R"({"prompt": "x", "tools": [{"type": "function", "function": {"name": "f"}}]})", "'tools' needs the chat endpoint"},
  };
  for (const auto& [body, want] : completion) {
    const std::string got = refusal(body, ApiKind::Completion);
    EXPECT_NE(got.find(want), std::string::npos) << body << "\n  gave: " << got;
  }
}

TEST(OpenAiRequest, LogprobsAsChatAndCompletionsAskForThem) {
  auto r = parse_completion_request(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true})",
                                    ApiKind::Chat);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 20);  // llama-server's default
  r = parse_completion_request(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true,
                                   "top_logprobs": 0})", ApiKind::Chat);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 0);
  r = parse_completion_request(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": false})",
                               ApiKind::Chat);
  EXPECT_FALSE(r.logprobs);
  r = parse_completion_request(R"({"prompt": "x", "logprobs": 5})", ApiKind::Completion);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 5);
  r = parse_completion_request(R"({"prompt": "x", "logprobs": 0})", ApiKind::Completion);
  EXPECT_FALSE(r.logprobs);
  r = parse_completion_request(R"({"prompt": "x", "n_probs": 2})", ApiKind::Completion);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
}

TEST(OpenAiRequest, LogitBiasForms) {
  auto r = parse_completion_request(R"({"prompt": "x", "logit_bias": {"50256": -100, "7": 2.5, "9": false}})",
                                    ApiKind::Completion);
  ASSERT_EQ(r.logit_bias.size(), 3u);
  EXPECT_EQ(r.logit_bias[0].id, 50256);
  EXPECT_EQ(r.logit_bias[0].bias, -100.0f);
  EXPECT_EQ(r.logit_bias[1].bias, 2.5f);
  EXPECT_EQ(r.logit_bias[2].bias, -std::numeric_limits<float>::infinity());
  r = parse_completion_request(R"({"prompt": "x", "logit_bias": [[3, 1], [4, false]]})", ApiKind::Completion);
  ASSERT_EQ(r.logit_bias.size(), 2u);
  EXPECT_EQ(r.logit_bias[1].id, 4);
  // Appended to the server's own (-l), after them.
  runtime::SamplerParams d;
  d.logit_bias = {{1, 1.0f}};
  const auto p = sampler_params(r, d, 0);
  ASSERT_EQ(p.logit_bias.size(), 3u);
  EXPECT_EQ(p.logit_bias[2].id, 4);
  for (const char* body : {R"({"prompt": "x", "logit_bias": {"hello": 1}})", R"({"prompt": "x", "logit_bias": {"-1": 1}})",
                           R"({"prompt": "x", "logit_bias": {"1": "up"}})", R"({"prompt": "x", "logit_bias": {"1": true}})",
                           R"({"prompt": "x", "logit_bias": [[1]]})", R"({"prompt": "x", "logit_bias": 5})"})
    EXPECT_NE(refusal(body, ApiKind::Completion).find("'logit_bias'"), std::string::npos) << body;
}

TEST(OpenAiRequest, SamplerParamsOverTheServerDefaults) {
  runtime::SamplerParams d;
  d.temp = 0.8f;
  d.top_k = 40;
  d.min_p = 0.05f;
  auto r = parse_completion_request(R"({"prompt": "x", "temperature": 0, "top_k": 5})", ApiKind::Completion);
  auto p = sampler_params(r, d, 1234);
  EXPECT_EQ(p.temp, 0.0f);
  EXPECT_EQ(p.top_k, 5);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);  // untouched
  EXPECT_EQ(p.seed, 1234u);         // no seed in the request: the one given
  r = parse_completion_request(R"({"prompt": "x", "seed": 7})", ApiKind::Completion);
  EXPECT_EQ(sampler_params(r, d, 1234).seed, 7u);
  r = parse_completion_request(R"({"prompt": "x", "temperature": -1})", ApiKind::Completion);
  EXPECT_THROW(sampler_params(r, d, 0), Error);
  r = parse_completion_request(R"({"prompt": "x", "top_p": 1.5})", ApiKind::Completion);
  EXPECT_THROW(sampler_params(r, d, 0), Error);
}

TEST(OpenAiResponse, ShapesOfTheReference) {
  const ResponseHead h{"chatcmpl-abc", 1700000000, "m.gguf"};
  CompletionResult r;
  r.text = "Hi!";
  r.finish_reason = "stop";
  r.prompt_tokens = 9;
  r.cached_tokens = 4;
  r.prompt_evaluated = 5;
  r.completion_tokens = 3;
  r.prompt_ms = 10;
  r.predicted_ms = 30;

  json c = completion_response(ApiKind::Chat, h, r);
  EXPECT_EQ(c["id"], "chatcmpl-abc");
  EXPECT_EQ(c["object"], "chat.completion");
  EXPECT_EQ(c["created"], 1700000000);
  EXPECT_EQ(c["model"], "m.gguf");
  EXPECT_EQ(c["choices"][0]["index"], 0);
  EXPECT_EQ(c["choices"][0]["message"], (json{{"role", "assistant"}, {"content", "Hi!"}}));
  EXPECT_EQ(c["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(c["usage"]["prompt_tokens"], 9);
  EXPECT_EQ(c["usage"]["completion_tokens"], 3);
  EXPECT_EQ(c["usage"]["total_tokens"], 12);
  EXPECT_EQ(c["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
  EXPECT_EQ(c["timings"]["prompt_n"], 5);
  EXPECT_DOUBLE_EQ(c["timings"]["prompt_per_second"].get<double>(), 500.0);
  EXPECT_DOUBLE_EQ(c["timings"]["predicted_per_token_ms"].get<double>(), 10.0);

  json t = completion_response(ApiKind::Completion, h, r);
  EXPECT_EQ(t["object"], "text_completion");
  EXPECT_EQ(t["choices"][0]["text"], "Hi!");
  EXPECT_TRUE(t["choices"][0]["logprobs"].is_null());
  EXPECT_FALSE(t["choices"][0].contains("message"));

  json first = completion_chunk(ApiKind::Chat, h, "", true, nullptr);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], (json{{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  json mid = completion_chunk(ApiKind::Chat, h, "lo", false, nullptr);
  EXPECT_EQ(mid["choices"][0]["delta"], (json{{"content", "lo"}}));
  const std::string why = "length";
  json last = completion_chunk(ApiKind::Chat, h, "", false, &why);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  json tc = completion_chunk(ApiKind::Completion, h, "lo", false, nullptr);
  EXPECT_EQ(tc["object"], "text_completion");
  EXPECT_EQ(tc["choices"][0]["text"], "lo");
  json u = usage_chunk(ApiKind::Chat, h, r);
  EXPECT_TRUE(u["choices"].is_array() && u["choices"].empty());
  EXPECT_EQ(u["usage"]["total_tokens"], 12);

  // Log-probabilities in llama-server's shape: raw bytes beside the complete characters, and a
  // ruled-out token (-inf) as the lowest float since JSON has no infinity.
  CompletionResult lr = r;
  lr.has_logprobs = true;
  lr.logprobs.push_back({{7, "\xe4\xbd", "", -0.5}, {{7, "\xe4\xbd", "", -0.5}, {9, "ab", "ab", -std::numeric_limits<double>::infinity()}}});
  const json lj = completion_response(ApiKind::Chat, h, lr)["choices"][0]["logprobs"];
  ASSERT_EQ(lj["content"].size(), 1u);
  EXPECT_EQ(lj["content"][0]["id"], 7);
  EXPECT_EQ(lj["content"][0]["token"], "");
  EXPECT_EQ(lj["content"][0]["bytes"], (json{228, 189}));
  EXPECT_EQ(lj["content"][0]["logprob"], -0.5);
  ASSERT_EQ(lj["content"][0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(lj["content"][0]["top_logprobs"][1]["token"], "ab");
  EXPECT_EQ(lj["content"][0]["top_logprobs"][1]["logprob"], double(std::numeric_limits<float>::lowest()));
  EXPECT_FALSE(lj["content"][0]["top_logprobs"][1].contains("top_logprobs"));
  EXPECT_TRUE(c["choices"][0]["logprobs"].is_null());  // not asked
  const std::span<const SampledLogprobs> none;
  EXPECT_TRUE(completion_chunk(ApiKind::Chat, h, "x", false, nullptr, none)["choices"][0]["logprobs"]["content"].empty());
  EXPECT_TRUE(completion_chunk(ApiKind::Chat, h, "x", false, nullptr)["choices"][0]["logprobs"].is_null());

  // Tool calls: content null when the reply was only calls, finish_reason "tool_calls"; in a
  // stream, one delta with the calls placed by index.
  CompletionResult called = r;
  called.text = "";
  called.finish_reason = "tool_calls";
  called.tool_calls = {{"f", "{\"a\":1}", "id1"}, {"g", "{}", "id2"}};
  const json cm = completion_response(ApiKind::Chat, h, called)["choices"][0];
  EXPECT_TRUE(cm["message"]["content"].is_null());
  EXPECT_EQ(cm["finish_reason"], "tool_calls");
  EXPECT_EQ(cm["message"]["tool_calls"], json::parse(R"([
      {"id": "id1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}},
      {"id": "id2", "type": "function", "function": {"name": "g", "arguments": "{}"}}])"));
  called.text = "Let me see.";
  EXPECT_EQ(completion_response(ApiKind::Chat, h, called)["choices"][0]["message"]["content"], "Let me see.");
  // Reasoning: message.reasoning_content beside the content; a chunk of reasoning alone has no
  // content field.
  CompletionResult thought = r;
  thought.reasoning = "Hmm.";
  EXPECT_EQ(completion_response(ApiKind::Chat, h, thought)["choices"][0]["message"],
            (json{{"role", "assistant"}, {"content", "Hi!"}, {"reasoning_content", "Hmm."}}));
  EXPECT_EQ(completion_chunk(ApiKind::Chat, h, "", false, nullptr, {}, "Hm")["choices"][0]["delta"],
            (json{{"reasoning_content", "Hm"}}));
  EXPECT_EQ(completion_chunk(ApiKind::Chat, h, "A", false, nullptr, {}, "Hm")["choices"][0]["delta"],
            (json{{"reasoning_content", "Hm"}, {"content", "A"}}));
  const json tchunk = tool_calls_chunk(h, called.tool_calls);
  EXPECT_EQ(tchunk["object"], "chat.completion.chunk");
  EXPECT_TRUE(tchunk["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(tchunk["choices"][0]["delta"]["tool_calls"][1],
            json::parse(R"({"index": 1, "id": "id2", "type": "function", "function": {"name": "g", "arguments": "{}"}})"));

  // llama-server's own shape (/completion, /infill).
  CompletionResult nr = r;
  nr.stop_reason = runtime::StopReason::StopString;
  nr.stopping_word = "END";
  nr.tokens = {5, 6, 7};
  const json nj = native_response(h, nr, {"the prompt", json{{"n_predict", 3}}, true});
  EXPECT_EQ(nj["content"], "Hi!");
  EXPECT_EQ(nj["stop"], true);
  EXPECT_EQ(nj["stop_type"], "word");
  EXPECT_EQ(nj["stopping_word"], "END");
  EXPECT_EQ(nj["tokens"], json({5, 6, 7}));
  EXPECT_EQ(nj["tokens_predicted"], 3);
  EXPECT_EQ(nj["tokens_evaluated"], 9);
  EXPECT_EQ(nj["tokens_cached"], 4);
  EXPECT_EQ(nj["prompt"], "the prompt");
  EXPECT_EQ(nj["generation_settings"]["n_predict"], 3);
  EXPECT_EQ(nj["has_new_line"], false);
  EXPECT_EQ(nj["truncated"], false);
  nr.stop_reason = runtime::StopReason::ContextFull;
  EXPECT_EQ(native_response(h, nr, {})["stop_type"], "limit");
  EXPECT_EQ(native_response(h, nr, {})["truncated"], true);
  nr.stop_reason = runtime::StopReason::Eog;
  EXPECT_EQ(native_response(h, nr, {})["stop_type"], "eos");
  EXPECT_EQ(nj["model"], "m.gguf");
  EXPECT_FALSE(nj.contains("completion_probabilities"));  // not asked
  EXPECT_TRUE(native_response(h, nr, {"", json::object(), false})["tokens"].empty());
  EXPECT_EQ(native_response(h, lr, {})["completion_probabilities"][0]["id"], 7);
  const int32_t ids[] = {5};
  EXPECT_EQ(native_chunk("lo", ids, std::nullopt), json::parse(R"({"index": 0, "content": "lo", "tokens": [5], "stop": false})"));

  EXPECT_EQ(sse_data(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  // A model can emit bytes that are not UTF-8: they reach the client as U+FFFD, not as a throw.
  EXPECT_EQ(sse_data(json{{"a", std::string("x\xff")}}), "data: {\"a\":\"x\xef\xbf\xbd\"}\n\n");
  json e = error_body(400, "bad 'n'");
  EXPECT_EQ(e["error"]["code"], 400);
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_EQ(e["error"]["message"], "bad 'n'");
  EXPECT_EQ(error_body(401, "")["error"]["type"], "authentication_error");
}
