#include "chat/template.h"

#include "chat/ast.h"
#include "chat/interpreter.h"
#include "chat/json_io.h"
#include "chat/lexer.h"
#include "chat/parser.h"

namespace minfer::chat {

TemplateError::TemplateError(int line, std::string detail, bool raised)
    : Error("chat template, line " + std::to_string(line) + ": " + detail),
      line_(line),
      detail_(std::move(detail)),
      raised_(raised) {}

Template::Template(std::string source, TemplateOptions opts)
    : program_(parse(tokenize(source, opts))) {}
Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const nlohmann::ordered_json& vars) const {
  if (!vars.is_null() && !vars.is_object())
    throw TemplateError(0, "template variables must be a JSON object, got " +
                               std::string(vars.type_name()));
  const Value v = vars.is_null() ? Value::make_dict() : from_json(vars);
  return execute(*program_, v);
}

std::string apply_template(const std::string& source, const nlohmann::ordered_json& messages,
                           bool add_generation_prompt, const std::string& bos_token,
                           const std::string& eos_token,
                           const nlohmann::ordered_json& extra_vars) {
  if (!messages.is_array())
    throw TemplateError(0, "messages must be a JSON array, got " + std::string(messages.type_name()));
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  vars["messages"] = messages;
  vars["add_generation_prompt"] = add_generation_prompt;
  vars["bos_token"] = bos_token;
  vars["eos_token"] = eos_token;
  if (!extra_vars.is_null()) {
    if (!extra_vars.is_object())
      throw TemplateError(0, "extra template variables must be a JSON object, got " +
                                 std::string(extra_vars.type_name()));
    for (auto it = extra_vars.begin(); it != extra_vars.end(); ++it) vars[it.key()] = it.value();
  }
  return Template(source).render(vars);
}

}  // namespace minfer::chat
