// Context behaviour: fused == unfused decode, the n_out tail equals the full graph's last row,
// graph reuse over a generation, KV surviving graph rebuilds, n_ctx limits, truncate, traces.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/error.h"
#include "common/rewritten_model.h"
#include "common/shared_model.h"
#include "common/test_data.h"
#include "gguf/gguf.h"
#include "graph/ir.h"
#include "runtime/context.h"
#include "runtime/memory_limit.h"
#include "runtime/model.h"
#include "tokenizer/tokenizer.h"

using namespace minfer;

namespace {

const runtime::Model& model(const std::string& name) { return test::shared_model(name); }

std::vector<float> run(runtime::Context& ctx, const std::vector<int32_t>& ids, int64_t n_out = 1) {
  auto s = ctx.decode(ids, n_out);
  return {s.begin(), s.end()};
}

int count_op(const graph::ComputeGraph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += graph::op_name(node.op) == op;
  return n;
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

const std::vector<int32_t> kQwenPrompt = {12522, 5193, 264, 882, 11, 1052, 572};

}  // namespace

class FusedDecode : public ::testing::TestWithParam<const char*> {};

// Fused decode nodes compose the same kernels as the unfused ones: the logits must be equal.
TEST_P(FusedDecode, MatchesUnfused) {
  MINFER_REQUIRE_SHARED();
  const runtime::Model& m = model(GetParam());
  runtime::ContextParams on, off;
  off.fuse_qkv = off.fuse_ffn = false;
  runtime::Context a(m, on), b(m, off);
  const auto& ga = a.graph_for(1, 1);
  const auto& gb = b.graph_for(1, 1);
  const int n_layer = int(m.hparams().n_layer);
  if (m.hparams().qk_norm) {
    EXPECT_EQ(count_op(ga, "FusedQkvNorm"), n_layer);
  } else {
    EXPECT_EQ(count_op(ga, "FusedQKV"), n_layer);
  }
  EXPECT_EQ(count_op(ga, "FusedFFN"), n_layer);
  EXPECT_EQ(count_op(gb, "FusedQKV") + count_op(gb, "FusedQkvNorm") + count_op(gb, "FusedFFN"), 0);
  EXPECT_EQ(count_op(gb, "SwiGLU"), n_layer);  // FusionPass ran on the unfused graph

  // Prefill: FusedFFN (one matmul_swiglu) against gate, up and SwiGLU.
  EXPECT_EQ(count_op(a.graph_for(int64_t(kQwenPrompt.size()), 1), "FusedFFN"), n_layer);
  EXPECT_EQ(count_op(b.graph_for(int64_t(kQwenPrompt.size()), 1), "FusedFFN"), 0);
  EXPECT_EQ(run(a, kQwenPrompt), run(b, kQwenPrompt));
  int32_t tok = 15540;
  for (int step = 0; step < 4; ++step) {
    std::vector<float> la = run(a, {tok}), lb = run(b, {tok});
    ASSERT_EQ(max_diff(la, lb), 0.0f) << "decode step " << step;
    tok = int32_t(std::max_element(la.begin(), la.end()) - la.begin());
  }
}

INSTANTIATE_TEST_SUITE_P(Qwen, FusedDecode,
                         ::testing::Values("tiny-qwen2-q8_0.gguf", "tiny-qwen3-q4_0.gguf"));

TEST(Context, TailRowsEqualFullGraphLastRow) {
  MINFER_REQUIRE_SHARED();
  for (const char* name : {"stories260K.gguf", "tiny-qwen2-q8_0.gguf"}) {
    const runtime::Model& m = model(name);
    const std::vector<int32_t> ids = std::string(name).find("qwen") != std::string::npos
                                         ? kQwenPrompt
                                         : std::vector<int32_t>{1, 403, 407, 261, 500, 271, 312};
    runtime::Context tail(m), full(m);
    const std::vector<float> lt = run(tail, ids, 1);
    const std::vector<float> lf = run(full, ids, int64_t(ids.size()));
    const size_t nv = size_t(m.n_vocab());
    const std::vector<float> last(lf.end() - ptrdiff_t(nv), lf.end());
    EXPECT_LE(max_diff(lt, last), 1e-5f) << name;
    EXPECT_EQ(count_op(tail.graph_for(int64_t(ids.size()), 1), "GetRows"), 2);
  }
}

TEST(Context, GraphReuseOverFiftyTokens) {
  MINFER_REQUIRE_SHARED();
  runtime::Context ctx(model("stories260K.gguf"));
  std::vector<float> l = run(ctx, {1, 403, 407, 261, 500});
  for (int i = 0; i < 50; ++i) {
    const int32_t tok = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
    l = run(ctx, {tok});
  }
  EXPECT_EQ(ctx.stats().graphs_built, 2u);   // the prefill graph and the decode graph
  EXPECT_EQ(ctx.stats().graph_reuses, 49u);  // every decode step after the first
  EXPECT_EQ(ctx.stats().prefill_builds, 1u);
  EXPECT_EQ(ctx.stats().decode_builds, 1u);
  EXPECT_EQ(ctx.stats().tokens_evaluated, 55u);
  EXPECT_EQ(ctx.n_past(), 55);
}

// A different batch shape rebuilds the prefill graph and re-plans its buffers; the KV cache
// is owned by the context and must come through intact.
TEST(Context, KvSurvivesRebuild) {
  MINFER_REQUIRE_SHARED();
  const runtime::Model& m = model("tiny-qwen2-q8_0.gguf");
  runtime::Context split(m), whole(m);
  run(split, {kQwenPrompt.begin(), kQwenPrompt.begin() + 4});
  run(split, {kQwenPrompt.begin() + 4, kQwenPrompt.end()});  // 3 tokens: a new graph
  EXPECT_EQ(split.stats().graphs_built, 2u);
  run(whole, kQwenPrompt);
  EXPECT_LE(max_diff(run(split, {15540}), run(whole, {15540})), 1e-4f);
}

TEST(Context, TruncateForgetsTheTail) {
  MINFER_REQUIRE_SHARED();
  const runtime::Model& m = model("stories260K.gguf");
  runtime::Context ctx(m);
  const std::vector<int32_t> a = {1, 403, 407, 261, 500}, b = {1, 403, 407, 300, 301};
  run(ctx, a);
  ctx.truncate(3);
  EXPECT_EQ(ctx.n_past(), 3);
  const std::vector<float> l1 = run(ctx, {b[3], b[4]});
  runtime::Context fresh(m);
  const std::vector<float> l2 = run(fresh, b);
  EXPECT_LE(max_diff(l1, l2), 1e-5f);
}

// tokens() is what the cache holds: decode appends, truncate cuts.
TEST(Context, TokensFollowDecodeAndTruncate) {
  MINFER_REQUIRE_SHARED();
  runtime::Context ctx(model("stories260K.gguf"));
  EXPECT_TRUE(ctx.tokens().empty());
  run(ctx, {1, 403, 407});
  run(ctx, {261});
  EXPECT_EQ(std::vector<int32_t>(ctx.tokens().begin(), ctx.tokens().end()), (std::vector<int32_t>{1, 403, 407, 261}));
  ctx.truncate(2);
  EXPECT_EQ(std::vector<int32_t>(ctx.tokens().begin(), ctx.tokens().end()), (std::vector<int32_t>{1, 403}));
  EXPECT_THROW(ctx.decode(std::vector<int32_t>{1, 99999}), Error);  // a failed decode adds nothing
  EXPECT_EQ(ctx.tokens().size(), 2u);
  // keep_prefix: the shared prefix stays, short of the whole of the new tokens.
  run(ctx, {407, 261});  // 1 403 407 261
  EXPECT_EQ(ctx.keep_prefix(std::vector<int32_t>{1, 403, 500, 7}), 2);
  EXPECT_EQ(ctx.n_past(), 2);
  run(ctx, {407, 261});
  EXPECT_EQ(ctx.keep_prefix(std::vector<int32_t>{1, 403, 407, 261}), 3);  // the last is decoded again
  EXPECT_EQ(ctx.keep_prefix(std::vector<int32_t>{9}), 0);
  EXPECT_TRUE(ctx.tokens().empty());
}

// Batches whose every row is asked for (speculative decoding's verification) keep the graphs of
// their last eight lengths beside the prompt's and the single token's; each gives the rows a
// fresh context gives.
TEST(Context, VerificationBatchesKeepTheirGraphs) {
  MINFER_REQUIRE_SHARED();
  const runtime::Model& m = model("stories260K.gguf");
  runtime::Context ctx(m);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 500};
  run(ctx, prompt);
  run(ctx, {300});
  std::vector<int32_t> all = prompt;
  all.push_back(300);
  auto step = [&](int n) {
    std::vector<int32_t> batch;
    for (int i = 0; i < n; ++i) batch.push_back(int32_t(300 + (all.size() + size_t(i)) % 100));
    const std::vector<float> got = run(ctx, batch, n);
    all.insert(all.end(), batch.begin(), batch.end());
    runtime::Context fresh(m);
    const std::vector<float> want = run(fresh, all, n);
    EXPECT_LE(max_diff(got, want), 1e-4f) << "batch of " << n;
  };
  for (int n : {2, 3, 2, 3, 4}) step(n);
  EXPECT_EQ(ctx.stats().prefill_builds, 4u);  // the prompt's, then 2, 3 and 4 once each
  for (int n : {5, 6, 7, 8, 9, 10}) step(n);  // 2 is now the least recently used: it goes
  EXPECT_EQ(ctx.stats().prefill_builds, 10u);
  step(3);
  EXPECT_EQ(ctx.stats().prefill_builds, 10u);
  step(2);
  EXPECT_EQ(ctx.stats().prefill_builds, 11u);
  run(ctx, {300}, 1);
  EXPECT_EQ(ctx.stats().decode_builds, 1u);  // the single token's graph stayed
}

