// JSON Schema -> GBNF: the grammar of the JSON texts a schema describes, as llama.cpp's
// json_schema_to_grammar writes it (`--json-schema`, llama-server's `json_schema`, OpenAI's
// response_format json_schema), so that a schema constrains generation here as it does there.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/gbnf.h"

namespace minfer::grammar {

struct SchemaGrammar {
  std::string gbnf;  // rules sorted by name, one per line; `root` is the schema
  Grammar grammar;   // gbnf parsed
  // Constraints the grammar does not hold the text to (a `pattern` beyond the regex subset,
  // keywords such as `uniqueItems`): the text still has the schema's shape, not all of its rules.
  std::vector<std::string> warnings;
};

// Error ("JSON schema: ...") for a schema that is not JSON or cannot be converted: an unknown
// `type`, a `$ref` that does not resolve inside the schema (remote ones are not fetched), an
// invalid pattern, a keyword of the wrong JSON type, an integer range that holds no integer, a
// grammar the GBNF parser refuses (repetitions above its 2000).
SchemaGrammar json_schema_to_gbnf(const nlohmann::ordered_json& schema);
SchemaGrammar json_schema_text_to_gbnf(std::string_view schema_text);  // parsed first

// The schema as the rule `name` (letters, digits and '-', not a built-in rule's name) inside a
// grammar whose root is `root_body`, GBNF that refers to it: the schema as one part of a larger
// text (a tool call between its model's markers).
SchemaGrammar json_schema_in_gbnf(const nlohmann::ordered_json& schema, const std::string& name,
                                  const std::string& root_body);

}  // namespace minfer::grammar
