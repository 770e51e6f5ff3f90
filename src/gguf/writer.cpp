// GGUF v3 writer. Layout as in parser.cpp; tensor data offsets are assigned in insertion
// order, each tensor padded with zeros to the alignment (so the file ends padded too). A file
// without tensors ends right after its header, as gguf-py (which wrote llama.cpp's vocab
// files) does; ggml's own writer would pad it, which readers ignore either way.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "common/error.h"
#include "gguf/gguf.h"
#include "gguf/parser.h"

namespace minfer::gguf {
namespace {

class Out {
 public:
  Out(const std::string& path, const std::string& final_path)
      : path_(path), final_(final_path), f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) fail("{}: cannot create: {}", path, std::strerror(errno));
  }
  ~Out() {
    if (f_) std::fclose(f_);
  }
  void bytes(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) fail("{}: write failed: {}", final_, std::strerror(errno));
    pos_ += n;
  }
  template <typename T>
  void pod(T x) { bytes(&x, sizeof x); }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void pad_to(uint64_t alignment) {
    static const uint8_t zeros[256] = {};
    uint64_t n = (alignment - pos_ % alignment) % alignment;
    while (n) {
      size_t k = std::min<uint64_t>(n, sizeof zeros);
      bytes(zeros, k);
      n -= k;
    }
  }
  void close() {
    std::FILE* f = f_;
    f_ = nullptr;
    if (std::fclose(f) != 0) fail("{}: write failed: {}", final_, std::strerror(errno));
  }
  uint64_t pos() const { return pos_; }

 private:
  std::string path_, final_;
  std::FILE* f_;
  uint64_t pos_ = 0;
};


void write_payload(Out& o, const Value& v) {
  switch (v.type) {
    case ValueType::U8: o.pod(std::get<uint8_t>(v.v)); break;
    case ValueType::I8: o.pod(std::get<int8_t>(v.v)); break;
    case ValueType::U16: o.pod(std::get<uint16_t>(v.v)); break;
    case ValueType::I16: o.pod(std::get<int16_t>(v.v)); break;
    case ValueType::U32: o.pod(std::get<uint32_t>(v.v)); break;
    case ValueType::I32: o.pod(std::get<int32_t>(v.v)); break;
    case ValueType::F32: o.pod(std::get<float>(v.v)); break;
    case ValueType::BOOL: o.pod<uint8_t>(std::get<bool>(v.v) ? 1 : 0); break;
    case ValueType::STRING: o.str(std::get<std::string>(v.v)); break;
    case ValueType::U64: o.pod(std::get<uint64_t>(v.v)); break;
    case ValueType::I64: o.pod(std::get<int64_t>(v.v)); break;
    case ValueType::F64: o.pod(std::get<double>(v.v)); break;
    case ValueType::ARRAY: {
      const Array& a = std::get<Array>(v.v);
      o.pod<uint32_t>(uint32_t(a.elem_type));
      o.pod<uint64_t>(a.items.size());
      for (const Value& item : a.items) write_payload(o, item);
      break;
    }
  }
}

// A Value whose variant does not hold the alternative its type names would be written
// wrongly; reject it up front (it can only come from hand-built Values).
void check_value(const std::string& key, const Value& v, int depth = 0) {
  static constexpr size_t kIndex[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  if (uint32_t(v.type) > uint32_t(ValueType::F64) || v.v.index() != kIndex[uint32_t(v.type)])
    fail("gguf writer: key '{}': value type {} does not match its content", key,
         uint32_t(v.type));
  if (const Array* a = v.as_array()) {
    if (depth >= 8) fail("gguf writer: key '{}': arrays nested too deeply", key);
    for (const Value& item : a->items) {
      if (item.type != a->elem_type)
        fail("gguf writer: key '{}': array of {} holds a {}", key, value_type_name(a->elem_type),
             value_type_name(item.type));
      check_value(key, item, depth + 1);
    }
  }
}

}  // namespace

Writer::Writer(uint64_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > UINT32_MAX)
    fail("gguf writer: alignment {} is not a power of two", alignment);
  // Readers assume 32 unless the file says otherwise.
  if (alignment != kDefaultAlignment) set("general.alignment", Value::u32(uint32_t(alignment)));
}

