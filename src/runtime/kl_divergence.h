// llama-perplexity's --kl-divergence, in two runs: the base model's run writes, beside its
// perplexity, every scored position's log-probabilities to a file (KldBaseWriter); a run of
// another model (a quantization of it) reads them back for the same tokens (KldBaseReader, which
// also gives the tokens and the chunk size) and compares (KldStats): KL divergence of its
// distribution from the base's, the change of the next token's probability, whether the most
// probable token is the same, and both perplexities.
//
// File (minfer's own): "MINFERKL", u32 version (1), i64 n_ctx, i64 n_vocab, i64 n_tokens, i32
// tokens; then per scored position f32 lowest log-probability L (at least -64) and n_vocab u16,
// log p = L * (1 - q / 65535) (steps of |L| / 65535: 1e-3 for L = -64).
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace minfer::runtime {

class KldBaseWriter {
 public:
  // Error when the file cannot be written. The tokens are the whole text's.
  KldBaseWriter(const std::string& path, int64_t n_ctx, int64_t n_vocab, std::span<const int32_t> tokens);
  ~KldBaseWriter();
  void add(std::span<const double> logprobs);
  void finish();  // Error when the disk refused a write

 private:
  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f_;
  std::vector<uint16_t> row_;
  bool ok_ = true;
};

class KldBaseReader {
 public:
  // Error naming the file when it is not one of ours or does not fit n_vocab.
  KldBaseReader(const std::string& path, int64_t n_vocab);
  int64_t n_ctx() const { return n_ctx_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // The next scored position's log-probabilities (Error when the file ends early).
  std::span<const double> next();

 private:
  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f_;
  int64_t n_ctx_ = 0, n_vocab_ = 0;
  std::vector<int32_t> tokens_;
  std::vector<uint16_t> row_;
  std::vector<double> lp_;
};

// The comparison, position by position, then llama-perplexity's summary.
class KldStats {
 public:
  void add(std::span<const double> base, std::span<const double> q, int32_t next);
  size_t count() const { return kld_.size(); }
  double mean_kld() const;
  // llama-perplexity's statistics block (PPL of both, their ratio, KLD and delta-p percentiles,
  // same top token), each with its standard error where llama.cpp gives one.
  std::string summary() const;

 private:
  std::vector<double> kld_, dp_;
  double nll_base_ = 0, nll_q_ = 0, nll_base2_ = 0, nll_q2_ = 0, nll_cross_ = 0;
  int64_t same_top_ = 0;
};

}  // namespace minfer::runtime
