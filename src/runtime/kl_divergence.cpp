#include "runtime/kl_divergence.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "common/error.h"

namespace minfer::runtime {
namespace {

constexpr char kMagic[8] = {'M', 'I', 'N', 'F', 'E', 'R', 'K', 'L'};
constexpr uint32_t kVersion = 1;
constexpr double kLowest = -64.0;

template <class T>
bool put(std::FILE* f, const T* p, size_t n) { return std::fwrite(p, sizeof(T), n, f) == n; }
template <class T>
bool get(std::FILE* f, T* p, size_t n) { return std::fread(p, sizeof(T), n, f) == n; }

// Mean and standard error of the mean of xs.
std::pair<double, double> mean_err(const std::vector<double>& xs) {
  double s = 0, s2 = 0;
  for (double x : xs) s += x, s2 += x * x;
  const double n = double(xs.size()), m = s / n;
  const double var = xs.size() > 1 ? std::max(0.0, (s2 / n - m * m) * n / (n - 1)) : 0;
  return {m, std::sqrt(var / n)};
}

double percentile(std::vector<double> sorted, double q) {  // sorted ascending; q in [0, 1]
  const double at = q * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(at)), hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - double(lo));
}

}  // namespace

KldBaseWriter::KldBaseWriter(const std::string& path, int64_t n_ctx, int64_t n_vocab, std::span<const int32_t> tokens)
    : path_(path), f_(std::fopen((path + ".tmp").c_str(), "wb"), &std::fclose), row_(size_t(n_vocab)) {
  if (!f_) fail("{}: cannot write the KL-divergence base file: {}", path, std::strerror(errno));
  const int64_t n = int64_t(tokens.size());
  ok_ = put(f_.get(), kMagic, 8) && put(f_.get(), &kVersion, 1) && put(f_.get(), &n_ctx, 1) &&
        put(f_.get(), &n_vocab, 1) && put(f_.get(), &n, 1) && put(f_.get(), tokens.data(), tokens.size());
}

KldBaseWriter::~KldBaseWriter() {
  if (f_) std::remove((path_ + ".tmp").c_str());  // not finished: nothing half-written stays
}

void KldBaseWriter::add(std::span<const double> lp) {
  if (lp.size() != row_.size()) fail("KL-divergence base: {} log-probabilities, expected {}", lp.size(), row_.size());
  double lo = 0;
  for (double x : lp) lo = std::min(lo, x);
  lo = std::max(std::min(lo, -1e-6), kLowest);
  for (size_t i = 0; i < lp.size(); ++i) {
    const double q = (1.0 - std::max(lp[i], lo) / lo) * 65535.0;
    row_[i] = uint16_t(std::lround(std::clamp(q, 0.0, 65535.0)));
  }
  const float l = float(lo);
  ok_ = ok_ && put(f_.get(), &l, 1) && put(f_.get(), row_.data(), row_.size());
}

void KldBaseWriter::finish() {
  const bool closed = std::fclose(f_.release()) == 0;
  if (!ok_ || !closed) {
    std::remove((path_ + ".tmp").c_str());
    fail("{}: cannot write the KL-divergence base file (disk full?)", path_);
  }
  if (std::rename((path_ + ".tmp").c_str(), path_.c_str()) != 0)
    fail("{}: cannot write the KL-divergence base file: {}", path_, std::strerror(errno));
}

KldBaseReader::KldBaseReader(const std::string& path, int64_t n_vocab)
    : path_(path), f_(std::fopen(path.c_str(), "rb"), &std::fclose), n_vocab_(n_vocab) {
  if (!f_) fail("{}: cannot read the KL-divergence base file: {}", path, std::strerror(errno));
  char magic[8];
  uint32_t version = 0;
  int64_t vocab = 0, n = 0;
  if (!get(f_.get(), magic, 8) || std::memcmp(magic, kMagic, 8) != 0 || !get(f_.get(), &version, 1))
    fail("{}: not a minfer KL-divergence base file (write one with --kl-divergence-base on the base model)", path);
  if (version != kVersion) fail("{}: KL-divergence base version {}, this minfer reads {}", path, version, kVersion);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  // The tokens must be in the file: a damaged count never sizes an allocation.
  if (!get(f_.get(), &n_ctx_, 1) || !get(f_.get(), &vocab, 1) || !get(f_.get(), &n, 1) || ec || n_ctx_ < 2 ||
      n_ctx_ > (int64_t(1) << 20) || n < 0 || uint64_t(n) > (size - std::min<uint64_t>(size, 36)) / 4)
    fail("{}: the KL-divergence base file is truncated or damaged", path);
  if (vocab != n_vocab)
    fail("{}: the base model had {} tokens in its vocabulary, this one {}: not a version of the same model", path,
         vocab, n_vocab);
  tokens_.resize(static_cast<size_t>(n));
  if (!get(f_.get(), tokens_.data(), tokens_.size())) fail("{}: the KL-divergence base file is truncated", path);
  for (int32_t t : tokens_)
    if (t < 0 || t >= n_vocab) fail("{}: token {} is not in this model's vocabulary", path, t);
  row_.resize(size_t(n_vocab));
  lp_.resize(size_t(n_vocab));
}

