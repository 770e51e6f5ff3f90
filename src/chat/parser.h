// Tokens -> AST, following Jinja2's grammar and operator precedence (filters and `is` tests
// bind tighter than arithmetic: `a + b | trim` trims only b).
#pragma once
#include <memory>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"

namespace minfer::chat {

// TemplateError with the line of the offending token on a syntax error.
std::unique_ptr<Program> parse(std::vector<Token> tokens);

}  // namespace minfer::chat
