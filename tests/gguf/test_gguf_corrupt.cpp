// Acceptance test of the reader's robustness: for every model, >= 1000 corrupted images
// (truncations at every structural boundary, lying counts and lengths, seeded bit flips).
// Each must open or throw minfer::Error naming the file; truncations must all throw.
// Truncated images are copied into exactly-sized buffers so that AddressSanitizer catches
// any read past the end; bit flips are applied in place to one copy of the file.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>

#include "common/error.h"
#include "common/test_data.h"
#include "gguf/gguf.h"
#include "gguf_layout_scan.h"

namespace fs = std::filesystem;
using namespace minfer;
using namespace minfer::gguf;
using minfer::test::GgufField;

namespace {

const std::string kName = "corrupt.gguf";

enum class Outcome { Opened, Threw };

// Runs the reader on one image; any failure other than minfer::Error is a test failure.
Outcome try_open(const uint8_t* data, size_t size, const std::string& what) {
  try {
    auto f = File::from_memory(data, size, kName);
    // Touch what a loader would touch.
    for (const TensorInfo& t : f->tensors())
      if (t.nbytes) {
        volatile uint8_t first = t.data[0], last = t.data[t.nbytes - 1];
        (void)first, (void)last;
      }
    return Outcome::Opened;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(kName + ": ", 0), 0u) << what << ": message lacks the file name: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << what << ": " << msg;
    return Outcome::Threw;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": threw a non-minfer exception: " << e.what();
  } catch (...) {
    ADD_FAILURE() << what << ": threw something unknown";
  }
  return Outcome::Threw;
}

struct Tally {
  int variants = 0, opened = 0, threw = 0;
  void add(Outcome o) {
    ++variants;
    (o == Outcome::Opened ? opened : threw)++;
  }
};

class Corruptor {
 public:
  explicit Corruptor(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    layout_ = test::scan_gguf_layout(bytes_.data(), bytes_.size());
  }

  const test::GgufLayout& layout() const { return layout_; }
  size_t size() const { return bytes_.size(); }

  Outcome truncated(size_t cut) {
    // Header cuts get their own exact buffer (ASan-visible end); data cuts cannot make the
    // parser read further than the header, so a shorter length over the same bytes is enough.
    if (cut <= layout_.data_offset) {
      std::vector<uint8_t> copy(bytes_.begin(), bytes_.begin() + cut);
      return try_open(copy.data(), copy.size(), "truncated at " + std::to_string(cut));
    }
    return try_open(bytes_.data(), cut, "truncated at " + std::to_string(cut));
  }

  Outcome patched(size_t off, const void* value, size_t len, const std::string& what) {
    std::vector<uint8_t> saved(bytes_.begin() + off, bytes_.begin() + off + len);
    std::memcpy(bytes_.data() + off, value, len);
    Outcome o = try_open(bytes_.data(), bytes_.size(), what);
    std::memcpy(bytes_.data() + off, saved.data(), len);
    return o;
  }

  Outcome flipped(size_t off, int bit) {
    uint8_t v = uint8_t(bytes_[off] ^ (1u << bit));
    return patched(off, &v, 1, "bit " + std::to_string(bit) + " flipped at " + std::to_string(off));
  }

 private:
  std::vector<uint8_t> bytes_;
  test::GgufLayout layout_;
};

