// Split models: a 3-part split of stories260K written with Writer reads back as the original.
#include <cstring>
#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/test_data.h"
#include "gguf/gguf.h"
#include "test_gguf_temp_dir.h"

namespace fs = std::filesystem;
using namespace minfer;
using namespace minfer::gguf;

namespace {

std::string part_name(int no, int count) {
  return fmt::format("story-{:05d}-of-{:05d}.gguf", no, count);
}

struct SplitOptions {
  int count = 3;
  int lie_no_in_part = -1;     // part (0-based) whose split.no is wrong
  int lie_count_in_part = -1;  // part whose split.count is wrong
  int32_t tensors_count = -1;  // override of split.tensors.count (-1: the truth)
};

// Writes `f` as opt.count parts the way llama.cpp's gguf-split does: every key in the first
// part, split.no/split.count/split.tensors.count in all of them, tensors dealt out in order.
void write_split(const File& f, const test::TempDir& dir, const SplitOptions& opt = {}) {
  const auto& ts = f.tensors();
  const size_t per = (ts.size() + opt.count - 1) / opt.count;
  for (int k = 0; k < opt.count; ++k) {
    Writer w(f.alignment());
    if (k == 0) w.copy_metadata(f);
    w.set("split.no", Value::u16(uint16_t(k == opt.lie_no_in_part ? k + 1 : k)));
    w.set("split.count", Value::u16(uint16_t(k == opt.lie_count_in_part ? opt.count + 1 : opt.count)));
    w.set("split.tensors.count",
          Value::i32(opt.tensors_count >= 0 ? opt.tensors_count : int32_t(ts.size())));
    for (size_t i = k * per; i < std::min(ts.size(), (k + 1) * per); ++i)
      w.add_tensor(ts[i].name, ts[i].type,
                   std::vector<int64_t>(ts[i].ne.begin(), ts[i].ne.begin() + ts[i].n_dims),
                   ts[i].data);
    w.write(dir.file(part_name(k + 1, opt.count)));
  }
}

std::string open_error(const std::string& path) {
  try {
    File::open(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(opened without error)";
}

}  // namespace

TEST(GgufSplit, ThreePartsReadBackAsTheOriginal) {
  MINFER_REQUIRE_SHARED();
  auto orig = File::open(test::shared_path("models/stories260K.gguf"));
  test::TempDir dir("split");
  write_split(*orig, dir);

  auto f = File::open(dir.file(part_name(1, 3)));
  EXPECT_EQ(f->n_splits(), 3u);
  EXPECT_EQ(f->architecture(), "llama");
  EXPECT_EQ(f->get_uint("llama.block_count"), 5u);
  ASSERT_EQ(f->tensors().size(), orig->tensors().size());
  std::set<uint32_t> parts;
  for (const TensorInfo& o : orig->tensors()) {
    SCOPED_TRACE(o.name);
    const TensorInfo* t = f->find_tensor(o.name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->type, o.type);
    EXPECT_EQ(t->ne, o.ne);
    ASSERT_EQ(t->nbytes, o.nbytes);
    EXPECT_EQ(std::memcmp(t->data, o.data, o.nbytes), 0);
    parts.insert(t->split);
  }
  EXPECT_EQ(parts, (std::set<uint32_t>{0, 1, 2}));
  EXPECT_EQ(f->tensors().front().split, 0u);
  EXPECT_EQ(f->tensors().back().split, 2u);
}

TEST(GgufSplit, MissingPartIsAClearError) {
  MINFER_REQUIRE_SHARED();
  auto orig = File::open(test::shared_path("models/stories260K.gguf"));
  test::TempDir dir("split-missing");
  write_split(*orig, dir);
  fs::remove(dir.file(part_name(3, 3)));
  const std::string msg = open_error(dir.file(part_name(1, 3)));
  EXPECT_NE(msg.find(part_name(3, 3) + ": cannot open"), std::string::npos) << msg;
}

TEST(GgufSplit, OpeningALaterPartPointsToTheFirst) {
  MINFER_REQUIRE_SHARED();
  auto orig = File::open(test::shared_path("models/stories260K.gguf"));
  test::TempDir dir("split-later");
  write_split(*orig, dir);
  const std::string msg = open_error(dir.file(part_name(2, 3)));
  EXPECT_NE(msg.find("part 2 of a 3-part split model; open the first part"), std::string::npos) << msg;
}

TEST(GgufSplit, InconsistentPartsAreRejected) {
  MINFER_REQUIRE_SHARED();
  auto orig = File::open(test::shared_path("models/stories260K.gguf"));
  {
    test::TempDir dir("split-no");
    write_split(*orig, dir, {.lie_no_in_part = 1});
    const std::string msg = open_error(dir.file(part_name(1, 3)));
    EXPECT_NE(msg.find("says it is part 3 of 3, expected part 2 of 3"), std::string::npos) << msg;
  }
  {
    test::TempDir dir("split-count");
    write_split(*orig, dir, {.lie_count_in_part = 2});
    const std::string msg = open_error(dir.file(part_name(1, 3)));
    EXPECT_NE(msg.find("says it is part 3 of 4"), std::string::npos) << msg;
  }
  {
    test::TempDir dir("split-total");
    write_split(*orig, dir, {.tensors_count = 47});
    const std::string msg = open_error(dir.file(part_name(1, 3)));
    EXPECT_NE(msg.find("split.tensors.count says 47 tensors but the 3 parts hold 48"),
              std::string::npos) << msg;
  }
  {
    test::TempDir dir("split-name");
    write_split(*orig, dir);
    fs::rename(dir.file(part_name(1, 3)), dir.file("renamed.gguf"));
    const std::string msg = open_error(dir.file("renamed.gguf"));
    EXPECT_NE(msg.find("does not end in '-00001-of-00003.gguf'"), std::string::npos) << msg;
  }
}

TEST(GgufSplit, DuplicateTensorAcrossPartsIsRejected) {
  MINFER_REQUIRE_SHARED();
  auto orig = File::open(test::shared_path("models/stories260K.gguf"));
  test::TempDir dir("split-dup");
  const TensorInfo& t = orig->tensors()[0];
  for (int k = 0; k < 2; ++k) {
    Writer w;
    if (k == 0) w.copy_metadata(*orig);
    w.set("split.no", Value::u16(uint16_t(k)));
    w.set("split.count", Value::u16(2));
    w.add_tensor(t.name, t.type, {t.ne[0], t.ne[1]}, t.data);
    w.write(dir.file(part_name(k + 1, 2)));
  }
  const std::string msg = open_error(dir.file(part_name(1, 2)));
  EXPECT_NE(msg.find("appears in more than one part"), std::string::npos) << msg;
}
