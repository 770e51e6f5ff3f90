// The built-in library of the interpreter: operators, attribute/item access (incl. Python
// str/dict methods), filters, tests and global functions. Failures throw EvalError.
#pragma once
#include <string>
#include <string_view>

#include "chat/value.h"

namespace minfer::chat {

// ops.cpp: Python arithmetic/comparison. op is one of + - * / // % ** ~ == != < > <= >= in notin.
Value binary_op(std::string_view op, const Value& a, const Value& b);
Value negate(const Value& v);
bool contains(const Value& container, const Value& item);  // Python's `item in container`
[[noreturn]] void undefined_error(const Value& undefined);

// access.cpp
Value get_attr(const Value& obj, const std::string& name);  // obj.name (methods included)
Value get_item(const Value& obj, const Value& key);         // obj[key]
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
int64_t length(const Value& v);                             // len(); Undefined: 0

// methods.cpp: obj.name as a bound method of str/list/dict; Undefined when there is none.
Value method(const Value& obj, const std::string& name);
// Python's str.ljust / rjust / center (align '<', '>', '^') to `width` code points.
std::string pad_to(const std::string& s, int64_t width, char align, const std::string& fill = " ");
// Python's "fmt % args" (printf-style formatting of strings).
std::string percent_format(const std::string& fmt, const Value& args);

// filters.cpp / tests.cpp
using FilterFn = Value (*)(const Value& input, const CallArgs& args);
FilterFn find_filter(std::string_view name);  // nullptr when unknown
using TestFn = bool (*)(const Value& input, const CallArgs& args);
TestFn find_test(std::string_view name);      // nullptr when unknown

// globals.cpp: range, dict, namespace, raise_exception, strftime_now.
const Dict& global_functions();
// strftime.cpp: strftime on the clock, or on MINFER_FAKE_NOW (ISO 8601) when set.
std::string strftime_now(const std::string& fmt);

}  // namespace minfer::chat
