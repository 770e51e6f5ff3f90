// Opens every GGUF file of the shared test data and checks facts recorded in DATA.md.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/error.h"
#include "common/test_data.h"
#include "gguf/gguf.h"

namespace fs = std::filesystem;
using namespace minfer;
using namespace minfer::gguf;

namespace {

std::vector<std::string> all_gguf_files() {
  std::vector<std::string> out;
  for (const char* dir : {"models", "vocab"}) {
    for (const auto& e : fs::directory_iterator(test::shared_path(dir)))
      if (e.path().extension() == ".gguf") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(GgufOpen, EverySharedFileOpens) {
  MINFER_REQUIRE_SHARED();
  auto files = all_gguf_files();
  ASSERT_EQ(files.size(), 11u);  // 4 models + 7 vocab files (DATA.md)
  for (const auto& p : files) {
    SCOPED_TRACE(p);
    auto f = File::open(p);
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->alignment(), 32u);
    EXPECT_EQ(f->data_offset() % 32, 0u);
    EXPECT_FALSE(f->architecture().empty());
    EXPECT_FALSE(f->get_string_array("tokenizer.ggml.tokens").empty());
    const auto size = fs::file_size(p);
    for (const auto& t : f->tensors()) {
      ASSERT_NE(t.data, nullptr);
      EXPECT_LE(f->data_offset() + t.offset + t.nbytes, size);
      EXPECT_EQ(f->find_tensor(t.name), &t);
    }
  }
}

TEST(GgufOpen, Stories260K) {
  MINFER_REQUIRE_SHARED();
  auto f = File::open(test::shared_path("models/stories260K.gguf"));
  EXPECT_EQ(f->architecture(), "llama");
  EXPECT_EQ(f->metadata().size(), 19u);
  EXPECT_EQ(f->tensors().size(), 48u);
  EXPECT_EQ(f->n_splits(), 1u);
  EXPECT_EQ(f->get_uint("llama.block_count"), 5u);
  EXPECT_EQ(f->get_uint("llama.context_length"), 2048u);
  EXPECT_EQ(f->get_uint("llama.embedding_length"), 64u);
  EXPECT_EQ(f->get_uint("llama.feed_forward_length"), 172u);
  EXPECT_EQ(f->get_uint("llama.attention.head_count"), 8u);
  EXPECT_EQ(f->get_uint("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(f->get_uint("llama.rope.dimension_count"), 8u);
  EXPECT_FLOAT_EQ(float(*f->get_float("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_FALSE(f->get_float("llama.rope.freq_base").has_value());
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f->get_uint("tokenizer.ggml.padding_token_id"), 4294967295u);

  auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(tokens[258], "<0xFF>");
  EXPECT_EQ(f->get_float_array("tokenizer.ggml.scores").size(), 512u);
  EXPECT_EQ(f->get_int_array("tokenizer.ggml.token_type").size(), 512u);

  const TensorInfo* emb = f->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, GgmlType::F32);
  EXPECT_EQ(emb->n_dims, 2u);
  EXPECT_EQ(emb->ne[0], 64);
  EXPECT_EQ(emb->ne[1], 512);
  EXPECT_EQ(emb->nbytes, 64u * 512u * 4u);
  const TensorInfo* down = f->find_tensor("blk.4.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->ne[0], 172);
  EXPECT_EQ(down->ne[1], 64);
  const TensorInfo* norm = f->find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->n_dims, 1u);
  EXPECT_EQ(f->find_tensor("nope"), nullptr);
}

TEST(GgufOpen, Llama2TinyRandomF16) {
  MINFER_REQUIRE_SHARED();
  auto f = File::open(test::shared_path("models/llama-2-tiny-random.gguf"));
  EXPECT_EQ(f->metadata().size(), 18u);
  EXPECT_EQ(f->tensors().size(), 12u);
  EXPECT_EQ(f->get_string("general.name"), "LLaMA v2");
  EXPECT_EQ(f->get_uint("general.file_type"), 1u);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens").size(), 32000u);
  const TensorInfo* t = f->find_tensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->type, GgmlType::F16);
  EXPECT_EQ(t->ne[0], 8);
  EXPECT_EQ(t->ne[1], 32000);
  EXPECT_EQ(t->nbytes, 8u * 32000u * 2u);
}

TEST(GgufOpen, QuantizedQwenModels) {
  MINFER_REQUIRE_SHARED();
  auto q2 = File::open(test::shared_path("models/tiny-qwen2-q8_0.gguf"));
  EXPECT_EQ(q2->architecture(), "qwen2");
  EXPECT_EQ(q2->get_string_array("tokenizer.ggml.tokens").size(), 151936u);
  EXPECT_EQ(q2->find_tensor("output.weight"), nullptr);  // tied
  auto q3 = File::open(test::shared_path("models/tiny-qwen3-q4_0.gguf"));
  EXPECT_EQ(q3->architecture(), "qwen3");
  const TensorInfo* emb = q3->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, GgmlType::Q8_0);
  EXPECT_EQ(emb->nbytes, uint64_t(emb->n_elements() / 32 * 34));
}

TEST(GgufOpen, VocabOnlyFilesHaveNoTensors) {
  MINFER_REQUIRE_SHARED();
  auto f = File::open(test::shared_path("vocab/ggml-vocab-llama-spm.gguf"));
  EXPECT_EQ(f->tensors().size(), 0u);
  EXPECT_EQ(f->architecture(), "llama");
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens").size(), 32000u);
}

TEST(GgufOpen, TypedGettersRejectWrongTypes) {
  MINFER_REQUIRE_SHARED();
  auto f = File::open(test::shared_path("models/stories260K.gguf"));
  EXPECT_THROW(f->get_string("llama.block_count"), Error);
  EXPECT_THROW(f->get_uint("general.architecture"), Error);
  EXPECT_THROW(f->get_bool("llama.block_count"), Error);
  EXPECT_THROW(f->get_string_array("tokenizer.ggml.scores"), Error);
  EXPECT_THROW(f->get_int_array("tokenizer.ggml.tokens"), Error);
  EXPECT_FALSE(f->get_uint("no.such.key").has_value());
  EXPECT_TRUE(f->get_string_array("no.such.key").empty());
  try {
    f->get_string("llama.block_count");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stories260K.gguf: key 'llama.block_count' has type u32"),
              std::string::npos)
        << e.what();
  }
}

TEST(GgufOpen, MissingFileIsAnError) {
  EXPECT_THROW(File::open("/nonexistent/model.gguf"), Error);
  EXPECT_THROW(File::open("/tmp"), Error);
}

// release() drops a mapped range's pages; reading it again brings the same bytes back from
// the file. For an in-memory image it must leave the caller's buffer alone.
TEST(GgufOpen, ReleasedPagesReadBackFromTheFile) {
  MINFER_REQUIRE_SHARED();
  const std::string path = minfer::test::shared_path("models/stories260K.gguf");
  auto f = File::open(path);
  const TensorInfo* t = f->find_tensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  const std::vector<uint8_t> before(t->data, t->data + t->nbytes);
  f->release(t->data, t->nbytes);
  f->release(t->data - 100, 1 << 30);  // clipped to the mapping
  EXPECT_EQ(std::vector<uint8_t>(t->data, t->data + t->nbytes), before);

  std::vector<uint8_t> image(size_t(fs::file_size(path)));
  {
    std::FILE* fp = std::fopen(path.c_str(), "rb");
    ASSERT_NE(fp, nullptr);
    ASSERT_EQ(std::fread(image.data(), 1, image.size(), fp), image.size());
    std::fclose(fp);
  }
  const std::vector<uint8_t> copy = image;
  auto m = File::from_memory(image.data(), image.size(), "stories260K (in memory)");
  m->release(image.data(), image.size());
  EXPECT_EQ(image, copy);
}

// --no-mmap: the bytes are read up front (a file overwritten afterwards changes nothing), equal
// to the mapped ones, and a released range reads back the same from the file.
TEST(GgufOpen, NoMmapReadsTheFileIntoMemory) {
  MINFER_REQUIRE_SHARED();
  const std::string path = minfer::test::shared_path("models/stories260K.gguf");
  const fs::path copy = fs::temp_directory_path() / ("minfer-nommap-" + std::to_string(::getpid()) + ".gguf");
  fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
  auto mapped = File::open(path);
  auto f = File::open(copy.string(), /*use_mmap=*/false);
  ASSERT_EQ(f->tensors().size(), mapped->tensors().size());
  for (size_t i = 0; i < f->tensors().size(); ++i) {
    const TensorInfo& a = f->tensors()[i];
    const TensorInfo& b = mapped->tensors()[i];
    ASSERT_EQ(a.name, b.name);
    ASSERT_EQ(0, std::memcmp(a.data, b.data, a.nbytes)) << a.name;
  }
  const TensorInfo* t = f->find_tensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  const std::vector<uint8_t> before(t->data, t->data + t->nbytes);
  f->release(t->data, t->nbytes);
  EXPECT_EQ(std::vector<uint8_t>(t->data, t->data + t->nbytes), before);

  auto g = File::open(copy.string(), /*use_mmap=*/false);
  {
    std::FILE* fp = std::fopen(copy.string().c_str(), "r+b");
    ASSERT_NE(fp, nullptr);
    const std::vector<uint8_t> zeros(size_t(fs::file_size(copy)), 0);
    ASSERT_EQ(std::fwrite(zeros.data(), 1, zeros.size(), fp), zeros.size());
    std::fclose(fp);
  }
  const TensorInfo* u = g->find_tensor("token_embd.weight");
  EXPECT_EQ(std::vector<uint8_t>(u->data, u->data + u->nbytes), before);
  fs::remove(copy);
}

namespace {
// VmLck of this process, in KiB (-1 when /proc says nothing).
long locked_kib() {
  std::FILE* fp = std::fopen("/proc/self/status", "r");
  if (!fp) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, fp))
    if (std::sscanf(line, "VmLck: %ld kB", &kib) == 1) break;
  std::fclose(fp);
  return kib;
}
}  // namespace

