// An independent, minimal walk over a well-formed GGUF header that records where each field
// lies. The corruption tests use it to find structural boundaries; it trusts its input.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace minfer::test {

struct GgufField {
  enum Kind { Magic, Version, TensorCount, KvCount, StrLen, ValueType, ArrayType, ArrayLen, Scalar,
              NDims, Ne, TensorType, TensorOffset, StrBytes };
  Kind kind;
  size_t off;
  size_t len;
};

struct GgufLayout {
  std::vector<GgufField> fields;  // in file order (array items beyond the first few omitted)
  size_t kv_begin = 0, tensors_begin = 0, header_end = 0, data_offset = 0;
  std::vector<std::pair<size_t, size_t>> tensor_data;  // absolute [begin, end)
  // [begin, end) of each key string, each value and each tensor info.
  std::vector<std::pair<size_t, size_t>> units;
};

inline GgufLayout scan_gguf_layout(const uint8_t* p, size_t size, size_t alignment = 32) {
  GgufLayout L;
  size_t pos = 0;
  auto u32 = [&] { uint32_t x; std::memcpy(&x, p + pos, 4); return x; };
  auto u64 = [&] { uint64_t x; std::memcpy(&x, p + pos, 8); return x; };
  auto field = [&](GgufField::Kind k, size_t len, bool record = true) {
    if (record) L.fields.push_back({k, pos, len});
    pos += len;
  };
  auto string = [&](bool record) {
    uint64_t n = u64();
    field(GgufField::StrLen, 8, record);
    if (record && n) L.fields.push_back({GgufField::StrBytes, pos, size_t(n)});
    pos += size_t(n);
  };
  auto scalar_size = [](uint32_t t) -> size_t {
    static const size_t sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return sz[t];
  };
  std::function<void(uint32_t, bool)> value = [&](uint32_t t, bool record) {
    if (t == 8) {
      string(record);
    } else if (t == 9) {
      uint32_t et = u32();
      field(GgufField::ArrayType, 4, record);
      uint64_t n = u64();
      field(GgufField::ArrayLen, 8, record);
      for (uint64_t i = 0; i < n; ++i) value(et, record && (i < 3 || i + 1 == n));
    } else {
      field(GgufField::Scalar, scalar_size(t), record);
    }
  };
  field(GgufField::Magic, 4);
  field(GgufField::Version, 4);
  uint64_t nt = u64();
  field(GgufField::TensorCount, 8);
  uint64_t nkv = u64();
  field(GgufField::KvCount, 8);
  L.kv_begin = pos;
  for (uint64_t i = 0; i < nkv; ++i) {
    size_t b = pos;
    string(true);
    L.units.push_back({b, pos});
    b = pos;
    uint32_t t = u32();
    field(GgufField::ValueType, 4);
    value(t, true);
    L.units.push_back({b, pos});
  }
  L.tensors_begin = pos;
  std::vector<std::pair<uint64_t, uint64_t>> rel;  // offset, bytes (F32/F16/Q8_0/Q4_0 only)
  for (uint64_t i = 0; i < nt; ++i) {
    size_t b = pos;
    string(true);
    uint32_t nd = u32();
    field(GgufField::NDims, 4);
    int64_t n = 1;
    for (uint32_t d = 0; d < nd; ++d) {
      int64_t ne;
      std::memcpy(&ne, p + pos, 8);
      n *= ne;
      field(GgufField::Ne, 8);
    }
    uint32_t type = u32();
    field(GgufField::TensorType, 4);
    uint64_t off = u64();
    field(GgufField::TensorOffset, 8);
    uint64_t bytes = type == 0 ? n * 4 : type == 1 ? n * 2 : type == 8 ? n / 32 * 34
                   : type == 2 ? n / 32 * 18 : 0;
    rel.push_back({off, bytes});
    L.units.push_back({b, pos});
  }
  L.header_end = pos;
  L.data_offset = (pos + alignment - 1) / alignment * alignment;
  for (auto [off, bytes] : rel)
    L.tensor_data.push_back({L.data_offset + off, L.data_offset + off + bytes});
  (void)size;
  return L;
}

}  // namespace minfer::test
