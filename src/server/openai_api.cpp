#include "server/openai_api.h"

#include <bit>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "grammar/json_schema.h"

namespace minfer::server {
namespace {

using json = nlohmann::ordered_json;

bool present(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

// Present and not an empty list (clients send "tools": [] for none).
bool given_list(const json& j, const char* key) {
  return present(j, key) && !(j[key].is_array() && j[key].empty());
}

std::optional<float> number_field(const json& j, const char* key) {
  if (!present(j, key)) return std::nullopt;
  const json& v = j[key];
  if (!v.is_number()) fail("'{}' must be a number", key);
  const double d = v.get<double>();
  if (!std::isfinite(d) || std::fabs(d) > 1e30) fail("'{}' is out of range", key);
  return float(d);
}

std::optional<int64_t> integer_field(const json& j, const char* key, int64_t lo, int64_t hi) {
  if (!present(j, key)) return std::nullopt;
  const json& v = j[key];
  // 5.0 is an integer to JavaScript clients; 5.5 is not.
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) fail("'{}' must be an integer", key);
    if (d < double(lo) || d > double(hi)) fail("'{}' must be in [{}, {}]", key, lo, hi);
    return int64_t(d);
  }
  if (!v.is_number_integer()) fail("'{}' must be an integer", key);
  // JSON's non-negative integers parse as unsigned: compare them as such (2^64 - 1 is no -1).
  const bool in_range = v.is_number_unsigned()
                            ? v.get<uint64_t>() <= uint64_t(hi) && (lo <= 0 || v.get<uint64_t>() >= uint64_t(lo))
                            : v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
  if (!in_range) fail("'{}' must be in [{}, {}]", key, lo, hi);
  return v.get<int64_t>();
}

bool bool_field(const json& j, const char* key) {
  if (!present(j, key)) return false;
  if (!j[key].is_boolean()) fail("'{}' must be true or false", key);
  return j[key].get<bool>();
}

// A message's content as one string: text parts joined by newlines, as llama-server does for
// templates that take plain strings.
std::string content_text(const json& content, size_t index) {
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    fail("messages[{}].content must be a string, null or an array of content parts", index);
  std::string text;
  for (const json& part : content) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      fail("messages[{}].content: each part must be an object with a string 'type'", index);
    const std::string type = part["type"].get<std::string>();
    if (type != "text")
      fail("messages[{}].content: '{}' parts are not supported (text only)", index, type);
    if (!part.contains("text") || !part["text"].is_string())
      fail("messages[{}].content: a text part needs a string 'text'", index);
    if (!text.empty()) text += '\n';
    text += part["text"].get<std::string>();
  }
  return text;
}

// An assistant message's calls, as OpenAI sends them back: [{"id", "type": "function",
// "function": {"name", "arguments": JSON text (or an object, as Hugging Face's)}}].
void check_tool_calls(const json& calls, size_t index) {
  if (!calls.is_array()) fail("messages[{}].tool_calls must be an array", index);
  for (size_t k = 0; k < calls.size(); ++k) {
    const json& c = calls[k];
    const bool ok = c.is_object() && (!present(c, "type") || c["type"] == "function") &&
                    (!present(c, "id") || c["id"].is_string()) && c.contains("function") &&
                    c["function"].is_object() && c["function"].contains("name") &&
                    c["function"]["name"].is_string() &&
                    (!present(c["function"], "arguments") || c["function"]["arguments"].is_string() ||
                     c["function"]["arguments"].is_object());
    if (!ok)
      fail("messages[{}].tool_calls[{}] must be {{\"id\", \"type\": \"function\", \"function\": "
           "{{\"name\": string, \"arguments\": JSON text}}}}",
           index, k);
  }
}

json parse_messages(const json& body) {
  if (!present(body, "messages")) fail("'messages' is required");
  const json& in = body["messages"];
  if (!in.is_array() || in.empty()) fail("'messages' must be a non-empty array");
  json out = json::array();
  for (size_t i = 0; i < in.size(); ++i) {
    const json& m = in[i];
    if (!m.is_object()) fail("messages[{}] must be an object", i);
    if (!m.contains("role") || !m["role"].is_string() || m["role"].get<std::string>().empty())
      fail("messages[{}] needs a string 'role'", i);
    if (!m.contains("content") && m["role"] != "assistant")
      fail("messages[{}] needs a 'content'", i);
    json msg = m;  // other fields (name, tool_call_id, ...) stay for templates that use them
    if (present(m, "tool_calls")) {
      check_tool_calls(m["tool_calls"], i);
      // A reply that was only calls has no content: templates test for none (DeepSeek R1's).
      if (!present(m, "content")) {
        msg["content"] = nullptr;
        out.push_back(std::move(msg));
        continue;
      }
    } else if (m.contains("tool_calls")) {
      msg.erase("tool_calls");
    }
    msg["content"] = content_text(m.contains("content") ? m["content"] : json(), i);
    out.push_back(std::move(msg));
  }
  return out;
}

