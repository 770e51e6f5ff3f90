#include "runtime/sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <unordered_map>

#include "common/error.h"

namespace minfer::runtime {

void SamplerParams::validate() const {
  auto bad = [](const char* what, double v, const char* rule) {
    fail("{} = {} is out of range ({})", what, v, rule);
  };
  if (!std::isfinite(temp) || temp < 0) bad("temperature", temp, "must be >= 0");
  if (temp > 100) bad("temperature", temp, "must be <= 100");
  if (top_k < 0) bad("top-k", top_k, "must be >= 0");
  if (!(top_p >= 0 && top_p <= 1)) bad("top-p", top_p, "must be in [0, 1]");
  if (!(min_p >= 0 && min_p <= 1)) bad("min-p", min_p, "must be in [0, 1]");
  if (!std::isfinite(repeat_penalty) || repeat_penalty <= 0)
    bad("repeat-penalty", repeat_penalty, "must be > 0");
  if (repeat_last_n < -1) bad("repeat-last-n", repeat_last_n, "must be >= -1");
  if (!std::isfinite(frequency_penalty) || std::fabs(frequency_penalty) > 100)
    bad("frequency-penalty", frequency_penalty, "must be in [-100, 100]");
  if (!std::isfinite(presence_penalty) || std::fabs(presence_penalty) > 100)
    bad("presence-penalty", presence_penalty, "must be in [-100, 100]");
  for (const LogitBias& b : logit_bias) {
    if (b.id < 0) fail("logit bias for token {}: token ids are >= 0", b.id);
    if (std::isnan(b.bias) || b.bias == INFINITY)
      fail("logit bias for token {} is {} (a number, or -inf to ban the token)", b.id, b.bias);
  }
}

uint64_t random_seed() {
  std::random_device rd;
  const uint64_t t = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  return ((uint64_t(rd()) << 32) | rd()) ^ t;
}

std::vector<Candidate> make_candidates(std::span<const float> logits) {
  std::vector<Candidate> c(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) c[i] = {int32_t(i), logits[i], 0.0f};
  return c;
}

void apply_logit_bias(std::vector<Candidate>& c, std::span<const LogitBias> bias) {
  for (const LogitBias& b : bias) {
    if (b.id < 0 || size_t(b.id) >= c.size() || c[size_t(b.id)].id != b.id)
      fail("logit bias for token {}: the vocabulary has {} tokens", b.id, c.size());
    c[size_t(b.id)].logit += b.bias;
  }
}

void apply_penalties(std::vector<Candidate>& c, std::span<const int32_t> recent, float repeat,
                     float freq, float presence) {
  if (recent.empty() || (repeat == 1.0f && freq == 0.0f && presence == 0.0f)) return;
  std::unordered_map<int32_t, int> count;
  for (int32_t t : recent) ++count[t];
  for (const auto& [id, n] : count) {
    if (id < 0 || size_t(id) >= c.size() || c[size_t(id)].id != id) continue;
    float& l = c[size_t(id)].logit;
    l = l <= 0 ? l * repeat : l / repeat;
    l -= float(n) * freq + (n > 0 ? 1.0f : 0.0f) * presence;
  }
}

static bool better(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

void apply_top_k(std::vector<Candidate>& c, int32_t k) {
  if (k <= 0 || size_t(k) >= c.size()) {
    std::sort(c.begin(), c.end(), better);
    return;
  }
  std::partial_sort(c.begin(), c.begin() + k, c.end(), better);
  c.resize(size_t(k));
}

void apply_allowed(std::vector<Candidate>& c, const std::function<bool(int32_t)>& allowed, int32_t k) {
  // The best few first (a grammar that allows much finds its k there); where it allows little,
  // the rest is filtered before it is sorted (its rejections are quick, a sort of the whole
  // vocabulary is not).
  const size_t head = k > 0 ? std::min(c.size(), std::max<size_t>(256, 4 * size_t(k))) : c.size();
  std::partial_sort(c.begin(), c.begin() + std::ptrdiff_t(head), c.end(), better);
  const size_t want = k > 0 ? size_t(k) : c.size();
  size_t kept = 0;
  for (size_t i = 0; i < head && kept < want; ++i)
    if (std::isfinite(c[i].logit) && allowed(c[i].id)) c[kept++] = c[i];
  if (kept < want && head < c.size()) {
    const size_t tail = kept;
    for (size_t i = head; i < c.size(); ++i)
      if (std::isfinite(c[i].logit) && allowed(c[i].id)) c[kept++] = c[i];
    std::sort(c.begin() + std::ptrdiff_t(tail), c.begin() + std::ptrdiff_t(kept), better);
    kept = std::min(kept, want);
  }
  c.resize(kept);
}

void softmax(std::vector<Candidate>& c) {
  if (c.empty()) fail("sampling: no candidate tokens left");
  if (!std::is_sorted(c.begin(), c.end(), better)) std::sort(c.begin(), c.end(), better);
  const float mx = c.front().logit;
  double sum = 0;
  for (auto& x : c) {
    x.p = std::exp(x.logit - mx);
    sum += x.p;
  }
  for (auto& x : c) x.p = float(x.p / sum);
}

void apply_top_p(std::vector<Candidate>& c, float p, size_t min_keep) {
  if (p >= 1.0f || c.empty()) return;
  softmax(c);
  double cum = 0;
  size_t keep = c.size();
  for (size_t i = 0; i < c.size(); ++i) {
    cum += c[i].p;
    if (cum >= p && i + 1 >= min_keep) {
      keep = i + 1;
      break;
    }
  }
  c.resize(keep);
}

void apply_min_p(std::vector<Candidate>& c, float p, size_t min_keep) {
  if (p <= 0.0f || c.empty()) return;
  if (!std::is_sorted(c.begin(), c.end(), better)) std::sort(c.begin(), c.end(), better);
  // p_i >= p * p_max  <=>  logit_i >= logit_max + ln p (the softmax normaliser cancels).
  const float min_logit = c.front().logit + std::log(p);
  size_t keep = 0;
  while (keep < c.size() && c[keep].logit >= min_logit) ++keep;
  c.resize(std::max(keep, std::min(min_keep, c.size())));
}

void apply_temperature(std::vector<Candidate>& c, float temp) {
  if (temp <= 0) fail("sampling: temperature must be > 0 for a random draw");
  if (temp == 1.0f) return;
  for (auto& x : c) x.logit /= temp;
}

int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) fail("sampling: empty logits");
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = i;
  return int32_t(best);
}

