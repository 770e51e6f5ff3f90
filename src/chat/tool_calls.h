// Tool calls in a model's own syntax: which syntax a chat template teaches its model, how to
// find the calls in a reply (and where one may be starting while the reply streams), and the
// grammar that makes a reply one call. These are the formats of llama.cpp's common/chat.cpp that
// the architectures minfer runs are trained on:
//   Hermes      <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>   (Qwen2.5, Qwen3,
//               QwQ, Hermes 2/3 and every template that writes "<tool_call>")
//   Llama3Json  {"name": ..., "parameters": {...}}, the whole reply, maybe after <|python_tag|>
//               (Llama 3.1/3.2/3.3: templates with an "ipython" role)
//   MistralNemo [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": "abcdef123"}]
// Pure text and JSON: no model, no tokenizer.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace minfer::chat {

enum class ToolCallFormat { None, Hermes, Llama3Json, MistralNemo };

// From the markers in the template's source; None when it teaches no format known here.
ToolCallFormat detect_tool_call_format(std::string_view template_source);
const char* tool_call_format_name(ToolCallFormat f);

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text of an object
  std::string id;         // as the model wrote it (Mistral), else empty
};

struct ParsedReply {
  std::string content;          // the text that is no call (without the spaces before a call)
  std::vector<ToolCall> calls;  // empty: the reply is plain content
};

// Splits a reply into its text and its calls. A call that is not well formed (not JSON, no
// name, cut off) leaves the whole reply as content, as the model's words rather than a guess.
// Hermes calls inside a <think> block are thoughts, not calls.
ParsedReply parse_tool_calls(ToolCallFormat f, std::string_view reply);

// Where a call may begin in the reply so far (reply.size(): nowhere): streamed text goes out up
// to there and the rest waits for the end of the reply.
size_t tool_call_start(ToolCallFormat f, std::string_view reply);

// The marker texts a reply must keep for parse_tool_calls to see them, where a vocabulary has
// them as control tokens, whose text is not printed otherwise ("<|python_tag|>" in Llama 3's,
// "[TOOL_CALLS]" in Mistral's; Qwen's "<tool_call>" is plain text).
std::vector<std::string> tool_call_control_markers(ToolCallFormat f);

// A reply that is only calls, for tool_choice "required" (or one named function): the JSON schema
// of one call to any of `tools` (OpenAI's [{"type": "function", "function": {"name",
// "parameters"}}]) and the GBNF root around it, which names that schema's rule
// `schema_rule`. `parallel`: one call or more, else exactly one.
struct ToolCallGrammar {
  nlohmann::ordered_json schema;
  std::string root;
  // The texts that open a call, where the syntax has a marker (Hermes, Mistral): for
  // tool_choice auto the grammar holds only from one of them on (a lazy grammar, as
  // llama-server's). Llama 3's calls have none: they are read from the reply, not constrained.
  std::vector<std::string> triggers;
};
inline constexpr const char* kToolCallRule = "tool-call";
ToolCallGrammar tool_call_grammar(ToolCallFormat f, const nlohmann::ordered_json& tools, bool parallel);

// How the template wants an assistant message's calls, found by rendering one call each way as
// llama.cpp's minja does: the arguments as a JSON object (Qwen2.5's `arguments | tojson`) rather
// than the OpenAI wire format's JSON text (DeepSeek R1's `+ arguments`); a reply that is only
// calls with content none (DeepSeek R1 tests for it) or "" (Qwen3 raises on none).
struct ToolCallRendering {
  bool object_arguments = false;
  bool null_content = true;
};
ToolCallRendering probe_tool_call_rendering(const std::string& template_source);

// OpenAI wire-format messages as the template wants them (see ToolCallRendering): each call's
// arguments parsed into an object or written as JSON text (json.dumps's style), the content of
// a reply that is only calls none or "".
nlohmann::ordered_json messages_for_template(nlohmann::ordered_json messages, const ToolCallRendering& how);

}  // namespace minfer::chat
