// JSON Schema -> GBNF. The text of the grammar is held to llama.cpp's own converter's outputs
// (recorded from its tests/test-json-schema-to-grammar.cpp), and the language to independent
// references: the integers of a range by arithmetic, patterns by std::regex, objects, arrays and
// formats by instances that a schema admits or refuses by its definition.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>

#include "common/error.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace minfer::grammar {
namespace {

using json = nlohmann::ordered_json;

std::shared_ptr<const Grammar> rules(const std::string& schema) {
  return std::make_shared<const Grammar>(json_schema_text_to_gbnf(schema).grammar);
}

bool admits(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  Matcher m(g);
  if (!text.empty()) {
    if (!m.allows(text)) return false;
    m.accept(text);
  }
  return m.complete();
}

bool admits(const std::string& schema, const std::string& text) { return admits(rules(schema), text); }

// Lines without their indentation and the blank ones around (as llama.cpp's test compares).
std::string lines(const std::string& s) {
  std::istringstream in(s);
  std::string line, out;
  while (std::getline(in, line)) {
    line.erase(0, line.find_first_not_of(" \t"));
    if (!line.empty()) out += line + "\n";
  }
  return out;
}

struct Recorded {
  const char* name;
  const char* schema;
  const char* grammar;
};

// llama.cpp's converter's outputs for these schemas (its test file's expectations).
const Recorded kLlamaCpp[] = {
    {"empty schema (object)", "{}", R"(
      array ::= "[" space ( value ("," space value)* )? space "]"
      boolean ::= ("true" | "false")
      char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
      decimal-part ::= [0-9]{1,16}
      integral-part ::= [0] | [1-9] [0-9]{0,15}
      null ::= "null"
      number ::= ("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?
      object ::= "{" space ( string ":" space value ("," space string ":" space value)* )? space "}"
      root ::= object
      space ::= | " " | "\n"{1,2} [ \t]{0,20}
      string ::= "\"" char* "\""
      value ::= object | array | string | number | boolean | null)"},
    {"min -123 max 42", R"({"type": "integer", "minimum": -123, "maximum": 42})", R"(
      root ::= ("-" ([0-9] | ([1-8] [0-9] | [9] [0-9]) | "1" ([0-1] [0-9] | [2] [0-3])) | [0-9] | ([1-3] [0-9] | [4] [0-2]))
      space ::= | " " | "\n"{1,2} [ \t]{0,20})"},
    {"min + max items with min + max values across zero",
     R"({"items": {"type": "integer", "minimum": -12, "maximum": 207}, "minItems": 3, "maxItems": 5})", R"(
      item ::= ("-" ([0-9] | "1" [0-2]) | [0-9] | ([1-8] [0-9] | [9] [0-9]) | ([1] [0-9]{2} | [2] "0" [0-7]))
      root ::= "[" space item ("," space item){2,4} space "]"
      space ::= | " " | "\n"{1,2} [ \t]{0,20})"},
    {"regexp", R"({"type": "string", "pattern": "^(\\([0-9]{1,3}\\))?[0-9]{3}-[0-9]{4} a{3,5}nd...$"})", R"g(
      dot ::= [^\x0A\x0D]
      root ::= "\"" (("(" root-1{1,3} ")")? root-1{3,3} "-" root-1{4,4} " " "a"{3,5} "nd" dot dot dot) "\""
      root-1 ::= [0-9]
      space ::= | " " | "\n"{1,2} [ \t]{0,20})g"},
    {"required + optional props each in original order",
     R"({"properties": {"b": {"type": "string"}, "a": {"type": "string"}, "d": {"type": "string"},
         "c": {"type": "string"}}, "required": ["a", "b"], "additionalProperties": false})", R"(
      a-kv ::= "\"a\"" space ":" space string
      b-kv ::= "\"b\"" space ":" space string
      c-kv ::= "\"c\"" space ":" space string
      char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
      d-kv ::= "\"d\"" space ":" space string
      d-rest ::= ( "," space c-kv )?
      root ::= "{" space b-kv "," space a-kv ( "," space ( d-kv d-rest | c-kv ) )? space "}"
      space ::= | " " | "\n"{1,2} [ \t]{0,20}
      string ::= "\"" char* "\"")"},
    {"optional + additional props",
     R"({"type": "object", "properties": {"a": {"type": "number"}}, "additionalProperties": {"type": "number"}})", R"(
      a-kv ::= "\"a\"" space ":" space number
      a-rest ::= ( "," space additional-kv )*
      additional-k ::= ["] ( [a] char+ | [^"a] char* )? ["]
      additional-kv ::= additional-k ":" space number
      char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
      decimal-part ::= [0-9]{1,16}
      integral-part ::= [0] | [1-9] [0-9]{0,15}
      number ::= ("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?
      root ::= "{" space  (a-kv a-rest | additional-kv ( "," space additional-kv )* )? space "}"
      space ::= | " " | "\n"{1,2} [ \t]{0,20})"},
    {"top-level $ref",
     R"({"$ref": "#/definitions/foo", "definitions": {"foo": {"type": "object", "properties": {"a": {"type": "string"}},
         "required": ["a"], "additionalProperties": false}}})", R"(
      char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
      ref-definitions-foo ::= "{" space ref-definitions-foo-a-kv space "}"
      ref-definitions-foo-a-kv ::= "\"a\"" space ":" space string
      root ::= ref-definitions-foo
      space ::= | " " | "\n"{1,2} [ \t]{0,20}
      string ::= "\"" char* "\"")"},
};