void Writer::set(std::string key, Value v) {
  check_value(key, v);
  if (key == "general.alignment") {
    if (v.type != ValueType::U32) fail("gguf writer: general.alignment must be a u32");
    uint32_t a = std::get<uint32_t>(v.v);
    if (a == 0 || (a & (a - 1)) != 0)
      fail("gguf writer: general.alignment {} is not a power of two", a);
    alignment_ = a;
  }
  for (KV& e : kv_) {
    if (e.key == key) {
      e.value = std::move(v);
      return;
    }
  }
  kv_.push_back(KV{std::move(key), std::move(v)});
}

void Writer::remove(std::string_view key) {
  // Without the key, readers assume the default: write what they will read.
  if (key == "general.alignment") alignment_ = kDefaultAlignment;
  std::erase_if(kv_, [&](const KV& e) { return e.key == key; });
}

const Value* Writer::find(std::string_view key) const {
  for (const KV& e : kv_)
    if (e.key == key) return &e.value;
  return nullptr;
}

void Writer::add_tensor(std::string name, GgmlType type, std::vector<int64_t> ne,
                        Producer produce) {
  const TypeTraits* tr = type_traits(uint32_t(type));
  if (!tr) fail("gguf writer: tensor '{}' has unknown ggml type {}", name, uint32_t(type));
  if (ne.size() > kMaxDims)
    fail("gguf writer: tensor '{}' has {} dimensions, at most {}", name, ne.size(), kMaxDims);
  int64_t n = 1;
  for (int64_t x : ne) {
    if (x < 0 || __builtin_mul_overflow(n, x, &n))
      fail("gguf writer: tensor '{}' has an invalid shape", name);
  }
  if (!ne.empty() && ne[0] % tr->block_size != 0)
    fail("gguf writer: tensor '{}': row length {} is not a multiple of the {} block size {}", name,
         ne[0], tr->name, tr->block_size);
  for (const PendingTensor& t : tensors_)
    if (t.name == name) fail("gguf writer: duplicate tensor name '{}'", name);
  if (!produce) fail("gguf writer: tensor '{}' has no data producer", name);
  tensors_.push_back(PendingTensor{std::move(name), type, std::move(ne), std::move(produce)});
}

void Writer::add_tensor(std::string name, GgmlType type, std::vector<int64_t> ne,
                        const void* data) {
  if (!data) fail("gguf writer: tensor '{}' has no data", name);
  add_tensor(std::move(name), type, std::move(ne),
             [data](uint8_t* dst, size_t nbytes) { std::memcpy(dst, data, nbytes); });
}

void Writer::copy_metadata(const File& f, const std::function<bool(std::string_view)>& skip) {
  for (const KV& e : f.metadata())
    if (!skip || !skip(e.key)) set(e.key, e.value);
}

static uint64_t tensor_bytes(GgmlType type, const std::vector<int64_t>& ne) {
  const TypeTraits& tr = type_traits(type);
  int64_t n = 1;
  for (int64_t x : ne) n *= x;
  return uint64_t(n / tr.block_size) * tr.type_size;
}

void Writer::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  try {
    Out o(tmp, path);
    o.bytes("GGUF", 4);
    o.pod<uint32_t>(3);
    o.pod<uint64_t>(tensors_.size());
    o.pod<uint64_t>(kv_.size());
    for (const KV& e : kv_) {
      o.str(e.key);
      o.pod<uint32_t>(uint32_t(e.value.type));
      write_payload(o, e.value);
    }
    uint64_t offset = 0;
    for (const PendingTensor& t : tensors_) {
      o.str(t.name);
      o.pod<uint32_t>(uint32_t(t.ne.size()));
      for (int64_t x : t.ne) o.pod<int64_t>(x);
      o.pod<uint32_t>(uint32_t(t.type));
      o.pod<uint64_t>(offset);
      uint64_t nb = tensor_bytes(t.type, t.ne);
      offset += (nb + alignment_ - 1) / alignment_ * alignment_;
    }
    if (!tensors_.empty()) o.pad_to(alignment_);
    std::vector<uint8_t> buf;
    for (const PendingTensor& t : tensors_) {
      buf.assign(size_t(tensor_bytes(t.type, t.ne)), 0);
      t.produce(buf.data(), buf.size());
      o.bytes(buf.data(), buf.size());
      o.pad_to(alignment_);
    }
    o.close();
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    fail("{}: cannot rename {} into place: {}", path, tmp, ec.message());
  }
}

}  // namespace minfer::gguf