TEST(Context, PromptLongerThanContextIsAnError) {
  MINFER_REQUIRE_SHARED();
  runtime::ContextParams cp;
  cp.n_ctx = 8;
  runtime::Context ctx(model("stories260K.gguf"), cp);
  std::vector<int32_t> nine(9, 1);
  EXPECT_THROW(ctx.decode(nine), Error);
  EXPECT_EQ(ctx.n_past(), 0);
  run(ctx, {1, 2, 3, 4, 5});
  EXPECT_THROW(ctx.decode(std::vector<int32_t>{6, 7, 8, 9}), Error);
  run(ctx, {6, 7, 8});  // exactly full
  EXPECT_EQ(ctx.n_past(), 8);
  EXPECT_THROW(ctx.decode(std::vector<int32_t>{1}), Error);
}

TEST(Context, BadInputsAreErrors) {
  MINFER_REQUIRE_SHARED();
  runtime::Context ctx(model("stories260K.gguf"));
  EXPECT_THROW(ctx.decode(std::vector<int32_t>{}), Error);
  EXPECT_THROW(ctx.decode(std::vector<int32_t>{512}), Error);  // vocab is 512
  EXPECT_THROW(ctx.decode(std::vector<int32_t>{-1}), Error);
  EXPECT_THROW(ctx.decode(std::vector<int32_t>{1, 2}, 3), Error);
  runtime::ContextParams cp;
  cp.kv_type = GgmlType::Q8_0;
  EXPECT_NO_THROW(runtime::Context(model("tiny-qwen2-q8_0.gguf"), cp));  // heads of 32
  EXPECT_THROW(runtime::Context(model("stories260K.gguf"), cp), Error);  // heads of 8
}

