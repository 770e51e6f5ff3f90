// The helpers behind `minfer bench`: statistics against hand-computed values, the token ids'
// determinism and range, the footprint against stories260K's known sizes, and a real run.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernel_info.h"
#include "common/error.h"
#include "common/test_data.h"
#include "runtime/bench.h"
#include "runtime/context.h"
#include "runtime/model.h"

namespace rt = minfer::runtime;

TEST(Bench, SummarizeIsMeanAndSampleStddev) {
  rt::BenchResult r;
  r.samples_ts = {1, 2, 3, 4};
  rt::summarize(r);
  EXPECT_DOUBLE_EQ(r.avg_ts, 2.5);
  EXPECT_NEAR(r.stddev_ts, std::sqrt(5.0 / 3.0), 1e-12);  // sum of squares 5, n - 1 = 3
  r.samples_ts = {7};
  rt::summarize(r);
  EXPECT_DOUBLE_EQ(r.avg_ts, 7);
  EXPECT_DOUBLE_EQ(r.stddev_ts, 0);
}

TEST(Bench, TestNames) {
  EXPECT_EQ(rt::pp_test(128).name, "pp128");
  EXPECT_EQ(rt::pp_test(128).n_prompt, 128);
  EXPECT_EQ(rt::tg_test(64).name, "tg64");
  EXPECT_EQ(rt::tg_test(64).n_gen, 64);
  EXPECT_THROW(rt::pp_test(0), minfer::Error);
  EXPECT_THROW(rt::tg_test(-1), minfer::Error);
  // llama-bench's names for a test at a depth.
  EXPECT_EQ(rt::pp_test(512, 1024).name, "pp512 @ d1024");
  EXPECT_EQ(rt::pp_test(512, 1024).n_depth, 1024);
  EXPECT_EQ(rt::tg_test(64, 0).name, "tg64");
  EXPECT_EQ(rt::tg_test(64, 7).name, "tg64 @ d7");
  EXPECT_THROW(rt::tg_test(64, -1), minfer::Error);
}

