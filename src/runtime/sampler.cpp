#include "runtime/sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <unordered_map>

#include "common/error.h"
#include "runtime/sampler_dry.h"

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
  if (!(typical_p >= 0 && typical_p <= 1)) bad("typical-p", typical_p, "must be in [0, 1]");
  if (!std::isfinite(top_n_sigma)) bad("top-n-sigma", top_n_sigma, "must be a number (<= 0: off)");
  if (!(xtc_probability >= 0 && xtc_probability <= 1)) bad("xtc-probability", xtc_probability, "must be in [0, 1]");
  if (!(xtc_threshold >= 0 && xtc_threshold <= 1)) bad("xtc-threshold", xtc_threshold, "must be in [0, 1]");
  if (!(dynatemp_range >= 0 && dynatemp_range <= 100)) bad("dynatemp-range", dynatemp_range, "must be in [0, 100]");
  if (!(dynatemp_exponent >= 0 && dynatemp_exponent <= 100)) bad("dynatemp-exp", dynatemp_exponent, "must be in [0, 100]");
  if (mirostat < 0 || mirostat > 2) bad("mirostat", mirostat, "must be 0, 1 or 2");
  if (!(mirostat_tau >= 0 && mirostat_tau <= 1000)) bad("mirostat-ent", mirostat_tau, "must be in [0, 1000]");
  if (!(mirostat_eta >= 0 && mirostat_eta <= 10)) bad("mirostat-lr", mirostat_eta, "must be in [0, 10]");
  if (min_keep < 0) bad("min-keep", min_keep, "must be >= 0");
  if (!(dry_multiplier >= 0 && dry_multiplier <= 1000)) bad("dry-multiplier", dry_multiplier, "must be in [0, 1000]");
  if (!(dry_base >= 0 && dry_base <= 1000)) bad("dry-base", dry_base, "must be in [0, 1000] (< 1: DRY off)");
  if (dry_allowed_length < 0) bad("dry-allowed-length", dry_allowed_length, "must be >= 0");
  if (dry_penalty_last_n < -1) bad("dry-penalty-last-n", dry_penalty_last_n, "must be >= -1");
  for (const LogitBias& b : logit_bias) {
    if (b.id < 0) fail("logit bias for token {}: token ids are >= 0", b.id);
    if (std::isnan(b.bias) || b.bias == INFINITY)
      fail("logit bias for token {} is {} (a number, or -inf to ban the token)", b.id, b.bias);
  }
}

const char* sampler_stage_name(SamplerStage s) {
  switch (s) {
    case SamplerStage::Penalties: return "penalties";
    case SamplerStage::Dry: return "dry";
    case SamplerStage::TopNSigma: return "top_n_sigma";
    case SamplerStage::TopK: return "top_k";
    case SamplerStage::TypicalP: return "typ_p";
    case SamplerStage::TopP: return "top_p";
    case SamplerStage::MinP: return "min_p";
    case SamplerStage::Xtc: return "xtc";
    case SamplerStage::Temperature: return "temperature";
  }
  return "?";
}

std::vector<SamplerStage> default_sampler_order() {
  using S = SamplerStage;
  return {S::Penalties, S::Dry, S::TopNSigma, S::TopK, S::TypicalP, S::TopP, S::MinP, S::Xtc, S::Temperature};
}

std::vector<SamplerStage> parse_sampler_names(const std::string& names) {
  using S = SamplerStage;
  static const std::pair<const char*, S> kNames[] = {
      {"penalties", S::Penalties}, {"dry", S::Dry}, {"top_n_sigma", S::TopNSigma}, {"top-n-sigma", S::TopNSigma},
      {"top_k", S::TopK}, {"top-k", S::TopK}, {"typ_p", S::TypicalP}, {"typ-p", S::TypicalP}, {"typ", S::TypicalP},
      {"typical_p", S::TypicalP}, {"typical-p", S::TypicalP}, {"typical", S::TypicalP}, {"top_p", S::TopP},
      {"top-p", S::TopP}, {"nucleus", S::TopP}, {"min_p", S::MinP}, {"min-p", S::MinP}, {"xtc", S::Xtc},
      {"temperature", S::Temperature}, {"temp", S::Temperature}};
  std::vector<S> out;
  size_t at = 0;
  while (at <= names.size()) {
    const size_t end = std::min(names.find(';', at), names.size());
    const std::string name = names.substr(at, end - at);
    at = end + 1;
    if (name.empty()) continue;
    auto it = std::find_if(std::begin(kNames), std::end(kNames), [&](const auto& n) { return name == n.first; });
    if (it == std::end(kNames))
      fail("samplers: unknown sampler '{}' (penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, "
           "temperature)", name);
    out.push_back(it->second);
  }
  return out;
}

