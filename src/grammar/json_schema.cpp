#include "grammar/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error.h"

namespace minfer::grammar {
namespace {

using json = nlohmann::ordered_json;

constexpr int kUnbounded = std::numeric_limits<int>::max();
constexpr int64_t kNoMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();
constexpr int kMaxDepth = 256;         // schema nesting (the GBNF parser's own group limit)
constexpr int kMaxPatternDepth = 100;  // groups in a pattern, as llama.cpp
// Sub-schemas visited: a type array visits its schema once per type, so nested ones could
// otherwise take exponential time.
constexpr int kMaxVisits = 1 << 16;

// The rule and text names below are llama.cpp's, so that a grammar printed by either reads the
// same and the tests can hold the output to llama.cpp's.
const char* const kSpaceRule = R"(| " " | "\n"{1,2} [ \t]{0,20})";

struct Builtin {
  const char* body;
  std::vector<const char*> deps;
};

const std::map<std::string, Builtin>& primitive_rules() {
  static const std::map<std::string, Builtin> m = {
      {"boolean", {R"(("true" | "false"))", {}}},
      {"decimal-part", {"[0-9]{1,16}", {}}},
      {"integral-part", {"[0] | [1-9] [0-9]{0,15}", {}}},
      {"number", {R"(("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?)", {"integral-part", "decimal-part"}}},
      {"integer", {R"(("-"? integral-part))", {"integral-part"}}},
      {"value", {"object | array | string | number | boolean | null", {"object", "array", "string", "number", "boolean", "null"}}},
      {"object", {R"("{" space ( string ":" space value ("," space string ":" space value)* )? space "}")", {"string", "value"}}},
      {"array", {R"("[" space ( value ("," space value)* )? space "]")", {"value"}}},
      {"uuid", {R"("\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"")", {}}},
      {"char", {R"([^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4}))", {}}},
      {"string", {R"("\"" char* "\"")", {"char"}}},
      {"null", {R"("null")", {}}},
  };
  return m;
}

const std::map<std::string, Builtin>& format_rules() {
  static const std::map<std::string, Builtin> m = {
      {"date", {R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] ))", {}}},
      {"time", {R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))", {}}},
      {"date-time", {R"(date "T" time)", {"date", "time"}}},
      {"date-string", {R"("\"" date "\"")", {"date"}}},
      {"time-string", {R"("\"" time "\"")", {"time"}}},
      {"date-time-string", {R"("\"" date-time "\"")", {"date-time"}}},
  };
  return m;
}

const Builtin& builtin(const std::string& name) {
  if (auto it = primitive_rules().find(name); it != primitive_rules().end()) return it->second;
  return format_rules().at(name);
}

// The JSON Schema types (each a primitive rule of the same name).
bool is_schema_type(const std::string& t) {
  return t == "string" || t == "number" || t == "integer" || t == "boolean" || t == "null" ||
         t == "object" || t == "array";
}

bool is_uuid_format(const std::string& f) {
  return f == "uuid" || (f.size() == 5 && f.rfind("uuid", 0) == 0 && f[4] >= '1' && f[4] <= '5');
}

// A `format` with a rule of its own.
bool known_format(const std::string& f) { return is_uuid_format(f) || format_rules().count(f + "-string"); }

bool is_reserved_name(const std::string& name) {
  return name == "root" || primitive_rules().count(name) || format_rules().count(name);
}

// Rule names are letters, digits and '-': every run of other characters becomes one '-'.
std::string rule_name_of(std::string_view s) {
  std::string out;
  bool in_run = false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (ok) {
      out += c;
      in_run = false;
    } else if (!in_run) {
      out += '-';
      in_run = true;
    }
  }
  return out;
}

std::string gbnf_literal(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '\r': out += "\\r"; break;
      case '\n': out += "\\n"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

// item repeated min..max times (max kUnbounded: no limit), with separator between items.
std::string repetition(const std::string& item, int min, int max, const std::string& separator = "") {
  const bool has_max = max != kUnbounded;
  if (max == 0) return "";
  if (min == 0 && max == 1) return item + "?";
  if (separator.empty()) {
    if (min == 1 && !has_max) return item + "+";
    if (min == 0 && !has_max) return item + "*";
    return fmt::format("{}{{{},{}}}", item, min, has_max ? std::to_string(max) : "");
  }
  std::string r = item + " " +
                  repetition("(" + separator + " " + item + ")", min == 0 ? 0 : min - 1, has_max ? max - 1 : max);
  return min == 0 ? "(" + r + ")?" : r;
}

// The decimal integers in [min, max] (kNoMin / kNoMax: unbounded), without leading zeros, at
// most 16 digits where a side is unbounded (as the `integer` rule).
class IntRange {
 public:
  static std::string rule(int64_t min, int64_t max) {
    IntRange r;
    r.build(min, max, 16);
    return r.out_.str();
  }

 private:
  void digits(char from, char to) {
    if (from == to) out_ << '[' << from << ']';
    else out_ << '[' << from << '-' << to << ']';
  }
  void any_digits(int min, int max) {
    max = std::max(max, min);  // a minimum longer than the 16 digits of an unbounded side
    out_ << "[0-9]";
    if (min == 1 && max == 1) return;
    out_ << '{' << min;
    if (max != min) {
      out_ << ',';
      if (max != kUnbounded) out_ << max;
    }
    out_ << '}';
  }
  // Numbers of from.size() digits between from and to (same length, from <= to).
  void same_length(std::string_view from, std::string_view to) {
    size_t i = 0;
    while (i < from.size() && i < to.size() && from[i] == to[i]) ++i;
    if (i > 0) out_ << '"' << from.substr(0, i) << '"';
    if (i >= from.size() || i >= to.size()) return;
    if (i > 0) out_ << ' ';
    const size_t rest = from.size() - i - 1;
    if (rest == 0) {
      out_ << '[' << from[i] << '-' << to[i] << ']';
      return;
    }
    const std::string_view from_rest = from.substr(i + 1), to_rest = to.substr(i + 1);
    const std::string zeros(rest, '0'), nines(rest, '9');
    bool to_done = false;
    out_ << '(';
    if (from_rest == zeros) {
      digits(from[i], static_cast<char>(to[i] - 1));
      out_ << ' ';
      any_digits(static_cast<int>(rest), static_cast<int>(rest));
    } else {
      out_ << '[' << from[i] << "] (";
      same_length(from_rest, nines);
      out_ << ')';
      if (from[i] < to[i] - 1) {
        out_ << " | ";
        if (to_rest == nines) {
          digits(static_cast<char>(from[i] + 1), to[i]);
          to_done = true;
        } else {
          digits(static_cast<char>(from[i] + 1), static_cast<char>(to[i] - 1));
        }
        out_ << ' ';
        any_digits(static_cast<int>(rest), static_cast<int>(rest));
      }
    }
    if (!to_done) {
      out_ << " | ";
      digits(to[i], to[i]);
      out_ << ' ';
      same_length(zeros, to_rest);
    }
    out_ << ')';
  }

  // The numbers from min on (its digits; leading zeros when it follows another digit), up to
  // `decimals` more digits than min's first: a smaller first digit (from `lowest`) and more
  // digits, min's first and the rest from min's rest on, or a larger first and as many digits.
  // llama.cpp reads min's rest as a number, so that 207 admits 27, and leaves out longer rests
  // from a 0, so that 18311 refuses 183099; otherwise the text is its.
  void at_least(std::string_view min, char lowest, int decimals) {
    const int len = static_cast<int>(min.size());
    const char c = min[0];
    const int fewer = std::max(decimals - 1, 1);
    if (len == 1 && c == '0') {
      any_digits(1, decimals);
      return;
    }
    if (c > lowest) {
      digits(lowest, static_cast<char>(c - 1));
      out_ << ' ';
      any_digits(len, fewer);
      out_ << " | ";
    }
    if (len == 1) {
      digits(c, '9');
      out_ << ' ';
      any_digits(0, fewer);
      return;
    }
    digits(c, c);
    out_ << " (";
    at_least(min.substr(1), '0', fewer);
    out_ << ')';
    if (c < '9') {
      out_ << " | ";
      digits(static_cast<char>(c + 1), '9');
      out_ << ' ';
      any_digits(len - 1, fewer);
    }
  }

  // negatives: whether a range unbounded below takes negative numbers (no, where the caller
  // has written the minus sign itself).
  void build(int64_t min, int64_t max, int decimals_left, bool negatives = true) {
    const bool has_min = min != kNoMin, has_max = max != kNoMax;
    if (has_min && has_max) {
      if (min < 0 && max < 0) {
        out_ << "\"-\" (";
        build(-max, -min, decimals_left);
        out_ << ')';
        return;
      }
      if (min < 0) {
        out_ << "\"-\" (";
        build(0, -min, decimals_left);
        out_ << ") | ";
        min = 0;
      }
      std::string from = std::to_string(min);
      const std::string to = std::to_string(max);
      for (size_t len = from.size(); len < to.size(); ++len) {
        same_length(from, std::string(len, '9'));
        from.assign(len + 1, '0');  // 10...0
        from[0] = '1';
        out_ << " | ";
      }
      same_length(from, to);
      return;
    }
    const int fewer = std::max(decimals_left - 1, 1);
    if (has_min) {
      if (min < 0) {
        out_ << "\"-\" (";
        build(kNoMin, -min, decimals_left, false);
        out_ << ") | [0] | [1-9] ";
        any_digits(0, decimals_left - 1);
      } else if (min == 0) {
        out_ << "[0] | [1-9] ";
        any_digits(0, fewer);
      } else {
        at_least(std::to_string(min), '1', decimals_left);
      }
      return;
    }
    if (max >= 0) {
      if (negatives) {
        out_ << "\"-\" [1-9] ";
        any_digits(0, fewer);
        out_ << " | ";
      }
      build(0, max, decimals_left);
    } else {
      out_ << "\"-\" (";
      build(-max, kNoMax, decimals_left);  // no leading zeros (llama.cpp admits -05 here)
      out_ << ')';
    }
  }

  std::ostringstream out_;
};

// A GBNF escape at s[pos] (\xHH, \uHHHH, \UHHHHHHHH, \t \r \n \\ \" \[ \]): its length, or 0.
size_t gbnf_escape_length(std::string_view s, size_t pos) {
  if (pos + 1 >= s.size() || s[pos] != '\\') return 0;
  size_t hex = 0;
  switch (s[pos + 1]) {
    case 'x': hex = 2; break;
    case 'u': hex = 4; break;
    case 'U': hex = 8; break;
    case 't': case 'r': case 'n': case '\\': case '"': case '[': case ']': return 2;
    default: return 0;
  }
  if (pos + 2 + hex > s.size()) return 0;
  for (size_t i = pos + 2; i < pos + 2 + hex; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return 0;
  return 2 + hex;
}

// A pattern beyond the regex subset (a valid regex the grammar has no form for).
struct UnsupportedPattern : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Not a regex at all.
struct InvalidPattern : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Constraint keywords no rule holds the text to (as in llama.cpp): named in a warning.
constexpr const char* kUnenforced[] = {
    "multipleOf", "uniqueItems", "minProperties", "maxProperties", "not", "if", "then", "else",
    "dependentRequired", "dependentSchemas", "dependencies", "patternProperties", "propertyNames",
    "contains", "minContains", "maxContains", "unevaluatedProperties", "unevaluatedItems"};

class Converter {
 public:
  explicit Converter(const json& root) : root_(root) { rules_["space"] = kSpaceRule; }

  std::string visit(const json& schema, const std::string& name, int depth = 0);

  void add_root(const std::string& body) { rules_["root"] = body; }

  SchemaGrammar finish() {
    SchemaGrammar g;
    for (const auto& [name, body] : rules_) g.gbnf += name + " ::= " + body + "\n";
    try {
      g.grammar = parse_gbnf(g.gbnf);
    } catch (const Error& e) {
      fail("JSON schema: its grammar is refused: {}", e.what());
    }
    g.warnings.assign(warnings_.begin(), warnings_.end());
    return g;
  }

 private:
  std::string add_rule(const std::string& name, const std::string& body) {
    const std::string esc = rule_name_of(name);
    if (auto it = rules_.find(esc); it == rules_.end() || it->second == body) {
      rules_[esc] = body;
      return esc;
    }
    for (int i = 0;; ++i) {
      const std::string key = esc + std::to_string(i);
      if (auto it = rules_.find(key); it == rules_.end() || it->second == body) {
        rules_[key] = body;
        return key;
      }
    }
  }

  std::string add_builtin(const std::string& name, const Builtin& rule) {
    const std::string n = add_rule(name, rule.body);
    for (const char* dep : rule.deps)
      if (!rules_.count(dep)) add_builtin(dep, builtin(dep));
    return n;
  }

  void warn(std::string msg) { warnings_.insert(std::move(msg)); }

  // The schema at a `$ref` inside this one ("#" or "#/a/b", JSON pointer escapes ~0 ~1).
  const json& lookup_ref(const std::string& ref) const {
    if (ref != "#" && ref.rfind("#/", 0) != 0)
      fail("JSON schema: $ref '{}' is not supported: only references inside the schema ('#/...') are", ref);
    const json* target = &root_;
    size_t pos = 1;
    while (pos < ref.size()) {
      const size_t next = std::min(ref.find('/', pos + 1), ref.size());
      std::string sel;
      for (size_t i = pos + 1; i < next; ++i) {
        if (ref[i] == '~' && i + 1 < next && (ref[i + 1] == '0' || ref[i + 1] == '1')) {
          sel += ref[i + 1] == '0' ? '~' : '/';
          ++i;
        } else {
          sel += ref[i];
        }
      }
      if (target->is_object() && target->contains(sel)) {
        target = &(*target)[sel];
      } else if (target->is_array() && !sel.empty() && sel.find_first_not_of("0123456789") == std::string::npos &&
                 sel.size() < 10 && std::stoul(sel) < target->size()) {
        target = &(*target)[std::stoul(sel)];
      } else {
        fail("JSON schema: $ref '{}' does not resolve: no '{}' there", ref, sel);
      }
      pos = next;
    }
    return *target;
  }

  std::string resolve_ref(const std::string& ref, int depth) {
    const size_t hash = ref.find('#');
    std::string name = "ref" + rule_name_of(hash == std::string::npos ? ref : ref.substr(hash + 1));
    if (!rules_.count(name) && !resolving_.count(ref)) {
      resolving_.insert(ref);
      name = visit(lookup_ref(ref), name, depth + 1);
      resolving_.erase(ref);
    }
    return name;
  }

  std::string union_rule(const std::string& name, const std::vector<json>& alternatives, int depth) {
    std::string out;
    for (size_t i = 0; i < alternatives.size(); ++i) {
      if (i > 0) out += " | ";
      out += visit(alternatives[i], name + (name.empty() ? "alternative-" : "-") + std::to_string(i), depth + 1);
    }
    return out;
  }

  std::string object_rule(const std::vector<std::pair<std::string, const json*>>& properties,
                          const std::set<std::string>& required, const std::string& name,
                          const json& additional, int depth);
  std::string not_strings(const std::vector<std::string>& strings);
  std::string pattern_rule(const std::string& pattern, const std::string& name);
  std::string integer_rule(const json& schema);
  void check_unenforced(const json& schema, const std::string& type, const std::string& format,
                        const std::string& where);

  const json& root_;
  std::map<std::string, std::string> rules_;
  std::set<std::string> resolving_;
  std::set<std::string> warnings_;
  int visits_ = 0;
};

std::string where_of(const std::string& name) { return name.empty() ? "root" : name; }

int count_field(const json& schema, const char* key, int dflt, const std::string& where) {
  if (!schema.contains(key)) return dflt;
  const json& v = schema[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    fail("JSON schema: '{}' must be a non-negative integer (at {})", key, where);
  return static_cast<int>(std::min<int64_t>(v.get<int64_t>(), kUnbounded - 1));
}

void Converter::check_unenforced(const json& schema, const std::string& type, const std::string& format,
                                 const std::string& where) {
  for (const char* k : kUnenforced)
    if (schema.contains(k)) warn(fmt::format("'{}' is not enforced (at {})", k, where));
  if (type != "integer")
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
      if (schema.contains(k)) warn(fmt::format("'{}' is enforced for integers only (at {})", k, where));
  if (!format.empty() && !known_format(format)) warn(fmt::format("format '{}' is not enforced (at {})", format, where));
  if (type != "string" || schema.contains("pattern") || known_format(format))
    for (const char* k : {"minLength", "maxLength"})
      if (schema.contains(k))
        warn(fmt::format("'{}' is enforced on a string without a pattern or a format of its own only (at {})", k, where));
}

std::string Converter::visit(const json& schema, const std::string& name, int depth) {
  const std::string where = where_of(name);
  if (depth > kMaxDepth) fail("JSON schema: nested deeper than {} (at {})", kMaxDepth, where);
  if (++visits_ > kMaxVisits) fail("JSON schema: too large: more than {} sub-schemas to convert", kMaxVisits);
  const std::string rule_name = is_reserved_name(name) ? name + "-" : name.empty() ? "root" : name;
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) fail("JSON schema: the schema false admits no value (at {})", where);
    return add_rule(rule_name, add_builtin("value", builtin("value")));
  }
  if (!schema.is_object()) fail("JSON schema: a schema must be an object or a boolean (at {})", where);

  const json type = schema.contains("type") ? schema["type"] : json();
  if (!type.is_null() && !type.is_string() && !type.is_array())
    fail("JSON schema: 'type' must be a string or an array of strings (at {})", where);
  const std::string type_name = type.is_string() ? type.get<std::string>() : "";
  if (type.is_string() && !is_schema_type(type_name)) fail("JSON schema: unknown type '{}' (at {})", type_name, where);
  std::string format;
  if (schema.contains("format")) {
    if (!schema["format"].is_string()) fail("JSON schema: 'format' must be a string (at {})", where);
    format = schema["format"].get<std::string>();
  }
  const bool untyped = type.is_null();
  const bool maybe_string = untyped || type_name == "string";

  if (schema.contains("$ref")) {
    if (!schema["$ref"].is_string()) fail("JSON schema: '$ref' must be a string (at {})", where);
    return add_rule(rule_name, resolve_ref(schema["$ref"].get<std::string>(), depth));
  }
  if (schema.contains("oneOf") || schema.contains("anyOf")) {
    const char* key = schema.contains("oneOf") ? "oneOf" : "anyOf";
    const json& alts = schema[key];
    if (!alts.is_array() || alts.empty()) fail("JSON schema: '{}' must be a non-empty array (at {})", key, where);
    return add_rule(rule_name, union_rule(name, std::vector<json>(alts.begin(), alts.end()), depth));
  }
  if (type.is_array()) {
    if (type.empty()) fail("JSON schema: 'type' is an empty array (at {})", where);
    std::vector<json> each;
    for (const json& t : type) {
      if (!t.is_string()) fail("JSON schema: 'type' must be a string or an array of strings (at {})", where);
      json copy = schema;
      copy["type"] = t;
      each.push_back(std::move(copy));
    }
    return add_rule(rule_name, union_rule(name, each, depth));
  }
  check_unenforced(schema, type_name, format, where);
  if (schema.contains("const")) return add_rule(rule_name, gbnf_literal(schema["const"].dump()));
  if (schema.contains("enum")) {
    const json& values = schema["enum"];
    if (!values.is_array() || values.empty()) fail("JSON schema: 'enum' must be a non-empty array (at {})", where);
    std::string body = "(";
    for (size_t i = 0; i < values.size(); ++i) body += (i ? " | " : "") + gbnf_literal(values[i].dump());
    return add_rule(rule_name, body + ")");
  }
  if ((untyped || type_name == "object") &&
      (schema.contains("properties") ||
       (schema.contains("additionalProperties") && schema["additionalProperties"] != json(true)))) {
    std::set<std::string> required;
    if (schema.contains("required") && schema["required"].is_array())
      for (const json& r : schema["required"])
        if (r.is_string()) required.insert(r.get<std::string>());
    std::vector<std::pair<std::string, const json*>> properties;
    if (schema.contains("properties")) {
      if (!schema["properties"].is_object()) fail("JSON schema: 'properties' must be an object (at {})", where);
      for (const auto& [k, v] : schema["properties"].items()) properties.emplace_back(k, &v);
    }
    return add_rule(rule_name, object_rule(properties, required, name,
                                           schema.contains("additionalProperties") ? schema["additionalProperties"] : json(),
                                           depth));
  }
  if ((untyped || type_name == "object" || type_name == "string") && schema.contains("allOf")) {
    const json& all = schema["allOf"];
    if (!all.is_array() || all.empty()) fail("JSON schema: 'allOf' must be a non-empty array (at {})", where);
    std::set<std::string> required;
    std::vector<std::pair<std::string, const json*>> properties;
    std::map<std::string, size_t> enum_counts;
    std::function<void(const json&, bool, int)> add = [&](const json& part, bool is_required, int hops) {
      if (!part.is_object()) fail("JSON schema: an 'allOf' item must be an object (at {})", where);
      if (part.contains("$ref")) {
        if (!part["$ref"].is_string()) fail("JSON schema: '$ref' must be a string (at {})", where);
        if (hops > kMaxDepth) fail("JSON schema: '$ref' chain in 'allOf' deeper than {} (at {})", kMaxDepth, where);
        add(lookup_ref(part["$ref"].get<std::string>()), is_required, hops + 1);
      } else if (part.contains("properties")) {
        if (!part["properties"].is_object()) fail("JSON schema: 'properties' must be an object (at {})", where);
        for (const auto& [k, v] : part["properties"].items()) {
          properties.emplace_back(k, &v);
          if (is_required) required.insert(k);
        }
      } else if (part.contains("enum")) {
        if (!part["enum"].is_array()) fail("JSON schema: 'enum' must be an array (at {})", where);
        for (const json& v : part["enum"]) ++enum_counts[gbnf_literal(v.dump())];
      } else {
        warn(fmt::format("an 'allOf' item without properties, enum or $ref is not enforced (at {})", where));
      }
    };
    for (const json& part : all) {
      if (part.is_object() && part.contains("anyOf") && part["anyOf"].is_array()) {
        for (const json& alt : part["anyOf"]) add(alt, false, 0);
      } else {
        add(part, true, 0);
      }
    }
    if (!enum_counts.empty()) {
      std::string body;
      for (const auto& [literal, count] : enum_counts)
        if (count == all.size()) body += (body.empty() ? "" : " | ") + literal;
      if (!body.empty()) return add_rule(rule_name, "(" + body + ")");
    }
    return add_rule(rule_name, object_rule(properties, required, name, json(), depth));
  }
  if ((untyped || type_name == "array") && (schema.contains("items") || schema.contains("prefixItems"))) {
    const json& items = schema.contains("items") ? schema["items"] : schema["prefixItems"];
    if (items.is_array()) {
      std::string body = "\"[\" space ";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) body += " \",\" space ";
        body += visit(items[i], name + (name.empty() ? "" : "-") + "tuple-" + std::to_string(i), depth + 1);
      }
      return add_rule(rule_name, body + " space \"]\"");
    }
    const std::string item = visit(items, name + (name.empty() ? "" : "-") + "item", depth + 1);
    const int min = count_field(schema, "minItems", 0, where);
    const int max = schema.contains("maxItems") && !schema["maxItems"].is_null() ? count_field(schema, "maxItems", 0, where)
                                                                                 : kUnbounded;
    if (min > max) fail("JSON schema: 'minItems' above 'maxItems' (at {})", where);
    return add_rule(rule_name, "\"[\" space " + repetition(item, min, max, "\",\" space") + " space \"]\"");
  }
  if (maybe_string && schema.contains("pattern")) {
    if (!schema["pattern"].is_string()) fail("JSON schema: 'pattern' must be a string (at {})", where);
    const std::string pattern = schema["pattern"].get<std::string>();
    const auto snapshot = rules_;
    try {
      return pattern_rule(pattern, rule_name);
    } catch (const UnsupportedPattern& e) {
      rules_ = snapshot;
      warn(fmt::format("pattern {} is not supported ({}): any string is accepted (at {})", pattern, e.what(), where));
      return add_rule(rule_name, add_builtin("string", builtin("string")));
    } catch (const InvalidPattern& e) {
      fail("JSON schema: invalid pattern {}: {} (at {})", pattern, e.what(), where);
    }
  }
  if (maybe_string && is_uuid_format(format))
    return add_builtin(rule_name == "root" ? "root" : format, builtin("uuid"));
  if (maybe_string && format_rules().count(format + "-string"))
    return add_rule(rule_name, add_builtin(format + "-string", builtin(format + "-string")));
  if (type_name == "string" && (schema.contains("minLength") || schema.contains("maxLength"))) {
    const std::string c = add_builtin("char", builtin("char"));
    const int min = count_field(schema, "minLength", 0, where);
    const int max = count_field(schema, "maxLength", kUnbounded, where);
    if (min > max) fail("JSON schema: 'minLength' above 'maxLength' (at {})", where);
    return add_rule(rule_name, "\"\\\"\" " + repetition(c, min, max) + " \"\\\"\"");
  }
  if (type_name == "integer" && (schema.contains("minimum") || schema.contains("exclusiveMinimum") ||
                                 schema.contains("maximum") || schema.contains("exclusiveMaximum")))
    return add_rule(rule_name, integer_rule(schema));
  if (schema.empty() || type_name == "object") return add_rule(rule_name, add_builtin("object", builtin("object")));
  if (untyped) return add_rule(rule_name, add_builtin("value", builtin("value")));  // only annotations: any value
  return add_builtin(rule_name == "root" ? "root" : type_name, builtin(type_name));
}

// An integer bound: minimum/maximum rounded inwards, exclusive ones one step further.
std::string Converter::integer_rule(const json& schema) {
  auto bound = [&](const char* key, bool lower, bool exclusive) -> int64_t {
    const json& v = schema[key];
    if (!v.is_number()) fail("JSON schema: '{}' must be a number", key);
    if (v.is_number_integer()) {  // exact, also beyond 2^53
      const int64_t i = v.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), kNoMax - 2))
                                               : std::max<int64_t>(v.get<int64_t>(), kNoMin + 2);
      return std::clamp<int64_t>(exclusive ? (lower ? i + 1 : i - 1) : i, kNoMin + 1, kNoMax - 1);
    }
    const double x = v.get<double>();
    const double b = exclusive ? (lower ? std::floor(x) + 1 : std::ceil(x) - 1) : (lower ? std::ceil(x) : std::floor(x));
    if (!(std::fabs(b) < 9.0e18)) fail("JSON schema: '{}' is out of the 64-bit integer range", key);
    return static_cast<int64_t>(b);
  };
  int64_t min = kNoMin, max = kNoMax;
  if (schema.contains("minimum")) min = bound("minimum", true, false);
  else if (schema.contains("exclusiveMinimum")) min = bound("exclusiveMinimum", true, true);
  if (schema.contains("maximum")) max = bound("maximum", false, false);
  else if (schema.contains("exclusiveMaximum")) max = bound("exclusiveMaximum", false, true);
  if (min != kNoMin && max != kNoMax && min > max) fail("JSON schema: no integer lies between the bounds {} and {}", min, max);
  return "(" + IntRange::rule(min, max) + ")";
}

// Required properties first, in the schema's order, then any of the optional ones, each at most
// once and in the schema's order; additional properties (when allowed) among the optional ones,
// under keys that are none of the named properties.
std::string Converter::object_rule(const std::vector<std::pair<std::string, const json*>>& properties,
                                   const std::set<std::string>& required, const std::string& name,
                                   const json& additional, int depth) {
  const std::string prefix = name + (name.empty() ? "" : "-");
  struct Member {
    std::string key;  // the property, or "*" for additional properties
    std::string kv_rule;
    bool additional;
  };
  std::vector<Member> required_members, optional_members;
  std::vector<std::string> names;
  for (const auto& [key, schema] : properties) {
    const std::string value = visit(*schema, prefix + key, depth + 1);
    Member m{key, add_rule(prefix + key + "-kv", gbnf_literal(json(key).dump()) + " space \":\" space " + value), false};
    (required.count(key) ? required_members : optional_members).push_back(std::move(m));
    names.push_back(key);
  }
  if ((additional.is_boolean() && additional.get<bool>()) || additional.is_object()) {
    const std::string sub = prefix + "additional";
    const std::string value =
        additional.is_object() ? visit(additional, sub + "-value", depth + 1) : add_builtin("value", builtin("value"));
    const std::string key = names.empty() ? add_builtin("string", builtin("string")) : add_rule(sub + "-k", not_strings(names));
    optional_members.push_back({"*", add_rule(sub + "-kv", key + " \":\" space " + value), true});
  }
  if (required_members.empty() && optional_members.empty()) return "\"{\" space \"}\"";

  std::string rule = "\"{\" space ";
  for (size_t i = 0; i < required_members.size(); ++i) rule += (i ? " \",\" space " : "") + required_members[i].kv_rule;
  if (!optional_members.empty()) {
    // The optional members from `from` on, the first one present unless first_optional.
    std::function<std::string(size_t, bool)> rest = [&](size_t from, bool first_optional) {
      const Member& m = optional_members[from];
      const std::string comma = "( \",\" space " + m.kv_rule + " )";
      std::string r = first_optional ? comma + (m.additional ? "*" : "?")
                                     : m.kv_rule + (m.additional ? " " + comma + "*" : "");
      if (from + 1 < optional_members.size()) r += " " + add_rule(prefix + m.key + "-rest", rest(from + 1, true));
      return r;
    };
    rule += " (";
    if (!required_members.empty()) rule += " \",\" space ( ";
    for (size_t i = 0; i < optional_members.size(); ++i) rule += (i ? " | " : "") + rest(i, false);
    if (!required_members.empty()) rule += " )";
    rule += " )?";
  }
  return rule + " space \"}\"";
}

// A JSON string that is none of the given ones: a trie walk that leaves each name as soon as the
// text differs from it, or goes on past its end.
std::string Converter::not_strings(const std::vector<std::string>& strings) {
  struct Node {
    std::map<char, Node> children;
    bool end = false;
  };
  Node trie;
  for (const std::string& s : strings) {
    Node* n = &trie;
    for (char c : s) n = &n->children[c];
    n->end = true;
  }
  const std::string c = add_builtin("char", builtin("char"));
  std::string out = "[\"] ( ";
  std::function<void(const Node&)> walk = [&](const Node& node) {
    std::string taken;
    bool first = true;
    for (const auto& [ch, child] : node.children) {
      taken += ch;
      if (!first) out += " | ";
      first = false;
      out += fmt::format("[{}]", ch);
      if (!child.children.empty()) {
        out += " (";
        walk(child);
        out += ")";
      } else if (child.end) {
        out += " " + c + "+";
      }
    }
    if (!node.children.empty()) {
      if (!first) out += " | ";
      out += "[^\"" + taken + "] " + c + "*";
    }
  };
  walk(trie);
  out += " )";
  if (!trie.end) out += "?";
  return out + " [\"]";
}

// A regex anchored with ^ and $ over the subset GBNF expresses: literals, escapes GBNF shares,
// `.` (any character but line breaks), classes, groups `( )` and `(?: )`, `|`, `* + ? {m,n}`.
std::string Converter::pattern_rule(const std::string& pattern, const std::string& name) {
  if (pattern.size() < 2 || pattern.front() != '^' || pattern.back() != '$')
    throw UnsupportedPattern("not anchored with '^' and '$'");
  const std::string p = pattern.substr(1, pattern.size() - 2);
  const size_t n = p.size();
  size_t i = 0;
  int depth = 0;
  std::map<std::string, std::string> repeated_rules;  // a repeated group's text -> its rule
  struct Piece {
    std::string text;
    bool literal;  // text is the inside of a GBNF literal
  };
  auto to_rule = [](const Piece& x) { return x.literal ? "\"" + x.text + "\"" : x.text; };
  auto special = [](char c) { return std::strchr("|.()[]{}*+?^$", c) != nullptr && c != '\0'; };
  auto quantifier = [](char c) { return c == '*' || c == '+' || c == '?' || c == '{'; };

  std::function<Piece()> sequence = [&]() -> Piece {
    std::vector<Piece> seq;
    auto join = [&]() {  // consecutive literals become one
      std::string out, literal;
      auto emit = [&](const std::string& s) { out += (out.empty() ? "" : " ") + s; };
      for (const Piece& x : seq) {
        if (x.literal) {
          literal += x.text;
          continue;
        }
        if (!literal.empty()) emit("\"" + literal + "\"");
        literal.clear();
        emit(x.text);
      }
      if (!literal.empty()) emit("\"" + literal + "\"");
      return Piece{out, false};
    };
    while (i < n) {
      const char c = p[i];
      if (c == '.') {
        seq.push_back({add_rule("dot", "[^\\x0A\\x0D]"), false});
        ++i;
      } else if (c == '(') {
        ++i;
        if (i < n && p[i] == '?') {
          if (i + 1 < n && p[i + 1] == ':') i += 2;
          else throw UnsupportedPattern("unsupported group syntax");
        }
        if (++depth > kMaxPatternDepth) throw UnsupportedPattern("pattern nesting too deep");
        seq.push_back({"(" + to_rule(sequence()) + ")", false});
      } else if (c == ')') {
        ++i;
        if (depth == 0) throw InvalidPattern("unbalanced parentheses");
        --depth;
        return join();
      } else if (c == '^' || c == '$') {
        throw UnsupportedPattern("anchor inside the pattern");
      } else if (c == '[') {
        std::string cls = "[";
        ++i;
        while (i < n && p[i] != ']') {
          if (p[i] == '\\') {
            const size_t e = gbnf_escape_length(p, i);
            if (e == 0) throw UnsupportedPattern("unsupported escape in character class: " + p.substr(i, 2));
            cls += p.substr(i, e);
            i += e;
          } else {
            cls += p[i++];
          }
        }
        if (i >= n) throw InvalidPattern("unterminated character class");
        ++i;
        seq.push_back({cls + "]", false});
      } else if (c == '|') {
        seq.push_back({"|", false});
        ++i;
      } else if (c == '*' || c == '+' || c == '?') {
        if (seq.empty() || seq.back().text == "|") throw InvalidPattern("nothing to repeat");
        seq.back() = {to_rule(seq.back()) + c, false};
        ++i;
      } else if (c == '{') {
        const size_t close = p.find('}', i);
        if (close == std::string::npos) throw UnsupportedPattern("unterminated curly brackets");
        const std::string inner = p.substr(i + 1, close - i - 1);
        i = close + 1;
        auto number = [&](const std::string& s, int dflt) {
          if (s.empty() && dflt >= 0) return dflt;
          if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
            throw UnsupportedPattern("invalid number in curly brackets");
          return std::stoi(s);
        };
        const size_t comma = inner.find(',');
        int min = 0, max = kUnbounded;
        if (comma == std::string::npos) {
          min = max = number(inner, -1);
        } else {
          if (inner.find(',', comma + 1) != std::string::npos)
            throw UnsupportedPattern("wrong number of values in curly brackets");
          min = number(inner.substr(0, comma), 0);
          max = number(inner.substr(comma + 1), kUnbounded);
        }
        if (seq.empty() || seq.back().text == "|") throw InvalidPattern("nothing to repeat");
        if (min > max) throw InvalidPattern("numbers out of order in curly brackets");
        Piece& last = seq.back();
        std::string item = to_rule(last);
        if (!last.literal) {
          auto [it, added] = repeated_rules.try_emplace(last.text);
          if (added) it->second = add_rule(name + "-" + std::to_string(repeated_rules.size()), last.text);
          item = it->second;
        }
        last = {repetition(item, min, max), false};
      } else {
        // A run of literal characters; one that a quantifier follows stands alone, so that the
        // quantifier takes only it.
        std::string literal;
        while (i < n) {
          if (p[i] == '\\') {
            if (i + 1 == n) throw InvalidPattern("trailing backslash");
            const char next = p[i + 1];
            const bool regex_escape = std::strchr("^$.[](){}|*+?", next) != nullptr;
            const size_t e = regex_escape ? 2 : gbnf_escape_length(p, i);
            if (e == 0) throw UnsupportedPattern("unsupported escape: " + p.substr(i, 2));
            if (!literal.empty() && i + e < n && quantifier(p[i + e])) break;
            literal += regex_escape ? std::string(1, next) : p.substr(i, e);
            i += e;
          } else if (p[i] == '"') {
            if (!literal.empty() && i + 1 < n && quantifier(p[i + 1])) break;
            literal += "\\\"";
            ++i;
          } else if (!special(p[i]) && (i + 1 == n || literal.empty() || p[i + 1] == '.' || !special(p[i + 1]))) {
            literal += p[i++];
          } else {
            break;
          }
        }
        if (literal.empty()) throw UnsupportedPattern(std::string("unsupported character: ") + c);
        seq.push_back({literal, true});
      }
    }
    return join();
  };
  const std::string rule = to_rule(sequence());
  if (depth != 0) throw InvalidPattern("unbalanced parentheses");
  return add_rule(name, "\"\\\"\" (" + rule + ") \"\\\"\"");
}

}  // namespace

SchemaGrammar json_schema_to_gbnf(const json& schema) {
  try {
    Converter c(schema);
    c.visit(schema, "");
    return c.finish();
  } catch (const json::exception& e) {  // a value of the wrong kind read as another
    fail("JSON schema: {}", e.what());
  }
}

SchemaGrammar json_schema_in_gbnf(const json& schema, const std::string& name,
                                  const std::string& root_body) {
  if (name.empty() || name != rule_name_of(name) || is_reserved_name(name))
    fail("JSON schema: '{}' cannot name the schema's rule", name);
  try {
    Converter c(schema);
    c.visit(schema, name);
    c.add_root(root_body);
    return c.finish();
  } catch (const json::exception& e) {
    fail("JSON schema: {}", e.what());
  }
}

SchemaGrammar json_schema_text_to_gbnf(std::string_view schema_text) {
  json schema;
  try {
    schema = json::parse(schema_text);
  } catch (const json::exception& e) {
    fail("JSON schema: not JSON: {}", e.what());
  }
  return json_schema_to_gbnf(schema);
}

}  // namespace minfer::grammar
