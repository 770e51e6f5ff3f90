// Writer: reading a file and writing everything back must reproduce it byte for byte.
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/error.h"
#include "common/test_data.h"
#include "gguf/gguf.h"
#include "test_gguf_temp_dir.h"

namespace fs = std::filesystem;
using namespace minfer;
using namespace minfer::gguf;

namespace {

std::vector<char> slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void copy_into(Writer& w, const File& f) {
  w.copy_metadata(f);
  for (const TensorInfo& t : f.tensors())
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                 t.data);
}

}  // namespace

TEST(GgufWriter, RoundTripIsByteIdentical) {
  MINFER_REQUIRE_SHARED();
  test::TempDir dir("roundtrip");
  int n = 0;
  for (const char* sub : {"models", "vocab"}) {
    for (const auto& e : fs::directory_iterator(test::shared_path(sub))) {
      if (e.path().extension() != ".gguf") continue;
      SCOPED_TRACE(e.path().string());
      auto f = File::open(e.path().string());
      Writer w(f->alignment());
      copy_into(w, *f);
      const std::string out = dir.file("copy.gguf");
      w.write(out);
      EXPECT_FALSE(fs::exists(out + ".tmp"));
      auto a = slurp(e.path().string());
      auto b = slurp(out);
      ASSERT_EQ(a.size(), b.size());
      EXPECT_TRUE(a == b);
      ++n;
    }
  }
  EXPECT_EQ(n, 11);
}

TEST(GgufWriter, HandBuiltFileReadsBack) {
  test::TempDir dir("handbuilt");
  Writer w(64);
  w.set("general.architecture", Value::str("llama"));
  w.set("a.u8", Value::u8(200));
  w.set("a.i8", Value::i8(-5));
  w.set("a.u16", Value::u16(65000));
  w.set("a.i16", Value::i16(-30000));
  w.set("a.u32", Value::u32(4000000000u));
  w.set("a.i32", Value::i32(-2000000000));
  w.set("a.f32", Value::f32(1.5f));
  w.set("a.bool", Value::boolean(true));
  w.set("a.u64", Value::u64(~0ull));
  w.set("a.i64", Value::i64(-(1ll << 60)));
  w.set("a.f64", Value::f64(-2.25));
  w.set("a.strs", Value::string_array({"x", "", "yz"}));
  w.set("a.nested", Value::array(ValueType::ARRAY,
                                 {Value::array(ValueType::I32, {Value::i32(1), Value::i32(2)}),
                                  Value::array(ValueType::I32, {})}));
  w.set("a.u32", Value::u32(7));  // replaces in place
  w.set("gone", Value::u8(1));
  w.remove("gone");
  const float t0[6] = {1, 2, 3, 4, 5, 6};
  w.add_tensor("t0", GgmlType::F32, {3, 2}, t0);
  w.add_tensor("t1", GgmlType::Q8_0, {32}, [](uint8_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = uint8_t(i);
  });
  const std::string out = dir.file("hand.gguf");
  w.write(out);

  auto f = File::open(out);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 64u);  // Writer(64) records general.alignment as its first key
  ASSERT_EQ(f->metadata().size(), 15u);
  EXPECT_EQ(f->metadata()[0].key, "general.alignment");
  EXPECT_EQ(f->get_uint("general.alignment"), 64u);
  EXPECT_EQ(f->metadata()[3].key, "a.i8");
  EXPECT_EQ(f->get_uint("a.u8"), 200u);
  EXPECT_EQ(f->get_int("a.i8"), -5);
  EXPECT_EQ(f->get_uint("a.u16"), 65000u);
  EXPECT_EQ(f->get_int("a.i16"), -30000);
  EXPECT_EQ(f->get_uint("a.u32"), 7u);
  EXPECT_EQ(f->get_int("a.i32"), -2000000000);
  EXPECT_EQ(f->get_float("a.f32"), 1.5);
  EXPECT_EQ(f->get_bool("a.bool"), true);
  EXPECT_EQ(f->get_uint("a.u64"), ~0ull);
  EXPECT_THROW(f->get_int("a.u64"), Error);
  EXPECT_EQ(f->get_int("a.i64"), -(1ll << 60));
  EXPECT_THROW(f->get_uint("a.i64"), Error);
  EXPECT_EQ(f->get_float("a.f64"), -2.25);
  EXPECT_EQ(f->get_string_array("a.strs"), (std::vector<std::string>{"x", "", "yz"}));
  EXPECT_EQ(f->find("gone"), nullptr);
  const Value* nested = f->find("a.nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_NE(nested->as_array(), nullptr);
  ASSERT_EQ(nested->as_array()->items.size(), 2u);
  EXPECT_EQ(nested->as_array()->items[0].as_array()->items[1].as_int(), 2);
  EXPECT_TRUE(nested->as_array()->items[1].as_array()->items.empty());

  const TensorInfo* a = f->find_tensor("t0");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->offset, 0u);
  EXPECT_EQ(a->nbytes, 24u);
  EXPECT_EQ(std::memcmp(a->data, t0, 24), 0);
  const TensorInfo* b = f->find_tensor("t1");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->offset, 64u);  // 24 bytes padded to the 64-byte alignment
  EXPECT_EQ(b->nbytes, 34u);
  EXPECT_EQ(b->data[33], 33);
  EXPECT_EQ(fs::file_size(out), f->data_offset() + 128);
}

