// Saved context states (Context::save_state / load_state, kv_state.h): a loaded state continues
// exactly as the context it was saved from, in a context of another size too, for every KV
// cache type; a file that does not fit (another model, cache type, too many tokens, damaged,
// truncated, not a state) is an error naming it, and leaves the context as it was.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/shared_model.h"
#include "common/test_data.h"
#include "runtime/context.h"
#include "runtime/model.h"

using namespace minfer;
namespace fs = std::filesystem;

namespace {

const runtime::Model& model(const std::string& name) { return test::shared_model(name); }

runtime::Context make_context(const runtime::Model& m, GgmlType kv, int64_t n_ctx) {
  runtime::ContextParams p;
  p.n_ctx = n_ctx;
  p.n_threads = 1;
  p.kv_type = kv;
  return runtime::Context(m, p);
}

const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378, 365, 300, 263, 285, 263, 307, 261, 378, 302, 363, 288, 356};

std::vector<float> next_logits(runtime::Context& ctx, int32_t token) {
  const auto s = ctx.decode(std::vector<int32_t>{token}, 1);
  return {s.begin(), s.end()};
}

struct TempFile {
  fs::path path = fs::temp_directory_path() /
                  ("minfer-state-" + std::to_string(::getpid()) + "-" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".bin");
  ~TempFile() { fs::remove(path); }
  std::string str() const { return path.string(); }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(KvState, ALoadedStateContinuesAsTheSavedContext) {
  MINFER_REQUIRE_SHARED();
  // (stories260K's heads of 8 cannot be Q8_0 blocks: qwen2's of 64 can.)
  for (GgmlType kv : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0}) {
    SCOPED_TRACE(type_name(kv));
    const runtime::Model& m = model(kv == GgmlType::Q8_0 ? "tiny-qwen2-q8_0.gguf" : "stories260K.gguf");
    TempFile f;
    runtime::Context a = make_context(m, kv, 64);
    a.decode(kPrompt, 1);
    const size_t written = a.save_state(f.str());
    EXPECT_EQ(written, fs::file_size(f.path));
    const std::vector<float> want = next_logits(a, 290);

    runtime::Context b = make_context(m, kv, 160);  // another size: the rows are per position
    b.decode(std::vector<int32_t>{1, 300, 301}, 1);  // whatever it held goes
    size_t read = 0;
    EXPECT_EQ(b.load_state(f.str(), &read), int64_t(kPrompt.size()));
    EXPECT_EQ(read, written);
    EXPECT_EQ(std::vector<int32_t>(b.tokens().begin(), b.tokens().end()), kPrompt);
    EXPECT_EQ(next_logits(b, 290), want);
  }
}

TEST(KvState, FilesThatDoNotFitAreErrorsAndChangeNothing) {
  MINFER_REQUIRE_SHARED();
  const runtime::Model& m = model("stories260K.gguf");
  TempFile f;
  runtime::Context a = make_context(m, GgmlType::F32, 64);
  a.decode(kPrompt, 1);
  a.save_state(f.str());
  std::ifstream in(f.path, std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), {});

  runtime::Context b = make_context(m, GgmlType::F32, 64);
  b.decode(std::vector<int32_t>{1, 300, 301}, 1);
  const std::vector<float> before = [&] {
    runtime::Context c = make_context(m, GgmlType::F32, 64);
    c.decode(std::vector<int32_t>{1, 300, 301}, 1);
    return next_logits(c, 290);
  }();
  auto write = [&](const std::string& bytes) { std::ofstream(f.path, std::ios::binary) << bytes; };
  auto expect_refused = [&](const std::string& needle) {
    const std::string e = error_of([&] { b.load_state(f.str()); });
    EXPECT_NE(e.find(needle), std::string::npos) << e;
    EXPECT_NE(e.find(f.str()), std::string::npos) << e;
    EXPECT_EQ(b.n_past(), 3);
  };

  runtime::Context small = make_context(m, GgmlType::F32, 8);
  EXPECT_NE(error_of([&] { small.load_state(f.str()); }).find("more than a state of this model"), std::string::npos);
  runtime::Context f16 = make_context(m, GgmlType::F16, 64);
  EXPECT_NE(error_of([&] { f16.load_state(f.str()); }).find("saved with KV cache type"), std::string::npos);
  const runtime::Model& other = model("llama-2-tiny-random.gguf");
  runtime::Context o = make_context(other, GgmlType::F32, 64);
  EXPECT_NE(error_of([&] { o.load_state(f.str()); }).find("another model"), std::string::npos);

  std::string damaged = good;
  damaged[damaged.size() / 2] ^= 0x40;
  write(damaged);
  expect_refused("damaged");
  write(good.substr(0, good.size() - 100));
  expect_refused("truncated");
  write("GGUF and more bytes than a header needs........");
  expect_refused("not a minfer state file");
  write(good + "x");
  expect_refused("after the end");
  fs::remove(f.path);
  expect_refused("cannot read");
  EXPECT_EQ(next_logits(b, 290), before);  // the cache as it was
}

}  // namespace
