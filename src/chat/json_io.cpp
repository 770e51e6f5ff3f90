#include "chat/json_io.h"

#include <nlohmann/json.hpp>

#include <cstdio>

#include "chat/eval_error.h"
#include "chat/render_budget.h"

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
      for (auto it = j.begin(); it != j.end(); ++it) d.dict->set(it.key(), from_json(it.value()));
      return d;
    }
    default: return Value::none();  // binary / discarded: not produced by the JSON parser
  }
}

static void dump_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
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
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
}

static void newline(std::string& out, int indent, int level) {
  out += '\n';
  out.append(size_t(indent) * size_t(level), ' ');
}

static void dump(std::string& out, const Value& v, int indent, int level) {
  check_string_size(out.size() + (v.is_string() ? v.s.size() : 0));
  if (level > 200) eval_fail("value nested too deeply (or containing itself) for tojson");
  switch (v.kind) {
    case Value::None: out += "null"; return;
    case Value::Bool: out += v.b ? "true" : "false"; return;
    case Value::Int: out += std::to_string(v.i); return;
    case Value::Float: {
      const std::string r = float_repr(v.f);
      out += r == "nan" ? "NaN" : r == "inf" ? "Infinity" : r == "-inf" ? "-Infinity" : r;
      return;
    }
    case Value::String: dump_string(out, v.s); return;
    case Value::ListK: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(out, indent, level + 1);
        dump(out, (*v.list)[i], indent, level + 1);
      }
      if (indent >= 0) newline(out, indent, level);
      out += ']';
      return;
    }
    case Value::DictK: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      bool first = true;
      for (const auto& [k, x] : v.dict->items) {
        if (!first) out += indent >= 0 ? "," : ", ";
        first = false;
        if (indent >= 0) newline(out, indent, level + 1);
        dump_string(out, k);
        out += ": ";
        dump(out, x, indent, level + 1);
      }
      if (indent >= 0) newline(out, indent, level);
      out += '}';
      return;
    }
    default: eval_fail("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

std::string to_json(const Value& v, int indent) {
  std::string out;
  dump(out, v, indent, 0);
  return out;
}

}  // namespace minfer::chat
