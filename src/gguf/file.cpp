// File: opening (mmap or memory), lookup and the typed metadata getters.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "common/error.h"
#include "gguf/file_impl.h"

namespace minfer::gguf {

void File::Impl::build_indexes() {
  kv_index.clear();
  tensor_index.clear();
  kv_index.reserve(kv.size());
  tensor_index.reserve(tensors.size());
  for (size_t i = 0; i < kv.size(); ++i) kv_index.emplace(kv[i].key, i);
  for (size_t i = 0; i < tensors.size(); ++i) tensor_index.emplace(tensors[i].name, i);
}

File::File(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
File::~File() = default;

static std::unique_ptr<File::Impl> impl_from_image(ParsedImage img, std::string path) {
  auto impl = std::make_unique<File::Impl>();
  impl->path = std::move(path);
  impl->version = img.version;
  impl->alignment = img.alignment;
  impl->data_offset = img.data_offset;
  impl->kv = std::move(img.kv);
  impl->tensors = std::move(img.tensors);
  return impl;
}

std::unique_ptr<File> File::open(const std::string& path, bool use_mmap) {
  auto map = std::make_unique<MappedFile>(path, use_mmap);
  auto impl = impl_from_image(parse_image(map->data(), map->size(), path), path);
  impl->use_mmap = use_mmap;
  impl->maps.push_back(std::move(map));
  open_split_parts(*impl);
  impl->build_indexes();
  return std::unique_ptr<File>(new File(std::move(impl)));
}

std::unique_ptr<File> File::from_memory(const uint8_t* data, size_t size, std::string name) {
  auto impl = impl_from_image(parse_image(data, size, name), name);
  impl->build_indexes();
  return std::unique_ptr<File>(new File(std::move(impl)));
}

const std::string& File::path() const { return impl_->path; }
uint32_t File::version() const { return impl_->version; }
uint64_t File::alignment() const { return impl_->alignment; }
uint64_t File::data_offset() const { return impl_->data_offset; }
uint32_t File::n_splits() const { return impl_->n_splits; }
const std::vector<KV>& File::metadata() const { return impl_->kv; }
const std::vector<TensorInfo>& File::tensors() const { return impl_->tensors; }

const Value* File::find(std::string_view key) const {
  auto it = impl_->kv_index.find(key);
  return it == impl_->kv_index.end() ? nullptr : &impl_->kv[it->second].value;
}

int File::lock_kept() const {
  for (const auto& m : impl_->maps)
    if (const int e = m->lock_kept()) return e;
  return 0;
}

namespace {
// The kind of value a getter reads: integer, float, bool, string, array (others by type).
int value_kind(const Value& v) {
  if (v.type == ValueType::BOOL) return 2;
  if (v.is_integer()) return 0;
  if (v.type == ValueType::F32 || v.type == ValueType::F64) return 1;
  if (v.type == ValueType::STRING) return 3;
  return 4;
}
}  // namespace

void File::override_kv(const KV& kv) {
  auto it = impl_->kv_index.find(kv.key);
  if (it == impl_->kv_index.end()) {
    impl_->kv.push_back(kv);
  } else {
    Value& old = impl_->kv[it->second].value;
    if (value_kind(old) != value_kind(kv.value))
      fail("--override-kv {}: the model's value is of type {}, the override of type {}", kv.key,
           value_type_name(old.type), value_type_name(kv.value.type));
    old = kv.value;
  }
  impl_->build_indexes();
}

KV parse_kv_override(const std::string& text) {
  const size_t eq = text.find('=');
  const size_t colon = eq == std::string::npos ? eq : text.find(':', eq);
  if (eq == std::string::npos || eq == 0 || colon == std::string::npos)
    fail("--override-kv {}: expected KEY=TYPE:VALUE (TYPE int, float, bool or str)", text);
  const std::string key = text.substr(0, eq), type = text.substr(eq + 1, colon - eq - 1), value = text.substr(colon + 1);
  auto bad = [&] { fail("--override-kv {}: '{}' is not a value of type {}", text, value, type); };
  // The whole text is the number (std::stoll / std::stod read a prefix).
  auto number = [&](auto parse) {
    size_t used = 0;
    decltype(parse(value, &used)) v{};
    try {
      v = parse(value, &used);
    } catch (const std::exception&) {
      bad();
    }
    if (used != value.size()) bad();
    return v;
  };
  if (type == "int")
    return {key, Value::i64(number([](const std::string& t, size_t* n) { return int64_t(std::stoll(t, n)); }))};
  if (type == "float") {
    const double v = number([](const std::string& t, size_t* n) { return std::stod(t, n); });
    if (!std::isfinite(v)) bad();
    return {key, Value::f64(v)};
  }
  if (type == "bool") {
    if (value != "true" && value != "false") bad();
    return {key, Value::boolean(value == "true")};
  }
  if (type == "str") {
    if (value.size() > 127) fail("--override-kv {}: a string override holds at most 127 bytes", key);
    return {key, Value::str(value)};
  }
  fail("--override-kv {}: unknown type '{}' (int, float, bool or str)", text, type);
}

void File::release(const uint8_t* p, size_t n) const {
  for (const auto& m : impl_->maps) m->release(p, n);
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = impl_->tensor_index.find(name);
  return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

[[noreturn]] static void wrong_type(const File& f, std::string_view key, const Value& v,
                                    std::string_view expected) {
  std::string actual(value_type_name(v.type));
  if (const Array* a = v.as_array()) actual = fmt::format("array of {}", value_type_name(a->elem_type));
  fail("{}: key '{}' has type {}, expected {}", f.path(), key, actual, expected);
}

std::optional<uint64_t> File::get_uint(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type == ValueType::U64) return std::get<uint64_t>(v->v);
  if (!v->is_integer()) wrong_type(*this, key, *v, "an unsigned integer");
  int64_t x = *v->as_int();
  if (x < 0) fail("{}: key '{}' is {}, expected a non-negative integer", path(), key, x);
  return uint64_t(x);
}

std::optional<int64_t> File::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_integer()) wrong_type(*this, key, *v, "an integer");
  auto x = v->as_int();
  if (!x) fail("{}: key '{}' is {}, too large for a signed 64-bit integer", path(), key,
               std::get<uint64_t>(v->v));
  return x;
}

