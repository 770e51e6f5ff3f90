#include "chat/builtin_templates.h"

namespace minfer::chat {

const std::string& chatml_template() {
  static const std::string t =
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
  return t;
}

std::optional<std::string> builtin_template(std::string_view name) {
  if (name == "chatml") return chatml_template();
  return std::nullopt;
}

}  // namespace minfer::chat
