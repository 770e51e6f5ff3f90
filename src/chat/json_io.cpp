#include "chat/json_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

#include "chat/eval_error.h"
#include "chat/render_budget.h"
#include "chat/utf8.h"

namespace minfer::chat {

Value from_json(const nlohmann::ordered_json& j) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null: return Value::none();
    case T::boolean: return Value::boolean(j.get<bool>());
    case T::number_integer: return Value::integer(j.get<int64_t>());
    case T::number_unsigned: {
      const auto u = j.get<uint64_t>();
      return u > uint64_t(INT64_MAX) ? Value::number(double(u)) : Value::integer(int64_t(u));
    }
    case T::number_float: return Value::number(j.get<double>());
    case T::string: return Value::str(j.get<std::string>());
    case T::array: {
      List items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json(x));
      return Value::make_list(std::move(items));
    }
    case T::object: {
      Value d = Value::make_dict();
      for (auto it = j.begin(); it != j.end(); ++it)
        d.dict->set(dict_key(Value::str(it.key())), from_json(it.value()));
      return d;
    }
    default: return Value::none();  // binary / discarded: not produced by the JSON parser
  }
}

namespace {

void hex4(std::string& out, unsigned v) {
  char b[16];
  std::snprintf(b, sizeof b, "\\u%04x", v);
  out += b;
}

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          hex4(out, c);
        } else if (c < 0x80 || !ensure_ascii) {
          out += char(c);
        } else {
          // One code point as \uXXXX, beyond the BMP as its UTF-16 surrogate pair (Python's).
          const size_t n = utf8::char_bytes(s, i);
          for (const char32_t cp : utf8::decode(std::string_view(s).substr(i, n))) {
            if (cp >= 0x10000) {
              hex4(out, 0xD800 + ((unsigned(cp) - 0x10000) >> 10));
              hex4(out, 0xDC00 + ((unsigned(cp) - 0x10000) & 0x3FF));
            } else {
              hex4(out, unsigned(cp));
            }
          }
          i += n - 1;
        }
    }
  }
  out += '"';
}

void newline(std::string& out, const JsonStyle& st, int level) {
  if (!st.pretty) return;
  out += '\n';
  for (int k = 0; k < level; ++k) out += st.indent;
}

std::string float_json(double f) {
  const std::string r = float_repr(f);
  return r == "nan" ? "NaN" : r == "inf" ? "Infinity" : r == "-inf" ? "-Infinity" : r;
}

// json.dumps's text for a dict key: str as it is, the other key types as their JSON value.
std::string key_text(const Value& k) {
  switch (k.kind) {
    case Value::String: return k.s;
    case Value::Int: return std::to_string(k.i);
    case Value::Float: return float_json(k.f);
    case Value::Bool: return k.b ? "true" : "false";
    case Value::None: return "null";
    default: eval_fail("keys must be str, int, float, bool or None, not " + type_name(k));
  }
}

void dump(std::string& out, const Value& v, const JsonStyle& st, int level) {
  check_string_size(out.size() + (v.is_string() ? v.s.size() : 0));
  if (level > 200) eval_fail("value nested too deeply (or containing itself) for tojson");
  switch (v.kind) {
    case Value::None: out += "null"; return;
    case Value::Bool: out += v.b ? "true" : "false"; return;
    case Value::Int: out += std::to_string(v.i); return;
    case Value::Float: out += float_json(v.f); return;
    case Value::String: dump_string(out, v.s, st.ensure_ascii); return;
    case Value::ListK: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += st.item_sep;
        newline(out, st, level + 1);
        dump(out, (*v.list)[i], st, level + 1);
      }
      newline(out, st, level);
      out += ']';
      return;
    }
    case Value::DictK: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<std::pair<Value, const Value*>> items;
      items.reserve(v.dict->items.size());
      for (const auto& [k, x] : v.dict->items) items.emplace_back(key_value(k), &x);
      if (st.sort_keys) {
        charge_sort(items.size());
        std::stable_sort(items.begin(), items.end(),
                         [](const auto& a, const auto& b) { return compare(a.first, b.first) < 0; });
      }
      out += '{';
      bool first = true;
      for (const auto& [k, x] : items) {
        if (!first) out += st.item_sep;
        first = false;
        newline(out, st, level + 1);
        dump_string(out, key_text(k), st.ensure_ascii);
        out += st.key_sep;
        dump(out, *x, st, level + 1);
      }
      newline(out, st, level);
      out += '}';
      return;
    }
    default: eval_fail("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  dump(out, v, style, 0);
  return out;
}

}  // namespace minfer::chat