std::optional<double> File::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  auto x = v->as_float();
  if (!x) wrong_type(*this, key, *v, "a number");
  return x;
}

std::optional<bool> File::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != ValueType::BOOL) wrong_type(*this, key, *v, "bool");
  return std::get<bool>(v->v);
}

std::optional<std::string> File::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != ValueType::STRING) wrong_type(*this, key, *v, "string");
  return std::get<std::string>(v->v);
}

std::vector<std::string> File::get_string_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return {};
  const Array* a = v->as_array();
  if (!a || a->elem_type != ValueType::STRING) wrong_type(*this, key, *v, "array of string");
  std::vector<std::string> out;
  out.reserve(a->items.size());
  for (const Value& item : a->items) out.push_back(std::get<std::string>(item.v));
  return out;
}

std::vector<float> File::get_float_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return {};
  const Array* a = v->as_array();
  if (!a || a->elem_type == ValueType::STRING || a->elem_type == ValueType::ARRAY ||
      a->elem_type == ValueType::BOOL)
    wrong_type(*this, key, *v, "array of numbers");
  std::vector<float> out;
  out.reserve(a->items.size());
  for (const Value& item : a->items) out.push_back(float(*item.as_float()));
  return out;
}

std::vector<int64_t> File::get_int_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return {};
  const Array* a = v->as_array();
  if (!a || !Value{a->elem_type, {}}.is_integer()) wrong_type(*this, key, *v, "array of integers");
  std::vector<int64_t> out;
  out.reserve(a->items.size());
  for (const Value& item : a->items) {
    auto x = item.as_int();
    if (!x) fail("{}: key '{}' holds {}, too large for a signed 64-bit integer", path(), key,
                 std::get<uint64_t>(item.v));
    out.push_back(*x);
  }
  return out;
}

std::string File::architecture() const {
  auto a = get_string("general.architecture");
  if (!a) fail("{}: general.architecture is missing", path());
  return *a;
}

}  // namespace minfer::gguf