// Chat: logprobs (true/false) and top_logprobs (llama-server's default 20). Completions: logprobs
// as the number of top entries (0 = off), or llama-server's n_probs.
void parse_logprobs(const json& body, CompletionRequest& r) {
  constexpr int64_t kMaxTop = 100;
  if (r.kind == ApiKind::Chat) {
    r.logprobs = bool_field(body, "logprobs");
    const auto top = integer_field(body, "top_logprobs", 0, kMaxTop);
    if (top && !r.logprobs) fail("'top_logprobs' needs 'logprobs': true");
    r.top_logprobs = int32_t(top.value_or(20));
  } else {
    const char* key = present(body, "logprobs") ? "logprobs" : "n_probs";
    const auto n = integer_field(body, key, 0, kMaxTop);
    r.logprobs = n.value_or(0) > 0;
    r.top_logprobs = int32_t(n.value_or(0));
  }
}

// OpenAI's {"token id": bias}, or llama-server's [[id, bias], ...]; false bans the token.
void parse_logit_bias(const json& body, CompletionRequest& r) {
  if (!present(body, "logit_bias")) return;
  auto bias = [](const json& v) {
    if (v.is_boolean() && !v.get<bool>()) return -std::numeric_limits<float>::infinity();
    if (!v.is_number() || !std::isfinite(v.get<double>()) || std::fabs(v.get<double>()) > 1e30)
      fail("'logit_bias' values must be numbers (or false to ban the token)");
    return float(v.get<double>());
  };
  const json& b = body["logit_bias"];
  if (b.is_object()) {
    for (const auto& [key, v] : b.items()) {
      const bool digits = !key.empty() && key.size() <= 9 &&
                          key.find_first_not_of("0123456789") == std::string::npos;
      if (!digits) fail("'logit_bias' keys must be token ids, not '{}'", key);
      r.logit_bias.push_back({int32_t(std::stol(key)), bias(v)});
    }
  } else if (b.is_array()) {
    for (const json& e : b) {
      if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer() || e[0].get<int64_t>() < 0 ||
          e[0].get<int64_t>() > std::numeric_limits<int32_t>::max())
        fail("'logit_bias' as an array holds [token id, bias] pairs");
      r.logit_bias.push_back({e[0].get<int32_t>(), bias(e[1])});
    }
  } else {
    fail("'logit_bias' must be an object of token id -> bias");
  }
}

void parse_prompt(const json& body, CompletionRequest& r) {
  if (!present(body, "prompt")) fail("'prompt' is required");
  const json& p = body["prompt"];
  if (p.is_string()) {
    r.prompt = p.get<std::string>();
  } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
    r.prompt = p[0].get<std::string>();
  } else if (p.is_array() && !p.empty() && p[0].is_number()) {
    for (const json& t : p) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
          t.get<int64_t>() > std::numeric_limits<int32_t>::max())
        fail("'prompt' as token ids must hold non-negative integers");
      r.prompt_tokens.push_back(t.get<int32_t>());
    }
  } else if (p.is_array() && p.size() > 1) {
    fail("'prompt' with several prompts is not supported (one request per prompt)");
  } else {
    fail("'prompt' must be a string or an array of token ids");
  }
  if (r.prompt.empty() && r.prompt_tokens.empty()) fail("'prompt' is empty");
}

