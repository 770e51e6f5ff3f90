// Chat templates minfer carries itself, for llama.cpp's behaviour where a model brings none.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace minfer::chat {

// ChatML (<|im_start|>role\ncontent<|im_end|>\n ... <|im_start|>assistant\n): what llama.cpp's
// chat paths render with for a model without a template, and its template name "chatml".
const std::string& chatml_template();

// The template llama.cpp's Jinja mode gives a name (--chat-template NAME): "chatml" only;
// nullopt for other text.
std::optional<std::string> builtin_template(std::string_view name);

}  // namespace minfer::chat
