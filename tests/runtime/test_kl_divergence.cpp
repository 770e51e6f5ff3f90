// llama-perplexity's --kl-divergence in two runs (runtime/kl_divergence.h): the base run's file
// read back by another model's run. A model against itself: no divergence, the same top token
// everywhere, both perplexities equal. stories260K against its Q4_0 copy: the file round trip's
// mean KL divergence equals one computed directly from both models' log-probabilities in
// double precision. Files that do not fit are errors naming them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/shared_model.h"
#include "common/test_data.h"
#include "runtime/context.h"
#include "runtime/kl_divergence.h"
#include "runtime/model.h"
#include "runtime/perplexity.h"
#include "tokenizer/tokenizer.h"
#include "tools/quantize.h"

using namespace minfer;
namespace fs = std::filesystem;

namespace {

const std::string kText = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big red ball under a tree. She ran to the ball and picked it up. It was soft and bouncy.\nLily wanted to show the ball to her mom. She ran home as fast as she could. \"Mom, look what I found!\" she said. Her mom smiled and said, \"That is a very nice ball, Lily. Do you want to play with it in the garden?\"\nLily nodded and they went to the garden together. They threw the ball back and forth. The sun was shining and the birds were singing. Lily was very happy.\nThen a small dog came into the garden. The dog saw the ball and wanted to play too. Lily was scared at first, but the dog was friendly. It wagged its tail and barked. Lily threw the ball and the dog ran after it.\nThe dog brought the ball back to Lily. She laughed and threw it again. They played all afternoon. When it was time to go inside, Lily said goodbye to the dog. She knew she had made a new friend.\n";
constexpr int64_t kCtx = 64;

fs::path temp(const std::string& what) {
  return fs::temp_directory_path() / ("minfer-kld-" + std::to_string(::getpid()) + "-" + what);
}

// Every scored position's log-probabilities of `m` over `tokens` (chunks of kCtx).
std::vector<std::vector<double>> scored(const runtime::Model& m, const std::vector<int32_t>& tokens,
                                        runtime::KldBaseWriter* writer = nullptr) {
  runtime::ContextParams cp;
  cp.n_ctx = kCtx;
  cp.n_threads = 2;
  cp.kv_type = GgmlType::F32;
  runtime::Context ctx(m, cp);
  std::vector<std::vector<double>> out;
  runtime::perplexity(ctx, tokens, kCtx, 32, m.tokenizer().bos(), 0, {}, [&](int64_t, std::span<const double> lp, int32_t) {
    out.emplace_back(lp.begin(), lp.end());
    if (writer) writer->add(lp);
  });
  return out;
}

TEST(KlDivergence, SelfIsZeroAndAQuantizationMatchesTheDirectSum) {
  MINFER_REQUIRE_SHARED();
  const runtime::Model& base = test::shared_model("stories260K.gguf");
  const std::vector<int32_t> tokens = base.tokenizer().encode(kText, true, false);
  const fs::path file = temp("base.kld");
  std::vector<std::vector<double>> lb;
  {
    runtime::KldBaseWriter w(file.string(), kCtx, base.n_vocab(), tokens);
    lb = scored(base, tokens, &w);
    w.finish();
  }
  const fs::path q4 = temp("q4.gguf");
  tools::quantize_model(test::shared_path("models/stories260K.gguf"), q4.string(), "Q4_0", 1, {}, nullptr, nullptr);
  auto quant = runtime::Model::load(q4.string());
  fs::remove(q4);

  for (const runtime::Model* m : {&base, static_cast<const runtime::Model*>(quant.get())}) {
    runtime::KldBaseReader r(file.string(), m->n_vocab());
    EXPECT_EQ(r.n_ctx(), kCtx);
    EXPECT_EQ(r.tokens(), tokens);
    runtime::KldStats stats;
    const std::vector<std::vector<double>> lq = scored(*m, r.tokens());
    ASSERT_EQ(lq.size(), lb.size());
    double direct = 0;
    for (size_t i = 0; i < lq.size(); ++i) {
      const int32_t next = tokens[(i / (kCtx - kCtx / 2 - 1)) * kCtx + kCtx / 2 + i % (kCtx - kCtx / 2 - 1) + 1];
      stats.add(r.next(), lq[i], next);
      for (size_t v = 0; v < lb[i].size(); ++v) direct += std::exp(lb[i][v]) * (lb[i][v] - lq[i][v]);
    }
    direct /= double(lq.size());
    EXPECT_THROW(r.next(), Error);  // nothing beyond the scored positions
    const std::string summary = stats.summary();
    if (m == &base) {
      EXPECT_LT(stats.mean_kld(), 1e-6);
      EXPECT_NE(summary.find("Same top p: 100.000"), std::string::npos) << summary;
    } else {
      EXPECT_GT(direct, 1e-3);
      EXPECT_NEAR(stats.mean_kld() / direct, 1.0, 1e-3);
      EXPECT_EQ(summary.find("Same top p: 100.000"), std::string::npos) << summary;
    }
    for (const char* line : {"Mean PPL(Q)", "Mean PPL(base)", "Mean    KLD:", "99.9%   KLD:", "RMS Δp", "Same top p:"})
      EXPECT_NE(summary.find(line), std::string::npos) << line;
  }

  // Another vocabulary, a cut file, not a base file: errors naming the file.
  EXPECT_THROW(runtime::KldBaseReader(file.string(), 1000), Error);
  const auto size = fs::file_size(file);
  fs::resize_file(file, size - 100);
  {
    runtime::KldBaseReader r(file.string(), base.n_vocab());
    for (size_t i = 0; i + 1 < lb.size(); ++i) r.next();
    EXPECT_THROW(r.next(), Error);
  }
  {  // a header whose token count is far beyond the file
    std::ofstream o(file, std::ios::binary);
    const uint32_t version = 1;
    const int64_t n_ctx = 64, n_vocab = base.n_vocab(), n = int64_t(1) << 31;
    o.write("MINFERKL", 8);
    o.write(reinterpret_cast<const char*>(&version), 4);
    o.write(reinterpret_cast<const char*>(&n_ctx), 8);
    o.write(reinterpret_cast<const char*>(&n_vocab), 8);
    o.write(reinterpret_cast<const char*>(&n), 8);
  }
  EXPECT_THROW(runtime::KldBaseReader(file.string(), base.n_vocab()), Error);
  std::ofstream(file, std::ios::binary) << "not a base file";
  try {
    runtime::KldBaseReader r(file.string(), base.n_vocab());
    ADD_FAILURE() << "read a file that is not one";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
  fs::remove(file);
}

}  // namespace