// --mlock's part in the reader: every page of the mapping but the released ones is locked.
TEST(GgufOpen, LockKeptLocksAllButTheReleasedPages) {
  MINFER_REQUIRE_SHARED();
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer makes mlock a no-op";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer makes mlock a no-op";
#endif
#endif
  const std::string path = minfer::test::shared_path("models/stories260K.gguf");
  auto f = File::open(path);
  const TensorInfo* t = f->find_tensor("token_embd.weight");  // 128 KiB of a 1.1 MiB file
  ASSERT_NE(t, nullptr);
  f->release(t->data, t->nbytes);
  const long before = locked_kib();
  if (before < 0) GTEST_SKIP() << "no VmLck in /proc/self/status";
  const int e = f->lock_kept();
  if (e == EPERM || e == ENOMEM || e == EAGAIN) GTEST_SKIP() << "mlock refused here: " << std::strerror(e);
  ASSERT_EQ(e, 0) << std::strerror(e);
  const long page_kib = ::sysconf(_SC_PAGESIZE) / 1024;
  const long file_kib = long(fs::file_size(path)) / 1024;
  const long released_kib = long(t->nbytes) / 1024;
  const long locked = locked_kib() - before;
  EXPECT_GE(locked, file_kib - released_kib - 2 * page_kib);
  EXPECT_LE(locked, file_kib - released_kib + 2 * page_kib);
  ::munlockall();
}

