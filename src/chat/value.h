// The interpreter's values: Python's object model cut down to what chat templates use.
// Lists, dicts, namespaces and callables are shared (reference semantics, as in Python);
// strings are UTF-8 and measured in code points where Python would.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace minfer::chat {

struct Value;
using List = std::vector<Value>;

// Insertion-ordered map (chat template dicts are small: linear search is fine). Keys are stored
// as strings: see dict_key.
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(const std::string& key, Value v);
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  const Value* kwarg(std::string_view name) const;
  // Positional i, else keyword `name`, else nullptr.
  const Value* get(size_t i, std::string_view name) const;
};

using NativeFn = std::function<Value(const CallArgs&)>;
struct Callable {
  std::string name;
  NativeFn fn;
};

struct Value {
  enum Kind : uint8_t { Undefined, None, Bool, Int, Float, String, ListK, DictK, Fn, Namespace };
  Kind kind = Undefined;
  bool b = false;
  bool tuple = false;   // a list that Python would print as (a, b)
  bool group = false;   // a groupby tuple (grouper, list), which has those two attributes too
  int64_t i = 0;
  double f = 0;
  std::string s;        // String; for Undefined, what was undefined (for error messages)
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;  // DictK and Namespace
  std::shared_ptr<Callable> fn;

  Value() = default;
  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool x);
  static Value integer(int64_t x);
  static Value number(double x);
  static Value str(std::string x);
  static Value make_list(List items = {});
  static Value make_tuple(List items);
  static Value make_dict();
  static Value make_namespace();
  static Value function(std::string name, NativeFn f);

  bool is_undefined() const { return kind == Undefined; }
  bool is_none() const { return kind == None; }
  bool is_string() const { return kind == String; }
  bool is_list() const { return kind == ListK; }
  bool is_dict() const { return kind == DictK; }
  bool is_numeric() const { return kind == Int || kind == Float || kind == Bool; }
  double as_double() const;  // Int/Float/Bool
};

// Python semantics.
bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
int compare(const Value& a, const Value& b);   // <0, 0, >0; Error when not orderable
std::string type_name(const Value& v);          // Python's: 'str', 'int', 'dict', ...
std::string to_str(const Value& v);             // str(); Undefined -> ""
std::string repr(const Value& v);               // repr()
std::string repr_string(std::string_view s);
std::string float_repr(double x);               // Python's repr(float): 1.0, 0.5, 1e-05
// A dict key as Dict stores it: a str as itself; an int, float, bool or None (Python's other
// hashable keys that templates write, `{0: 'a'}`) as a tag that starts with the byte 0xFF, which
// UTF-8 never has (a str that starts with it is tagged too). Equal numbers are one key, as in
// Python (1, 1.0 and True); the dict keeps the first one written. Error for any other type.
std::string dict_key(const Value& k);
Value key_value(const std::string& stored);  // the key that dict_key stored
// Elements of a for loop / list(): list items, dict keys, string characters.
List iterate(const Value& v);

}  // namespace minfer::chat
