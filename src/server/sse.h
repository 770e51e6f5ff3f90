// Server-sent events: the wire format (one event = "event:" line, "data:" lines, blank line)
// and the hub that fans events out to every connected browser.
//
// The generating thread must never wait for a browser. Each subscriber has a bounded queue:
// when it is full, per-node events are dropped first (the step, token and done events that
// frame them are kept by evicting the oldest node event), and the subscriber is told how many
// were dropped with a "dropped" event when it catches up. A closed browser just unsubscribes.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace minfer::server {

// "event: NAME\ndata: LINE\n...\n\n". A data payload with newlines becomes several data
// lines (the browser joins them with "\n"); CR is treated as a line break too. An event name
// with a newline or ':' is a programming error: Error.
std::string format_sse(std::string_view event, std::string_view data, uint64_t id = 0);

struct SseEvent {
  std::string name;
  std::string data;
  bool droppable = false;  // per-node statistics: may be dropped for a slow client
};

class Subscriber {
 public:
  explicit Subscriber(size_t capacity) : capacity_(capacity) {}
  // Never blocks (beyond the queue's mutex).
  void push(SseEvent ev);
  // Waits up to timeout_ms for events; returns them formatted as SSE text ("" on timeout).
  // A pending drop count comes out first as a "dropped" event {"count": n}.
  std::string wait_and_take(int timeout_ms);
  void close();
  bool closed() const;
  uint64_t dropped_total() const;
  size_t queued() const;

 private:
  size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<SseEvent> q_;
  uint64_t dropped_pending_ = 0, dropped_total_ = 0, next_id_ = 1;
  bool closed_ = false;
};

class EventHub {
 public:
  explicit EventHub(size_t per_client_capacity = 8192) : capacity_(per_client_capacity) {}
  std::shared_ptr<Subscriber> subscribe();
  void unsubscribe(const std::shared_ptr<Subscriber>& s);
  void publish(const std::string& name, const std::string& data, bool droppable = false);
  void close_all();
  size_t subscribers() const;

 private:
  size_t capacity_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Subscriber>> subs_;
};

}  // namespace minfer::server
