// The GBNF of a JSON object: what llama-server constrains a reply to for OpenAI's JSON mode
// (response_format {"type": "json_object"} without a schema), the rules its
// json_schema_to_grammar writes for the empty schema.
#pragma once

namespace minfer::grammar {

extern const char* const kJsonObjectGrammar;

}  // namespace minfer::grammar