std::vector<SamplerStage> parse_sampler_letters(const std::string& letters) {
  using S = SamplerStage;
  std::vector<S> out;
  for (char ch : letters) {
    switch (ch) {
      case 'e': out.push_back(S::Penalties); break;
      case 'd': out.push_back(S::Dry); break;
      case 's': out.push_back(S::TopNSigma); break;
      case 'k': out.push_back(S::TopK); break;
      case 'y': out.push_back(S::TypicalP); break;
      case 'p': out.push_back(S::TopP); break;
      case 'm': out.push_back(S::MinP); break;
      case 'x': out.push_back(S::Xtc); break;
      case 't': out.push_back(S::Temperature); break;
      default:
        fail("sampling sequence '{}': unknown letter '{}' (e d s k y p m x t)", letters, std::string(1, ch));
    }
  }
  return out;
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
  auto penalize = [&](float& l, int n) {
    l = l <= 0 ? l * repeat : l / repeat;
    l -= float(n) * freq + (n > 0 ? 1.0f : 0.0f) * presence;
  };
  const bool by_id = !c.empty() && c.front().id == 0 && c.back().id == int32_t(c.size() - 1);
  if (by_id) {  // the whole vocabulary in id order: index by id
    for (const auto& [id, n] : count)
      if (id >= 0 && size_t(id) < c.size() && c[size_t(id)].id == id) penalize(c[size_t(id)].logit, n);
    return;
  }
  for (Candidate& x : c)  // a custom order put the penalties after a stage that sorted or cut
    if (auto it = count.find(x.id); it != count.end()) penalize(x.logit, it->second);
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
  if (c.empty()) fail("sampling: no candidate tokens left");
  if (temp <= 0) {
    const auto best = std::min_element(c.begin(), c.end(), better);
    c = {*best};
    return;
  }
  if (temp == 1.0f) return;
  for (auto& x : c) x.logit /= temp;
}

static double entropy_of(const std::vector<Candidate>& c) {
  double h = 0;
  for (const auto& x : c)
    if (x.p > 0) h -= double(x.p) * std::log(double(x.p));
  return h;
}

void apply_dynamic_temperature(std::vector<Candidate>& c, float temp, float range, float exponent) {
  if (range <= 0 || temp <= 0) return apply_temperature(c, temp);
  if (c.size() <= 1) return;
  const float lo = std::max(0.0f, temp - range), hi = temp + range;
  softmax(c);
  const double normalized = entropy_of(c) / std::log(double(c.size()));
  const float t = lo + (hi - lo) * float(std::pow(normalized, double(exponent)));
  apply_temperature(c, t);
  softmax(c);
}