// Model::load builds the tokenizer on a thread of its own while the weights are staged: a broken
// vocabulary must still fail the load with its one clear message (rethrown once the staging has
// finished), and a good copy of the same file must load.
TEST(Model, BrokenTokenizerFailsTheLoad) {
  MINFER_REQUIRE_SHARED();
  const test::RewrittenModel good_copy("stories260K.gguf", [](gguf::Writer&) {});
  const test::RewrittenModel broken_copy("stories260K.gguf", [](gguf::Writer& w) {
    w.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::I32, {gguf::Value::i32(1)}));
  });
  const std::string& good = good_copy.path();
  const std::string& broken = broken_copy.path();
  EXPECT_EQ(runtime::Model::load(good)->tokenizer().n_vocab(), 512);
  try {
    runtime::Model::load(broken);
    ADD_FAILURE() << "a vocabulary of integers loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.tokens"), std::string::npos) << e.what();
  }
}

// A KV cache larger than the memory is refused before anything is allocated (zeroing it would
// otherwise end in the OOM killer), with the sizes in the message.
TEST(Context, KvCacheBeyondMemoryIsAnError) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  EXPECT_NO_THROW(runtime::check_kv_fits(uint64_t(2 * gib), 4096, 2 * gib));
  EXPECT_NO_THROW(runtime::check_kv_fits(uint64_t(100 * gib), 4096, 0));  // memory unknown
  try {
    runtime::check_kv_fits(uint64_t(96.1 * gib), 900008, 23.5 * gib);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("900008 tokens"), std::string::npos) << msg;
    EXPECT_NE(msg.find("96.1 GiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("23.5 GiB"), std::string::npos) << msg;
  }
  EXPECT_GT(runtime::usable_memory_bytes(), 0.0);
  // Through the context: stories260K's 5 layers of 4 KV heads x 8 dimensions, K and V, are 640
  // bytes a token in F16; a context one token past what the machine's memory holds is refused by
  // this check (the message says so), not by a later one.
  MINFER_REQUIRE_SHARED();
  const runtime::Model& stories = model("stories260K.gguf");
  EXPECT_EQ(runtime::kv_cache_bytes(stories.hparams(), 16, GgmlType::F16), 16u * 640);
  EXPECT_EQ(runtime::kv_cache_bytes(stories.hparams(), 16, GgmlType::F32), 16u * 1280);
  runtime::ContextParams cp;
  cp.n_ctx = int64_t(runtime::usable_memory_bytes() / 640) + 1;
  try {
    runtime::Context ctx(stories, cp);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the KV cache for " + std::to_string(cp.n_ctx) + " tokens"),
              std::string::npos)
        << e.what();
  }
}

