// Metadata values: type names, conversions and equality.
#include <cstring>
#include <limits>
#include <type_traits>

#include "gguf/gguf.h"

namespace minfer::gguf {

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "invalid";
}

Value Value::string_array(const std::vector<std::string>& xs) {
  std::vector<Value> items;
  items.reserve(xs.size());
  for (const auto& s : xs) items.push_back(Value::str(s));
  return Value::array(ValueType::STRING, std::move(items));
}

bool Value::is_integer() const {
  switch (type) {
    case ValueType::U8: case ValueType::I8: case ValueType::U16: case ValueType::I16:
    case ValueType::U32: case ValueType::I32: case ValueType::U64: case ValueType::I64:
      return true;
    default:
      return false;
  }
}

std::optional<int64_t> Value::as_int() const {
  switch (type) {
    case ValueType::U8: return std::get<uint8_t>(v);
    case ValueType::I8: return std::get<int8_t>(v);
    case ValueType::U16: return std::get<uint16_t>(v);
    case ValueType::I16: return std::get<int16_t>(v);
    case ValueType::U32: return std::get<uint32_t>(v);
    case ValueType::I32: return std::get<int32_t>(v);
    case ValueType::I64: return std::get<int64_t>(v);
    case ValueType::U64: {
      uint64_t x = std::get<uint64_t>(v);
      if (x > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return int64_t(x);
    }
    case ValueType::BOOL: return std::get<bool>(v) ? 1 : 0;
    default: return std::nullopt;
  }
}

std::optional<double> Value::as_float() const {
  if (type == ValueType::F32) return std::get<float>(v);
  if (type == ValueType::F64) return std::get<double>(v);
  if (type == ValueType::U64) return double(std::get<uint64_t>(v));
  if (is_integer()) return double(*as_int());
  return std::nullopt;
}

const std::string* Value::as_string() const {
  return type == ValueType::STRING ? std::get_if<std::string>(&v) : nullptr;
}

const Array* Value::as_array() const {
  return type == ValueType::ARRAY ? std::get_if<Array>(&v) : nullptr;
}

// Floats compare by bits so that NaN payloads and -0.0 count as what the file holds.
bool Value::operator==(const Value& o) const {
  if (type != o.type || v.index() != o.v.index()) return false;
  if (type == ValueType::F32) {
    float a = std::get<float>(v), b = std::get<float>(o.v);
    return std::memcmp(&a, &b, sizeof a) == 0;
  }
  if (type == ValueType::F64) {
    double a = std::get<double>(v), b = std::get<double>(o.v);
    return std::memcmp(&a, &b, sizeof a) == 0;
  }
  if (type == ValueType::ARRAY) {
    const Array& a = std::get<Array>(v);
    const Array& b = std::get<Array>(o.v);
    return a.elem_type == b.elem_type && a.items == b.items;
  }
  return std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, Array>) {
          return false;  // handled above
        } else {
          return a == std::get<T>(o.v);
        }
      },
      v);
}

}  // namespace minfer::gguf
