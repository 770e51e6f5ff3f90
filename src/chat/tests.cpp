// Jinja2's tests (`x is defined`, `x is divisibleby 3`, ...).
#include <cmath>
#include <string>
#include <unordered_map>

#include "chat/builtins.h"
#include "chat/eval_error.h"
#include "chat/utf8.h"

namespace minfer::chat {
namespace {

const Value& other(const CallArgs& a, const char* test) {
  const Value* v = a.get(0, "other");
  if (!v) v = a.get(0, "value");
  if (!v) eval_fail(std::string("test '") + test + "' needs an argument");
  return *v;
}

bool is_int(const Value& v) { return v.kind == Value::Int; }

bool t_defined(const Value& v, const CallArgs&) { return !v.is_undefined(); }
bool t_undefined(const Value& v, const CallArgs&) { return v.is_undefined(); }
bool t_none(const Value& v, const CallArgs&) { return v.is_none(); }
bool t_string(const Value& v, const CallArgs&) { return v.is_string(); }
// Python's bool is a Number and an int, but Jinja2's `integer` test excludes it.
bool t_number(const Value& v, const CallArgs&) { return v.is_numeric(); }
bool t_integer(const Value& v, const CallArgs&) { return is_int(v); }
bool t_float(const Value& v, const CallArgs&) { return v.kind == Value::Float; }
bool t_boolean(const Value& v, const CallArgs&) { return v.kind == Value::Bool; }
bool t_true(const Value& v, const CallArgs&) { return v.kind == Value::Bool && v.b; }
bool t_false(const Value& v, const CallArgs&) { return v.kind == Value::Bool && !v.b; }
bool t_mapping(const Value& v, const CallArgs&) { return v.is_dict(); }
// Undefined counts: Jinja2's Undefined defines __iter__ and __len__.
bool t_iterable(const Value& v, const CallArgs&) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_sequence(const Value& v, const CallArgs& a) { return t_iterable(v, a); }
bool t_callable(const Value& v, const CallArgs&) { return v.kind == Value::Fn; }
bool t_eq(const Value& v, const CallArgs& a) { return equals(v, other(a, "eq")); }
bool t_ne(const Value& v, const CallArgs& a) { return !equals(v, other(a, "ne")); }
bool t_lt(const Value& v, const CallArgs& a) { return compare(v, other(a, "lt")) < 0; }
bool t_le(const Value& v, const CallArgs& a) { return compare(v, other(a, "le")) <= 0; }
bool t_gt(const Value& v, const CallArgs& a) { return compare(v, other(a, "gt")) > 0; }
bool t_ge(const Value& v, const CallArgs& a) { return compare(v, other(a, "ge")) >= 0; }
bool t_in(const Value& v, const CallArgs& a) { return contains(other(a, "in"), v); }
bool t_sameas(const Value& v, const CallArgs& a) {
  const Value& o = other(a, "sameas");
  if (v.kind != o.kind) return false;
  switch (v.kind) {
    case Value::None:
    case Value::Undefined: return true;
    case Value::Bool: return v.b == o.b;
    case Value::Int: return v.i == o.i;
    case Value::ListK: return v.list == o.list;
    case Value::DictK:
    case Value::Namespace: return v.dict == o.dict;
    case Value::Fn: return v.fn == o.fn;
    default: return equals(v, o);
  }
}
int64_t int_operand(const Value& v, const char* test) {
  if (v.kind == Value::Int) return v.i;
  if (v.kind == Value::Bool) return v.b;
  if (v.kind == Value::Float && std::floor(v.f) == v.f && std::fabs(v.f) < 9.2e18) return int64_t(v.f);
  eval_fail(std::string("test '") + test + "' needs an integer, not " + type_name(v));
}
// Jinja2's `value % 2 == 1` and `value % 2 == 0`: a float with a fraction is neither.
bool t_odd(const Value& v, const CallArgs&) {
  if (v.kind == Value::Float) return std::fabs(std::fmod(v.f, 2.0)) == 1.0;
  return int_operand(v, "odd") % 2 != 0;
}
bool t_even(const Value& v, const CallArgs&) {
  if (v.kind == Value::Float) return std::fmod(v.f, 2.0) == 0.0;
  return int_operand(v, "even") % 2 == 0;
}
bool t_divisibleby(const Value& v, const CallArgs& a) {
  const int64_t d = int_operand(other(a, "divisibleby"), "divisibleby");
  if (d == 0) eval_fail("integer division or modulo by zero");
  if (d == -1) return true;
  return int_operand(v, "divisibleby") % d == 0;
}
bool t_lower(const Value& v, const CallArgs&) { return v.is_string() && utf8::lower(v.s) == v.s; }
bool t_upper(const Value& v, const CallArgs&) { return v.is_string() && utf8::upper(v.s) == v.s; }
bool t_escaped(const Value&, const CallArgs&) { return false; }
bool t_filter(const Value& v, const CallArgs&) { return v.is_string() && find_filter(v.s); }
bool t_test(const Value& v, const CallArgs&) { return v.is_string() && find_test(v.s); }

}  // namespace

TestFn find_test(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> tests = {
      {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none},
      {"string", t_string}, {"number", t_number}, {"integer", t_integer}, {"float", t_float},
      {"boolean", t_boolean}, {"true", t_true}, {"false", t_false}, {"mapping", t_mapping},
      {"iterable", t_iterable}, {"sequence", t_sequence}, {"callable", t_callable},
      {"eq", t_eq}, {"equalto", t_eq}, {"==", t_eq}, {"ne", t_ne}, {"!=", t_ne},
      {"lt", t_lt}, {"lessthan", t_lt}, {"<", t_lt}, {"le", t_le}, {"<=", t_le},
      {"gt", t_gt}, {"greaterthan", t_gt}, {">", t_gt}, {"ge", t_ge}, {">=", t_ge},
      {"in", t_in}, {"sameas", t_sameas}, {"odd", t_odd}, {"even", t_even},
      {"divisibleby", t_divisibleby}, {"lower", t_lower}, {"upper", t_upper},
      {"escaped", t_escaped}, {"filter", t_filter}, {"test", t_test},
  };
  auto it = tests.find(name);
  return it == tests.end() ? nullptr : it->second;
}

}  // namespace minfer::chat
