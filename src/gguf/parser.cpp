// The GGUF layout (ggml's gguf.cpp and docs/gguf.md), all little-endian:
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv x (string key | u32 value type | value)
//   n_tensors x (string name | u32 n_dims | n_dims x i64 ne | u32 ggml type | u64 offset)
//   padding to general.alignment | tensor data (offsets relative to here)
// A string is u64 length + bytes; an array is u32 element type + u64 count + elements.
// Every count read from the file is checked against the bytes that remain before anything
// is allocated, so a lying header cannot make us allocate or read past the end.
#include "gguf/parser.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <string_view>
#include <unordered_set>

#include "common/error.h"

namespace minfer::gguf {
namespace {

constexpr int kMaxArrayDepth = 8;  // ggml allows none; we allow a little, but bounded
// All arrays of one file together: the largest vocabularies (~260k tokens, ~500k merges,
// scores, types) are far below this, and it caps the memory a corrupt file can claim.
constexpr uint64_t kMaxTotalItems = uint64_t(1) << 24;
constexpr uint64_t kEagerItems = uint64_t(1) << 18;

// What is being read, for error messages; formatted only when something is wrong, because
// building a string per array item would dominate the parse time of a 150k-token vocab.
struct What {
  const char* text;  // "{}" is replaced by subject
  std::string_view subject = {};
  std::string str() const { return fmt::format(fmt::runtime(text), subject); }
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& name)
      : p_(data), size_(size), name_(name) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  const std::string& name() const { return name_; }

  void need(size_t n, const What& what) const {
    if (n > remaining())
      fail("{}: truncated at offset {}: {} needs {} bytes, only {} left", name_, pos_, what.str(),
           n, remaining());
  }

