// Failures inside the interpreter carry no line: the statement being executed adds it when
// it converts them to TemplateError.
#pragma once
#include <stdexcept>
#include <string>

namespace minfer::chat {

struct EvalError : std::runtime_error {
  explicit EvalError(const std::string& m, bool raised = false)
      : std::runtime_error(m), raised(raised) {}
  bool raised;  // from raise_exception(): the message is the template author's, verbatim
};

[[noreturn]] inline void eval_fail(const std::string& msg) { throw EvalError(msg); }

}  // namespace minfer::chat