TEST(JsonSchema, WritesLlamaCppsGrammars) {
  for (const Recorded& r : kLlamaCpp) {
    const SchemaGrammar g = json_schema_text_to_gbnf(r.schema);
    EXPECT_EQ(lines(g.gbnf), lines(r.grammar)) << r.name;
    EXPECT_TRUE(g.warnings.empty()) << r.name;
  }
}

// Every integer of a window is admitted exactly when it lies within the bounds, for bounds on
// both sides, one side, exclusive and fractional ones; no leading zeros, no fraction.
TEST(JsonSchema, IntegerBoundsAdmitExactlyTheirIntegers) {
  const int64_t values[] = {-123, -100, -10, -9, -1, 0, 1, 9, 10, 42, 99, 100, 207};
  auto check = [](const json& schema, int64_t lo, int64_t hi) {
    const auto g = rules(schema.dump());
    for (int64_t n = -2600; n <= 2600; n += n < -260 || n > 260 ? 7 : 1) {
      ASSERT_EQ(admits(g, std::to_string(n)), n >= lo && n <= hi) << schema.dump() << " n=" << n;
      const std::string zero = n < 0 ? "-0" + std::to_string(-n) : "0" + std::to_string(n);
      ASSERT_FALSE(admits(g, zero)) << schema.dump() << " " << zero;
    }
    for (const char* bad : {"007", "1.5", "-", "", "1e3"}) EXPECT_FALSE(admits(g, bad)) << schema.dump() << " " << bad;
  };
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
  for (int64_t lo : values) {
    check({{"type", "integer"}, {"minimum", lo}}, lo, kInf);
    check({{"type", "integer"}, {"maximum", lo}}, -kInf, lo);
    for (int64_t hi : values)
      if (lo <= hi) check({{"type", "integer"}, {"minimum", lo}, {"maximum", hi}}, lo, hi);
  }
  check({{"type", "integer"}, {"exclusiveMinimum", 0}, {"exclusiveMaximum", 100}}, 1, 99);
  check({{"type", "integer"}, {"minimum", -2.5}, {"maximum", 7.5}}, -2, 7);
  check({{"type", "integer"}, {"exclusiveMinimum", -2.5}, {"exclusiveMaximum", 7.5}}, -2, 7);
  // Random bounds of up to 7 digits, checked at random integers and around the bounds.
  std::mt19937_64 rng(11);
  auto draw = [&] {
    const int64_t scale[] = {10, 1000, 100000, 10000000};
    const int64_t s = scale[rng() % 4];
    return static_cast<int64_t>(rng() % (2 * s + 1)) - s;
  };
  for (int i = 0; i < 150; ++i) {
    int64_t lo = draw(), hi = draw();
    if (lo > hi) std::swap(lo, hi);
    const int kind = i % 3;  // both bounds, minimum only, maximum only
    const json schema = kind == 0   ? json{{"type", "integer"}, {"minimum", lo}, {"maximum", hi}}
                        : kind == 1 ? json{{"type", "integer"}, {"minimum", lo}}
                                    : json{{"type", "integer"}, {"maximum", hi}};
    const auto g = rules(schema.dump());
    std::vector<int64_t> probes;
    for (int64_t b : {lo, hi, -lo, -hi, lo / 10, hi / 10, lo * 10, hi * 10})
      for (int64_t d = -11; d <= 11; ++d) probes.push_back(b + d);
    for (int k = 0; k < 200; ++k) probes.push_back(draw());
    for (int64_t n : probes) {
      const bool in = (kind == 2 || n >= lo) && (kind == 1 || n <= hi);
      ASSERT_EQ(admits(g, std::to_string(n)), in) << schema.dump() << " n=" << n;
    }
  }
  // An unbounded side goes to 16 digits, as the `integer` rule.
  const auto g = rules(R"({"type": "integer", "minimum": 5})");
  EXPECT_TRUE(admits(g, "1234567890123456"));
  EXPECT_FALSE(admits(g, "12345678901234567"));
  EXPECT_FALSE(admits(g, "-3"));
}