  template <typename T>
  T read(const What& what) {
    need(sizeof(T), what);
    T x;
    std::memcpy(&x, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return x;
  }

  std::string_view read_string_view(const What& what) {
    uint64_t n = read<uint64_t>(what);
    if (n > remaining())
      fail("{}: {} at offset {} has length {} but only {} bytes remain", name_, what.str(),
           pos_ - 8, n, remaining());
    std::string_view s(reinterpret_cast<const char*>(p_ + pos_), size_t(n));
    pos_ += size_t(n);
    return s;
  }
  std::string read_string(const What& what) { return std::string(read_string_view(what)); }

  void count_items(uint64_t n, const std::string& key) {
    if (n > kMaxTotalItems - items_)
      fail("{}: key '{}': array length {} would bring the metadata to more than {} array items "
           "in total", name_, key, n, kMaxTotalItems);
    items_ += n;
  }

 private:
  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  uint64_t items_ = 0;
  const std::string& name_;
};

bool valid_value_type(uint32_t t) { return t <= uint32_t(ValueType::F64); }

// The fewest bytes one value of type t can occupy: bounds array counts before allocating.
size_t min_value_size(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::BOOL: return 1;
    case ValueType::U16: case ValueType::I16: return 2;
    case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
    case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
    case ValueType::STRING: return 8;
    case ValueType::ARRAY: return 12;
  }
  return 1;
}

Value read_value(Reader& r, ValueType t, const std::string& key, int depth);

// Token types and scores are 100k-element arrays: fill them without a Value temporary each.
template <typename T>
void fill_scalars(Reader& r, std::vector<Value>& items, uint64_t n, ValueType t, const What& what) {
  for (uint64_t i = 0; i < n; ++i) {
    Value& item = items.emplace_back();
    item.type = t;
    item.v.emplace<T>(r.read<T>(what));
  }
}

Value read_array(Reader& r, const std::string& key, int depth) {
  if (depth >= kMaxArrayDepth)
    fail("{}: key '{}': arrays nested deeper than {} levels", r.name(), key, kMaxArrayDepth);
  size_t at = r.pos();
  uint32_t et = r.read<uint32_t>({"the array element type of key '{}'", key});
  if (!valid_value_type(et))
    fail("{}: key '{}': invalid array element type {} at offset {}", r.name(), key, et, at);
  ValueType elem = ValueType(et);
  uint64_t n = r.read<uint64_t>({"the array length of key '{}'", key});
  if (n > r.remaining() / min_value_size(elem))
    fail("{}: key '{}': array length {} at offset {} exceeds the {} bytes that remain", r.name(),
         key, n, at + 4, r.remaining());
  r.count_items(n, key);
  Value out = Value::array(elem, {});
  std::vector<Value>& items = std::get<Array>(out.v).items;
  // A Value is ~48 bytes, so a lying count could still ask for 48x the file size: allocate
  // up front only what any real vocabulary needs, and beyond that only as items are read.
  items.reserve(size_t(std::min<uint64_t>(n, kEagerItems)));
  if (elem == ValueType::STRING) {
    // The hot path of every vocabulary: construct each string in place.
    const What what{"an item of key '{}'", key};
    for (uint64_t i = 0; i < n; ++i) {
      Value& item = items.emplace_back();
      item.type = ValueType::STRING;
      item.v.emplace<std::string>(r.read_string_view(what));
    }
  } else if (elem == ValueType::ARRAY || elem == ValueType::BOOL) {
    for (uint64_t i = 0; i < n; ++i) items.push_back(read_value(r, elem, key, depth + 1));
  } else {
    const What what{"an item of key '{}'", key};
    switch (elem) {
      case ValueType::U8: fill_scalars<uint8_t>(r, items, n, elem, what); break;
      case ValueType::I8: fill_scalars<int8_t>(r, items, n, elem, what); break;
      case ValueType::U16: fill_scalars<uint16_t>(r, items, n, elem, what); break;
      case ValueType::I16: fill_scalars<int16_t>(r, items, n, elem, what); break;
      case ValueType::U32: fill_scalars<uint32_t>(r, items, n, elem, what); break;
      case ValueType::I32: fill_scalars<int32_t>(r, items, n, elem, what); break;
      case ValueType::F32: fill_scalars<float>(r, items, n, elem, what); break;
      case ValueType::U64: fill_scalars<uint64_t>(r, items, n, elem, what); break;
      case ValueType::I64: fill_scalars<int64_t>(r, items, n, elem, what); break;
      case ValueType::F64: fill_scalars<double>(r, items, n, elem, what); break;
      default: break;  // handled above
    }
  }
  return out;
}

Value read_value(Reader& r, ValueType t, const std::string& key, int depth) {
  const What what{"the value of key '{}'", key};
  switch (t) {
    case ValueType::U8: return Value::u8(r.read<uint8_t>(what));
    case ValueType::I8: return Value::i8(r.read<int8_t>(what));
    case ValueType::U16: return Value::u16(r.read<uint16_t>(what));
    case ValueType::I16: return Value::i16(r.read<int16_t>(what));
    case ValueType::U32: return Value::u32(r.read<uint32_t>(what));
    case ValueType::I32: return Value::i32(r.read<int32_t>(what));
    case ValueType::F32: return Value::f32(r.read<float>(what));
    case ValueType::BOOL: {
      size_t at = r.pos();
      uint8_t b = r.read<uint8_t>(what);
      if (b > 1) fail("{}: key '{}': bool value {} at offset {} is not 0 or 1", r.name(), key, b, at);
      return Value::boolean(b != 0);
    }
    case ValueType::STRING: return Value::str(r.read_string(what));
    case ValueType::ARRAY: return read_array(r, key, depth);
    case ValueType::U64: return Value::u64(r.read<uint64_t>(what));
    case ValueType::I64: return Value::i64(r.read<int64_t>(what));
    case ValueType::F64: return Value::f64(r.read<double>(what));
  }
  fail("{}: key '{}': invalid value type {}", r.name(), key, uint32_t(t));
}

// a * b into out; false on int64 overflow (operands are non-negative).
bool mul_ok(int64_t a, int64_t b, int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }

TensorInfo read_tensor_info(Reader& r, uint64_t index) {
  TensorInfo ti;
  size_t at = r.pos();
  ti.name = r.read_string({"the name of tensor #{}", std::to_string(index)});
  const std::string& nm = ti.name;
  if (nm.size() >= kMaxNameLength)
    fail("{}: tensor #{} name '{}' is {} bytes long; ggml allows at most {}", r.name(), index,
         nm.substr(0, 80), nm.size(), kMaxNameLength - 1);
  ti.n_dims = r.read<uint32_t>({"the n_dims of tensor '{}'", nm});
  if (ti.n_dims > kMaxDims)
    fail("{}: tensor '{}' (info at offset {}) has {} dimensions, at most {} are allowed", r.name(),
         nm, at, ti.n_dims, kMaxDims);
  for (uint32_t d = 0; d < ti.n_dims; ++d) {
    int64_t ne = r.read<int64_t>({"the shape of tensor '{}'", nm});
    if (ne < 0) fail("{}: tensor '{}' has a negative dimension ne[{}] = {}", r.name(), nm, d, ne);
    ti.ne[d] = ne;
  }
  uint32_t type = r.read<uint32_t>({"the type of tensor '{}'", nm});
  const TypeTraits* tr = type_traits(type);
  if (!tr) fail("{}: tensor '{}' has unknown ggml type id {}", r.name(), nm, type);
  ti.type = GgmlType(type);
  ti.offset = r.read<uint64_t>({"the data offset of tensor '{}'", nm});

  int64_t n = 1;
  for (int64_t ne : ti.ne)
    if (!mul_ok(n, ne, n))
      fail("{}: tensor '{}': element count overflows ({} x {} x {} x {})", r.name(), nm, ti.ne[0],
           ti.ne[1], ti.ne[2], ti.ne[3]);
  if (ti.ne[0] % tr->block_size != 0)
    fail("{}: tensor '{}': row length {} is not a multiple of the {} block size {}", r.name(), nm,
         ti.ne[0], tr->name, tr->block_size);
  int64_t bytes = 0;
  if (!mul_ok(n / tr->block_size, int64_t(tr->type_size), bytes))
    fail("{}: tensor '{}': byte size overflows", r.name(), nm);
  ti.nbytes = uint64_t(bytes);
  return ti;
}

uint64_t read_alignment(const std::vector<KV>& kv, const std::string& name) {
  for (const KV& e : kv) {
    if (e.key != "general.alignment") continue;
    if (e.value.type != ValueType::U32)
      fail("{}: general.alignment has type {}, expected u32", name, value_type_name(e.value.type));
    uint32_t a = std::get<uint32_t>(e.value.v);
    if (a == 0 || (a & (a - 1)) != 0)
      fail("{}: general.alignment {} is not a power of two", name, a);
    return a;
  }
  return kDefaultAlignment;
}

}  // namespace

