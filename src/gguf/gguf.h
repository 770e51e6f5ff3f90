// GGUF files (llama.cpp's model format, versions 2 and 3): a strict, zero-copy reader and a
// writer that reproduces anything the reader reads. Layout facts: ggml's gguf.cpp / GGUF spec.
//
// API contract (used by every other module):
//   auto f = gguf::File::open("model.gguf");      // throws minfer::Error("<path>: <what>")
//   f->get_u32("llama.block_count")               // typed getters; nullopt when absent,
//                                                 // Error when present with another type
//   f->find_tensor("blk.0.attn_q.weight")->data   // points into the read-only mmap
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "quant/types.h"

namespace minfer::gguf {

enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
std::string_view value_type_name(ValueType t);

struct Value;
struct Array {
  ValueType elem_type = ValueType::U8;
  std::vector<Value> items;
};

// One metadata value. Arrays may nest (an array's items may be arrays).
struct Value {
  ValueType type = ValueType::U8;
  std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
               Array, uint64_t, int64_t, double>
      v;

  static Value u8(uint8_t x) { return {ValueType::U8, x}; }
  static Value i8(int8_t x) { return {ValueType::I8, x}; }
  static Value u16(uint16_t x) { return {ValueType::U16, x}; }
  static Value i16(int16_t x) { return {ValueType::I16, x}; }
  static Value u32(uint32_t x) { return {ValueType::U32, x}; }
  static Value i32(int32_t x) { return {ValueType::I32, x}; }
  static Value f32(float x) { return {ValueType::F32, x}; }
  static Value boolean(bool x) { return {ValueType::BOOL, x}; }
  static Value str(std::string x) { return {ValueType::STRING, std::move(x)}; }
  static Value u64(uint64_t x) { return {ValueType::U64, x}; }
  static Value i64(int64_t x) { return {ValueType::I64, x}; }
  static Value f64(double x) { return {ValueType::F64, x}; }
  static Value array(ValueType elem, std::vector<Value> items) {
    return {ValueType::ARRAY, Array{elem, std::move(items)}};
  }
  static Value string_array(const std::vector<std::string>& xs);

  bool is_integer() const;                    // any of the 8 integer types
  std::optional<int64_t> as_int() const;      // integers (u64 > INT64_MAX -> nullopt), bool
  std::optional<double> as_float() const;     // floats and integers
  const std::string* as_string() const;       // nullptr unless STRING
  const Array* as_array() const;              // nullptr unless ARRAY
  bool operator==(const Value& o) const;
};

struct KV {
  std::string key;
  Value value;
};

struct TensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  std::array<int64_t, 4> ne{1, 1, 1, 1};  // ggml order: ne[0] is the row length
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;      // relative to its file's data section, as stored
  uint64_t nbytes = 0;
  uint32_t split = 0;       // which part of a split model holds it
  const uint8_t* data = nullptr;  // into the read-only mapping of that part
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class File {
 public:
  // Opens and fully validates; for NAME-00001-of-0000N.gguf also opens the other parts. The
  // bytes are mapped from the file, or with use_mmap false (llama.cpp's --no-mmap) read into
  // memory whole first.
  static std::unique_ptr<File> open(const std::string& path, bool use_mmap = true);
  // Validates an in-memory image (used by the fuzzer and corruption tests); `name` is used
  // in messages. The bytes must outlive the File. Split keys are not followed.
  static std::unique_ptr<File> from_memory(const uint8_t* data, size_t size, std::string name);
  ~File();

  const std::string& path() const;
  uint32_t version() const;
  uint64_t alignment() const;
  uint64_t data_offset() const;  // of the first part
  uint32_t n_splits() const;

  const std::vector<KV>& metadata() const;
  const Value* find(std::string_view key) const;
  // Typed getters: nullopt when the key is absent; minfer::Error when it has the wrong type.
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  std::vector<std::string> get_string_array(std::string_view key) const;  // empty when absent
  std::vector<float> get_float_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;
  std::string architecture() const;  // general.architecture, Error when missing

  const std::vector<TensorInfo>& tensors() const;
  const TensorInfo* find_tensor(std::string_view name) const;

  // The caller will not read [p, p + n) soon (a tensor whose repacked copy replaces it): the
  // whole pages of the range leave this process's memory; a later read maps them again from
  // the file. No effect for from_memory images or ranges outside the mapping.
  void release(const uint8_t* p, size_t n) const;
  // mlock() of the mapped parts not released (llama.cpp's --mlock); 0 or the first errno.
  int lock_kept() const;

  // llama.cpp's --override-kv: the key takes this value (added when absent), for everything that
  // reads the metadata afterwards. Error when the key exists with another kind of value (an
  // integer for a string, ...).
  void override_kv(const KV& kv);

  struct Impl;

 private:
  explicit File(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// llama.cpp's --override-kv text, KEY=TYPE:VALUE with TYPE int (i64), float (f64), bool
// (true/false) or str (at most 127 bytes): Error naming the text when it is not one.
KV parse_kv_override(const std::string& text);

// Writes GGUF v3. Keys and tensors are written in insertion order; tensor data is produced
// by a callback at write time so that multi-GB models never sit in memory. The file is
// written to "<path>.tmp" and renamed into place: an error leaves nothing half-written.
class Writer {
 public:
  explicit Writer(uint64_t alignment = 32);
  void set(std::string key, Value v);  // replaces an existing key in place
  void remove(std::string_view key);
  // The value set for `key` (nullptr when absent); valid until the next set/remove.
  const Value* find(std::string_view key) const;
  using Producer = std::function<void(uint8_t* dst, size_t nbytes)>;
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> ne, Producer produce);
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> ne, const void* data);
  void write(const std::string& path) const;
  // Copies every key of `f` (in order), except the ones for which skip(key) is true.
  void copy_metadata(const File& f, const std::function<bool(std::string_view)>& skip = {});

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    Producer produce;
  };
  uint64_t alignment_;
  std::vector<KV> kv_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace minfer::gguf
