#include "chat/tool_calls.h"

#include <algorithm>
#include <optional>

#include "chat/json_io.h"
#include "chat/reply_text.h"
#include "chat/template.h"

namespace minfer::chat {
namespace {

using json = nlohmann::ordered_json;
using namespace reply_text;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";

// The end of the JSON object or array that opens at `pos`, brackets matched outside strings;
// npos when it does not close within `s`.
size_t json_value_end(std::string_view s, size_t pos) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = pos; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// The JSON object or array at `pos` (after spaces), and where it ends.
std::optional<std::pair<json, size_t>> read_json(std::string_view s, size_t pos) {
  pos = skip_space(s, pos);
  if (pos >= s.size() || (s[pos] != '{' && s[pos] != '[')) return std::nullopt;
  const size_t end = json_value_end(s, pos);
  if (end == std::string_view::npos) return std::nullopt;
  json j = json::parse(s.substr(pos, end - pos), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return std::pair{std::move(j), end};
}

// {"name": "f", <args_key>: {...} or "{...}"}: a call, or nullopt. Other keys ("type", "id")
// are allowed; the id is kept.
std::optional<ToolCall> call_of(const json& j, std::initializer_list<const char*> args_keys) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
    return std::nullopt;
  ToolCall c{j["name"].get<std::string>(), "{}", ""};
  for (const char* key : args_keys) {
    if (!j.contains(key)) continue;
    const json& a = j[key];
    if (a.is_object()) {
      c.arguments = a.dump();
    } else if (a.is_string()) {
      const json parsed = json::parse(a.get<std::string>(), nullptr, false);
      if (!parsed.is_object()) return std::nullopt;
      c.arguments = parsed.dump();
    } else {
      return std::nullopt;
    }
    break;
  }
  if (j.contains("id") && j["id"].is_string()) c.id = j["id"].get<std::string>();
  return c;
}

// Where `marker` begins in `s`, or where a part of it that may still grow into it ends `s`;
// s.size() when neither.
size_t marker_start(std::string_view s, std::string_view marker) {
  if (const size_t at = s.find(marker); at != std::string_view::npos) return at;
  return s.size() - marker_tail(s, marker);
}

ParsedReply plain(std::string_view reply) { return ParsedReply{std::string(reply), {}}; }

ParsedReply parse_hermes(std::string_view reply) {
  // A thinking model's thoughts may mention the syntax: calls come after them.
  const size_t think_end = reply.rfind(kThinkClose);
  const size_t from = think_end == std::string_view::npos ? 0 : think_end + kThinkClose.size();
  size_t at = reply.find(kHermesOpen, from);
  if (at == std::string_view::npos) return plain(reply);
  ParsedReply out;
  std::string content(reply.substr(0, at));
  while (at != std::string_view::npos) {
    const auto value = read_json(reply, at + kHermesOpen.size());
    if (!value) return plain(reply);
    const auto call = call_of(value->first, {"arguments", "parameters"});
    if (!call) return plain(reply);
    out.calls.push_back(*call);
    size_t next = skip_space(reply, value->second);
    if (reply.substr(next).starts_with(kHermesClose)) next += kHermesClose.size();
    else if (next < reply.size()) return plain(reply);  // something else where the call should close
    at = reply.find(kHermesOpen, next);
    // Text between and after the calls is the model's too.
    content += reply.substr(next, (at == std::string_view::npos ? reply.size() : at) - next);
  }
  // The text keeps its start as written (it may have gone out already, streamed), not the
  // spaces that led up to a call.
  out.content = std::string(rtrim(content));
  return out;
}

ParsedReply parse_llama3(std::string_view reply) {
  size_t pos = skip_space(reply, 0);
  if (reply.substr(pos).starts_with(kPythonTag)) pos += kPythonTag.size();
  pos = skip_space(reply, pos);
  if (pos >= reply.size() || reply[pos] != '{') return plain(reply);
  ParsedReply out;
  // Several calls come one after the other, at most separated by ';'.
  while (pos < reply.size()) {
    const auto value = read_json(reply, pos);
    if (!value) return plain(reply);
    const auto call = call_of(value->first, {"parameters", "arguments"});
    if (!call) return plain(reply);
    out.calls.push_back(*call);
    pos = skip_space(reply, value->second);
    if (pos < reply.size() && reply[pos] == ';') pos = skip_space(reply, pos + 1);
  }
  return out;
}

ParsedReply parse_mistral(std::string_view reply) {
  const size_t at = reply.find(kMistralCalls);
  if (at == std::string_view::npos) return plain(reply);
  const auto value = read_json(reply, at + kMistralCalls.size());
  if (!value || !value->first.is_array() || value->first.empty()) return plain(reply);
  ParsedReply out;
  for (const json& j : value->first) {
    const auto call = call_of(j, {"arguments", "parameters"});
    if (!call) return plain(reply);
    out.calls.push_back(*call);
  }
  if (skip_space(reply, value->second) < reply.size()) return plain(reply);
  out.content = std::string(rtrim(reply.substr(0, at)));
  return out;
}

}  // namespace

ToolCallFormat detect_tool_call_format(std::string_view src) {
  if (src.find(kMistralCalls) != std::string_view::npos) return ToolCallFormat::MistralNemo;
  if (src.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::Hermes;
  if (src.find("<|start_header_id|>ipython<|end_header_id|>") != std::string_view::npos)
    return ToolCallFormat::Llama3Json;
  return ToolCallFormat::None;
}

const char* tool_call_format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::Hermes: return "hermes";
    case ToolCallFormat::Llama3Json: return "llama3-json";
    case ToolCallFormat::MistralNemo: return "mistral-nemo";
    default: return "none";
  }
}