void apply_typical(std::vector<Candidate>& c, float p, size_t min_keep) {
  if (p >= 1.0f || c.size() <= 1) return;
  softmax(c);
  const double h = entropy_of(c);
  std::vector<std::pair<double, size_t>> by_distance(c.size());
  for (size_t i = 0; i < c.size(); ++i) by_distance[i] = {std::fabs(-std::log(double(c[i].p)) - h), i};
  std::stable_sort(by_distance.begin(), by_distance.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  double cum = 0;
  size_t keep = c.size();
  for (size_t i = 0; i < by_distance.size(); ++i) {
    cum += c[by_distance[i].second].p;
    if (cum > p && i + 1 >= min_keep) {
      keep = i + 1;
      break;
    }
  }
  std::vector<Candidate> kept(keep);
  for (size_t i = 0; i < keep; ++i) kept[i] = c[by_distance[i].second];
  c = std::move(kept);
}

void apply_top_n_sigma(std::vector<Candidate>& c, float n) {
  if (n <= 0 || c.size() <= 1) return;
  double sum = 0, mx = -INFINITY;
  size_t finite = 0;
  for (const auto& x : c)
    if (x.logit != -INFINITY) {
      mx = std::max(mx, double(x.logit));
      sum += x.logit;
      ++finite;
    }
  if (finite == 0) return;
  const double mean = sum / double(finite);
  double acc = 0;
  for (const auto& x : c)
    if (x.logit != -INFINITY) acc += (x.logit - mean) * (x.logit - mean);
  const double cut = mx - double(n) * std::sqrt(acc / double(finite));
  for (auto& x : c)
    if (x.logit < cut) x.logit = -INFINITY;
  softmax(c);
}

void apply_xtc(std::vector<Candidate>& c, float probability, float threshold, size_t min_keep, double u) {
  if (probability <= 0 || threshold > 0.5f || c.size() < 2) return;
  if (u > probability) return;
  softmax(c);
  size_t last = 0;  // the least probable candidate at or above the threshold
  for (size_t i = 0; i < c.size() && c[i].p >= threshold; ++i) last = i;
  if (last > 0 && c.size() - last >= min_keep) c.erase(c.begin(), c.begin() + std::ptrdiff_t(last));
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

Sampler::Sampler(SamplerParams p) : p_(p), rng_(seeded(p.seed)), mu_(2 * p.mirostat_tau) { p_.validate(); }

double Sampler::uniform() {
  const uint64_t hi = rng_() >> 5, lo = rng_() >> 6;  // 27 + 26 = 53 bits
  return double((hi << 26) | lo) * (1.0 / 9007199254740992.0);
}

void Sampler::accept(int32_t token) {
  if (p_.dry_multiplier > 0) {
    dry_history_.push_back(token);
    const size_t cap = p_.dry_penalty_last_n < 0 ? size_t(1) << 20 : size_t(p_.dry_penalty_last_n);
    while (dry_history_.size() > cap) dry_history_.pop_front();
  }
  if (p_.repeat_last_n == 0) return;
  history_.push_back(token);
  const size_t cap = p_.repeat_last_n < 0 ? size_t(1) << 20 : size_t(p_.repeat_last_n);
  while (history_.size() > cap) history_.pop_front();
}

// Mirostat (v1: top-k from the estimated Zipf exponent; v2: the candidates up to mu surprise),
// then the draw and mu's update from the drawn token's surprise. Candidates after softmax.
int32_t Sampler::mirostat_draw(int32_t n_vocab) {
  softmax(cand_);
  if (p_.mirostat == 1) {
    constexpr size_t m = 100;
    double sum_ti_bi = 0, sum_ti_sq = 0;
    for (size_t i = 0; i + 1 < m && i + 1 < cand_.size(); ++i) {
      const double t = std::log(double(i + 2) / double(i + 1));
      const double b = std::log(double(cand_[i].p) / double(cand_[i + 1].p));
      sum_ti_bi += t * b;
      sum_ti_sq += t * t;
    }
    const double s_hat = sum_ti_bi / sum_ti_sq;
    const double eps = s_hat - 1;
    const double k = std::pow(eps * std::pow(2.0, double(mu_)) / (1 - std::pow(double(n_vocab), -eps)), 1 / s_hat);
    apply_top_k(cand_, std::max(1, std::isfinite(k) ? int32_t(std::min(k, 2e9)) : 1));
  } else {
    size_t keep = 0;
    while (keep < cand_.size() && -std::log2(cand_[keep].p) <= mu_) ++keep;
    cand_.resize(std::max<size_t>(keep, 1));
  }
  softmax(cand_);
  const int32_t id = draw(cand_, uniform());
  const auto it = std::find_if(cand_.begin(), cand_.end(), [&](const Candidate& x) { return x.id == id; });
  mu_ -= p_.mirostat_eta * (-std::log2(it->p) - p_.mirostat_tau);
  return id;
}

int32_t Sampler::sample(std::span<const float> logits, const std::function<bool(int32_t)>& allowed) {
  using S = SamplerStage;
  auto has = [&](S s) { return std::find(p_.order.begin(), p_.order.end(), s) != p_.order.end(); };
  const bool penalize = !history_.empty() && p_.mirostat == 0 && has(S::Penalties) &&
                        (p_.repeat_penalty != 1.0f || p_.frequency_penalty != 0.0f || p_.presence_penalty != 0.0f);
  // Stages that may drop the best token: typical-p and XTC (the others keep it), and a chain
  // without the temperature stage draws from what is left.
  const bool greedy = p_.temp <= 0 && has(S::Temperature) &&
                      ((p_.typical_p >= 1.0f && p_.xtc_probability <= 0.0f) || p_.mirostat != 0);
  const bool dry_on = p_.dry_multiplier > 0 && p_.mirostat == 0 && has(S::Dry) && !dry_history_.empty();
  if (greedy && !penalize && !dry_on && p_.logit_bias.empty() && !allowed) return argmax(logits);

  cand_ = make_candidates(logits);
  apply_logit_bias(cand_, p_.logit_bias);
  if (p_.mirostat != 0) {
    if (allowed) {
      apply_allowed(cand_, allowed, 0);
      if (cand_.empty()) return -1;
    }
    apply_temperature(cand_, p_.temp);
    return mirostat_draw(int32_t(logits.size()));
  }
  static const DryBreakers no_breakers;
  const size_t min_keep = size_t(std::max(1, p_.min_keep));
  auto stage = [&](S s) {
    switch (s) {
      case S::Penalties:
        if (penalize) {
          const std::vector<int32_t> recent(history_.begin(), history_.end());
          apply_penalties(cand_, recent, p_.repeat_penalty, p_.frequency_penalty, p_.presence_penalty);
        }
        break;
      case S::Dry:
        if (dry_on) {
          const std::vector<int32_t> window(dry_history_.begin(), dry_history_.end());
          apply_dry(cand_, window, p_.dry_multiplier, p_.dry_base, p_.dry_allowed_length,
                    p_.dry_breakers ? *p_.dry_breakers : no_breakers);
        }
        break;
      case S::TopNSigma: apply_top_n_sigma(cand_, p_.top_n_sigma); break;
      case S::TopK: apply_top_k(cand_, p_.top_k); break;
      case S::TypicalP: apply_typical(cand_, p_.typical_p, min_keep); break;
      case S::TopP: apply_top_p(cand_, p_.top_p, min_keep); break;
      case S::MinP: apply_min_p(cand_, p_.min_p, min_keep); break;
      case S::Xtc:
        if (p_.xtc_probability > 0) apply_xtc(cand_, p_.xtc_probability, p_.xtc_threshold, min_keep, uniform());
        break;
      case S::Temperature:
        apply_dynamic_temperature(cand_, p_.temp, p_.dynatemp_range, p_.dynatemp_exponent);
        break;
    }
  };
  // Stages acting on each token alone (penalties, DRY) at the head of the chain run first, on the
  // whole vocabulary in id order; a grammar's filter commutes with them, and when top-k comes
  // next it only needs that many of the allowed tokens.
  size_t next = 0;
  for (; next < p_.order.size() && (p_.order[next] == S::Penalties || p_.order[next] == S::Dry); ++next)
    stage(p_.order[next]);
  if (allowed) {
    const bool top_k_next = next < p_.order.size() && p_.order[next] == S::TopK;
    apply_allowed(cand_, allowed, greedy ? 1 : top_k_next ? p_.top_k : 0);
    if (cand_.empty()) return -1;
  }
  for (; next < p_.order.size(); ++next) {
    stage(p_.order[next]);
    if (cand_.empty()) fail("sampling: no candidate tokens left");
  }
  if (greedy && cand_.size() == 1) return cand_.front().id;
  softmax(cand_);
  return draw(cand_, uniform());
}

}  // namespace minfer::runtime
