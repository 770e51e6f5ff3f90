#include "runtime/sampler_dry.h"

#include <algorithm>
#include <cmath>


namespace minfer::runtime {

void apply_dry(std::vector<Candidate>& c, std::span<const int32_t> h, float multiplier, float base,
               int32_t allowed_length, const DryBreakers& breakers) {
  const int64_t n = int64_t(h.size());
  if (multiplier == 0.0f || base < 1.0f || n <= allowed_length) return;
  // back(i): the token i places from the end (0 = the last).
  auto back = [&](int64_t i) { return h[size_t(n - 1 - i)]; };

  // The latest breaker bounds how far back a repeat may reach: `limit` tokens after it.
  int64_t limit = n;
  for (int64_t i = 0; i < n && limit == n; ++i) {
    auto [lo, hi] = breakers.by_head.equal_range(back(i));
    int64_t longest = -1;
    for (auto it = lo; it != hi; ++it) {
      const int64_t len = int64_t(it->second.size());
      if (len <= longest || len > i) continue;
      bool match = true;
      for (int64_t k = 0; k < len && match; ++k) match = it->second[size_t(k)] == back(i - 1 - k);
      if (match) longest = len;
    }
    if (longest >= 0) limit = i - longest;
  }
  if (limit < allowed_length) return;

  // z[k]: how many tokens the text ending k tokens before the end shares with the text's end
  // (the Z-function of the reversed window), so the token after that earlier end would extend
  // a repeat of that length.
  std::vector<int64_t> z(size_t(n), 0);
  for (int64_t k = 1, l = 0, r = 0; k < n; ++k) {
    int64_t m = k < r ? std::min(r - k, z[size_t(k - l)]) : 0;
    while (k + m < n && back(m) == back(k + m)) ++m;
    z[size_t(k)] = m;
    if (k + m > r) l = k, r = k + m;
  }
  std::unordered_map<int32_t, int64_t> longest;  // token -> the longest repeat it would extend
  for (int64_t k = 1; k < n; ++k) {
    const int64_t len = std::min(z[size_t(k)], limit);
    if (len < allowed_length) continue;
    const int32_t next = back(k - 1);  // the token that followed that earlier end
    int64_t& best = longest[next];
    best = std::max(best, len);
  }
  if (longest.empty()) return;
  // base^exponent stays a finite float.
  const int64_t max_exponent = base > 1.000001f ? int64_t(88.7228391 / std::log(double(base))) : 0;
  for (Candidate& x : c) {
    const auto it = longest.find(x.id);
    if (it == longest.end()) continue;
    auto [lo, hi] = breakers.by_head.equal_range(x.id);
    if (std::any_of(lo, hi, [](const auto& e) { return e.second.empty(); })) continue;
    int64_t e = it->second - allowed_length;
    if (max_exponent > 0) e = std::min(e, max_exponent);
    x.logit -= multiplier * float(std::pow(double(base), double(e)));
  }
}

}  // namespace minfer::runtime
