// Executes a parsed template against a set of variables.
#pragma once
#include <string>

#include "chat/ast.h"
#include "chat/value.h"

namespace minfer::chat {

// vars: the render context (a Dict value). TemplateError on failure, with the line.
std::string execute(const Program& program, const Value& vars);

}  // namespace minfer::chat
