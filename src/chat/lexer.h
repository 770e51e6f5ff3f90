// Template source -> tokens. Whitespace control ({%- -%} {%+ +%}, trim_blocks,
// lstrip_blocks, keep_trailing_newline) is applied here, to the text between tags, exactly
// where Jinja2's lexer applies it; raw blocks come out as plain text.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chat/template_error.h"

namespace minfer::chat {

enum class Tok : uint8_t {
  Text,        // literal output
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,
  Int,
  Float,
  Op,          // operator or punctuation, in `text`
  Eof,
};

struct Token {
  Tok type = Tok::Eof;
  std::string text;  // Text/Name/Op: the text; String: the unescaped value
  int64_t ival = 0;
  double fval = 0;
  int line = 1;
};

// TemplateError (with the line) on unterminated tags, comments, strings or bad characters.
std::vector<Token> tokenize(const std::string& source, const TemplateOptions& opts);

}  // namespace minfer::chat