// llama-server's "grammar" (GBNF) or "json_schema", or OpenAI's response_format: {"type":
// "text"}, {"type": "json_object"} (any JSON object, or the "schema" inside), {"type":
// "json_schema", "json_schema": {"schema": ...}}. A schema constrains the reply through the
// grammar llama.cpp's json_schema_to_grammar writes for it.
void parse_grammar(const json& body, CompletionRequest& r) {
  std::optional<json> schema;
  auto set_schema = [&](const json& s) {
    if (schema) fail("'json_schema' and a JSON 'response_format' together: give one of them");
    schema = s.is_null() ? json::object() : s;
  };
  if (present(body, "json_schema")) set_schema(body["json_schema"]);
  if (present(body, "response_format")) {
    const json& f = body["response_format"];
    const std::string type = f.is_object() && f.contains("type") && f["type"].is_string() ? f["type"].get<std::string>() : "";
    if (type == "json_object") {
      set_schema(f.contains("schema") ? f["schema"] : json::object());
    } else if (type == "json_schema") {
      if (!f.contains("json_schema") || !f["json_schema"].is_object())
        fail("'response_format' of type json_schema needs a 'json_schema' object (with the 'schema')");
      const json& named = f["json_schema"];
      set_schema(named.contains("schema") ? named["schema"] : json::object());
    } else if (type != "text") {
      fail("'response_format' must be {{\"type\": \"text\"}}, {{\"type\": \"json_object\"}} or {{\"type\": \"json_schema\"}}");
    }
  }
  std::string text;
  if (present(body, "grammar")) {
    if (!body["grammar"].is_string()) fail("'grammar' must be a string (GBNF)");
    text = body["grammar"].get<std::string>();
  }
  if (schema) {
    if (!text.empty()) fail("'grammar' and a JSON schema together: give one of them");
    grammar::SchemaGrammar g = grammar::json_schema_to_gbnf(*schema);
    r.grammar = std::make_shared<const grammar::Grammar>(std::move(g.grammar));
    r.grammar_warnings = std::move(g.warnings);
  } else if (!text.empty()) {
    try {
      r.grammar = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(text));
    } catch (const Error& e) {
      const std::string m = e.what();
      fail("'grammar': {}", m.rfind("grammar: ", 0) == 0 ? m.substr(9) : m);
    }
  }
}

// OpenAI's tools: [{"type": "function", "function": {"name", "description", "parameters"}}],
// tool_choice and parallel_tool_calls.
void parse_tools(const json& body, CompletionRequest& r) {
  using Choice = CompletionRequest::ToolChoice;
  const bool has_tools = given_list(body, "tools");
  if (has_tools) {
    const json& tools = body["tools"];
    if (!tools.is_array()) fail("'tools' must be an array of {{\"type\": \"function\", \"function\": {{...}}}}");
    for (size_t i = 0; i < tools.size(); ++i) {
      const json& t = tools[i];
      if (!t.is_object() || !t.contains("type") || t["type"] != "function")
        fail("tools[{}] must have \"type\": \"function\" (the only kind of tool)", i);
      if (!t.contains("function") || !t["function"].is_object())
        fail("tools[{}] needs a 'function' object", i);
      const json& fn = t["function"];
      if (!fn.contains("name") || !fn["name"].is_string() || fn["name"].get<std::string>().empty())
        fail("tools[{}].function needs a string 'name'", i);
      if (present(fn, "parameters") && !fn["parameters"].is_object())
        fail("tools[{}].function.parameters must be a JSON schema object", i);
      if (present(fn, "description") && !fn["description"].is_string())
        fail("tools[{}].function.description must be a string", i);
    }
    r.tools = tools;
  }
  r.parallel_tool_calls = bool_field(body, "parallel_tool_calls");
  if (!present(body, "tool_choice")) return;
  if (!has_tools) fail("'tool_choice' needs 'tools'");
  const json& c = body["tool_choice"];
  if (c == "auto") {
    r.tool_choice = Choice::Auto;
  } else if (c == "none") {
    r.tool_choice = Choice::None;
  } else if (c == "required") {
    r.tool_choice = Choice::Required;
  } else if (c.is_object() && c.contains("function") && c["function"].is_object() &&
             c["function"].contains("name") && c["function"]["name"].is_string()) {
    const json name = c["function"]["name"];
    json only = json::array();
    for (const json& t : r.tools)
      if (t["function"]["name"] == name) only.push_back(t);
    if (only.empty()) fail("'tool_choice' names '{}', which is not in 'tools'", name.get<std::string>());
    r.tools = std::move(only);
    r.tool_choice = Choice::Required;
  } else {
    fail("'tool_choice' must be \"auto\", \"none\", \"required\" or {{\"type\": \"function\", "
         "\"function\": {{\"name\": ...}}}}");
  }
}

