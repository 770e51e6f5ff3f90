// Options and the error type of chat templates, apart from template.h so that the
// interpreter's internals do not pull in nlohmann/json.
#pragma once
#include <string>

#include "common/error.h"

namespace minfer::chat {

struct TemplateOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Thrown for every template failure. what() reads "chat template, line N: <detail>";
// detail() is the bare message. For raise_exception("msg") detail() is exactly "msg" and
// raised() is true.
class TemplateError : public Error {
 public:
  TemplateError(int line, std::string detail, bool raised = false);
  int line() const { return line_; }
  const std::string& detail() const { return detail_; }
  bool raised() const { return raised_; }

 private:
  int line_;
  std::string detail_;
  bool raised_;
};

}  // namespace minfer::chat