void corrupt_model(const std::string& path) {
  SCOPED_TRACE(path);
  Corruptor c(path);
  const auto& L = c.layout();
  ASSERT_EQ(try_open(nullptr, 0, "empty"), Outcome::Threw);

  // The unmodified file opens.
  {
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_EQ(try_open(whole.data(), whole.size(), "original"), Outcome::Opened);
  }

  Tally tally;
  // 1. Truncation at every structural boundary: the start and middle of each key, value
  //    and tensor info; every field of the first key/value and of the first and last tensor
  //    info; the header end, inside the padding, each tensor's data start, middle and end.
  std::set<size_t> cuts = {0, 1, 3, 4, 7, 8, 12, 16, 20, 24, L.header_end, L.data_offset};
  for (auto [b, e] : L.units) {
    cuts.insert(b);
    cuts.insert(b + (e - b) / 2);
  }
  const size_t first_kv_end = L.units.size() > 1 ? L.units[1].second : L.kv_begin;
  size_t first_info_end = L.tensors_begin;
  for (auto [b, e] : L.units)
    if (b == L.tensors_begin) first_info_end = e;
  const size_t last_info = L.units.empty() ? L.header_end : L.units.back().first;
  for (const GgufField& f : L.fields) {
    if (f.off < first_kv_end || (f.off >= L.tensors_begin && f.off < first_info_end) ||
        f.off >= last_info) {
      cuts.insert(f.off);
      cuts.insert(f.off + f.len / 2);
    }
  }
  if (L.data_offset > L.header_end + 1) cuts.insert(L.header_end + (L.data_offset - L.header_end) / 2);
  for (auto [b, e] : L.tensor_data) {
    cuts.insert(b + 1);
    cuts.insert(b + (e - b) / 2);
    cuts.insert(e - 1);
  }
  size_t last_data_end = 0;
  for (auto [b, e] : L.tensor_data) last_data_end = std::max(last_data_end, e);
  ASSERT_GT(last_data_end, 0u);
  int truncations = 0;
  for (size_t cut : cuts) {
    if (cut >= last_data_end) continue;  // trailing padding after the last tensor is optional
    EXPECT_EQ(c.truncated(cut), Outcome::Threw) << "truncated at " << cut << " still opened";
    tally.add(Outcome::Threw);
    ++truncations;
  }

  // 2. Lying counts and lengths: huge or off-by-some values in every count/length/type
  //    field of the header and the metadata, and of the first and last three tensor infos
  //    (the ones between parse exactly alike, at the cost of a full 6 MB parse each).
  const uint64_t lies[] = {~0ull, 1ull << 32, uint64_t(c.size()) - 8};
  size_t lies_from = L.header_end, lies_to = L.header_end;
  {
    std::vector<size_t> info_starts;
    for (auto [b, e] : L.units)
      if (b >= L.tensors_begin) info_starts.push_back(b);
    if (info_starts.size() > 6) {
      lies_from = info_starts[3];
      lies_to = info_starts[info_starts.size() - 3];
    }
  }
  for (const GgufField& f : L.fields) {
    if (f.off >= lies_from && f.off < lies_to) continue;
    const bool count64 = f.kind == GgufField::TensorCount || f.kind == GgufField::KvCount ||
                         f.kind == GgufField::StrLen || f.kind == GgufField::ArrayLen ||
                         f.kind == GgufField::Ne || f.kind == GgufField::TensorOffset;
    const bool word32 = f.kind == GgufField::NDims || f.kind == GgufField::ValueType ||
                        f.kind == GgufField::ArrayType || f.kind == GgufField::TensorType ||
                        f.kind == GgufField::Version;
    if (count64) {
      for (uint64_t v : lies) tally.add(c.patched(f.off, &v, 8, "lying 64-bit field"));
    } else if (word32) {
      for (uint32_t v : {5u, 13u, 0xffffffffu})
        tally.add(c.patched(f.off, &v, 4, "lying 32-bit field"));
    }
  }

  // 3. Seeded bit flips: mostly in structural fields (where they matter), the rest anywhere
  //    in the header or the first bytes of the data section.
  std::mt19937_64 rng(20240607);
  std::vector<const GgufField*> structural;
  for (const GgufField& f : L.fields)
    if (f.kind != GgufField::StrBytes) structural.push_back(&f);
  const int flips = std::max(1000 - tally.variants, 250);
  for (int i = 0; i < flips; ++i) {
    size_t off;
    const int pick = int(rng() % 10);
    if (pick < 6) {
      const GgufField& f = *structural[rng() % structural.size()];
      off = f.off + rng() % f.len;
    } else if (pick < 8) {
      off = L.tensors_begin + rng() % (L.header_end - L.tensors_begin);
    } else {
      off = rng() % std::min(c.size(), L.data_offset + 64);
    }
    tally.add(c.flipped(off, int(rng() % 8)));
  }

  EXPECT_GE(tally.variants, 1000);
  EXPECT_GT(truncations, 150);
  std::printf("  %s: %d variants (%d truncations), %d opened, %d threw minfer::Error\n",
              fs::path(path).filename().c_str(), tally.variants, truncations, tally.opened,
              tally.threw);
}

}  // namespace

TEST(GgufCorrupt, Stories260K) {
  MINFER_REQUIRE_SHARED();
  corrupt_model(test::shared_path("models/stories260K.gguf"));
}
TEST(GgufCorrupt, Llama2TinyRandom) {
  MINFER_REQUIRE_SHARED();
  corrupt_model(test::shared_path("models/llama-2-tiny-random.gguf"));
}
TEST(GgufCorrupt, TinyQwen2Q8) {
  MINFER_REQUIRE_SHARED();
  corrupt_model(test::shared_path("models/tiny-qwen2-q8_0.gguf"));
}
TEST(GgufCorrupt, TinyQwen3Q4) {
  MINFER_REQUIRE_SHARED();
  corrupt_model(test::shared_path("models/tiny-qwen3-q4_0.gguf"));
}

TEST(GgufCorrupt, EveryModelIsCovered) {
  MINFER_REQUIRE_SHARED();
  int n = 0;
  for (const auto& e : fs::directory_iterator(test::shared_path("models")))
    n += e.path().extension() == ".gguf";
  EXPECT_EQ(n, 4) << "a model was added to ../shared/models: add a GgufCorrupt test for it";
}
