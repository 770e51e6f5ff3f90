// Perplexity as llama-perplexity computes it (runtime/perplexity.h), against llama.cpp's own
// logits put through the same chunking (the oracle's model, F32 cache, flash attention off):
// stories260K (BOS replaces each chunk's first token) and the tiny qwen2 (no BOS), per chunk
// and in total with the standard error. A text shorter than two chunks is an error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "common/shared_model.h"
#include "common/test_data.h"
#include "runtime/context.h"
#include "runtime/perplexity.h"
#include "tokenizer/tokenizer.h"

using namespace minfer;

namespace {

// A short story in the TinyStories manner (written for this test).
const std::string kText = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big red ball under a tree. She ran to the ball and picked it up. It was soft and bouncy.\nLily wanted to show the ball to her mom. She ran home as fast as she could. \"Mom, look what I found!\" she said. Her mom smiled and said, \"That is a very nice ball, Lily. Do you want to play with it in the garden?\"\nLily nodded and they went to the garden together. They threw the ball back and forth. The sun was shining and the birds were singing. Lily was very happy.\nThen a small dog came into the garden. The dog saw the ball and wanted to play too. Lily was scared at first, but the dog was friendly. It wagged its tail and barked. Lily threw the ball and the dog ran after it.\nThe dog brought the ball back to Lily. She laughed and threw it again. They played all afternoon. When it was time to go inside, Lily said goodbye to the dog. She knew she had made a new friend.\n";

struct Want {
  const char* model;
  int64_t n_ctx;
  std::vector<double> running;
  double ppl, err;
};

// llama.cpp's values: scripts/oracle/perplexity.mjs on kText in a file, F32 cache (each chunk
// evaluated with probabilities through node-llama-cpp).
const Want kWant[] = {
    {"stories260K.gguf", 64, {2.394374, 2.534429, 2.507649, 2.824036, 3.054702, 3.315059}, 3.3150587, 0.4127385},
    {"tiny-qwen2-q8_0.gguf", 48, {13296251.753, 13892611.088, 11962012.419, 16912303.366, 14770479.177}, 14770479.177,
     3876192.395},
};

TEST(Perplexity, MatchesLlamaCppOnTheSameChunks) {
  MINFER_REQUIRE_SHARED();
  for (const Want& w : kWant) {
    SCOPED_TRACE(w.model);
    const runtime::Model& m = test::shared_model(w.model);
    const tok::Tokenizer& tok = m.tokenizer();
    runtime::ContextParams cp;
    cp.n_ctx = w.n_ctx;
    cp.n_threads = 2;
    cp.kv_type = GgmlType::F32;
    runtime::Context ctx(m, cp);
    const std::vector<int32_t> tokens = tok.encode(kText, tok.add_bos(), false);
    std::vector<double> seen;
    const runtime::PerplexityResult r = runtime::perplexity(ctx, tokens, w.n_ctx, 16, tok.add_bos() ? tok.bos() : -1, 0,
                                                            [&](int64_t, double x) { seen.push_back(x); });
    ASSERT_EQ(r.running.size(), w.running.size());
    EXPECT_EQ(seen, r.running);
    for (size_t i = 0; i < w.running.size(); ++i) EXPECT_NEAR(r.running[i] / w.running[i], 1.0, 1e-4) << i;
    EXPECT_NEAR(r.ppl / w.ppl, 1.0, 1e-4);
    EXPECT_NEAR(r.stderr_ppl / w.err, 1.0, 1e-3);
    EXPECT_EQ(r.n_scored, r.n_chunks * (w.n_ctx - w.n_ctx / 2 - 1));
    // The batch size changes nothing; --chunks caps the count.
    const runtime::PerplexityResult one = runtime::perplexity(ctx, tokens, w.n_ctx, w.n_ctx, tok.add_bos() ? tok.bos() : -1, 2);
    ASSERT_EQ(one.running.size(), 2u);
    EXPECT_NEAR(one.running[1] / r.running[1], 1.0, 1e-5);
  }
}

TEST(Perplexity, TooShortATextIsAnError) {
  MINFER_REQUIRE_SHARED();
  const runtime::Model& m = test::shared_model("stories260K.gguf");
  runtime::ContextParams cp;
  cp.n_ctx = 64;
  runtime::Context ctx(m, cp);
  const std::vector<int32_t> tokens(100, 300);
  EXPECT_THROW(runtime::perplexity(ctx, tokens, 64, 16, 1), Error);
  EXPECT_THROW(runtime::perplexity(ctx, tokens, 128, 16, 1), Error);  // beyond the context
}

}  // namespace
