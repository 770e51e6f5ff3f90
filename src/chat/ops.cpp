#include <algorithm>
#include <cmath>

#include "chat/builtins.h"
#include "chat/eval_error.h"
#include "chat/render_budget.h"

namespace minfer::chat {

void undefined_error(const Value& u) {
  eval_fail(u.s.empty() ? "undefined value" : u.s);
}

static bool is_intlike(const Value& v) { return v.kind == Value::Int || v.kind == Value::Bool; }
static int64_t int_of(const Value& v) { return v.kind == Value::Int ? v.i : int64_t(v.b); }

[[noreturn]] static void unsupported(std::string_view op, const Value& a, const Value& b) {
  eval_fail("unsupported operand type(s) for " + std::string(op) + ": '" + type_name(a) +
            "' and '" + type_name(b) + "'");
}

// Copies of the items go to the end of `out` (a string item's bytes are copied too).
static void append_copies(List& out, const List& items) {
  charge_steps(1 + items.size() / 16);
  for (const Value& x : items) {
    if (x.is_string()) charge_bytes(x.s.size());
    out.push_back(x);
  }
}

static Value repeat(const Value& seq, int64_t n) {
  const size_t unit = seq.is_string() ? seq.s.size() : seq.list->size();
  const size_t limit = seq.is_string() ? kMaxStringBytes : kMaxItems;
  if (n > 0 && unit > 0 && uint64_t(n) > limit / unit) eval_fail("sequence repetition result is too large");
  if (seq.is_string()) {
    charge_bytes(unit * size_t(std::max<int64_t>(n, 0)));
    std::string out;
    out.reserve(unit * size_t(std::max<int64_t>(n, 0)));
    for (int64_t k = 0; k < n; ++k) out += seq.s;
    return Value::str(std::move(out));
  }
  List out;
  for (int64_t k = 0; k < n; ++k) append_copies(out, *seq.list);
  return Value::make_list(std::move(out));
}

// Python integers do not overflow; ours are 64-bit, so overflow is an error, not UB.
static Value checked(std::string_view op, int64_t x, int64_t y) {
  int64_t r = 0;
  const bool bad = op == "+" ? __builtin_add_overflow(x, y, &r)
                   : op == "-" ? __builtin_sub_overflow(x, y, &r)
                               : __builtin_mul_overflow(x, y, &r);
  if (bad) eval_fail("integer overflow in " + std::string(op));
  return Value::integer(r);
}

static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

bool contains(const Value& c, const Value& item) {
  switch (c.kind) {
    case Value::String:
      if (!item.is_string())
        eval_fail("'in <string>' requires string as left operand, not " + type_name(item));
      return c.s.find(item.s) != std::string::npos;
    case Value::ListK:
      for (const auto& x : *c.list)
        if (equals(x, item)) return true;
      return false;
    case Value::DictK: return c.dict->find(dict_key(item)) != nullptr;
    case Value::Namespace: return item.is_string() && c.dict->find(item.s) != nullptr;
    case Value::Undefined: return false;  // Jinja2's Undefined iterates as empty
    default: eval_fail("argument of type '" + type_name(c) + "' is not iterable");
  }
}

Value negate(const Value& v) {
  if (v.kind == Value::Int || v.kind == Value::Bool) return Value::integer(-int_of(v));
  if (v.kind == Value::Float) return Value::number(-v.f);
  if (v.is_undefined()) undefined_error(v);
  eval_fail("bad operand type for unary -: '" + type_name(v) + "'");
}

Value binary_op(std::string_view op, const Value& a, const Value& b) {
  if (op == "~") {
    const std::string l = to_str(a), r = to_str(b);
    charge_bytes(l.size() + r.size());
    return Value::str(l + r);
  }
  if (op == "==") return Value::boolean(equals(a, b));
  if (op == "!=") return Value::boolean(!equals(a, b));
  if (op == "in") return Value::boolean(contains(b, a));
  if (op == "notin") return Value::boolean(!contains(b, a));
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  if (op == "<") return Value::boolean(compare(a, b) < 0);
  if (op == ">") return Value::boolean(compare(a, b) > 0);
  if (op == "<=") return Value::boolean(compare(a, b) <= 0);
  if (op == ">=") return Value::boolean(compare(a, b) >= 0);

  const bool nums = a.is_numeric() && b.is_numeric();
  const bool ints = is_intlike(a) && is_intlike(b);
  if (op == "+") {
    if (ints) return checked(op, int_of(a), int_of(b));
    if (nums) return Value::number(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
      charge_bytes(a.s.size() + b.s.size());
      return Value::str(a.s + b.s);
    }
    if (a.is_list() && b.is_list()) {
      check_items(a.list->size() + b.list->size());
      List out;
      append_copies(out, *a.list);
      append_copies(out, *b.list);
      return Value::make_list(std::move(out));
    }
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) return checked(op, int_of(a), int_of(b));
    if (nums) return Value::number(a.as_double() - b.as_double());
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) return checked(op, int_of(a), int_of(b));
    if (nums) return Value::number(a.as_double() * b.as_double());
    if ((a.is_string() || a.is_list()) && is_intlike(b)) return repeat(a, int_of(b));
    if ((b.is_string() || b.is_list()) && is_intlike(a)) return repeat(b, int_of(a));
    unsupported(op, a, b);
  }
  if (op == "/") {
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0) eval_fail("division by zero");
    return Value::number(a.as_double() / b.as_double());
  }
  if (op == "//") {
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0) eval_fail("integer division or modulo by zero");
    if (ints && int_of(b) == -1) return checked("-", 0, int_of(a));
    if (ints) return Value::integer(floordiv(int_of(a), int_of(b)));
    return Value::number(std::floor(a.as_double() / b.as_double()));
  }
  if (op == "%") {
    if (a.is_string()) return Value::str(percent_format(a.s, b));
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0) eval_fail("integer division or modulo by zero");
    if (ints) {
      const int64_t x = int_of(a), y = int_of(b);
      if (y == -1) return Value::integer(0);
      return Value::integer(x - floordiv(x, y) * y);
    }
    const double x = a.as_double(), y = b.as_double();
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value::number(r);
  }
  if (op == "**") {
    if (!nums) unsupported(op, a, b);
    if (ints && int_of(b) >= 0) {
      int64_t r = 1, base = int_of(a);
      for (int64_t e = int_of(b); e > 0; e >>= 1) {
        if ((e & 1) && __builtin_mul_overflow(r, base, &r)) eval_fail("integer overflow in **");
        if (e > 1 && __builtin_mul_overflow(base, base, &base)) eval_fail("integer overflow in **");
      }
      return Value::integer(r);
    }
    return Value::number(std::pow(a.as_double(), b.as_double()));
  }
  eval_fail("unknown operator '" + std::string(op) + "'");
}

}  // namespace minfer::chat
