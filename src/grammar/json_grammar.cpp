#include "grammar/json_grammar.h"

namespace minfer::grammar {

// The rules llama.cpp's json_schema_to_grammar writes for the empty schema ({}: an object).
const char* const kJsonObjectGrammar = R"gbnf(root ::= object
object ::= "{" space ( string ":" space value ("," space string ":" space value)* )? space "}"
value ::= object | array | string | number | boolean | null
array ::= "[" space ( value ("," space value)* )? space "]"
string ::= "\"" char* "\""
char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
number ::= ("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?
integral-part ::= [0] | [1-9] [0-9]{0,15}
decimal-part ::= [0-9]{1,16}
boolean ::= ("true" | "false")
null ::= "null"
space ::= | " " | "\n"{1,2} [ \t]{0,20}
)gbnf";

}  // namespace minfer::grammar