// A pattern's strings are the ones std::regex matches, for every string over its alphabet up
// to length 5 (JSON-quoted: the grammar is of a JSON string).
TEST(JsonSchema, PatternsAdmitWhatTheRegexMatches) {
  struct Case {
    const char* pattern;
    const char* alphabet;
  };
  const Case cases[] = {
      {"^a(b|cd)*e?$", "abcde"},      {"^[a-c]{2,3}x+$", "abcx"},    {"^(ab)?c{1,2}\\.$", "abc."},
      {"^x.y$", "xyz"},               {"^a\\.?b$", "ab."},           {"^(?:a|b[0-9]){2,}$", "ab01"},
      {"^[^a]b*|c$", "abc"},          {"^a{2}b{0,1}c{1,}$", "abc"},  {"^(a(b)?)+$", "ab"},
  };
  for (const Case& c : cases) {
    const std::string p = c.pattern;
    const auto g = rules(json{{"type", "string"}, {"pattern", p}}.dump());
    const std::regex re(p.substr(1, p.size() - 2));
    std::vector<std::string> strings = {""};
    for (size_t begin = 0, len = 0; len < 5; ++len) {
      const size_t end = strings.size();
      for (size_t i = begin; i < end; ++i)
        for (const char* a = c.alphabet; *a; ++a) strings.push_back(strings[i] + *a);
      begin = end;
    }
    for (const std::string& s : strings)
      ASSERT_EQ(admits(g, "\"" + s + "\""), std::regex_match(s, re)) << p << " on '" << s << "'";
  }
}

TEST(JsonSchema, StringLengthsAndFormats) {
  const auto len = rules(R"({"type": "string", "minLength": 2, "maxLength": 4})");
  EXPECT_TRUE(admits(len, R"("ab")"));
  EXPECT_TRUE(admits(len, R"("a\nb\u00e9")"));  // escapes are one character each
  EXPECT_FALSE(admits(len, R"("a")"));
  EXPECT_FALSE(admits(len, R"("abcde")"));
  const auto date = rules(R"({"type": "string", "format": "date"})");
  EXPECT_TRUE(admits(date, R"("2024-02-29")"));
  for (const char* bad : {R"("2024-13-01")", R"("2024-00-10")", R"("2024-1-10")", R"("2024-01-32")", "2024-01-01"})
    EXPECT_FALSE(admits(date, bad)) << bad;
  const auto time = rules(R"({"format": "time"})");
  EXPECT_TRUE(admits(time, R"("23:59:59Z")"));
  EXPECT_TRUE(admits(time, R"("08:30:00.250+02:00")"));
  EXPECT_FALSE(admits(time, R"("24:00:00Z")"));
  EXPECT_FALSE(admits(time, R"("12:00:00")"));
  EXPECT_TRUE(admits(R"({"format": "date-time"})", R"("2024-02-29T12:00:00Z")"));
  const auto uuid = rules(R"({"type": "string", "format": "uuid"})");
  EXPECT_TRUE(admits(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(admits(uuid, R"("123e4567-e89b-12d3-a456-42661417400")"));
  EXPECT_FALSE(admits(uuid, R"("123e4567e89b12d3a456426614174000")"));
}

TEST(JsonSchema, ObjectsKeepTheirPropertiesOrderAndAdditionalOnes) {
  const auto o = rules(R"({"properties": {"b": {"type": "string"}, "a": {"type": "integer"}, "d": {"type": "boolean"},
      "c": {"type": "null"}}, "required": ["a", "b"]})");
  for (const char* good : {R"({"b": "x", "a": 1})", R"({"b":"x","a":1,"d":true,"c":null})", R"({"b": "x", "a": -7, "c": null})",
                           "{\n  \"b\": \"\",\n  \"a\": 0,\n  \"d\": false\n}"})
    EXPECT_TRUE(admits(o, good)) << good;
  for (const char* bad : {R"({"a": 1, "b": "x"})", R"({"b": "x"})", R"({"b": "x", "a": 1, "e": 2})",
                          R"({"b": "x", "a": 1, "c": null, "d": true})", R"({"b": "x", "a": "1"})", R"({"b": "x", "a": 1,})"})
    EXPECT_FALSE(admits(o, bad)) << bad;

  // Additional properties: any key but the named ones, values of their schema.
  const auto extra = rules(R"({"type": "object", "properties": {"a": {"type": "number"}}, "additionalProperties": {"type": "number"}})");
  for (const char* good : {R"({})", R"({"a": 1, "x": 2, "y": 3.5})", R"({"x": 2})", R"({"ab": 1, "": 2})"})
    EXPECT_TRUE(admits(extra, good)) << good;
  for (const char* bad : {R"({"x": "s"})", R"({"a": 1, "a": 2})", R"({"x": 1, "a": 2})"}) EXPECT_FALSE(admits(extra, bad)) << bad;
  EXPECT_TRUE(admits(R"({"type": "object", "additionalProperties": false})", "{ }"));
  EXPECT_FALSE(admits(R"({"type": "object", "additionalProperties": false})", R"({"a": 1})"));
  EXPECT_TRUE(admits(R"({"properties": {"a": {}}, "additionalProperties": true})", R"({"a": {"x": [1]}, "b": [null]})"));
}