ParsedReply parse_tool_calls(ToolCallFormat f, std::string_view reply) {
  switch (f) {
    case ToolCallFormat::Hermes: return parse_hermes(reply);
    case ToolCallFormat::Llama3Json: return parse_llama3(reply);
    case ToolCallFormat::MistralNemo: return parse_mistral(reply);
    default: return plain(reply);
  }
}

size_t tool_call_start(ToolCallFormat f, std::string_view reply) {
  switch (f) {
    case ToolCallFormat::Hermes: return marker_start(reply, kHermesOpen);
    case ToolCallFormat::MistralNemo: return marker_start(reply, kMistralCalls);
    case ToolCallFormat::Llama3Json: {
      // A call is the whole reply: undecided until its first non-space character.
      const size_t pos = skip_space(reply, 0);
      if (pos == reply.size() || reply[pos] == '{') return 0;
      const std::string_view rest = reply.substr(pos);
      if (rest.starts_with(kPythonTag) || kPythonTag.starts_with(rest)) return 0;
      return reply.size();
    }
    default: return reply.size();
  }
}

std::vector<std::string> tool_call_control_markers(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::Hermes: return {std::string(kHermesOpen), std::string(kHermesClose)};
    case ToolCallFormat::Llama3Json: return {std::string(kPythonTag)};
    case ToolCallFormat::MistralNemo: return {std::string(kMistralCalls)};
    default: return {};
  }
}

ToolCallGrammar tool_call_grammar(ToolCallFormat f, const json& tools, bool parallel) {
  // A function without parameters takes none (OpenAI's reading), not any object.
  static const json kNoArguments = {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}};
  const char* args_key = f == ToolCallFormat::Llama3Json ? "parameters" : "arguments";
  json alternatives = json::array();
  for (const json& t : tools) {
    const json& fn = t["function"];
    json call = {{"type", "object"},
                 {"properties",
                  {{"name", {{"const", fn["name"]}}},
                   {args_key, fn.contains("parameters") && !fn["parameters"].is_null() ? fn["parameters"] : kNoArguments}}},
                 {"required", {"name", args_key}}};
    if (f == ToolCallFormat::MistralNemo) {
      call["properties"]["id"] = {{"type", "string"}, {"pattern", "^[a-zA-Z0-9]{9}$"}};
      call["required"].push_back("id");
    }
    alternatives.push_back(std::move(call));
  }
  json one = alternatives.size() == 1 ? alternatives[0] : json{{"anyOf", alternatives}};
  const std::string rule = kToolCallRule;
  switch (f) {
    case ToolCallFormat::Hermes: {
      const std::string call = "\"<tool_call>\\n\" " + rule + " \"\\n</tool_call>\"";
      return {one, parallel ? call + " (\"\\n\" " + call + ")*" : call, {std::string(kHermesOpen)}};
    }
    case ToolCallFormat::MistralNemo: {
      json list = {{"type", "array"}, {"items", one}, {"minItems", 1}};
      if (!parallel) list["maxItems"] = 1;
      return {list, "\"[TOOL_CALLS]\" " + rule, {std::string(kMistralCalls)}};
    }
    default:  // Llama 3 calls one function at a time
      return {one, rule, {}};
  }
}

ToolCallRendering probe_tool_call_rendering(const std::string& source) {
  const std::string needle = "\"needle\": \"1a2b\"";
  // The template's text for one call, or nullopt when it raises.
  auto render = [&](const json& arguments, const json& content) -> std::optional<std::string> {
    const json messages = {
        {{"role", "user"}, {"content", "Hi"}},
        {{"role", "assistant"},
         {"content", content},
         {"tool_calls",
          {{{"id", "call00001"}, {"type", "function"}, {"function", {{"name", "probe"}, {"arguments", arguments}}}}}}},
        // Later turns: some templates treat an earlier reply differently from the last one.
        {{"role", "tool"}, {"tool_call_id", "call00001"}, {"content", "ok"}},
        {{"role", "assistant"}, {"content", "Done."}},
        {{"role", "user"}, {"content", "Thanks"}}};
    try {
      return apply_template(source, messages, false, "", "");
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  const json as_text = "{" + needle + "}", as_object = {{"needle", "1a2b"}};
  ToolCallRendering r;
  r.null_content = render(as_text, nullptr) || render(as_object, nullptr) ||
                   !(render(as_text, "") || render(as_object, ""));
  const json content = r.null_content ? json(nullptr) : json("");
  auto writes = [&](const json& arguments) {
    const auto text = render(arguments, content);
    return text && text->find(needle) != std::string::npos;
  };
  r.object_arguments = !writes(as_text) && writes(as_object);
  return r;
}

json messages_for_template(json messages, const ToolCallRendering& how) {
  for (json& m : messages) {
    if (!m.is_object() || !m.contains("tool_calls") || !m["tool_calls"].is_array()) continue;
    if ((!m.contains("content") || m["content"].is_null()) && !how.null_content) m["content"] = "";
    for (json& c : m["tool_calls"]) {
      if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) continue;
      json& args = c["function"]["arguments"];
      if (args.is_null()) args = json::object();
      if (how.object_arguments && args.is_string()) {
        json parsed = json::parse(args.get<std::string>(), nullptr, false);
        if (parsed.is_object()) args = std::move(parsed);
      } else if (!how.object_arguments && !args.is_string()) {
        args = to_json(from_json(args));  // as the template's tojson would have written it
      }
    }
  }
  return messages;
}

}  // namespace minfer::chat