// llama-server's /infill: input_prefix, input_suffix, input_extra [{"filename", "text"}] and an
// optional prompt (text after the prefix).
void parse_infill(const json& body, CompletionRequest& r) {
  InfillInput in;
  auto text = [&](const char* key, std::string& to) {
    if (!present(body, key)) return;
    if (!body[key].is_string()) fail("'{}' must be a string", key);
    to = body[key].get<std::string>();
  };
  text("input_prefix", in.prefix);
  text("input_suffix", in.suffix);
  text("prompt", in.prompt);
  if (present(body, "input_extra")) {
    const json& extra = body["input_extra"];
    if (!extra.is_array()) fail("'input_extra' must be an array of {{\"filename\", \"text\"}}");
    for (size_t i = 0; i < extra.size(); ++i) {
      const json& c = extra[i];
      if (!c.is_object() || !c.contains("text") || !c["text"].is_string() ||
          (present(c, "filename") && !c["filename"].is_string()))
        fail("input_extra[{}] must be {{\"filename\": string, \"text\": string}}", i);
      in.extra.push_back({present(c, "filename") ? c["filename"].get<std::string>() : "tmp", c["text"].get<std::string>()});
    }
  }
  r.infill = std::move(in);
}

// llama-server's reasoning_format: "none" leaves a think block in the content.
void parse_reasoning_format(const json& body, CompletionRequest& r) {
  if (!present(body, "reasoning_format")) return;
  const json& f = body["reasoning_format"];
  if (f == "none") r.extract_reasoning = false;
  else if (f == "deepseek" || f == "auto") r.extract_reasoning = true;
  else fail("'reasoning_format' must be \"none\", \"deepseek\" or \"auto\"");
}

// Requests for what minfer does not do: refused rather than silently ignored.
void refuse_unsupported(const json& body, ApiKind kind) {
  if (const auto n = integer_field(body, "n", 1, 1 << 20); n && *n != 1)
    fail("'n' must be 1: one choice per request");
  if (given_list(body, "functions")) fail("'functions' (OpenAI's deprecated form) is not supported: send 'tools'");
  if (kind != ApiKind::Chat && given_list(body, "tools")) fail("'tools' needs the chat endpoint");
  if (kind == ApiKind::Completion) {
    if (bool_field(body, "echo")) fail("'echo' is not supported");
    if (present(body, "suffix") && !(body["suffix"].is_string() && body["suffix"].get<std::string>().empty()))
      fail("'suffix' is not supported");
    if (const auto b = integer_field(body, "best_of", 1, 1 << 20); b && *b != 1)
      fail("'best_of' must be 1");
  }
}

}  // namespace

json parse_json_object(std::string_view body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    fail("the request body is not valid JSON ({})", e.what());
  }
  if (!j.is_object()) fail("the request body must be a JSON object");
  return j;
}

