// Test helper: render a template source with variables given as JSON text.
#pragma once
#include <string>

#include "chat/template.h"

namespace minfer::chat::test {

inline std::string render(const std::string& src, const std::string& vars_json = "{}",
                          TemplateOptions opts = {}) {
  return Template(src, opts).render(nlohmann::ordered_json::parse(vars_json));
}

// The TemplateError a render throws (fails the test when it does not throw).
inline TemplateError render_error(const std::string& src, const std::string& vars_json = "{}") {
  try {
    render(src, vars_json);
  } catch (const TemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "no error rendering: " << src;
  return TemplateError(-1, "");
}

}  // namespace minfer::chat::test
