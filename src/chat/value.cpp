#include "chat/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/eval_error.h"
#include "chat/render_budget.h"
#include "chat/utf8.h"

namespace minfer::chat {

namespace {

constexpr char kKeyTag = '\xFF';

// What makes two stored keys the same key: a number's value without the type it came as.
std::string_view key_identity(std::string_view stored) {
  if (stored.size() < 2 || stored[0] != kKeyTag || stored[1] != 'n') return stored;
  return stored.substr(0, stored.find('\0'));
}

}  // namespace

const Value* Dict::find(std::string_view key) const {
  return const_cast<Dict*>(this)->find(key);
}

Value* Dict::find(std::string_view key) {
  const std::string_view id = key_identity(key);
  for (auto& [k, v] : items)
    if (key_identity(k) == id) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  if (Value* old = find(key)) {
    *old = std::move(v);
  } else {
    items.emplace_back(key, std::move(v));
  }
}

std::string dict_key(const Value& k) {
  // Numbers: the value (an integral float as the int it equals, as Python's hash does), then
  // after a NUL the type, so that the key prints as it was written.
  const auto number = [](const std::string& value, char type) {
    std::string out{kKeyTag, 'n'};
    out += value;
    out += '\0';
    out += type;
    return out;
  };
  switch (k.kind) {
    case Value::String:
      return !k.s.empty() && k.s[0] == kKeyTag ? std::string{kKeyTag, 's'} + k.s : k.s;
    case Value::Int: return number(std::to_string(k.i), 'i');
    case Value::Bool: return number(k.b ? "1" : "0", 'b');
    case Value::Float:
      if (std::isfinite(k.f) && k.f == std::floor(k.f) && std::fabs(k.f) < 9.2e18)
        return number(std::to_string(int64_t(k.f)), 'f');
      return number(float_repr(k.f), 'f');
    case Value::None: return std::string{kKeyTag, 'z'};
    case Value::Undefined: return std::string{kKeyTag, 'u'};  // Jinja2's Undefined hashes
    default: eval_fail("unhashable type: '" + type_name(k) + "' (a dict key must be a str, int, float, bool or None here)");
  }
}

Value key_value(const std::string& stored) {
  if (stored.size() < 2 || stored[0] != kKeyTag) return Value::str(stored);
  switch (stored[1]) {
    case 's': return Value::str(stored.substr(2));
    case 'z': return Value::none();
    case 'u': return Value::undefined();
    default: break;
  }
  const size_t nul = stored.find('\0');
  const std::string value = stored.substr(2, nul - 2);
  switch (stored[nul + 1]) {
    case 'i': return Value::integer(std::stoll(value));
    case 'b': return Value::boolean(value == "1");
    default:
      return Value::number(value == "nan" ? NAN : value == "inf" ? INFINITY : value == "-inf" ? -INFINITY : std::stod(value));
  }
}

const Value* CallArgs::kwarg(std::string_view name) const {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

const Value* CallArgs::get(size_t i, std::string_view name) const {
  if (i < pos.size()) return &pos[i];
  return kwarg(name);
}

Value Value::undefined(std::string hint) {
  Value v;
  v.s = std::move(hint);
  return v;
}
Value Value::none() {
  Value v;
  v.kind = None;
  return v;
}
Value Value::boolean(bool x) {
  Value v;
  v.kind = Bool;
  v.b = x;
  return v;
}
Value Value::integer(int64_t x) {
  Value v;
  v.kind = Int;
  v.i = x;
  return v;
}
Value Value::number(double x) {
  Value v;
  v.kind = Float;
  v.f = x;
  return v;
}
Value Value::str(std::string x) {
  Value v;
  v.kind = String;
  v.s = std::move(x);
  return v;
}
Value Value::make_list(List items) {
  Value v;
  v.kind = ListK;
  v.list = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::make_tuple(List items) {
  Value v = make_list(std::move(items));
  v.tuple = true;
  return v;
}
Value Value::make_dict() {
  Value v;
  v.kind = DictK;
  v.dict = std::make_shared<Dict>();
  return v;
}
Value Value::make_namespace() {
  Value v;
  v.kind = Namespace;
  v.dict = std::make_shared<Dict>();
  return v;
}
Value Value::function(std::string name, NativeFn f) {
  Value v;
  v.kind = Fn;
  v.fn = std::make_shared<Callable>(Callable{std::move(name), std::move(f)});
  return v;
}

double Value::as_double() const {
  switch (kind) {
    case Int: return double(i);
    case Float: return f;
    case Bool: return b ? 1.0 : 0.0;
    default: eval_fail("expected a number, got " + type_name(*this));
  }
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Undefined:
    case Value::None: return false;
    case Value::Bool: return v.b;
    case Value::Int: return v.i != 0;
    case Value::Float: return v.f != 0;
    case Value::String: return !v.s.empty();
    case Value::ListK: return !v.list->empty();
    case Value::DictK: return !v.dict->items.empty();
    case Value::Fn:
    case Value::Namespace: return true;
  }
  return false;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_numeric() && b.is_numeric()) {
    if (a.kind != Value::Float && b.kind != Value::Float)
      return (a.kind == Value::Int ? a.i : int64_t(a.b)) ==
             (b.kind == Value::Int ? b.i : int64_t(b.b));
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Undefined:
    case Value::None: return true;
    case Value::String: return a.s == b.s;
    case Value::ListK: {
      if (a.list->size() != b.list->size()) return false;
      for (size_t i = 0; i < a.list->size(); ++i)
        if (!equals((*a.list)[i], (*b.list)[i])) return false;
      return true;
    }
    case Value::DictK: {
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* o = b.dict->find(k);
        if (!o || !equals(v, *o)) return false;
      }
      return true;
    }
    case Value::Fn: return a.fn == b.fn;
    case Value::Namespace: return a.dict == b.dict;
    default: return false;
  }
}