CompletionRequest parse_completion_request(std::string_view body, ApiKind kind) {
  const json j = parse_json_object(body);
  refuse_unsupported(j, kind);

  CompletionRequest r;
  r.kind = kind;
  if (kind == ApiKind::Chat) {
    r.messages = parse_messages(j);
    if (present(j, "chat_template_kwargs")) {
      if (!j["chat_template_kwargs"].is_object()) fail("'chat_template_kwargs' must be an object");
      r.template_kwargs = j["chat_template_kwargs"];
    }
    parse_tools(j, r);
    parse_reasoning_format(j, r);
  } else if (kind == ApiKind::Infill) {
    parse_infill(j, r);
  } else {
    parse_prompt(j, r);
  }
  if (kind == ApiKind::Native || kind == ApiKind::Infill) r.return_tokens = bool_field(j, "return_tokens");
  parse_grammar(j, r);
  if (r.grammar && r.calls_tools())
    fail("'tools' with a grammar or a JSON response format: give one of them (or tool_choice \"none\")");

  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  // max_completion_tokens is the chat API's current name, max_tokens the older one,
  // n_predict llama-server's (-1: no limit).
  constexpr int64_t kMaxLong = std::numeric_limits<int64_t>::max();
  if (kind == ApiKind::Chat) r.max_tokens = integer_field(j, "max_completion_tokens", 0, kMaxLong);
  if (!r.max_tokens) r.max_tokens = integer_field(j, "max_tokens", 0, kMaxLong);
  if (!r.max_tokens) r.max_tokens = integer_field(j, "n_predict", -1, kMaxLong);

  r.temperature = number_field(j, "temperature");
  r.top_p = number_field(j, "top_p");
  r.min_p = number_field(j, "min_p");
  r.repeat_penalty = number_field(j, "repeat_penalty");
  r.frequency_penalty = number_field(j, "frequency_penalty");
  r.presence_penalty = number_field(j, "presence_penalty");
  if (const auto k = integer_field(j, "top_k", -kMaxInt, kMaxInt)) r.top_k = int32_t(*k);
  r.typical_p = number_field(j, "typical_p");
  r.top_n_sigma = number_field(j, "top_n_sigma");
  r.xtc_probability = number_field(j, "xtc_probability");
  r.xtc_threshold = number_field(j, "xtc_threshold");
  r.dynatemp_range = number_field(j, "dynatemp_range");
  r.dynatemp_exponent = number_field(j, "dynatemp_exponent");
  r.mirostat_tau = number_field(j, "mirostat_tau");
  r.mirostat_eta = number_field(j, "mirostat_eta");
  r.dry_multiplier = number_field(j, "dry_multiplier");
  r.dry_base = number_field(j, "dry_base");
  if (const auto n = integer_field(j, "dry_allowed_length", 0, kMaxInt)) r.dry_allowed_length = int32_t(*n);
  if (const auto n = integer_field(j, "dry_penalty_last_n", -1, kMaxInt)) r.dry_penalty_last_n = int32_t(*n);
  if (present(j, "dry_sequence_breakers")) {
    const json& b = j["dry_sequence_breakers"];
    if (!b.is_array()) fail("'dry_sequence_breakers' must be an array of strings");
    std::vector<std::string> v;
    for (const json& x : b) {
      if (!x.is_string() || x.get<std::string>().empty()) fail("'dry_sequence_breakers' must be an array of non-empty strings");
      v.push_back(x.get<std::string>());
    }
    if (v.size() > 64) fail("'dry_sequence_breakers': at most 64");
    r.dry_sequence_breakers = std::move(v);
  }
  if (const auto m = integer_field(j, "mirostat", 0, 2)) r.mirostat = int32_t(*m);
  if (const auto m = integer_field(j, "min_keep", 0, kMaxInt)) r.min_keep = int32_t(*m);
  if (present(j, "samplers")) {
    const json& sv = j["samplers"];
    if (sv.is_string()) {
      r.samplers = runtime::parse_sampler_letters(sv.get<std::string>());
    } else if (sv.is_array()) {
      std::string names;
      for (const json& x : sv) {
        if (!x.is_string()) fail("'samplers' must be an array of sampler names or a string of letters");
        names += x.get<std::string>() + ";";
      }
      r.samplers = runtime::parse_sampler_names(names);
    } else {
      fail("'samplers' must be an array of sampler names or a string of letters");
    }
  }
  if (const auto n = integer_field(j, "repeat_last_n", -1, kMaxInt)) r.repeat_last_n = int32_t(*n);
  if (const auto n = integer_field(j, "speculative.n_max", 0, 1024)) r.spec_n_max = int32_t(*n);
  if (const auto n = integer_field(j, "speculative.n_min", 0, 1024)) r.spec_n_min = int32_t(*n);
  r.spec_p_min = number_field(j, "speculative.p_min");
  r.n_keep = integer_field(j, "n_keep", -1, kMaxLong);
  r.n_discard = integer_field(j, "n_discard", 0, kMaxLong).value_or(0);
  if (present(j, "seed")) {
    const json& s = j["seed"];
    if (s.is_number_unsigned()) r.seed = s.get<uint64_t>();
    else if (s.is_number_integer() && s.get<int64_t>() == -1) r.seed = std::nullopt;
    else fail("'seed' must be a non-negative integer (or -1 for a random one)");
  }

  if (present(j, "stop")) {
    const json& s = j["stop"];
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      for (const json& x : s) {
        if (!x.is_string()) fail("'stop' must be a string or an array of strings");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      fail("'stop' must be a string or an array of strings");
    }
    for (const std::string& x : r.stop)
      if (x.empty()) fail("'stop' strings must not be empty");
  }
  r.ignore_eos = bool_field(j, "ignore_eos");
  if (present(j, "cache_prompt")) r.cache_prompt = bool_field(j, "cache_prompt");
  parse_logprobs(j, r);
  parse_logit_bias(j, r);
  r.stream = bool_field(j, "stream");
  if (present(j, "stream_options")) {
    const json& o = j["stream_options"];
    if (!o.is_object()) fail("'stream_options' must be an object");
    r.include_usage = bool_field(o, "include_usage");
  }
  return r;
}

