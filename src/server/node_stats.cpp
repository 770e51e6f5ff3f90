#include "server/node_stats.h"

#include "runtime/node_trace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace minfer::server {

NodeStats compute_node_stats(const float* x, size_t n, int bins) {
  // The summary is the trace's (one definition of min/max/mean/rms over the finite values);
  // the page adds a histogram.
  const runtime::OutputStats o = runtime::output_stats(x, n);
  NodeStats s;
  s.n = int64_t(n);
  s.nan = o.nan;
  s.inf = o.inf;
  if (s.nan + s.inf == s.n) return s;
  s.min = o.min;
  s.max = o.max;
  s.mean = o.mean;
  s.rms = o.rms;
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

std::string node_event_json(uint64_t run, uint64_t step, int32_t id, double ms, const NodeStats* s) {
  std::string out = fmt::format("{{\"run\":{},\"step\":{},\"id\":{},\"ms\":{}", run, step, id, num(ms));
  if (!s || s->n == 0) return out + ",\"n\":0}";
  out += fmt::format(",\"n\":{},\"nan\":{},\"inf\":{}", s->n, s->nan, s->inf);
  if (!s->hist.empty()) {
    out += fmt::format(",\"min\":{},\"max\":{},\"mean\":{},\"rms\":{},\"hist\":[{}]", num(s->min),
                       num(s->max), num(s->mean), num(s->rms), fmt::join(s->hist, ","));
  }
  return out + "}";
}

}  // namespace minfer::server
