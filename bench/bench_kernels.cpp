// Micro-benchmarks of the matmul kernels on the shapes of qwen3-0.6b (n_embd 1024, n_ff 3072).
// GEMV (one token, decode) is memory bound: its counter is GB/s of weights streamed, to set
// against the machine's ~31 GB/s (2 cores). GEMM (a 128-token prompt) is compute bound: its
// counter is GOP/s (2 * rows * cols * tokens), against ~1400 int8 GOP/s with VNNI. isa: 0
// scalar, 1 AVX2, 2 AVX-VNNI, 3 AVX-512 VNNI, 4 AMX (packed kernels only); levels this CPU lacks
// are skipped.
//
//   bench_kernels --benchmark_filter='Gemv/Q8_0' ; args are rows/cols/isa/threads
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/backend.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_gemm.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/threadpool.h"
#include "kernels/random_weights.h"

namespace minfer::cpu {
namespace {

// counter `name`: `per_iteration` (bytes or operations) a run, as a rate in units of 1000.
void rate(benchmark::State& st, const char* name, double per_iteration) {
  st.counters[name] = benchmark::Counter(per_iteration * double(st.iterations()), benchmark::Counter::kIsRate,
                                         benchmark::Counter::kIs1000);
}

// Makes the kernels run `isa`, or marks the benchmark skipped when this CPU lacks it.
bool use_isa(benchmark::State& st, Isa isa) {
  if (!isa_supported(isa)) {
    st.SkipWithError("ISA not available on this CPU");
    return false;
  }
  force_isa(isa);
  return true;
}

// packed: the matrix also gets its load-time x16 copy (repack.h), as a loaded model's would.
void run(benchmark::State& st, GgmlType t, int64_t nt, bool packed = false) {
  const int64_t rows = st.range(0), cols = st.range(1);
  const Isa isa = Isa(st.range(2));
  if (!use_isa(st, isa)) return;
  set_threads(int(st.range(3)));
  std::mt19937 rng(1);
  const auto w = test::random_weights(t, rows, cols, rng);
  const auto x = test::random_floats(size_t(nt * cols), rng);
  std::vector<float> y(size_t(nt * rows));
  WeightView wv{t, w.data(), rows, cols, row_size(t, cols)};
  AlignedBuffer pw;
  if (packed) {
    pw = aligned_buffer(packed_bytes(t, rows, cols));
    pack_weight(wv, pw.get());
    wv.packed = pw.get();
  }
  for (auto _ : st) {
    matmul(wv, x.data(), nt, y.data(), nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  if (nt == 1)
    rate(st, "GB/s", double(w.size()));
  rate(st, "GOP/s", 2.0 * double(rows * cols * nt));
  reset_isa();
  set_threads(0);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "cols", "isa", "threads"});
  for (int isa = 0; isa < kIsaCount; ++isa)
    for (int th : {1, 2}) {
      b->Args({1024, 1024, isa, th});
      b->Args({3072, 1024, isa, th});
      b->Args({1024, 3072, isa, th});
    }
  b->UseRealTime();
}

#define MINFER_BENCH_TYPE(T)                                                           \
  void Gemv_##T(benchmark::State& st) { run(st, GgmlType::T, 1); }                     \
  void Gemm128_##T(benchmark::State& st) { run(st, GgmlType::T, 128); }                \
  BENCHMARK(Gemv_##T)->Apply(shapes);                                                  \
  BENCHMARK(Gemm128_##T)->Apply(shapes);

// Scalar has no packed kernel: those rows measure the GGUF-layout fallback.
#define MINFER_BENCH_PACKED(T)                                                         \
  void GemvPacked_##T(benchmark::State& st) { run(st, GgmlType::T, 1, true); }         \
  void Gemm128Packed_##T(benchmark::State& st) { run(st, GgmlType::T, 128, true); }    \
  BENCHMARK(GemvPacked_##T)->Apply(shapes);                                            \
  BENCHMARK(Gemm128Packed_##T)->Apply(shapes);

MINFER_BENCH_PACKED(Q8_0)
MINFER_BENCH_PACKED(Q4_0)
MINFER_BENCH_PACKED(Q5_0)
MINFER_BENCH_PACKED(IQ4_NL)
MINFER_BENCH_PACKED(Q4_1)
MINFER_BENCH_PACKED(Q2_K)
MINFER_BENCH_PACKED(Q3_K)
MINFER_BENCH_PACKED(Q4_K)
MINFER_BENCH_PACKED(Q5_K)
MINFER_BENCH_PACKED(IQ4_XS)
MINFER_BENCH_PACKED(Q6_K)

MINFER_BENCH_TYPE(F32)
MINFER_BENCH_TYPE(F16)
MINFER_BENCH_TYPE(BF16)
MINFER_BENCH_TYPE(Q8_0)
MINFER_BENCH_TYPE(Q4_0)
MINFER_BENCH_TYPE(Q4_K)
MINFER_BENCH_TYPE(Q6_K)
MINFER_BENCH_TYPE(IQ4_XS)
MINFER_BENCH_TYPE(IQ2_XXS)
MINFER_BENCH_TYPE(IQ2_XS)
MINFER_BENCH_TYPE(IQ2_S)
MINFER_BENCH_TYPE(IQ3_XXS)
MINFER_BENCH_TYPE(IQ3_S)
MINFER_BENCH_TYPE(IQ1_S)
MINFER_BENCH_TYPE(IQ1_M)
MINFER_BENCH_TYPE(Q3_K)
MINFER_BENCH_TYPE(Q2_K)

// Decode and prefill as a model runs them: each call reads a matrix no cache holds (copies
// cycled through 512 MiB), so the numbers include what a step pays per matmul for starting its
// weight streams cold. GemvPackedCold: GB/s of weights; Gemm128PackedCold: GOP/s of a 128-token
// prompt. Args: rows, cols, threads (the best ISA, or MINFER_ISA's).
void packed_cold(benchmark::State& st, GgmlType t, int64_t nt) {
  const int64_t rows = st.range(0), cols = st.range(1);
  set_threads(int(st.range(2)));
  std::mt19937 rng(1);
  const auto w = test::random_weights(t, rows, cols, rng);
  const auto x = test::random_floats(size_t(nt * cols), rng);
  std::vector<float> y(static_cast<size_t>(nt * rows));
  WeightView wv{t, w.data(), rows, cols, row_size(t, cols)};
  const size_t pb = packed_bytes(t, rows, cols);
  AlignedBuffer pw = aligned_buffer(pb);
  wv.packed = pw.get();
  pack_weight(wv, pw.get());
  const size_t stride = (pb + 4095) / 4096 * 4096, copies = std::max<size_t>(2, (size_t(512) << 20) / stride);
  AlignedBuffer all = aligned_buffer(stride * copies);
  for (size_t i = 0; i < copies; ++i) std::memcpy(all.get() + i * stride, pw.get(), pb);
  size_t i = 0;
  for (auto _ : st) {
    wv.packed = all.get() + (i++ % copies) * stride;
    matmul(wv, x.data(), nt, y.data(), nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  if (nt == 1)
    rate(st, "GB/s", double(pb));
  else
    rate(st, "GOP/s", 2.0 * double(rows * cols * nt));
  set_threads(0);
}
void GemvPackedCold(benchmark::State& st, GgmlType t) { packed_cold(st, t, 1); }
void Gemm128PackedCold(benchmark::State& st, GgmlType t) { packed_cold(st, t, 128); }
void cold_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "cols", "threads"});
  for (int th : {1, 2})  // qwen2.5-0.5b's q+k+v, attn_output, gate+up, down; qwen3's q+k+v
    for (auto [r, c] : {std::pair{1152, 896}, {896, 896}, {9728, 896}, {896, 4864}, {4096, 1024}})
      b->Args({r, c, th});
  b->UseRealTime();
}
// The K-quants need rows of a multiple of 256: qwen3-0.6b's q, k, v, attn_output, gate + up, down.
void cold_shapes_256(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "cols", "threads"});
  for (int th : {1, 2})
    for (auto [r, c] : {std::pair{2048, 1024}, {1024, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072}})
      b->Args({r, c, th});
  b->UseRealTime();
}
BENCHMARK_CAPTURE(GemvPackedCold, Q8_0, GgmlType::Q8_0)->Apply(cold_shapes);
BENCHMARK_CAPTURE(GemvPackedCold, Q4_0, GgmlType::Q4_0)->Apply(cold_shapes);
BENCHMARK_CAPTURE(GemvPackedCold, Q5_0, GgmlType::Q5_0)->Apply(cold_shapes);
BENCHMARK_CAPTURE(GemvPackedCold, IQ4_NL, GgmlType::IQ4_NL)->Apply(cold_shapes);
BENCHMARK_CAPTURE(GemvPackedCold, Q4_1, GgmlType::Q4_1)->Apply(cold_shapes);
BENCHMARK_CAPTURE(GemvPackedCold, Q2_K, GgmlType::Q2_K)->Apply(cold_shapes_256);
BENCHMARK_CAPTURE(GemvPackedCold, Q3_K, GgmlType::Q3_K)->Apply(cold_shapes_256);
BENCHMARK_CAPTURE(GemvPackedCold, Q4_K, GgmlType::Q4_K)->Apply(cold_shapes_256);
BENCHMARK_CAPTURE(GemvPackedCold, Q6_K, GgmlType::Q6_K)->Apply(cold_shapes_256);
BENCHMARK_CAPTURE(Gemm128PackedCold, Q8_0, GgmlType::Q8_0)->Apply(cold_shapes);
BENCHMARK_CAPTURE(Gemm128PackedCold, Q4_0, GgmlType::Q4_0)->Apply(cold_shapes);
BENCHMARK_CAPTURE(Gemm128PackedCold, Q4_K, GgmlType::Q4_K)->Apply(cold_shapes_256);

// Attention of qwen2.5-0.5b (14 query heads, 2 KV heads, head size 64) or qwen3-0.6b (16, 8,
// 128): a prompt of n tokens from position 0 (prefill), or one token at position n - 1 (decode).
// Args: n, prefill, F16 KV, threads, qwen3.
void Attention(benchmark::State& st) {
  const bool q3 = st.range(4) != 0;
  const int64_t n = st.range(0), n_head = q3 ? 16 : 14, n_head_kv = q3 ? 8 : 2, hd = q3 ? 128 : 64;
  const bool prefill = st.range(1) != 0;
  const GgmlType kvt = st.range(2) ? GgmlType::F16 : GgmlType::F32;
  set_threads(int(st.range(3)));
  std::mt19937 rng(1);
  // Keys in the layout the KV store gives them on this CPU (kv_keys_blocked).
  const bool blocked = kv_keys_blocked(kvt);
  std::vector<uint8_t> kmem(kv_region_bytes(kvt, n_head_kv * hd, n, n_head_kv, blocked));
  std::vector<uint8_t> vmem(kv_region_bytes(kvt, n_head_kv * hd, n, n_head_kv));
  KvRegion k = make_kv_region(kvt, kmem.data(), n_head_kv * hd, n, n_head_kv, blocked);
  KvRegion v = make_kv_region(kvt, vmem.data(), n_head_kv * hd, n, n_head_kv);
  std::vector<int32_t> pos(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) pos[i] = int32_t(i);
  const auto kv = test::random_floats(size_t(n * n_head_kv * hd), rng);
  kv_store(k, kv.data(), pos.data(), n);
  kv_store(v, kv.data(), pos.data(), n);
  const int64_t nt = prefill ? n : 1;
  const auto q = test::random_floats(size_t(nt * n_head * hd), rng);
  std::vector<float> out(size_t(nt * n_head * hd));
  const AttnParams p{n_head, n_head_kv, hd, hd, 0.125f};
  const int32_t* qpos = prefill ? pos.data() : pos.data() + n - 1;
  for (auto _ : st) {
    attention(q.data(), qpos, nt, k, v, p, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  set_threads(0);
}
BENCHMARK(Attention)
    ->ArgNames({"n", "prefill", "f16", "threads", "qwen3"})
    ->Args({512, 1, 1, 1, 0})
    ->Args({512, 0, 1, 1, 0})
    ->Args({512, 1, 0, 1, 0})
    ->Args({512, 1, 1, 2, 0})
    ->Args({512, 1, 1, 1, 1})
    ->Args({512, 0, 1, 1, 1})
    ->Args({128, 1, 1, 1, 1})
    ->Args({128, 1, 1, 2, 1})
    ->Args({2048, 0, 1, 2, 1})
    ->Args({2048, 0, 1, 2, 0})
    ->UseRealTime();

// A prompt's activations for the packed K-quant kernels: 128 tokens of `cols` floats to Q8_K rows
// and their Q8KSums (packed_act_quantize_k; isa 1 is the AVX2 row and the scalar sums), once per
// matmul. GB/s of floats read. Args: cols, isa.
void ActQuantQ8K(benchmark::State& st) {
  const int64_t cols = st.range(0), nt = 128, nsb = cols / 256;
  const Isa isa = Isa(st.range(1));
  if (!use_isa(st, isa)) return;
  std::mt19937 rng(1);
  const auto x = test::random_floats(size_t(nt * cols), rng);
  std::vector<quant::block_q8_K> row(size_t(nt * nsb));
  std::vector<Q8KSums> sums(row.size());
  for (auto _ : st) {
    for (int64_t t = 0; t < nt; ++t)
      packed_act_quantize_k(x.data() + t * cols, nsb, reinterpret_cast<uint8_t*>(row.data() + t * nsb),
                            sums.data() + t * nsb);
    benchmark::DoNotOptimize(sums.data());
  }
  rate(st, "GB/s", 4.0 * double(nt * cols));
  reset_isa();
}
BENCHMARK(ActQuantQ8K)->ArgNames({"cols", "isa"})->ArgsProduct({{1024, 3072}, {0, 1, 3}});

// A prompt's activations quantized to Q8_0 into the packed _0 kernels' tiles (packed_act_quantize
// for Q4_0 weights, as matmul_packed calls it per token): GB/s of floats read. Args: cols, isa.
void ActQuantQ8_0(benchmark::State& st) {
  const int64_t cols = st.range(0), nt = 128, nb = cols / 32;
  const Isa isa = Isa(st.range(1));
  if (!use_isa(st, isa)) return;
  std::mt19937 rng(1);
  const auto x = test::random_floats(size_t(nt * cols), rng);
  const int64_t tile = act_tile(nt);
  const size_t n_act = size_t(act_tokens_padded(nt) * nb);
  std::vector<uint8_t> row(row_size(GgmlType::Q8_0, cols)), tq(32 * n_act);
  std::vector<float> d(n_act);
  std::vector<int32_t> c(n_act);
  for (auto _ : st) {
    for (int64_t t = 0; t < nt; ++t)
      packed_act_quantize(GgmlType::Q4_0, x.data() + t * cols, nb, t, tile, row.data(), false, tq.data(),
                          d.data(), c.data());
    benchmark::DoNotOptimize(c.data());
  }
  rate(st, "GB/s", 4.0 * double(nt * cols));
  reset_isa();
}
BENCHMARK(ActQuantQ8_0)->ArgNames({"cols", "isa"})->ArgsProduct({{896, 4864}, {1, 3}});

// A prompt's RMS norm (rms_norm, ggml's double sums): GB/s of rows read. Args: tokens, cols,
// threads.
void RmsNorm(benchmark::State& st) {
  const int64_t nt = st.range(0), d = st.range(1);
  set_threads(int(st.range(2)));
  std::mt19937 rng(1);
  const auto x = test::random_floats(size_t(nt * d), rng), w = test::random_floats(size_t(d), rng);
  std::vector<float> out(x.size());
  for (auto _ : st) {
    rms_norm(x.data(), w.data(), nt, d, 1e-6f, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  rate(st, "GB/s", 4.0 * double(nt * d));
  set_threads(0);
}
BENCHMARK(RmsNorm)->ArgNames({"tokens", "cols", "threads"})->ArgsProduct({{64, 512}, {896, 1024}, {1, 2}})->UseRealTime();

// A prompt's RoPE of the query heads (rope_to, NeoX as qwen2): GB/s of rows read. Args:
// tokens, heads, threads.
void Rope(benchmark::State& st) {
  const int64_t nt = st.range(0), nh = st.range(1), hd = 64;
  set_threads(int(st.range(2)));
  std::mt19937 rng(1);
  const auto x = test::random_floats(size_t(nt * nh * hd), rng);
  std::vector<float> out(x.size());
  std::vector<int32_t> pos(static_cast<size_t>(nt));
  for (int64_t i = 0; i < nt; ++i) pos[size_t(i)] = int32_t(i);
  RopeParams p;
  p.style = RopeStyle::NeoX;
  p.n_rot = hd;
  p.freq_base = 1000000.0f;
  for (auto _ : st) {
    rope_to(x.data(), out.data(), pos.data(), nt, nh, hd, p);
    benchmark::DoNotOptimize(out.data());
  }
  rate(st, "GB/s", 4.0 * double(x.size()));
  set_threads(0);
}
BENCHMARK(Rope)->ArgNames({"tokens", "heads", "threads"})->ArgsProduct({{64, 512}, {14}, {1, 2}})->UseRealTime();

// Load-time repacking (pack_weight, threads as the loader's pool) of a 3072 x 1024 matrix into a
// buffer already touched, as loading a model repacks each matrix: GB/s of GGUF bytes.
void PackWeight(benchmark::State& st, GgmlType t) {
  constexpr int64_t rows = 3072, cols = 1024;
  set_threads(int(st.range(0)));
  std::mt19937 rng(1);
  const auto w = test::random_weights(t, rows, cols, rng);
  const WeightView wv{t, w.data(), rows, cols, row_size(t, cols)};
  AlignedBuffer out = aligned_buffer(packed_bytes(t, rows, cols));
  std::memset(out.get(), 0, packed_bytes(t, rows, cols));
  for (auto _ : st) {
    pack_weight(wv, out.get());
    benchmark::DoNotOptimize(out.get());
  }
  rate(st, "GB/s", double(w.size()));
  set_threads(0);
}
BENCHMARK_CAPTURE(PackWeight, Q8_0, GgmlType::Q8_0)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_CAPTURE(PackWeight, Q4_0, GgmlType::Q4_0)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_CAPTURE(PackWeight, Q5_0, GgmlType::Q5_0)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_CAPTURE(PackWeight, Q2_K, GgmlType::Q2_K)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_CAPTURE(PackWeight, Q3_K, GgmlType::Q3_K)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_CAPTURE(PackWeight, IQ4_XS, GgmlType::IQ4_XS)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_CAPTURE(PackWeight, Q4_K, GgmlType::Q4_K)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_CAPTURE(PackWeight, Q5_K, GgmlType::Q5_K)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_CAPTURE(PackWeight, Q6_K, GgmlType::Q6_K)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();

// The machine's memory read bandwidth now, the denominator of the decode bound (31 GB/s on 2
// cores of a quiet host here): the threads sum 64-byte lines of a 1 GiB buffer on 2 MiB pages,
// 256 chunks handed out as the matmuls' work items are. On a shared host it shows how much of
// the bandwidth the neighbours leave, next to a sitting's decode numbers. Args: threads.
void MemRead(benchmark::State& st) {
  set_threads(int(st.range(0)));
  constexpr size_t kBytes = size_t(1) << 30, kChunks = 256, kWords = kBytes / kChunks / 8;
  AlignedBuffer buf = aligned_buffer(kBytes, "MemRead buffer");
  std::memset(buf.get(), 1, kBytes);
  std::vector<uint64_t> sums(kChunks);
  for (auto _ : st) {
    parallel_for(int64_t(kChunks), [&](int64_t c, int) {
      const auto* p = reinterpret_cast<const uint64_t*>(buf.get()) + size_t(c) * kWords;
      uint64_t s[8] = {};  // 8 independent sums: one 64-byte line a step
      for (size_t i = 0; i < kWords; i += 8)
        for (int j = 0; j < 8; ++j) s[j] += p[i + j];
      sums[size_t(c)] = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
    });
    benchmark::DoNotOptimize(sums.data());
  }
  rate(st, "GB/s", double(kBytes));
  set_threads(0);
}
BENCHMARK(MemRead)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();

}  // namespace
}  // namespace minfer::cpu

BENCHMARK_MAIN();