runtime::SamplerParams sampler_params(const CompletionRequest& r, runtime::SamplerParams p,
                                      uint64_t random_seed) {
  if (r.temperature) p.temp = *r.temperature;
  if (r.top_p) p.top_p = *r.top_p;
  if (r.min_p) p.min_p = *r.min_p;
  if (r.top_k) p.top_k = *r.top_k;
  if (r.repeat_penalty) p.repeat_penalty = *r.repeat_penalty;
  if (r.repeat_last_n) p.repeat_last_n = *r.repeat_last_n;
  if (r.frequency_penalty) p.frequency_penalty = *r.frequency_penalty;
  if (r.presence_penalty) p.presence_penalty = *r.presence_penalty;
  if (r.typical_p) p.typical_p = *r.typical_p;
  if (r.top_n_sigma) p.top_n_sigma = *r.top_n_sigma;
  if (r.xtc_probability) p.xtc_probability = *r.xtc_probability;
  if (r.xtc_threshold) p.xtc_threshold = *r.xtc_threshold;
  if (r.dynatemp_range) p.dynatemp_range = *r.dynatemp_range;
  if (r.dynatemp_exponent) p.dynatemp_exponent = *r.dynatemp_exponent;
  if (r.mirostat) p.mirostat = *r.mirostat;
  if (r.mirostat_tau) p.mirostat_tau = *r.mirostat_tau;
  if (r.mirostat_eta) p.mirostat_eta = *r.mirostat_eta;
  if (r.min_keep) p.min_keep = *r.min_keep;
  if (r.dry_multiplier) p.dry_multiplier = *r.dry_multiplier;
  if (r.dry_base) p.dry_base = *r.dry_base;
  if (r.dry_allowed_length) p.dry_allowed_length = *r.dry_allowed_length;
  if (r.dry_penalty_last_n) p.dry_penalty_last_n = *r.dry_penalty_last_n;
  if (r.samplers) p.order = *r.samplers;
  p.seed = r.seed ? *r.seed : random_seed;
  p.logit_bias.insert(p.logit_bias.end(), r.logit_bias.begin(), r.logit_bias.end());
  p.validate();
  return p;
}

runtime::DraftParams draft_params(const CompletionRequest& r, runtime::DraftParams d) {
  if (r.spec_n_max) d.n_max = *r.spec_n_max;
  if (r.spec_n_min) d.n_min = *r.spec_n_min;
  if (r.spec_p_min) d.p_min = *r.spec_p_min;
  d.n_min = std::min(d.n_min, d.n_max);
  if (!(d.p_min >= 0.0f && d.p_min <= 1.0f)) fail("'speculative.p_min' must be in [0, 1]");
  return d;
}

json timings_json(const CompletionResult& r) {
  auto per_token = [](double ms, int64_t n) { return n > 0 ? ms / double(n) : 0.0; };
  auto per_second = [](double ms, int64_t n) { return ms > 0 ? 1000.0 * double(n) / ms : 0.0; };
  json t{{"cache_n", r.cached_tokens},
              {"prompt_n", r.prompt_evaluated},
              {"prompt_ms", r.prompt_ms},
              {"prompt_per_token_ms", per_token(r.prompt_ms, r.prompt_evaluated)},
              {"prompt_per_second", per_second(r.prompt_ms, r.prompt_evaluated)},
              {"predicted_n", r.completion_tokens},
              {"predicted_ms", r.predicted_ms},
              {"predicted_per_token_ms", per_token(r.predicted_ms, r.completion_tokens)},
              {"predicted_per_second", per_second(r.predicted_ms, r.completion_tokens)}};
  if (r.draft_n > 0) {  // as llama-server: only when the draft model guessed
    t["draft_n"] = r.draft_n;
    t["draft_n_accepted"] = r.draft_n_accepted;
  }
  return t;
}

namespace {

json usage_json(const CompletionResult& r) {
  return json{{"completion_tokens", r.completion_tokens},
              {"prompt_tokens", r.prompt_tokens},
              {"total_tokens", r.prompt_tokens + r.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}}}};
}

json tool_calls_json(std::span<const chat::ToolCall> calls, bool indexed = false) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = json::object();
    if (indexed) c["index"] = i;  // a stream's deltas are placed by index
    c["id"] = calls[i].id;
    c["type"] = "function";
    c["function"] = {{"name", calls[i].name}, {"arguments", calls[i].arguments}};
    out.push_back(std::move(c));
  }
  return out;
}