ParsedImage parse_image(const uint8_t* data, size_t size, const std::string& name) {
  Reader r(data, size, name);
  ParsedImage img;

  if (size < 4 || std::memcmp(data, "GGUF", 4) != 0) {
    if (size < 4) fail("{}: not a GGUF file (only {} bytes)", name, size);
    fail("{}: not a GGUF file (bad magic {:02x} {:02x} {:02x} {:02x}, expected \"GGUF\")", name,
         data[0], data[1], data[2], data[3]);
  }
  r.read<uint32_t>({"the magic"});
  img.version = r.read<uint32_t>({"the version"});
  if (img.version == 1)
    fail("{}: GGUF version 1 is not supported (only versions 2 and 3); re-convert the model "
         "with a current llama.cpp", name);
  if ((img.version & 0xFFFF) == 0 && img.version != 0)
    fail("{}: big-endian GGUF files are not supported (version field {:#x})", name, img.version);
  if (img.version != 2 && img.version != 3)
    fail("{}: unsupported GGUF version {} (only 2 and 3 are supported)", name, img.version);

  uint64_t n_tensors = r.read<uint64_t>({"the tensor count"});
  uint64_t n_kv = r.read<uint64_t>({"the metadata count"});
  // Smallest key/value: 8-byte key length + 4-byte type + 1-byte value. Smallest tensor
  // info: 8-byte name length + 4-byte n_dims + 4-byte type + 8-byte offset.
  if (n_kv > r.remaining() / 13)
    fail("{}: metadata count {} is impossible: only {} bytes follow the header", name, n_kv,
         r.remaining());
  if (n_tensors > r.remaining() / 24)
    fail("{}: tensor count {} is impossible: only {} bytes follow the header", name, n_tensors,
         r.remaining());

  img.kv.reserve(size_t(n_kv));
  std::unordered_set<std::string_view> keys;
  for (uint64_t i = 0; i < n_kv; ++i) {
    size_t at = r.pos();
    std::string key = r.read_string({"key #{}", std::to_string(i)});
    if (keys.count(key)) fail("{}: duplicate key '{}' at offset {}", name, key, at);
    size_t tat = r.pos();
    uint32_t t = r.read<uint32_t>({"the value type of key '{}'", key});
    if (!valid_value_type(t))
      fail("{}: key '{}' has invalid value type {} at offset {}", name, key, t, tat);
    Value v = read_value(r, ValueType(t), key, 0);
    img.kv.push_back(KV{std::move(key), std::move(v)});
    keys.insert(img.kv.back().key);  // reserve() above keeps these views valid
  }
  img.alignment = read_alignment(img.kv, name);

  img.tensors.reserve(size_t(n_tensors));
  std::unordered_set<std::string_view> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo ti = read_tensor_info(r, i);
    if (names.count(ti.name)) fail("{}: duplicate tensor name '{}'", name, ti.name);
    img.tensors.push_back(std::move(ti));
    names.insert(img.tensors.back().name);
  }

  img.header_end = r.pos();
  img.data_offset = (img.header_end + img.alignment - 1) / img.alignment * img.alignment;
  // A file without tensors may end right after its header, with no padding.
  if (!img.tensors.empty() && img.data_offset > size)
    fail("{}: truncated: the data section would start at offset {} but the file has {} bytes",
         name, img.data_offset, size);

  const uint64_t data_size = img.data_offset <= size ? size - img.data_offset : 0;
  for (TensorInfo& ti : img.tensors) {
    if (ti.offset % img.alignment != 0)
      fail("{}: tensor '{}' has data offset {}, not a multiple of the alignment {}", name, ti.name,
           ti.offset, img.alignment);
    if (ti.offset > data_size || ti.nbytes > data_size - ti.offset)
      fail("{}: tensor '{}' (offset {}, {} bytes) extends past the end of the data section "
           "({} bytes); the file is truncated or corrupt", name, ti.name, ti.offset, ti.nbytes,
           data_size);
    ti.data = data + img.data_offset + ti.offset;
  }

  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(img.tensors.size());
  for (const TensorInfo& ti : img.tensors)
    if (ti.nbytes > 0) by_offset.push_back(&ti);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo* a = by_offset[i - 1];
    const TensorInfo* b = by_offset[i];
    if (a->offset + a->nbytes > b->offset)
      fail("{}: the data of tensors '{}' and '{}' overlap", name, a->name, b->name);
  }
  return img;
}

}  // namespace minfer::gguf
