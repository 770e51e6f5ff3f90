// Embeddings: the hidden states an embeddings context returns are the ones the logits come
// from (checked against the output matrix with a plain dot product), and embed() pools them as
// llama.cpp does (mean, first, last; unit length), the same for any batch size.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "common/test_data.h"
#include "quant/quant.h"
#include "runtime/context.h"
#include "runtime/embed.h"
#include "runtime/model.h"
#include "tokenizer/tokenizer.h"

using namespace minfer;

namespace {

runtime::ContextParams params(bool embeddings) {
  runtime::ContextParams p;
  p.n_ctx = 128;
  p.n_threads = 1;
  p.kv_type = GgmlType::F32;
  p.embeddings = embeddings;
  return p;
}

std::vector<float> normalized(std::vector<double> v) {
  double n = 0;
  for (double x : v) n += x * x;
  std::vector<float> out;
  for (double x : v) out.push_back(float(x / std::sqrt(n)));
  return out;
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, float tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << "element " << i;
}

}  // namespace

TEST(Embeddings, HiddenStatesAreWhatTheLogitsComeFrom) {
  MINFER_REQUIRE_SHARED();
  const auto model = runtime::Model::load(test::shared_path("models/stories260K.gguf"));
  const auto& hp = model->hparams();
  const std::vector<int32_t> tokens = model->tokenizer().encode("Once upon a time, a little dog", true, false);
  const int64_t nt = int64_t(tokens.size()), ne = hp.n_embd, nv = hp.n_vocab;
  runtime::Context ce(*model, params(true)), cl(*model, params(false));
  ASSERT_EQ(ce.row_width(), ne);
  const auto h = ce.decode(tokens, nt);
  const std::vector<float> hidden(h.begin(), h.end());
  const auto l = cl.decode(tokens, nt);
  const std::vector<float> logits(l.begin(), l.end());
  ASSERT_EQ(hidden.size(), size_t(nt * ne));

  // logits[i][v] = output row v . hidden[i], the output matrix read from the GGUF rows.
  const models::TensorRef& w = model->tensors().get(hp.tied_output ? "token_embd.weight" : "output.weight");
  std::vector<float> row(static_cast<size_t>(ne));
  double worst = 0;
  for (int64_t v = 0; v < nv; ++v) {
    quant::dequantize_row(w.type, w.data + size_t(v) * row_size(w.type, ne), row.data(), ne);
    for (int64_t i = 0; i < nt; ++i) {
      double dot = 0;
      for (int64_t k = 0; k < ne; ++k) dot += double(row[size_t(k)]) * hidden[size_t(i * ne + k)];
      worst = std::max(worst, std::fabs(dot - logits[size_t(i * nv + v)]));
    }
  }
  EXPECT_LT(worst, 1e-3);

  // Pooled: the mean, the first and the last row, at unit length; batches do not change them.
  std::vector<double> mean(static_cast<size_t>(ne), 0.0), first(static_cast<size_t>(ne)), last(static_cast<size_t>(ne));
  for (int64_t k = 0; k < ne; ++k) {
    for (int64_t i = 0; i < nt; ++i) mean[size_t(k)] += hidden[size_t(i * ne + k)] / double(nt);
    first[size_t(k)] = hidden[size_t(k)];
    last[size_t(k)] = hidden[size_t((nt - 1) * ne + k)];
  }
  using runtime::Pooling;
  for (int64_t batch : {int64_t(512), int64_t(3)}) {
    expect_near(runtime::embed(ce, tokens, Pooling::Mean, batch), normalized(mean), 1e-5f);
    expect_near(runtime::embed(ce, tokens, Pooling::Cls, batch), normalized(first), 1e-5f);
    expect_near(runtime::embed(ce, tokens, Pooling::Last, batch), normalized(last), 1e-5f);
  }
  // Without normalization the mean itself; pooling none: every row, each normalized alone.
  std::vector<float> raw_mean(mean.begin(), mean.end());
  expect_near(runtime::embed(ce, tokens, Pooling::Mean, 3, -1), raw_mean, 1e-5f);
  for (int64_t batch : {int64_t(512), int64_t(2)}) {
    const auto rows = runtime::embed_tokens(ce, tokens, batch);
    ASSERT_EQ(rows.size(), size_t(nt));
    for (int64_t i = 0; i < nt; ++i)
      expect_near(rows[size_t(i)], normalized(std::vector<double>(hidden.begin() + i * ne, hidden.begin() + (i + 1) * ne)), 1e-5f);
  }
  EXPECT_THROW(runtime::embed(ce, tokens, Pooling::None), Error);
  EXPECT_THROW(runtime::embed(cl, tokens, Pooling::Mean), Error);  // a logits context
  EXPECT_THROW(runtime::embed(ce, {}, Pooling::Mean), Error);
  EXPECT_EQ(runtime::pooling_from_name("last"), Pooling::Last);
  EXPECT_THROW(runtime::pooling_from_name("max"), Error);
}

