#include "runtime/stop.h"

#include <algorithm>

namespace minfer::runtime {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

StopMatcher::Result StopMatcher::push(std::string_view piece) {
  Result r;
  if (stopped_) return r;
  pending_.append(piece);

  // The earliest complete occurrence of any stop string ends the text right before it.
  size_t first = std::string::npos, which = 0;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t at = pending_.find(stops_[i]);
    if (at < first) first = at, which = i;
  }
  if (first != std::string::npos) {
    r.text = pending_.substr(0, first);
    r.stopped = stopped_ = true;
    r.stop = stops_[which];
    pending_.clear();
    return r;
  }

  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const auto& s : stops_) {
    const size_t max_len = std::min(s.size() - 1, pending_.size());
    for (size_t len = max_len; len > hold; --len)
      if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
  }
  r.text = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return r;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(pending_);
  return stopped_ ? std::string() : out;
}

}  // namespace minfer::runtime
