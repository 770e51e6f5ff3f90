// Log-probabilities that llama.cpp (the oracle: v0.4.0, `oracle.mjs --probs-all`, F32 KV cache,
// flash attention off) printed for a model file, checked against minfer's: one batch of
// kPrompt with an F32 cache, the top ids at a few positions within `tol`, and the top-1 equal.
// For model variants no shared golden file covers (rewritten keys, generated files).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/context.h"
#include "runtime/logprobs.h"
#include "runtime/model.h"

namespace minfer::test {

struct OracleTop {
  int64_t pos;
  std::vector<std::pair<int32_t, double>> top;  // (id, logprob), best first
};

inline const std::vector<int32_t> kOraclePrompt = {9707, 11,   1879,  374,   264,   1273, 315,
                                                   279,  11358, 1849, 13,    576,   3974, 13876,
                                                   38835, 3554, 1052, 2662,  323,   264};

inline void expect_oracle_logprobs(const runtime::Model& m, const std::vector<OracleTop>& expected,
                                   double tol = 0.01) {
  runtime::ContextParams cp;
  cp.n_ctx = 256;
  cp.kv_type = GgmlType::F32;
  runtime::Context ctx(m, cp);
  const int64_t nt = int64_t(kOraclePrompt.size());
  std::span<const float> logits = ctx.decode(kOraclePrompt, nt);
  const int64_t nv = m.n_vocab();
  for (const OracleTop& e : expected) {
    const std::vector<double> lp = runtime::log_softmax(logits.subspan(size_t(e.pos * nv), size_t(nv)));
    for (const auto& [id, want] : e.top) EXPECT_NEAR(lp[size_t(id)], want, tol) << "pos " << e.pos << " id " << id;
    int32_t best = 0;
    for (int32_t i = 1; i < int32_t(nv); ++i)
      if (lp[size_t(i)] > lp[size_t(best)]) best = i;
    EXPECT_EQ(best, e.top[0].first) << "pos " << e.pos;
  }
}

}  // namespace minfer::test