TEST(GgufWriter, AlignmentFollowsTheKey) {
  test::TempDir dir("align");
  const float data[4] = {1, 2, 3, 4};
  for (bool drop : {false, true}) {
    Writer w(128);
    if (drop) w.remove("general.alignment");
    w.add_tensor("a", GgmlType::F32, {4}, data);
    w.add_tensor("b", GgmlType::F32, {4}, data);
    w.write(dir.file("a.gguf"));
    auto f = File::open(dir.file("a.gguf"));
    const uint64_t a = drop ? 32 : 128;
    EXPECT_EQ(f->alignment(), a);
    EXPECT_EQ(f->find_tensor("b")->offset, a);
    EXPECT_EQ(f->data_offset() % a, 0u);
  }
}

TEST(GgufWriter, RejectsBadInput) {
  EXPECT_THROW(Writer(3), Error);
  Writer w;
  EXPECT_THROW(w.set("general.alignment", Value::u64(32)), Error);
  EXPECT_THROW(w.set("general.alignment", Value::u32(48)), Error);
  EXPECT_THROW(w.set("bad", Value{ValueType::STRING, uint8_t(1)}), Error);
  EXPECT_THROW(w.add_tensor("q", GgmlType::Q4_0, {31}, [](uint8_t*, size_t) {}), Error);
  EXPECT_THROW(w.add_tensor("q", GgmlType::F32, {1, 1, 1, 1, 1}, [](uint8_t*, size_t) {}), Error);
  EXPECT_THROW(w.add_tensor("q", GgmlType::F32, {-1}, [](uint8_t*, size_t) {}), Error);
  EXPECT_THROW(w.add_tensor("q", GgmlType(4), {32}, [](uint8_t*, size_t) {}), Error);
  w.add_tensor("q", GgmlType::F32, {4}, [](uint8_t*, size_t) {});
  EXPECT_THROW(w.add_tensor("q", GgmlType::F32, {4}, [](uint8_t*, size_t) {}), Error);
}

TEST(GgufWriter, FailingProducerLeavesNothingBehind) {
  test::TempDir dir("failing");
  Writer w;
  w.set("general.architecture", Value::str("llama"));
  w.add_tensor("t", GgmlType::F32, {8}, [](uint8_t*, size_t) { minfer::fail("producer broke"); });
  const std::string out = dir.file("x.gguf");
  EXPECT_THROW(w.write(out), Error);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".tmp"));
  EXPECT_THROW(w.write(dir.file("no/such/dir/x.gguf")), Error);
}
