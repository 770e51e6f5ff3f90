// Chat templates: a small Jinja2 interpreter that renders the `tokenizer.chat_template` of a
// model the way Hugging Face's apply_chat_template does (Python Jinja2, ImmutableSandbox,
// trim_blocks + lstrip_blocks, loopcontrols, raise_exception/strftime_now globals).
//
// Variables are JSON (nlohmann::ordered_json so that dict key order survives into tojson).
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>

#include "chat/template_error.h"

namespace minfer::chat {

struct Program;  // the parsed template (internal)

class Template {
 public:
  // Parses; TemplateError (with the line) on a syntax error.
  explicit Template(std::string source, TemplateOptions opts = {});
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // vars must be a JSON object (or null for no variables). TemplateError on failure.
  std::string render(const nlohmann::ordered_json& vars) const;

 private:
  std::shared_ptr<const Program> program_;
};

// Convenience used by the CLI/runtime: messages + add_generation_prompt + bos/eos + extra vars
// (extra_vars, a JSON object, may add e.g. tools or enable_thinking and may override the others).
std::string apply_template(const std::string& source, const nlohmann::ordered_json& messages,
                           bool add_generation_prompt, const std::string& bos_token,
                           const std::string& eos_token,
                           const nlohmann::ordered_json& extra_vars = nullptr);

// A family name ("chatml", "llama3", "llama2", "mistral", "gemma", "phi3", "zephyr",
// "deepseek", "command-r", ...) recognised from marker strings in the source; nullopt when
// none matches.
std::optional<std::string> guess_template_family(const std::string& source);

}  // namespace minfer::chat