TEST(Bench, TokensAreDeterministicAndAvoidTheVocabularyEnds) {
  const auto a = rt::bench_tokens(151936, 1000, 7), b = rt::bench_tokens(151936, 1000, 7);
  const auto c = rt::bench_tokens(151936, 1000, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (int32_t id : a) {
    EXPECT_GE(id, 300);
    EXPECT_LT(id, 32000 - 300);
  }
  for (int32_t id : rt::bench_tokens(512, 200, 1)) {  // small vocabulary: margin 512 / 8
    EXPECT_GE(id, 64);
    EXPECT_LT(id, 512 - 64);
  }
  EXPECT_THROW(rt::bench_tokens(0, 4, 1), minfer::Error);
}

TEST(Bench, MatmulIsaNeverAboveTheRequestedOne) {
  using minfer::cpu::Isa;
  for (auto t : {minfer::GgmlType::F32, minfer::GgmlType::F16, minfer::GgmlType::Q8_0,
                 minfer::GgmlType::Q4_0, minfer::GgmlType::Q4_K, minfer::GgmlType::Q6_K}) {
    EXPECT_EQ(minfer::cpu::matmul_isa(t, Isa::Scalar), Isa::Scalar);
    EXPECT_LE(int(minfer::cpu::matmul_isa(t, Isa::Avx2)), int(Isa::Avx2));
    EXPECT_LE(int(minfer::cpu::matmul_isa(t, Isa::AvxVnni)), int(Isa::AvxVnni));
    EXPECT_LE(int(minfer::cpu::matmul_isa(t, Isa::Avx512)), int(Isa::Avx512));
  }
}

// The BF16 path name says whether its prompts run vdpbf16ps: only at the AVX-512 level, and
// only on a CPU with AVX512_BF16.
TEST(Bench, MatmulPathNameMarksTheBf16DotProducts) {
  using minfer::GgmlType;
  using minfer::cpu::Isa;
  minfer::cpu::force_isa(Isa::Scalar);
  EXPECT_EQ(minfer::cpu::matmul_path_name(GgmlType::BF16), "scalar");
  if (minfer::cpu::isa_supported(Isa::Avx2)) {
    minfer::cpu::force_isa(Isa::Avx2);
    EXPECT_EQ(minfer::cpu::matmul_path_name(GgmlType::BF16), "avx2");
  }
  if (minfer::cpu::isa_supported(Isa::Avx512)) {
    minfer::cpu::force_isa(Isa::Avx512);
    EXPECT_EQ(minfer::cpu::matmul_path_name(GgmlType::BF16),
              minfer::cpu::avx512_bf16() ? "avx512-vnni+bf16" : "avx512-vnni");
    EXPECT_EQ(minfer::cpu::matmul_path_name(GgmlType::Q8_0), "avx512-vnni");
  }
  minfer::cpu::reset_isa();
}

// The model column's file type as llama-bench prints it (llama_ftype_name): from the file's
// general.file_type where it has one (llama-2-tiny-random: 1), else guessed as llama.cpp guesses.
TEST(Bench, FileTypeAsLlamaCppNamesIt) {
  MINFER_REQUIRE_SHARED();
  auto m = rt::Model::load(minfer::test::shared_path("models/llama-2-tiny-random.gguf"));
  EXPECT_EQ(rt::file_type_desc(*m), "F16");
}

// The size class of llama-bench's model column, as llama.cpp v0.4.0 derives it from the
// published models' shapes (layers, width, heads, vocabulary); unknown shapes are "?B".
TEST(Bench, SizeClassAsLlamaCppNamesIt) {
  using minfer::models::Arch;
  auto hp = [](Arch a, int64_t layers, int64_t embd, int64_t heads, int64_t heads_kv, int64_t vocab) {
    minfer::models::HParams h;
    h.arch = a;
    h.n_layer = layers;
    h.n_embd = embd;
    h.n_head = heads;
    h.n_head_kv = heads_kv;
    h.n_vocab = vocab;
    return h;
  };
  EXPECT_EQ(rt::size_class(hp(Arch::Qwen3, 28, 1024, 16, 8, 151936)), "0.6B");   // Qwen3-0.6B
  EXPECT_EQ(rt::size_class(hp(Arch::Qwen3, 28, 2048, 16, 8, 151936)), "1.7B");   // Qwen3-1.7B
  EXPECT_EQ(rt::size_class(hp(Arch::Qwen3, 36, 2560, 32, 8, 151936)), "4B");
  EXPECT_EQ(rt::size_class(hp(Arch::Qwen3, 36, 4096, 32, 8, 151936)), "8B");
  EXPECT_EQ(rt::size_class(hp(Arch::Qwen2, 24, 896, 14, 2, 151936)), "1B");      // Qwen2.5-0.5B: 896 wide
  EXPECT_EQ(rt::size_class(hp(Arch::Qwen2, 24, 1024, 16, 16, 151936)), "0.5B");  // Qwen1.5-0.5B
  EXPECT_EQ(rt::size_class(hp(Arch::Qwen2, 28, 1536, 12, 2, 151936)), "1.5B");
  EXPECT_EQ(rt::size_class(hp(Arch::Qwen2, 28, 3584, 28, 4, 152064)), "7B");
  EXPECT_EQ(rt::size_class(hp(Arch::Llama, 22, 2048, 32, 4, 32000)), "1B");      // TinyLlama
  EXPECT_EQ(rt::size_class(hp(Arch::Llama, 32, 4096, 32, 32, 32000)), "7B");     // Llama 2 7B
  EXPECT_EQ(rt::size_class(hp(Arch::Llama, 32, 4096, 32, 8, 128256)), "8B");     // Llama 3 8B
  EXPECT_EQ(rt::size_class(hp(Arch::Llama, 80, 8192, 64, 8, 32000)), "70B");
  EXPECT_EQ(rt::size_class(hp(Arch::Llama, 80, 8192, 64, 64, 32000)), "65B");    // LLaMA 65B
  EXPECT_EQ(rt::size_class(hp(Arch::Llama, 5, 64, 8, 4, 512)), "?B");            // stories260K
  EXPECT_EQ(rt::size_class(hp(Arch::Qwen3, 4, 256, 8, 4, 151936)), "?B");
}

TEST(Bench, StoriesFootprintAndRun) {
  MINFER_REQUIRE_SHARED();
  auto m = rt::Model::load(minfer::test::shared_path("models/stories260K.gguf"));
  const auto fp = rt::model_footprint(*m);
  // stories260K: 292,800 F32 parameters (llama.cpp prints "n_params = 292.80 K").
  EXPECT_EQ(fp.n_params, 292800u);
  EXPECT_EQ(fp.tensor_bytes, 292800u * 4);
  // No general.file_type: llama.cpp guesses from the type most tensors have.
  EXPECT_EQ(rt::file_type_desc(*m), "(guessed) all F32");
  // Untied output: everything but the 512 x 64 embedding table, plus the one row read.
  ASSERT_TRUE(m->tensors().has("output.weight"));
  EXPECT_EQ(fp.bytes_per_token, fp.tensor_bytes - 512u * 64 * 4 + 64 * 4);

  rt::ContextParams cp;
  cp.n_ctx = 16;
  cp.n_threads = 1;
  rt::Context ctx(*m, cp);
  const auto r = rt::run_bench(ctx, rt::tg_test(3), 2, 1);
  EXPECT_EQ(r.test, "tg3");
  ASSERT_EQ(r.samples_ts.size(), 2u);
  for (double v : r.samples_ts) EXPECT_TRUE(std::isfinite(v) && v > 0);
  EXPECT_EQ(ctx.n_past(), 0);  // the cache is left empty
  EXPECT_THROW(rt::run_bench(ctx, rt::pp_test(17), 1, 1), minfer::Error);  // beyond n_ctx
  // A depth fills the cache before the timed tokens: together they must fit. The warm-up and
  // the timed run each evaluate the 13 depth tokens, then the 3 timed ones.
  const uint64_t before = ctx.stats().tokens_evaluated;
  const auto d = rt::run_bench(ctx, rt::tg_test(3, 13), 1, 1);
  EXPECT_EQ(ctx.stats().tokens_evaluated - before, 2u * (13 + 3));
  EXPECT_EQ(d.test, "tg3 @ d13");
  EXPECT_EQ(d.n_depth, 13);
  ASSERT_EQ(d.samples_ts.size(), 1u);
  EXPECT_EQ(ctx.n_past(), 0);
  EXPECT_THROW(rt::run_bench(ctx, rt::tg_test(3, 14), 1, 1), minfer::Error);
  EXPECT_THROW(rt::run_bench(ctx, rt::pp_test(8, 9), 1, 1), minfer::Error);
  // A depth past one prefill batch (512) fills the cache in batches.
  cp.n_ctx = 1100;
  rt::Context deep(*m, cp);
  const auto p = rt::run_bench(deep, rt::pp_test(4, 1096), 1, 1);
  EXPECT_EQ(deep.stats().tokens_evaluated, 2u * (1096 + 4));
  EXPECT_EQ(p.test, "pp4 @ d1096");
  ASSERT_EQ(p.samples_ts.size(), 1u);
  EXPECT_EQ(deep.n_past(), 0);
  EXPECT_THROW(rt::run_bench(ctx, rt::pp_test(4), 0, 1), minfer::Error);
  // -b/-ub: a prompt goes in decode calls of at most n_batch tokens (the warm-up's and the
  // timed run's 10 tokens in calls of 4, 4 and 2).
  const uint64_t calls = ctx.stats().decode_calls;
  rt::run_bench(ctx, rt::pp_test(10), 1, 1, 4);
  EXPECT_EQ(ctx.stats().decode_calls - calls, 2u * 3);
  EXPECT_THROW(rt::run_bench(ctx, rt::pp_test(4), 1, 1, 0), minfer::Error);
}
