// The synthetic models in ../shared were quantized by ggml's quantize_row_q8_0_ref /
// quantize_row_q4_0_ref. Requantizing their dequantized values is idempotent for these two
// formats, so every row must come back byte for byte: a direct check against ggml's output.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/test_data.h"
#include "gguf/gguf.h"
#include "quant/quant.h"

using namespace minfer;

namespace {

struct Counts {
  int tensors = 0;
  int64_t rows = 0;
  int64_t mismatched_rows = 0;
};

Counts requantize_all(const std::string& path, GgmlType type) {
  Counts c;
  auto f = gguf::File::open(path);
  for (const gguf::TensorInfo& t : f->tensors()) {
    if (t.type != type) continue;
    ++c.tensors;
    const int64_t nx = t.ne[0];
    const int64_t nrows = t.n_elements() / nx;
    const size_t rs = row_size(type, nx);
    std::vector<float> x(static_cast<size_t>(nx));
    std::vector<uint8_t> q(rs);
    for (int64_t r = 0; r < nrows; ++r) {
      const uint8_t* src = t.data + size_t(r) * rs;
      quant::dequantize_row(type, src, x.data(), nx);
      quant::quantize_row(type, x.data(), q.data(), nx);
      ++c.rows;
      if (std::memcmp(q.data(), src, rs) != 0) {
        if (c.mismatched_rows == 0)
          ADD_FAILURE() << path << ": " << t.name << " row " << r << " differs";
        ++c.mismatched_rows;
      }
    }
  }
  return c;
}

}  // namespace

TEST(QuantModels, Qwen2Q8_0RequantizesBitExact) {
  MINFER_REQUIRE_SHARED();
  const Counts c = requantize_all(test::shared_path("models/tiny-qwen2-q8_0.gguf"), GgmlType::Q8_0);
  EXPECT_EQ(c.tensors, 1 + 2 * 7);  // token_embd + 7 matrices per layer, 2 layers
  EXPECT_GT(c.rows, 150000);
  EXPECT_EQ(c.mismatched_rows, 0);
}

TEST(QuantModels, Qwen3Q4_0RequantizesBitExact) {
  MINFER_REQUIRE_SHARED();
  const std::string path = test::shared_path("models/tiny-qwen3-q4_0.gguf");
  const Counts q4 = requantize_all(path, GgmlType::Q4_0);
  EXPECT_EQ(q4.tensors, 3 * 7);
  EXPECT_EQ(q4.mismatched_rows, 0);
  const Counts q8 = requantize_all(path, GgmlType::Q8_0);
  EXPECT_EQ(q8.tensors, 1);  // the tied token_embd
  EXPECT_EQ(q8.mismatched_rows, 0);
}
