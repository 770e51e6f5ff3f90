#include "server/node_stats.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace minfer::server {

NodeStats compute_node_stats(const float* x, size_t n, int bins) {
  NodeStats s;
  s.n = int64_t(n);
  double sum = 0, sq = 0;
  size_t finite = 0;
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (std::isnan(v)) {
      ++s.nan;
    } else if (std::isinf(v)) {
      ++s.inf;
    } else {
      if (finite == 0 || v < s.min) s.min = v;
      if (finite == 0 || v > s.max) s.max = v;
      sum += v;
      sq += double(v) * v;
      ++finite;
    }
  }
  if (finite == 0) return s;
  s.mean = sum / double(finite);
  s.rms = std::sqrt(sq / double(finite));
  bins = std::max(bins, 1);
  s.hist.assign(size_t(bins), 0);
  const double lo = s.min, width = (double(s.max) - lo) / bins;
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (!std::isfinite(v)) continue;
    // A constant output (width 0) lands entirely in the first bucket.
    int b = width > 0 ? int((double(v) - lo) / width) : 0;
    s.hist[size_t(std::clamp(b, 0, bins - 1))] += 1;
  }
  return s;
}

static std::string num(double v) { return fmt::format("{:.7g}", v); }

std::string node_event_json(uint64_t step, int32_t id, double ms, const NodeStats* s) {
  std::string out = fmt::format("{{\"step\":{},\"id\":{},\"ms\":{}", step, id, num(ms));
  if (!s || s->n == 0) return out + ",\"n\":0}";
  out += fmt::format(",\"n\":{},\"nan\":{},\"inf\":{}", s->n, s->nan, s->inf);
  if (!s->hist.empty()) {
    out += fmt::format(",\"min\":{},\"max\":{},\"mean\":{},\"rms\":{},\"hist\":[{}]", num(s->min),
                       num(s->max), num(s->mean), num(s->rms), fmt::join(s->hist, ","));
  }
  return out + "}";
}

}  // namespace minfer::server
