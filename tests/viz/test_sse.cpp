// The SSE wire format and the drop policy of the per-browser queues.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "server/sse.h"

using namespace minfer::server;

namespace {
// (event, data) pairs of an SSE text, as a browser's EventSource would see them.
std::vector<std::pair<std::string, std::string>> parse(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string ev, data;
  bool have_data = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) {
      out.emplace_back(ev, data);
      ev.clear();
      data.clear();
      have_data = false;
    } else if (line.rfind("event: ", 0) == 0) {
      ev = line.substr(7);
    } else if (line.rfind("data: ", 0) == 0) {
      if (have_data) data += '\n';
      data += line.substr(6);
      have_data = true;
    }
  }
  return out;
}
}  // namespace

TEST(SseFormat, OneLineEvent) {
  EXPECT_EQ(format_sse("node", R"({"a":1})"), "event: node\ndata: {\"a\":1}\n\n");
  EXPECT_EQ(format_sse("token", "x", 5), "id: 5\nevent: token\ndata: x\n\n");
  EXPECT_EQ(format_sse("done", ""), "event: done\ndata: \n\n");
}

TEST(SseFormat, LineBreaksBecomeDataLines) {
  EXPECT_EQ(format_sse("t", "a\nb\r\nc\rd"), "event: t\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
  const auto ev = parse(format_sse("t", "line1\nline2"));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].second, "line1\nline2");
}

TEST(SseFormat, BadEventNameIsAnError) {
  EXPECT_THROW(format_sse("a\nb", "x"), minfer::Error);
  EXPECT_THROW(format_sse("a:b", "x"), minfer::Error);
}

TEST(Subscriber, FullQueueDropsNodeEventsFirst) {
  Subscriber s(3);
  s.push({"node", "1", true});
  s.push({"node", "2", true});
  s.push({"node", "3", true});
  s.push({"node", "4", true});     // full: this node event is dropped
  s.push({"token", "t", false});   // full: evicts the oldest node event (1)
  EXPECT_EQ(s.dropped_total(), 2u);
  EXPECT_EQ(s.queued(), 3u);
  const auto ev = parse(s.wait_and_take(0));
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0], (std::pair<std::string, std::string>{"dropped", R"({"count":2})"}));
  EXPECT_EQ(ev[1].second, "2");
  EXPECT_EQ(ev[2].second, "3");
  EXPECT_EQ(ev[3], (std::pair<std::string, std::string>{"token", "t"}));
  EXPECT_EQ(s.wait_and_take(0), "");  // the drop count was reported once
}

TEST(Subscriber, FullOfFramingEventsEvictsTheOldest) {
  Subscriber s(2);
  s.push({"step", "a", false});
  s.push({"step", "b", false});
  s.push({"step", "c", false});
  EXPECT_EQ(s.dropped_total(), 0u);  // only node events count as dropped statistics
  const auto ev = parse(s.wait_and_take(0));
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].second, "b");
  EXPECT_EQ(ev[1].second, "c");
}

TEST(EventHub, PublishNeverWaitsForASlowSubscriber) {
  EventHub hub(10);
  auto slow = hub.subscribe();
  auto other = hub.subscribe();
  // Nobody reads: with a blocking queue this would hang.
  for (int i = 0; i < 100000; ++i) hub.publish("node", std::to_string(i), true);
  hub.publish("done", "{}");
  EXPECT_EQ(slow->queued(), 10u);
  EXPECT_EQ(slow->dropped_total(), 100000u - 9);
  const auto ev = parse(other->wait_and_take(0));
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().first, "done");
  hub.unsubscribe(slow);
  EXPECT_TRUE(slow->closed());
  EXPECT_EQ(hub.subscribers(), 1u);
  hub.publish("node", "x", true);
  EXPECT_EQ(slow->queued(), 10u);  // a closed subscriber gets nothing more
  hub.close_all();
  EXPECT_TRUE(other->closed());
  EXPECT_EQ(hub.subscribers(), 0u);
}