// llama.cpp's embd_normalize, each kind worked out by hand.
TEST(Embeddings, NormalizeAsLlamaCpp) {
  const std::vector<double> v = {3.0, -4.0, 0.0, 12.0};
  using runtime::normalize_embedding;
  expect_near(normalize_embedding(v, -1), {3, -4, 0, 12}, 0);
  expect_near(normalize_embedding(v, 0), {8190, -10920, 0, 32760}, 1e-2f);    // max |x| -> 32760
  expect_near(normalize_embedding(v, 1), {3.f / 19, -4.f / 19, 0, 12.f / 19}, 1e-7f);  // taxicab
  expect_near(normalize_embedding(v, 2), {3.f / 13, -4.f / 13, 0, 12.f / 13}, 1e-7f);  // Euclidean
  const double p3 = std::cbrt(27.0 + 64.0 + 1728.0);
  expect_near(normalize_embedding(v, 3), {float(3 / p3), float(-4 / p3), 0, float(12 / p3)}, 1e-7f);
  expect_near(normalize_embedding(std::vector<double>{0, 0}, 2), {0, 0}, 0);
}

// llama.cpp's own embedding of the same text: the oracle (node-llama-cpp 3.21.1, llama.cpp
// v0.4.0, its default F16 KV cache) through getEmbeddingFor on an embeddings context, which for
// a model without a pooling type returns the last token's hidden state as it is. Recorded here
// from ../shared/oracle (2026-12-06); F16 against our F32 cache leaves ~2e-4 of difference.
TEST(Embeddings, LastTokenMatchesLlamaCpp) {
  MINFER_REQUIRE_SHARED();
  static const float kLlamaCpp[] = {
    4.608512f, -0.167478f, -2.103388f, -1.474783f, -1.003617f, -6.059639f, 1.551608f, -0.893736f,
    -0.098671f, -1.032585f, -0.150404f, 0.543801f, 0.785811f, -0.701265f, 2.258093f, 0.817256f,
    1.299546f, -0.515477f, -0.967871f, -2.139665f, -2.739954f, 1.683712f, 1.398914f, 0.351710f,
    -2.434167f, -0.140316f, 1.297200f, 0.716999f, 1.490002f, -2.467418f, 0.740761f, 9.850902f,
    2.883896f, 0.306201f, -0.693117f, -0.987493f, -2.601249f, -1.996062f, 0.942420f, -0.050486f,
    2.296038f, 3.626960f, -0.323441f, -2.357471f, 1.009581f, 0.021047f, 0.291556f, -1.374996f,
    0.878556f, 1.114298f, 0.438816f, 0.003655f, -2.652493f, -1.891505f, 3.037514f, 1.263824f, 1.317335f,
    -1.440661f, 0.133411f, -0.929291f, 0.445972f, -1.625818f, -0.943999f, 1.838244f
  };
  std::vector<double> want(std::begin(kLlamaCpp), std::end(kLlamaCpp));
  const auto model = runtime::Model::load(test::shared_path("models/stories260K.gguf"));
  ASSERT_EQ(size_t(model->hparams().n_embd), want.size());
  runtime::Context ctx(*model, params(true));
  const std::vector<int32_t> tokens = model->tokenizer().encode("Once upon a time, a little dog", true, true);
  expect_near(runtime::embed(ctx, tokens, runtime::Pooling::Last), normalized(want), 1e-3f);
  // Not normalized (--embd-normalize -1): llama.cpp's values themselves.
  expect_near(runtime::embed(ctx, tokens, runtime::Pooling::Last, 512, -1),
              std::vector<float>(std::begin(kLlamaCpp), std::end(kLlamaCpp)), 5e-3f);
}