json head_json(ApiKind kind, const ResponseHead& h, bool chunk) {
  const char* object = kind == ApiKind::Completion ? "text_completion"
                       : chunk                     ? "chat.completion.chunk"
                                                   : "chat.completion";
  return json{{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

}  // namespace

json completion_response(ApiKind kind, const ResponseHead& h, const CompletionResult& r) {
  json out = head_json(kind, h, false);
  json choice = {{"index", 0}};
  if (kind == ApiKind::Chat) {
    choice["message"] = {{"role", "assistant"}, {"content", r.text}};
    if (!r.reasoning.empty()) choice["message"]["reasoning_content"] = r.reasoning;
    if (!r.tool_calls.empty()) {
      if (r.text.empty()) choice["message"]["content"] = nullptr;
      choice["message"]["tool_calls"] = tool_calls_json(r.tool_calls);
    }
  } else {
    choice["text"] = r.text;
  }
  choice["logprobs"] = r.has_logprobs ? logprobs_json(r.logprobs) : json(nullptr);
  choice["finish_reason"] = r.finish_reason;
  out["choices"] = json::array({choice});
  out["usage"] = usage_json(r);
  out["timings"] = timings_json(r);
  return out;
}

json completion_chunk(ApiKind kind, const ResponseHead& h, std::string_view text, bool first,
                      const std::string* finish_reason,
                      std::optional<std::span<const SampledLogprobs>> logprobs,
                      std::string_view reasoning) {
  json out = head_json(kind, h, true);
  json choice = {{"index", 0}};
  if (kind == ApiKind::Chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!reasoning.empty()) delta["reasoning_content"] = std::string(reasoning);
    if (!finish_reason && (reasoning.empty() || !text.empty())) delta["content"] = std::string(text);
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = std::string(text);
  }
  choice["logprobs"] = logprobs ? logprobs_json(*logprobs) : json(nullptr);
  choice["finish_reason"] = finish_reason ? json(*finish_reason) : json(nullptr);
  out["choices"] = json::array({choice});
  return out;
}

json tool_calls_chunk(const ResponseHead& h, std::span<const chat::ToolCall> calls) {
  json out = head_json(ApiKind::Chat, h, true);
  json choice = {{"index", 0}, {"delta", {{"tool_calls", tool_calls_json(calls, true)}}}};
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = nullptr;
  out["choices"] = json::array({choice});
  return out;
}

namespace {

json logprob_entry(const LogprobEntry& t) {
  std::vector<int> bytes;
  for (char c : t.bytes) bytes.push_back(int(uint8_t(c)));
  // -inf (a token the model rules out) has no JSON form: the lowest float, as llama-server.
  const double lp = std::isfinite(t.logprob) ? t.logprob : double(std::numeric_limits<float>::lowest());
  return json{{"id", t.id}, {"token", t.text}, {"bytes", bytes}, {"logprob", lp}};
}

}  // namespace

json logprobs_json(std::span<const SampledLogprobs> tokens) {
  json content = json::array();
  for (const SampledLogprobs& s : tokens) {
    json e = logprob_entry(s.sampled);
    json top = json::array();
    for (const LogprobEntry& t : s.top) top.push_back(logprob_entry(t));
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  return json{{"content", std::move(content)}};
}

json usage_chunk(ApiKind kind, const ResponseHead& h, const CompletionResult& r) {
  json out = head_json(kind, h, true);
  out["choices"] = json::array();
  out["usage"] = usage_json(r);
  out["timings"] = timings_json(r);
  return out;
}

json native_response(const ResponseHead& h, const CompletionResult& r, const NativeExtras& x) {
  using runtime::StopReason;
  const char* stop_type = r.stop_reason == StopReason::Eog          ? "eos"
                          : r.stop_reason == StopReason::StopString ? "word"
                          : r.stop_reason == StopReason::Interrupted ? "none"
                                                                     : "limit";
  json out = {{"index", 0},
              {"content", r.text},
              {"tokens", x.return_tokens ? json(r.tokens) : json::array()},
              {"id_slot", 0},
              {"stop", true},
              {"model", h.model},
              {"tokens_predicted", r.completion_tokens},
              {"tokens_evaluated", r.prompt_tokens},
              {"generation_settings", x.generation_settings},
              {"prompt", x.prompt},
              {"has_new_line", r.text.find('\n') != std::string::npos},
              // The context filled up (llama-server: or shifted to make room).
              {"truncated", r.stop_reason == StopReason::ContextFull || r.context_shifts > 0},
              {"stop_type", stop_type},
              {"stopping_word", r.stopping_word},
              {"tokens_cached", r.cached_tokens},
              {"timings", timings_json(r)}};
  if (r.has_logprobs) out["completion_probabilities"] = logprobs_json(r.logprobs)["content"];
  return out;
}

json native_chunk(std::string_view text, std::span<const int32_t> tokens,
                  std::optional<std::span<const SampledLogprobs>> probs) {
  json out = {{"index", 0},
              {"content", std::string(text)},
              {"tokens", std::vector<int32_t>(tokens.begin(), tokens.end())},
              {"stop", false}};
  if (probs) out["completion_probabilities"] = logprobs_json(*probs)["content"];
  return out;
}

EmbeddingsRequest parse_embeddings_request(std::string_view body, bool native) {
  const json j = parse_json_object(body);
  const char* field = native && !present(j, "input") ? "content" : "input";
  if (!present(j, field)) fail("{} is required", native ? "'input' or 'content'" : "'input'");
  const json& in = j[field];
  EmbeddingsRequest r;
  auto token_list = [](const json& a) {
    EmbeddingsRequest::Input x;
    x.is_tokens = true;
    for (const json& t : a) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max())
        fail("'input' as token ids must hold non-negative integers");
      x.tokens.push_back(t.get<int32_t>());
    }
    return x;
  };
  if (in.is_string()) {
    r.inputs.push_back({in.get<std::string>(), {}, false});
  } else if (in.is_array() && !in.empty() && in[0].is_number()) {
    r.inputs.push_back(token_list(in));
  } else if (in.is_array() && !in.empty()) {
    for (const json& e : in) {
      if (e.is_string()) r.inputs.push_back({e.get<std::string>(), {}, false});
      else if (e.is_array() && !e.empty()) r.inputs.push_back(token_list(e));
      else fail("'input' must be a string, an array of strings, or token ids");
    }
  } else {
    fail("'input' must be a string, an array of strings, or token ids (and not empty)");
  }
  if (present(j, "encoding_format")) {
    const json& f = j["encoding_format"];
    if (f == "base64") r.base64 = true;
    else if (f != "float") fail("'encoding_format' must be \"float\" or \"base64\"");
  }
  if (present(j, "dimensions")) fail("'dimensions' is not supported: the model's embeddings have one size");
  if (const auto n = integer_field(j, "embd_normalize", -1, 64)) r.embd_normalize = int(*n);
  return r;
}

