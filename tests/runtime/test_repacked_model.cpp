// A whole model with and without load-time repacking: a K-quant mix (every matrix Q4_K, Q5_K or
// Q6_K: tiny-llama's rows are whole super-blocks) runs the packed kernels in the first case and
// the GGUF-layout kernels in the second, and both compute the same integer sums and float
// steps, so prefill (4-15 and 16+ token tiles) and decode logits must be equal, on every ISA
// this CPU has. Also checks that the loader packed what the kernels can use.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/repack.h"
#include "runtime/context.h"
#include "runtime/model.h"
#include "tools/gen_model.h"
#include "tools/quantize.h"

using namespace minfer;

namespace {

class TempFiles {
 public:
  TempFiles() {
    dir_ = std::filesystem::temp_directory_path() / ("minfer-repacked-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  ~TempFiles() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

std::vector<std::vector<float>> logits(const runtime::Model& m) {
  runtime::ContextParams p;
  p.n_threads = 2;
  runtime::Context ctx(m, p);
  std::vector<std::vector<float>> out;
  std::vector<int32_t> prompt;
  for (int i = 0; i < 21; ++i) prompt.push_back(int32_t(10 + 7 * i));
  auto take = [&](std::span<const float> s) { out.emplace_back(s.begin(), s.end()); };
  take(ctx.decode(prompt, 1));
  const std::vector<int32_t> batch = {3, 5, 8, 13, 21, 34};  // the 4- and 1-token tiles
  take(ctx.decode(batch, 1));
  int32_t tok = 42;
  for (int step = 0; step < 3; ++step) {
    const std::vector<int32_t> one = {tok};
    take(ctx.decode(one, 1));
    tok = int32_t(10 + step);
  }
  return out;
}

TEST(RepackedModel, KQuantMixGivesTheSameLogitsAsTheGgufLayout) {
  TempFiles tmp;
  tools::GenModelOptions g;
  g.preset = "tiny-llama";
  g.type = GgmlType::F16;
  tools::generate_model(g, tmp.file("f16.gguf"));
  for (const char* ftype : {"Q4_K_M", "Q5_K_M"}) {
    const std::string path = tmp.file(std::string(ftype) + ".gguf");
    tools::quantize_model(tmp.file("f16.gguf"), path, ftype, 2);
    int tested = 0;
    for (cpu::Isa isa : cpu::supported_isas()) {
      cpu::force_isa(isa);
      runtime::LoadOptions packed, plain;
      plain.repack = false;
      const auto a = runtime::Model::load(path, packed);
      const auto b = runtime::Model::load(path, plain);
      EXPECT_EQ(b->weights().n_packed(), 0u);
      if (isa == cpu::Isa::Scalar) {
        EXPECT_EQ(a->weights().n_packed(), 0u) << "the scalar path has no packed kernels";
      } else {
        EXPECT_GT(a->weights().n_packed(), 20u) << ftype << " on " << cpu::isa_name(isa);
      }
      EXPECT_EQ(logits(*a), logits(*b)) << ftype << " on " << cpu::isa_name(isa);
      cpu::reset_isa();
      ++tested;
    }
    EXPECT_GE(tested, 1);
  }
}

// Matrices without a packed layout (F16 here) are copied as they are onto the huge-page buffer:
// the weight store points at the copy, and the logits are those of the mapping.
TEST(RepackedModel, UnpackedMatricesAreCopiedAndGiveTheSameLogits) {
  TempFiles tmp;
  tools::GenModelOptions g;
  g.preset = "tiny-llama";
  g.type = GgmlType::F16;
  const std::string path = tmp.file("f16.gguf");
  tools::generate_model(g, path);
  runtime::LoadOptions staged, plain;
  plain.repack = false;
  const auto a = runtime::Model::load(path, staged);
  const auto b = runtime::Model::load(path, plain);
  EXPECT_EQ(b->weights().n_copied(), 0u);
  EXPECT_GT(a->weights().n_copied(), 10u);
  EXPECT_GT(a->weights().copied_bytes(), 0u);
  const models::TensorRef* q = a->tensors().find("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  const sched::WeightRef* wa = a->weights().find("blk.0.attn_q.weight");
  ASSERT_NE(wa, nullptr);
  EXPECT_NE(wa->data, q->data) << "the weight store still reads the mapping";
  EXPECT_EQ(0, std::memcmp(wa->data, b->weights().find("blk.0.attn_q.weight")->data, wa->nbytes));
  EXPECT_EQ(logits(*a), logits(*b));

  // A copy that would not fit in memory is not made: the mapping serves, with the same logits.
  runtime::LoadOptions small;
  small.memory_bytes = 1 << 20;
  const auto c = runtime::Model::load(path, small);
  EXPECT_EQ(c->weights().n_copied(), 0u);
  EXPECT_EQ(c->weights().find("blk.0.attn_q.weight")->data, c->tensors().find("blk.0.attn_q.weight")->data);
  EXPECT_EQ(logits(*c), logits(*b));
}

}  // namespace
