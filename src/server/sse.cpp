#include "server/sse.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace minfer::server {

std::string format_sse(std::string_view event, std::string_view data, uint64_t id) {
  if (event.find_first_of("\r\n:") != std::string_view::npos)
    fail("SSE event name '{}' must not contain a line break or ':'", event);
  std::string out;
  out.reserve(data.size() + event.size() + 32);
  if (id) out += fmt::format("id: {}\n", id);
  if (!event.empty()) out += fmt::format("event: {}\n", event);
  size_t start = 0;
  while (true) {
    const size_t end = data.find_first_of("\r\n", start);
    out += "data: ";
    out += data.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out += '\n';
    if (end == std::string_view::npos) break;
    // CRLF counts as one line break.
    start = end + ((data[end] == '\r' && end + 1 < data.size() && data[end + 1] == '\n') ? 2 : 1);
  }
  out += '\n';
  return out;
}

void Subscriber::push(SseEvent ev) {
  {
    std::lock_guard lk(mu_);
    if (closed_) return;
    if (q_.size() >= capacity_) {
      if (ev.droppable) {
        ++dropped_pending_;
        ++dropped_total_;
        return;
      }
      auto it = std::find_if(q_.begin(), q_.end(), [](const SseEvent& e) { return e.droppable; });
      if (it == q_.end()) it = q_.begin();
      if (it->droppable) {
        ++dropped_pending_;
        ++dropped_total_;
      }
      q_.erase(it);
    }
    q_.push_back(std::move(ev));
  }
  cv_.notify_one();
}

std::string Subscriber::wait_and_take(int timeout_ms) {
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, std::chrono::milliseconds(timeout_ms),
               [&] { return closed_ || !q_.empty() || dropped_pending_ > 0; });
  std::string out;
  if (dropped_pending_ > 0) {
    out += format_sse("dropped", fmt::format("{{\"count\":{}}}", dropped_pending_), next_id_++);
    dropped_pending_ = 0;
  }
  // Bounded batches keep one write from holding a huge string.
  for (int i = 0; i < 512 && !q_.empty(); ++i) {
    out += format_sse(q_.front().name, q_.front().data, next_id_++);
    q_.pop_front();
  }
  return out;
}

void Subscriber::close() {
  {
    std::lock_guard lk(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool Subscriber::closed() const {
  std::lock_guard lk(mu_);
  return closed_;
}

uint64_t Subscriber::dropped_total() const {
  std::lock_guard lk(mu_);
  return dropped_total_;
}

size_t Subscriber::queued() const {
  std::lock_guard lk(mu_);
  return q_.size();
}

std::shared_ptr<Subscriber> EventHub::subscribe() {
  auto s = std::make_shared<Subscriber>(capacity_);
  std::lock_guard lk(mu_);
  subs_.push_back(s);
  return s;
}

void EventHub::unsubscribe(const std::shared_ptr<Subscriber>& s) {
  s->close();
  std::lock_guard lk(mu_);
  std::erase(subs_, s);
}

void EventHub::publish(const std::string& name, const std::string& data, bool droppable) {
  std::vector<std::shared_ptr<Subscriber>> subs;
  {
    std::lock_guard lk(mu_);
    subs = subs_;
  }
  for (auto& s : subs) s->push(SseEvent{name, data, droppable});
}

void EventHub::close_all() {
  std::lock_guard lk(mu_);
  for (auto& s : subs_) s->close();
  subs_.clear();
}

size_t EventHub::subscribers() const {
  std::lock_guard lk(mu_);
  return subs_.size();
}

}  // namespace minfer::server
