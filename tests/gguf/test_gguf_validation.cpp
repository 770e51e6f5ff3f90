// One hand-built image per rule of the reader's validation: each must be rejected with a
// message that names the file and what is wrong (and a well-formed image must open).
#include <gtest/gtest.h>

#include <cstring>

#include "common/error.h"
#include "gguf/gguf.h"

using namespace minfer;
using namespace minfer::gguf;

namespace {

// Builds GGUF bytes field by field, so a test can write exactly the bad value it needs.
struct Bytes {
  std::vector<uint8_t> b;
  Bytes& raw(const void* p, size_t n) {
    auto c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
    return *this;
  }
  Bytes& u8(uint8_t x) { return raw(&x, 1); }
  Bytes& u32(uint32_t x) { return raw(&x, 4); }
  Bytes& u64(uint64_t x) { return raw(&x, 8); }
  Bytes& i64(int64_t x) { return raw(&x, 8); }
  Bytes& str(const std::string& s) { return u64(s.size()).raw(s.data(), s.size()); }
  Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return raw("GGUF", 4).u32(version).u64(n_tensors).u64(n_kv);
  }
  Bytes& kv_str(const std::string& k, const std::string& v) { return str(k).u32(8).str(v); }
  Bytes& kv_u32(const std::string& k, uint32_t v) { return str(k).u32(4).u32(v); }
  Bytes& tensor(const std::string& name, std::vector<int64_t> ne, uint32_t type, uint64_t off) {
    str(name).u32(uint32_t(ne.size()));
    for (int64_t x : ne) i64(x);
    return u32(type).u64(off);
  }
  Bytes& pad(size_t a = 32) {
    while (b.size() % a) b.push_back(0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
};

// A valid file: two keys, one F32 [4] tensor.
Bytes good(uint32_t version = 3) {
  Bytes x;
  x.header(1, 2, version).kv_str("general.architecture", "llama").kv_u32("x.n", 7);
  x.tensor("t", {4}, 0, 0).pad().zeros(16).pad();
  return x;
}

std::string error_of(const Bytes& x) {
  try {
    File::from_memory(x.b.data(), x.b.size(), "bad.gguf");
  } catch (const Error& e) {
    return e.what();
  }
  return "(opened without error)";
}

#define EXPECT_REJECTED(bytes, fragment)                                        \
  do {                                                                          \
    const std::string msg = error_of(bytes);                                    \
    EXPECT_EQ(msg.rfind("bad.gguf: ", 0), 0u) << msg;                           \
    EXPECT_NE(msg.find(fragment), std::string::npos) << "message: " << msg;     \
  } while (0)

}  // namespace

TEST(GgufValidation, WellFormedImagesOpen) {
  for (uint32_t v : {2u, 3u}) {
    Bytes x = good(v);
    auto f = File::from_memory(x.b.data(), x.b.size(), "good.gguf");
    EXPECT_EQ(f->version(), v);
    EXPECT_EQ(f->get_uint("x.n"), 7u);
    ASSERT_EQ(f->tensors().size(), 1u);
    EXPECT_EQ(f->tensors()[0].nbytes, 16u);
    EXPECT_EQ(f->tensors()[0].data, x.b.data() + f->data_offset());
  }
}

TEST(GgufValidation, ZeroDimsAndEmptyTensorsAreAllowedAsInGgml) {
  Bytes x;
  x.header(2, 0).tensor("scalar", {}, 0, 0).tensor("empty", {0, 8}, 0, 32).pad().zeros(32);
  auto f = File::from_memory(x.b.data(), x.b.size(), "ok.gguf");
  EXPECT_EQ(f->find_tensor("scalar")->n_elements(), 1);
  EXPECT_EQ(f->find_tensor("scalar")->nbytes, 4u);
  EXPECT_EQ(f->find_tensor("empty")->nbytes, 0u);
}

TEST(GgufValidation, HeaderErrors) {
  EXPECT_REJECTED(Bytes{}.raw("GGU", 3), "not a GGUF file");
  EXPECT_REJECTED(Bytes{}.raw("GGML", 4).u32(3).u64(0).u64(0), "bad magic");
  EXPECT_REJECTED(Bytes{}.header(0, 0, 1), "version 1 is not supported");
  EXPECT_REJECTED(Bytes{}.header(0, 0, 4), "unsupported GGUF version 4");
  EXPECT_REJECTED(Bytes{}.header(0, 0, 0), "unsupported GGUF version 0");
  EXPECT_REJECTED(Bytes{}.header(0, 0, 0x03000000), "big-endian");
  EXPECT_REJECTED(Bytes{}.raw("GGUF", 4).u32(3).u64(0), "truncated at offset 16");
  EXPECT_REJECTED(Bytes{}.header(0, ~0ull), "metadata count 18446744073709551615 is impossible");
  EXPECT_REJECTED(Bytes{}.header(1ull << 60, 0), "tensor count");
}

TEST(GgufValidation, MetadataErrors) {
  EXPECT_REJECTED(Bytes{}.header(0, 1).u64(1000).raw("abc", 3).zeros(16),
                  "key #0 at offset 24 has length 1000");
  EXPECT_REJECTED(Bytes{}.header(0, 1).str("k").u32(13).u32(0), "key 'k' has invalid value type 13");
  EXPECT_REJECTED(Bytes{}.header(0, 1).str("k").u32(8).u64(~0ull), "has length 18446744073709551615");
  EXPECT_REJECTED(Bytes{}.header(0, 1).str("k").u32(9).u32(99).u64(0), "invalid array element type 99");
  EXPECT_REJECTED(Bytes{}.header(0, 1).str("k").u32(9).u32(4).u64(1ull << 40).u32(1),
                  "key 'k': array length 1099511627776");
  EXPECT_REJECTED(Bytes{}.header(0, 1).str("k").u32(9).u32(8).u64(2).str("a").u64(50),
                  "an item of key 'k' at offset 58 has length 50");
  EXPECT_REJECTED(Bytes{}.header(0, 2).kv_u32("k", 1).kv_u32("k", 2), "duplicate key 'k'");
  EXPECT_REJECTED(Bytes{}.header(0, 1).str("b").u32(7).u8(2), "bool value 2");
  EXPECT_REJECTED(Bytes{}.header(0, 1).str("k").u32(4).raw("\1\2", 2), "the value of key 'k'");
  Bytes deep;
  deep.header(0, 1).str("deep").u32(9);
  for (int i = 0; i < 20; ++i) deep.u32(9).u64(1);
  deep.u32(4).u64(0);
  EXPECT_REJECTED(deep, "nested deeper");
}

TEST(GgufValidation, TotalArrayItemsAreCapped) {
  // 2^24 + 1 one-byte items: every byte present, but more items than any real vocabulary.
  Bytes x;
  x.header(0, 1).str("big").u32(9).u32(0).u64((1ull << 24) + 1).zeros((1ull << 24) + 1);
  EXPECT_REJECTED(x, "more than 16777216 array items in total");
  Bytes ok;
  ok.header(0, 1).str("big").u32(9).u32(0).u64(1ull << 20).zeros(1ull << 20);
  EXPECT_EQ(error_of(ok), "(opened without error)");
}

TEST(GgufValidation, AlignmentErrors) {
  EXPECT_REJECTED(Bytes{}.header(0, 1).kv_u32("general.alignment", 48), "general.alignment 48 is not a power of two");
  EXPECT_REJECTED(Bytes{}.header(0, 1).kv_u32("general.alignment", 0), "is not a power of two");
  EXPECT_REJECTED(Bytes{}.header(0, 1).str("general.alignment").u32(10).u64(32), "expected u32");
  Bytes ok;
  ok.header(1, 1).kv_u32("general.alignment", 64).tensor("t", {4}, 0, 0).pad(64).zeros(64);
  auto f = File::from_memory(ok.b.data(), ok.b.size(), "ok.gguf");
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  Bytes unaligned;
  unaligned.header(2, 1).kv_u32("general.alignment", 64).tensor("a", {4}, 0, 0)
      .tensor("b", {4}, 0, 32).pad(64).zeros(128);
  EXPECT_REJECTED(unaligned, "tensor 'b' has data offset 32, not a multiple of the alignment 64");
}

TEST(GgufValidation, TensorInfoErrors) {
  auto one = [](const std::string& name, std::vector<int64_t> ne, uint32_t type, uint64_t off) {
    Bytes x;
    x.header(1, 0).tensor(name, std::move(ne), type, off).pad().zeros(64);
    return x;
  };
  EXPECT_REJECTED(one("t", {1, 1, 1, 1, 1}, 0, 0), "tensor 't' (info at offset 24) has 5 dimensions");
  EXPECT_REJECTED(one("t", {4, -2}, 0, 0), "negative dimension ne[1] = -2");
  EXPECT_REJECTED(one("t", {1ll << 40, 1ll << 40}, 0, 0), "element count overflows");
  EXPECT_REJECTED(one("t", {1ll << 30, 1ll << 30}, 0, 0), "extends past the end");
  EXPECT_REJECTED(one("t", {1ll << 62}, 0, 0), "byte size overflows");
  EXPECT_REJECTED(one("t", {4}, 4, 0), "unknown ggml type id 4");
  EXPECT_REJECTED(one("t", {4}, 1000, 0), "unknown ggml type id 1000");
  EXPECT_REJECTED(one("t", {31}, 2, 0), "row length 31 is not a multiple of the Q4_0 block size 32");
  EXPECT_REJECTED(one("t", {4}, 0, 7), "data offset 7, not a multiple of the alignment 32");
  EXPECT_REJECTED(one("t", {4}, 0, 64), "extends past the end of the data section");
  EXPECT_REJECTED(one("t", {4}, 0, ~0ull << 5), "extends past the end");
  EXPECT_REJECTED(one(std::string(64, 'n'), {4}, 0, 0), "ggml allows at most 63");
  EXPECT_NO_THROW(error_of(one(std::string(63, 'n'), {4}, 0, 0)));
  EXPECT_EQ(error_of(one(std::string(63, 'n'), {4}, 0, 0)), "(opened without error)");

  Bytes dup;
  dup.header(2, 0).tensor("t", {4}, 0, 0).tensor("t", {4}, 0, 32).pad().zeros(64);
  EXPECT_REJECTED(dup, "duplicate tensor name 't'");
  Bytes overlap;
  overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad().zeros(96);
  EXPECT_REJECTED(overlap, "the data of tensors 'a' and 'b' overlap");
  Bytes nodata;
  nodata.header(1, 0).tensor("t", {4}, 0, 0);
  EXPECT_REJECTED(nodata, "the data section would start at offset 64");
}

TEST(GgufValidation, VocabOnlyFileMayEndWithoutPadding) {
  Bytes x;
  x.header(0, 1).kv_str("general.architecture", "llama");
  ASSERT_NE(x.b.size() % 32, 0u);
  EXPECT_EQ(error_of(x), "(opened without error)");
}