// F16 and Q8_0 KV caches stay close to the F32 one (README: an F16 KV cache moves F32
// models by up to ~0.036 nats in llama.cpp; the quantized models by up to ~0.3).
TEST(Context, ReducedPrecisionKvCaches) {
  MINFER_REQUIRE_SHARED();
  struct Case {
    const char* model;
    std::vector<int32_t> ids;
    GgmlType kv;
    float tol;
  };
  const std::vector<int32_t> stories = {1, 291, 410, 456, 425, 417, 340, 268, 420, 327, 416, 272, 414, 444};
  for (const Case& c : {Case{"stories260K.gguf", stories, GgmlType::F16, 0.05f},
                        Case{"tiny-qwen2-q8_0.gguf", kQwenPrompt, GgmlType::F16, 0.3f},
                        Case{"tiny-qwen2-q8_0.gguf", kQwenPrompt, GgmlType::Q8_0, 0.5f}}) {
    const runtime::Model& m = model(c.model);
    runtime::Context ref(m);
    const int64_t nt = int64_t(c.ids.size());
    const std::vector<float> l32 = run(ref, c.ids, nt);
    runtime::ContextParams cp;
    cp.kv_type = c.kv;
    runtime::Context ctx(m, cp);
    const std::vector<float> l = run(ctx, c.ids, nt);
    const float d = max_diff(l, l32);
    EXPECT_GT(d, 0.0f) << c.model << " " << type_name(c.kv);  // really stored rounded
    EXPECT_LT(d, c.tol) << c.model << " " << type_name(c.kv);
  }
}

TEST(Context, TraceWritesOneLinePerExecutedNode) {
  MINFER_REQUIRE_SHARED();
  const auto dir = std::filesystem::temp_directory_path() / ("minfer_trace_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string trace = (dir / "trace.jsonl").string();
  const std::string dump = (dir / "dump").string();
  ::setenv("MINFER_TRACE", trace.c_str(), 1);
  ::setenv("MINFER_GRAPH_DUMP", dump.c_str(), 1);
  size_t observed = 0;
  {
    runtime::Context ctx(model("stories260K.gguf"));
    ::unsetenv("MINFER_TRACE");
    ::unsetenv("MINFER_GRAPH_DUMP");
    ctx.set_observer([&](const graph::CNode&, const float*, size_t, double) { ++observed; });
    run(ctx, {1, 403, 407});
    run(ctx, {261});
  }
  std::ifstream in(trace);
  std::string line;
  size_t lines = 0;
  bool saw_lm_head = false;
  size_t graph_lines = 0;
  while (std::getline(in, line)) {
    if (line.find("\"event\":\"graph\"") != std::string::npos) {
      // Step 0 builds the prefill graph, step 1 builds the decode graph.
      EXPECT_NE(line.find("\"reused\":false"), std::string::npos) << line;
      ++graph_lines;
      continue;
    }
    ++lines;
    EXPECT_NE(line.find("\"step\":"), std::string::npos);
    EXPECT_NE(line.find("\"backend\":\"CPU\""), std::string::npos);
    if (line.find("\"name\":\"matmul_output.weight\"") != std::string::npos) {
      saw_lm_head = true;
      EXPECT_NE(line.find("\"rms\":"), std::string::npos) << line;
      EXPECT_NE(line.find("\"nan\":0"), std::string::npos) << line;
    }
  }
  EXPECT_TRUE(saw_lm_head);
  EXPECT_EQ(graph_lines, 2u);
  EXPECT_EQ(lines, observed);
  EXPECT_GT(lines, 0u);
  // The lm_head output of step 1 has one row of 512 floats.
  bool found = false;
  for (const auto& e : std::filesystem::directory_iterator(dump + "/step0001")) {
    if (e.path().filename().string().find("matmul_output.weight") != std::string::npos) {
      EXPECT_EQ(std::filesystem::file_size(e.path()), 512u * 4);
      found = true;
    }
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(std::filesystem::exists(dump + "/index.jsonl"));
  std::filesystem::remove_all(dir);
}