int32_t draw(const std::vector<Candidate>& c, double u) {
  if (c.empty()) fail("sampling: no candidate tokens left");
  double cum = 0;
  for (const auto& x : c) {
    cum += x.p;
    if (u < cum) return x.id;
  }
  return c.back().id;  // u landed in the rounding slack of the last bucket
}

static std::mt19937 seeded(uint64_t seed) {
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32)};
  return std::mt19937(seq);
}

Sampler::Sampler(SamplerParams p) : p_(p), rng_(seeded(p.seed)) { p_.validate(); }

double Sampler::uniform() {
  const uint64_t hi = rng_() >> 5, lo = rng_() >> 6;  // 27 + 26 = 53 bits
  return double((hi << 26) | lo) * (1.0 / 9007199254740992.0);
}

void Sampler::accept(int32_t token) {
  if (p_.repeat_last_n == 0) return;
  history_.push_back(token);
  const size_t cap = p_.repeat_last_n < 0 ? size_t(1) << 20 : size_t(p_.repeat_last_n);
  while (history_.size() > cap) history_.pop_front();
}

int32_t Sampler::sample(std::span<const float> logits, const std::function<bool(int32_t)>& allowed) {
  const bool penalize = !history_.empty() && (p_.repeat_penalty != 1.0f ||
                                              p_.frequency_penalty != 0.0f ||
                                              p_.presence_penalty != 0.0f);
  if (p_.temp <= 0 && !penalize && p_.logit_bias.empty() && !allowed) return argmax(logits);

  cand_ = make_candidates(logits);
  apply_logit_bias(cand_, p_.logit_bias);
  if (penalize) {
    std::vector<int32_t> recent(history_.begin(), history_.end());
    apply_penalties(cand_, recent, p_.repeat_penalty, p_.frequency_penalty,
                    p_.presence_penalty);
  }
  if (allowed) {  // (bias and penalties act on each token alone: they commute with the filter)
    apply_allowed(cand_, allowed, p_.temp <= 0 ? 1 : p_.top_k);
    if (cand_.empty()) return -1;
  }
  if (p_.temp <= 0) {
    apply_top_k(cand_, 1);
    return cand_.front().id;
  }
  apply_top_k(cand_, p_.top_k);
  apply_top_p(cand_, p_.top_p);
  apply_min_p(cand_, p_.min_p);
  apply_temperature(cand_, p_.temp);
  softmax(cand_);
  return draw(cand_, uniform());
}

}  // namespace minfer::runtime