TEST(JsonSchema, ArraysUnionsReferencesAndConstants) {
  const auto arr = rules(R"({"type": "array", "items": {"enum": ["red", 2, null]}, "minItems": 1, "maxItems": 3})");
  EXPECT_TRUE(admits(arr, R"(["red"])"));
  EXPECT_TRUE(admits(arr, R"([2, null, "red"])"));
  EXPECT_FALSE(admits(arr, "[]"));
  EXPECT_FALSE(admits(arr, R"([2, 2, 2, 2])"));
  EXPECT_FALSE(admits(arr, R"(["blue"])"));
  const auto tuple = rules(R"({"prefixItems": [{"type": "string"}, {"type": "number"}]})");
  EXPECT_TRUE(admits(tuple, R"(["a", 1.5e3])"));
  EXPECT_FALSE(admits(tuple, R"(["a"])"));
  EXPECT_FALSE(admits(tuple, R"([1.5, "a"])"));

  const auto nullable = rules(R"({"type": ["string", "null"]})");
  EXPECT_TRUE(admits(nullable, "null"));
  EXPECT_TRUE(admits(nullable, R"("x")"));
  EXPECT_FALSE(admits(nullable, "1"));
  const auto any = rules(R"({"anyOf": [{"type": "boolean"}, {"const": {"k": [1, "two"]}}]})");
  EXPECT_TRUE(admits(any, "true"));
  EXPECT_TRUE(admits(any, R"({"k":[1,"two"]})"));
  EXPECT_FALSE(admits(any, R"({"k":[1]})"));

  // A recursive definition: a tree of nodes.
  const auto tree = rules(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
      "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}}})");
  EXPECT_TRUE(admits(tree, R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": [{"v": 4, "kids": []}]}]})"));
  EXPECT_FALSE(admits(tree, R"({"v": 1, "kids": [{"kids": []}]})"));
  // allOf merges the properties of its parts (anyOf inside it: optional ones).
  const auto all = rules(R"({"allOf": [{"properties": {"a": {"type": "integer"}}}, {"$ref": "#/$defs/b"},
      {"anyOf": [{"properties": {"c": {"type": "string"}}}]}], "$defs": {"b": {"properties": {"b": {"type": "boolean"}}}}})");
  EXPECT_TRUE(admits(all, R"({"a": 1, "b": true})"));
  EXPECT_TRUE(admits(all, R"({"a": 1, "b": true, "c": "x"})"));
  EXPECT_FALSE(admits(all, R"({"a": 1})"));
  // Only annotations: any value.
  EXPECT_TRUE(admits(R"({"description": "anything"})", "[1, \"x\"]"));
}

