// Recognises the common chat formats by their marker tokens (cheap, for logs and defaults).
#include <utility>

#include "chat/template.h"

namespace minfer::chat {

std::optional<std::string> guess_template_family(const std::string& source) {
  // Most specific markers first: several formats share generic ones like "[INST]".
  static const std::pair<const char*, const char*> markers[] = {
      {"<|start_header_id|>", "llama3"},
      {"<｜User｜>", "deepseek"},
      {"<|START_OF_TURN_TOKEN|>", "command-r"},
      {"<start_of_turn>", "gemma"},
      {"<|im_start|>", "chatml"},
      {"<|user|>", "zephyr"},  // also phi-3 (which adds <|end|>): checked below
      {"<<SYS>>", "llama2"},
      {"[INST]", "mistral"},
      {"GPT4 Correct", "openchat"},
      {"### Instruction", "alpaca"},
  };
  for (const auto& [marker, family] : markers) {
    if (source.find(marker) == std::string::npos) continue;
    if (std::string(family) == "zephyr" && source.find("<|end|>") != std::string::npos)
      return "phi3";
    return family;
  }
  return std::nullopt;
}

}  // namespace minfer::chat