int compare(const Value& a, const Value& b) {
  if (a.is_numeric() && b.is_numeric()) {
    if (a.kind == Value::Int && b.kind == Value::Int) return a.i < b.i ? -1 : a.i > b.i;
    const double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.s.compare(b.s);  // UTF-8 byte order is code point order
    return c < 0 ? -1 : c > 0;
  }
  if (a.is_list() && b.is_list()) {
    const size_t n = std::min(a.list->size(), b.list->size());
    for (size_t i = 0; i < n; ++i)
      if (int c = compare((*a.list)[i], (*b.list)[i])) return c;
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size();
  }
  eval_fail("'<' not supported between instances of '" + type_name(a) + "' and '" +
            type_name(b) + "'");
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Undefined: return "Undefined";
    case Value::None: return "NoneType";
    case Value::Bool: return "bool";
    case Value::Int: return "int";
    case Value::Float: return "float";
    case Value::String: return "str";
    case Value::ListK: return v.tuple ? "tuple" : "list";
    case Value::DictK: return "dict";
    case Value::Fn: return "function";
    case Value::Namespace: return "Namespace";
  }
  return "?";
}

std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  if (x == 0) return std::signbit(x) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: fixed for 1e-4 <= |x| < 1e16.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string out;
  size_t p = 0;
  if (sci[0] == '-') {
    out = "-";
    p = 1;
  }
  const size_t epos = sci.find('e');
  std::string digits;
  for (size_t k = p; k < epos; ++k)
    if (sci[k] != '.') digits += sci[k];
  const int exp = std::stoi(sci.substr(epos + 1));
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      if (int(digits.size()) <= exp + 1) {
        out += digits + std::string(size_t(exp + 1) - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, size_t(exp + 1)) + "." + digits.substr(size_t(exp + 1));
      }
    } else {
      out += "0." + std::string(size_t(-exp - 1), '0') + digits;
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += e;
  }
  return out;
}

std::string repr_string(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    char b[16];
    if (c == '\\') out += "\\\\";
    else if (c == static_cast<unsigned char>(q)) out += std::string("\\") + q;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else if (c < 0x80) {
      out += char(c);
    } else {
      // Python escapes the characters that str.isprintable() refuses (controls, format
      // characters, separators other than the space): \xNN, \uNNNN or \UNNNNNNNN.
      const size_t n = utf8::char_bytes(s, i);
      const auto cps = utf8::decode(s.substr(i, n));
      const char32_t cp = cps.size() == 1 ? cps[0] : 0xFFFD;
      if (cp != 0xFFFD && !utf8::is_printable(cp)) {
        std::snprintf(b, sizeof b, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", unsigned(cp));
        out += b;
        i += n - 1;
      } else if (cp != 0xFFFD || s.substr(i, n) == "\xEF\xBF\xBD") {
        out.append(s.substr(i, n));
        i += n - 1;
      } else {
        out += char(c);  // not UTF-8: the byte as it is
      }
    }
  }
  out += q;
  return out;
}

// Containers can hold themselves (`{% set ns.me = ns %}`): bound the recursion.
static thread_local int g_repr_depth = 0;

std::string repr(const Value& v) {
  struct Guard {
    Guard() {
      if (++g_repr_depth > 200) {
        g_repr_depth = 0;
        eval_fail("value nested too deeply (or containing itself) to print");
      }
    }
    ~Guard() { if (g_repr_depth > 0) --g_repr_depth; }
  } guard;
  switch (v.kind) {
    case Value::Undefined: return "Undefined";
    case Value::String: return repr_string(v.s);
    case Value::ListK: {
      std::string out = v.tuple ? "(" : "[";
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += ", ";
        out += repr((*v.list)[i]);
      }
      if (v.tuple && v.list->size() == 1) out += ",";
      return out + (v.tuple ? ")" : "]");
    }
    case Value::DictK: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.dict->items) {
        if (!first) out += ", ";
        first = false;
        out += repr(key_value(k)) + ": " + repr(x);
      }
      return out + "}";
    }
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Undefined: return "";
    case Value::None: return "None";
    case Value::Bool: return v.b ? "True" : "False";
    case Value::Int: return std::to_string(v.i);
    case Value::Float: return float_repr(v.f);
    case Value::String: return v.s;
    case Value::ListK:
    case Value::DictK: return repr(v);
    case Value::Fn: return "<function " + v.fn->name + ">";
    case Value::Namespace: {
      Value d = Value::make_dict();
      d.dict = v.dict;
      return "<Namespace " + repr(d) + ">";
    }
  }
  return "";
}

List iterate(const Value& v) {
  if (v.is_list()) charge_steps(1 + v.list->size() / 16);
  switch (v.kind) {
    case Value::Undefined: return {};
    case Value::ListK: return *v.list;
    case Value::DictK: {
      List keys;
      for (const auto& kv : v.dict->items) keys.push_back(key_value(kv.first));
      return keys;
    }
    case Value::String: {
      const auto cps = utf8::decode(v.s);
      check_items(cps.size());
      charge_steps(1 + cps.size() / 16);
      List chars;
      for (char32_t c : cps) {
        std::string one;
        utf8::append(one, c);
        chars.push_back(Value::str(std::move(one)));
      }
      return chars;
    }
    default: eval_fail("'" + type_name(v) + "' object is not iterable");
  }
}

}  // namespace minfer::chat
