#include <algorithm>
#include <optional>

#include "chat/builtins.h"
#include "chat/eval_error.h"
#include "chat/utf8.h"

namespace minfer::chat {

int64_t length(const Value& v) {
  switch (v.kind) {
    case Value::Undefined: return 0;
    case Value::String: return int64_t(utf8::length(v.s));
    case Value::ListK: return int64_t(v.list->size());
    case Value::DictK:
    case Value::Namespace: return int64_t(v.dict->items.size());
    default: eval_fail("object of type '" + type_name(v) + "' has no len()");
  }
}

static std::string object_name(const Value& v) {
  std::string s = "'";  // (not "'" + string: GCC 12 warns -Wrestrict on that falsely)
  return s.append(type_name(v)).append(" object'");
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) undefined_error(obj);
  // Jinja2 tries the Python attribute first, then the item: d.items is the method.
  Value m = method(obj, name);
  if (!m.is_undefined()) return m;
  if (obj.kind == Value::DictK || obj.kind == Value::Namespace) {
    if (const Value* v = obj.dict->find(name)) return *v;
  }
  if (obj.group && (name == "grouper" || name == "list")) return (*obj.list)[name == "list"];
  return Value::undefined(object_name(obj) + " has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_error(obj);
  switch (obj.kind) {
    case Value::DictK:
    case Value::Namespace:
      if (obj.kind == Value::DictK && !key.is_string()) {
        if (const Value* v = obj.dict->find(dict_key(key))) return *v;
      }
      if (key.is_string()) {
        if (const Value* v = obj.dict->find(obj.kind == Value::DictK ? dict_key(key) : key.s)) return *v;
        Value m = method(obj, key.s);
        if (!m.is_undefined()) return m;
        return Value::undefined(object_name(obj) + " has no attribute '" + key.s + "'");
      }
      return Value::undefined(object_name(obj) + " has no element " + repr(key));
    case Value::ListK:
    case Value::String: {
      if (key.kind != Value::Int && key.kind != Value::Bool) {
        if (key.is_string()) return get_attr(obj, key.s);
        return Value::undefined(object_name(obj) + " has no element " + repr(key));
      }
      int64_t i = key.kind == Value::Int ? key.i : int64_t(key.b);
      if (obj.is_list()) {
        const int64_t n = int64_t(obj.list->size());
        const int64_t j = i < 0 ? i + n : i;
        if (j < 0 || j >= n)
          return Value::undefined(type_name(obj) + " object has no element " + std::to_string(i));
        return (*obj.list)[size_t(j)];
      }
      const auto cps = utf8::decode(obj.s);
      const int64_t n = int64_t(cps.size());
      const int64_t j = i < 0 ? i + n : i;
      if (j < 0 || j >= n) return Value::undefined("str object has no element " + std::to_string(i));
      std::string one;
      utf8::append(one, cps[size_t(j)]);
      return Value::str(std::move(one));
    }
    default:
      if (key.is_string()) return get_attr(obj, key.s);
      return Value::undefined(object_name(obj) + " has no element " + repr(key));
  }
}

// Python's slice.indices() followed by the walk over the selected positions.
static std::vector<int64_t> slice_positions(int64_t n, const Value& start, const Value& stop,
                                            const Value& step) {
  auto as_index = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (v.kind == Value::Int) return v.i;
    if (v.kind == Value::Bool) return int64_t(v.b);
    eval_fail(std::string("slice ") + what + " must be an integer or None, not " + type_name(v));
  };
  const int64_t st = as_index(step, "step").value_or(1);
  if (st == 0) eval_fail("slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> x, int64_t dflt) {
    if (!x) return dflt;
    int64_t v = *x;
    if (v < 0) {
      v += n;
      if (v < 0) v = st < 0 ? -1 : 0;
    } else if (v >= n) {
      v = st < 0 ? n - 1 : n;
    }
    return v;
  };
  const int64_t b = clamp(as_index(start, "start"), st < 0 ? n - 1 : 0);
  const int64_t e = clamp(as_index(stop, "stop"), st < 0 ? -1 : n);
  std::vector<int64_t> pos;
  if (st > 0)
    for (int64_t i = b; i < e; i += st) pos.push_back(i);
  else
    for (int64_t i = b; i > e; i += st) pos.push_back(i);
  return pos;
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_list()) {
    List out;
    for (int64_t i : slice_positions(int64_t(obj.list->size()), start, stop, step))
      out.push_back((*obj.list)[size_t(i)]);
    Value v = Value::make_list(std::move(out));
    v.tuple = obj.tuple;
    return v;
  }
  if (obj.is_string()) {
    const auto cps = utf8::decode(obj.s);
    std::string out;
    for (int64_t i : slice_positions(int64_t(cps.size()), start, stop, step))
      utf8::append(out, cps[size_t(i)]);
    return Value::str(std::move(out));
  }
  eval_fail("'" + type_name(obj) + "' object is not subscriptable");
}

}  // namespace minfer::chat
