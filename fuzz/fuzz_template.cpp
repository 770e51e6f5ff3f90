// libFuzzer entry point for the chat-template interpreter: any template source must either
// render or throw minfer::Error (chat::TemplateError) — never crash, hang or blow the stack.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/template.h"
#include "common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::ordered_json vars = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello!", "reasoning_content": "greet",
       "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]},
      {"role": "tool", "content": "42"},
      {"role": "user", "content": "Thanks"}],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
               "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}],
    "add_generation_prompt": true, "enable_thinking": false,
    "bos_token": "<s>", "eos_token": "</s>"})");
  try {
    minfer::chat::Template t(std::string(reinterpret_cast<const char*>(data), size));
    (void)t.render(vars);
  } catch (const minfer::Error&) {
  }
  return 0;
}