json native_embeddings_response(const std::vector<std::vector<std::vector<float>>>& per_input) {
  json out = json::array();
  for (size_t i = 0; i < per_input.size(); ++i) out.push_back(json{{"index", i}, {"embedding", per_input[i]}});
  return out;
}

namespace {

// RFC 4648 base64 of bytes (OpenAI's encoding_format "base64": the float32 array's bytes).
std::string base64(std::span<const uint8_t> bytes) {
  static const char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = uint32_t(bytes[i]) << 16 | (i + 1 < bytes.size() ? uint32_t(bytes[i + 1]) << 8 : 0) |
                       (i + 2 < bytes.size() ? uint32_t(bytes[i + 2]) : 0);
    out += k[(n >> 18) & 63];
    out += k[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? k[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? k[n & 63] : '=';
  }
  return out;
}

}  // namespace

json embeddings_response(const std::string& model, const std::vector<std::vector<float>>& vectors,
                         int64_t prompt_tokens, bool base64_encoded) {
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    const std::vector<float>& v = vectors[i];
    json e = {{"object", "embedding"}, {"index", i}};
    if (base64_encoded) {
      static_assert(std::endian::native == std::endian::little, "float32 bytes are sent little-endian");
      e["embedding"] = base64({reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)});
    } else {
      e["embedding"] = v;
    }
    data.push_back(std::move(e));
  }
  return json{{"object", "list"},
              {"data", std::move(data)},
              {"model", model},
              {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

json error_body(int status, std::string_view message) {
  const char* type = status == 401   ? "authentication_error"
                     : status == 404 ? "not_found_error"
                     : status == 501 ? "not_supported_error"
                     : status == 503 ? "unavailable_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  return json{{"error", {{"code", status}, {"message", std::string(message)}, {"type", type}}}};
}

std::string sse_data(const json& j) {
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace minfer::server