// llama.cpp's --override-kv: the text's forms, and a key that takes the value for every reader
// after it (added when absent); another kind of value for an existing key is an error.
TEST(GgufOpen, KvOverrides) {
  MINFER_REQUIRE_SHARED();
  const KV i = parse_kv_override("llama.context_length=int:4096");
  EXPECT_EQ(i.key, "llama.context_length");
  EXPECT_EQ(i.value, Value::i64(4096));
  EXPECT_EQ(parse_kv_override("a.b=float:0.5").value, Value::f64(0.5));
  EXPECT_EQ(parse_kv_override("a.b=bool:false").value, Value::boolean(false));
  EXPECT_EQ(parse_kv_override("a.b=str:x=y:z").value, Value::str("x=y:z"));
  for (const char* bad : {"a.b", "=int:1", "a.b=int", "a.b=int:1x", "a.b=float:nan", "a.b=bool:yes",
                          "a.b=i64:1", "a.b=int:"})
    EXPECT_THROW(parse_kv_override(bad), Error) << bad;
  EXPECT_THROW(parse_kv_override("a.b=str:" + std::string(128, 'x')), Error);

  auto f = File::open(minfer::test::shared_path("models/stories260K.gguf"));
  const uint64_t before = *f->get_uint("llama.context_length");
  f->override_kv(parse_kv_override("llama.context_length=int:" + std::to_string(before * 2)));
  EXPECT_EQ(*f->get_uint("llama.context_length"), before * 2);
  f->override_kv(parse_kv_override("minfer.test=str:hello"));
  EXPECT_EQ(*f->get_string("minfer.test"), "hello");
  EXPECT_THROW(f->override_kv(parse_kv_override("llama.context_length=str:long")), Error);
  EXPECT_THROW(f->override_kv(parse_kv_override("general.architecture=int:1")), Error);
}