std::span<const double> KldBaseReader::next() {
  float lo = 0;
  if (!get(f_.get(), &lo, 1) || !get(f_.get(), row_.data(), row_.size()))
    fail("{}: the KL-divergence base file ends before the text does (another -c or --chunks?)", path_);
  if (!(lo < 0 && lo >= kLowest)) fail("{}: the KL-divergence base file is damaged", path_);
  for (size_t i = 0; i < row_.size(); ++i) lp_[i] = double(lo) * (1.0 - double(row_[i]) / 65535.0);
  return lp_;
}

void KldStats::add(std::span<const double> base, std::span<const double> q, int32_t next) {
  // The base's stored log-probabilities are rounded: renormalize them before comparing.
  double z = 0;
  for (double x : base) z += std::exp(x);
  const double lz = std::log(z);
  double kld = 0;
  size_t top_b = 0, top_q = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const double lb = base[i] - lz;
    kld += std::exp(lb) * (lb - q[i]);
    if (base[i] > base[top_b]) top_b = i;
    if (q[i] > q[top_q]) top_q = i;
  }
  kld_.push_back(std::max(0.0, kld));
  const double lb_next = base[size_t(next)] - lz, lq_next = q[size_t(next)];
  dp_.push_back(std::exp(lq_next) - std::exp(lb_next));
  nll_base_ -= lb_next;
  nll_q_ -= lq_next;
  nll_base2_ += lb_next * lb_next;
  nll_q2_ += lq_next * lq_next;
  nll_cross_ += lb_next * lq_next;
  same_top_ += top_b == top_q;
}

double KldStats::mean_kld() const { return mean_err(kld_).first; }

std::string KldStats::summary() const {
  if (kld_.empty()) return "no positions scored\n";
  const double n = double(kld_.size());
  const double mb = nll_base_ / n, mq = nll_q_ / n;
  // ln PPL = mean NLL; its standard error from the per-token NLL's variance.
  auto err_of = [&](double sum2, double m) { return std::sqrt(std::max(0.0, sum2 / n - m * m) / (n - 1)); };
  const double eb = err_of(nll_base2_, mb), eq = err_of(nll_q2_, mq);
  const double cov = nll_cross_ / n - mb * mq;
  const double cor = cov / std::sqrt(std::max(1e-300, (nll_base2_ / n - mb * mb) * (nll_q2_ / n - mq * mq)));
  const double e_diff = std::sqrt(std::max(0.0, eb * eb + eq * eq - 2 * cov / (n - 1)));
  std::string out = "====== Perplexity statistics ======\n";
  out += fmt::format("Mean PPL(Q)                   : {:10.6f} ± {:10.6f}\n", std::exp(mq), std::exp(mq) * eq);
  out += fmt::format("Mean PPL(base)                : {:10.6f} ± {:10.6f}\n", std::exp(mb), std::exp(mb) * eb);
  out += fmt::format("Cor(ln(PPL(Q)), ln(PPL(base))): {:6.2f}%\n", 100 * cor);
  out += fmt::format("Mean ln(PPL(Q)/PPL(base))     : {:10.6f} ± {:10.6f}\n", mq - mb, e_diff);
  out += fmt::format("Mean PPL(Q)/PPL(base)         : {:10.6f} ± {:10.6f}\n", std::exp(mq - mb), std::exp(mq - mb) * e_diff);
  std::vector<double> k = kld_, d = dp_;
  std::sort(k.begin(), k.end());
  std::sort(d.begin(), d.end());
  const auto [km, ke] = mean_err(kld_);
  out += "\n====== KL divergence statistics ======\n";
  out += fmt::format("Mean    KLD: {:10.6f} ± {:10.6f}\n", km, ke);
  out += fmt::format("Maximum KLD: {:10.6f}\n", k.back());
  for (const auto& [label, q] : {std::pair{"99.9%", 0.999}, {"99.0%", 0.99}, {"95.0%", 0.95}, {"90.0%", 0.90},
                                 {"Median", 0.5}, {"10.0%", 0.10}, {" 5.0%", 0.05}, {" 1.0%", 0.01}, {" 0.1%", 0.001}})
    out += fmt::format("{:<7} KLD: {:10.6f}\n", label, percentile(k, q));
  out += fmt::format("Minimum KLD: {:10.6f}\n", k.front());
  const auto [dm, de] = mean_err(dp_);
  double rms = 0;
  for (double x : dp_) rms += x * x;
  rms = std::sqrt(rms / n);
  out += "\n====== Token probability statistics ======\n";
  out += fmt::format("Mean    Δp: {:8.3f} ± {:5.3f} %\n", 100 * dm, 100 * de);
  out += fmt::format("Maximum Δp: {:8.3f}%\n", 100 * d.back());
  for (const auto& [label, q] : {std::pair{"99.9%", 0.999}, {"99.0%", 0.99}, {"95.0%", 0.95}, {"90.0%", 0.90},
                                 {"75.0%", 0.75}, {"Median", 0.5}, {"25.0%", 0.25}, {"10.0%", 0.10}, {" 5.0%", 0.05},
                                 {" 1.0%", 0.01}, {" 0.1%", 0.001}})
    out += fmt::format("{:<7} Δp: {:8.3f}%\n", label, 100 * percentile(d, q));
  out += fmt::format("Minimum Δp: {:8.3f}%\n", 100 * d.front());
  out += fmt::format("RMS Δp    : {:8.3f} %\n", 100 * rms);
  const double same = double(same_top_) / n;
  out += fmt::format("Same top p: {:6.3f} ± {:5.3f} %\n", 100 * same, 100 * std::sqrt(same * (1 - same) / (n - 1)));
  return out;
}

}  // namespace minfer::runtime