// The empty schema (OpenAI's JSON mode): every JSON object nlohmann writes, compact or
// indented, and nothing that is not an object.
TEST(JsonSchema, EmptySchemaAdmitsJsonObjects) {
  const auto g = rules("{}");
  std::mt19937 rng(7);
  std::function<json(int)> value = [&](int depth) -> json {
    switch (rng() % (depth > 3 ? 5 : 7)) {
      case 0: return nullptr;
      case 1: return rng() % 2 == 0;
      case 2: return static_cast<int>(rng() % 20001) - 10000;
      case 3: return (static_cast<double>(rng() % 100000) - 50000) / 128.0;
      case 4: return std::vector<std::string>{"", "s", "a\"b", "\\", "line\n\tnext", "\u00e9t\u00e9"}[rng() % 6];
      case 5: {
        json a = json::array();
        for (int i = rng() % 4; i > 0; --i) a.push_back(value(depth + 1));
        return a;
      }
      default: {
        json o = json::object();
        for (int i = rng() % 4; i > 0; --i) o["k" + std::to_string(rng() % 10)] = value(depth + 1);
        return o;
      }
    }
  };
  for (int i = 0; i < 200; ++i) {
    json o = json::object();
    for (int k = rng() % 4; k > 0; --k) o["key" + std::to_string(k)] = value(1);
    ASSERT_TRUE(admits(g, o.dump())) << o.dump();
    ASSERT_TRUE(admits(g, o.dump(2))) << o.dump(2);
    const std::string v = value(1).dump();
    if (v.front() != '{') {
      ASSERT_FALSE(admits(g, v)) << v;
    }
  }
}

TEST(JsonSchema, UnenforcedConstraintsAreWarnings) {
  SchemaGrammar g = json_schema_text_to_gbnf(R"({"type": "string", "pattern": "^\\d+$"})");
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("not supported"), std::string::npos) << g.warnings[0];
  const auto any_string = std::make_shared<const Grammar>(std::move(g.grammar));
  EXPECT_TRUE(admits(any_string, R"("12")"));
  EXPECT_TRUE(admits(any_string, R"("ab")"));  // what the grammar cannot hold, it does not
  g = json_schema_text_to_gbnf(R"({"type": "array", "items": {"type": "number", "minimum": 0}, "uniqueItems": true})");
  ASSERT_EQ(g.warnings.size(), 2u);
  EXPECT_NE(g.warnings[0].find("'minimum' is enforced for integers only (at item)"), std::string::npos) << g.warnings[0];
  EXPECT_NE(g.warnings[1].find("'uniqueItems' is not enforced (at root)"), std::string::npos) << g.warnings[1];
  // A format without a rule of its own is not enforced, and then the lengths are.
  g = json_schema_text_to_gbnf(R"({"type": "string", "format": "email", "maxLength": 3})");
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("format 'email' is not enforced"), std::string::npos) << g.warnings[0];
  const auto email = std::make_shared<const Grammar>(std::move(g.grammar));
  EXPECT_TRUE(admits(email, R"("a@b")"));
  EXPECT_FALSE(admits(email, R"("a@bc")"));
  g = json_schema_text_to_gbnf(R"({"type": "string", "format": "date", "maxLength": 3})");
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("'maxLength' is enforced on a string without"), std::string::npos) << g.warnings[0];
}

TEST(JsonSchema, BadSchemasAreOneClearError) {
  const std::pair<const char*, const char*> cases[] = {
      {"{", "not JSON"},
      {R"({"type": "foo"})", "unknown type 'foo'"},
      {R"({"type": 123})", "'type' must be"},
      {R"({"$ref": "#/definitions/none"})", "does not resolve"},
      {R"({"$ref": "https://example.com/schema.json"})", "only references inside the schema"},
      {R"({"type": "string", "pattern": "^(ab$"})", "invalid pattern"},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})", "no integer"},
      {R"({"type": "integer", "minimum": "5"})", "'minimum' must be a number"},
      {R"({"type": "array", "items": {}, "minItems": -1})", "'minItems' must be a non-negative integer"},
      {R"({"type": "array", "items": {}, "minItems": 5000})", "its grammar is refused"},
      {R"({"enum": []})", "'enum' must be a non-empty array"},
      {R"({"properties": {"a": false}})", "admits no value"},
      {R"({"format": 7})", "'format' must be a string"},
      {"[1]", "must be an object or a boolean"},
  };
  for (const auto& [schema, message] : cases) {
    try {
      json_schema_text_to_gbnf(schema);
      ADD_FAILURE() << schema << " was converted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("JSON schema: ", 0), 0u) << what;
      EXPECT_NE(what.find(message), std::string::npos) << schema << " -> " << what;
    }
  }
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += R"({"type": "array", "items": )";
  deep += "{}" + std::string(300, '}');
  EXPECT_THROW(json_schema_text_to_gbnf(deep), Error);
  std::string doubling = "{}";  // each level visits the next once per type: 2^40 visits
  for (int i = 0; i < 40; ++i) doubling = R"({"type": ["object", "string"], "allOf": [{"properties": {"p": )" + doubling + "}}]}";
  EXPECT_THROW(json_schema_text_to_gbnf(doubling), Error);
}

}  // namespace
}  // namespace minfer::grammar
