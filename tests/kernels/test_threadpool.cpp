// The kernels' thread pool: every chunk runs exactly once whatever the thread count, nested and
// concurrent calls complete, exceptions reach the caller, and the workers really take chunks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/threadpool.h"
#include "common/error.h"

namespace minfer::cpu {
namespace {

class ThreadPool : public ::testing::Test {
 protected:
  void TearDown() override { set_threads(0); }
};

// Runs n chunks and checks that each ran once, on a thread index below the thread count.
void expect_each_chunk_once(int64_t n) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<int> bad_thread{0};
  const int nth = threads();
  parallel_for(n, [&](int64_t c, int t) {
    hits[size_t(c)].fetch_add(1);
    if (t < 0 || t >= nth) bad_thread.fetch_add(1);
  });
  for (int64_t c = 0; c < n; ++c) ASSERT_EQ(hits[size_t(c)].load(), 1) << "chunk " << c << " of " << n;
  EXPECT_EQ(bad_thread.load(), 0);
}

TEST_F(ThreadPool, EveryChunkRunsExactlyOnce) {
  for (int nth : {1, 2, 3, 4, 8, 2, 1}) {  // also shrinks and regrows the pool
    set_threads(nth);
    ASSERT_EQ(threads(), nth);
    for (int64_t n : {1, 2, 3, 7, 64, 1000, 20000}) {
      SCOPED_TRACE(testing::Message() << nth << " threads, " << n << " chunks");
      expect_each_chunk_once(n);
    }
  }
}

TEST_F(ThreadPool, ManyCallsInARow) {
  // Back-to-back jobs are where a worker that slept through a job could claim a stale one.
  set_threads(3);
  std::vector<int64_t> sums(2000, 0);
  for (size_t i = 0; i < sums.size(); ++i) {
    std::atomic<int64_t> s{0};
    const int64_t n = int64_t(i % 9) + 1;
    parallel_for(n, [&](int64_t c, int) { s.fetch_add(c + 1); });
    sums[i] = s.load();
    ASSERT_EQ(sums[i], n * (n + 1) / 2) << "call " << i;
  }
}

TEST_F(ThreadPool, ZeroChunksCallsNothing) {
  set_threads(2);
  bool called = false;
  parallel_for(0, [&](int64_t, int) { called = true; });
  parallel_for(-3, [&](int64_t, int) { called = true; });
  EXPECT_FALSE(called);
}

TEST_F(ThreadPool, NestedCallsRunInlineAndComplete) {
  set_threads(2);
  constexpr int64_t kOuter = 16, kInner = 5;
  std::vector<std::atomic<int>> hits(size_t(kOuter * kInner));
  std::atomic<int> not_in_parallel{0};
  EXPECT_FALSE(in_parallel());
  parallel_for(kOuter, [&](int64_t o, int) {
    if (!in_parallel()) not_in_parallel.fetch_add(1);
    parallel_for(kInner, [&](int64_t i, int) { hits[size_t(o * kInner + i)].fetch_add(1); });
  });
  EXPECT_FALSE(in_parallel());
  EXPECT_EQ(not_in_parallel.load(), 0);
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST_F(ThreadPool, SetThreadsInsideAChunkIsAnError) {
  set_threads(2);
  EXPECT_THROW(parallel_for(4, [&](int64_t, int) { set_threads(3); }), Error);
  EXPECT_EQ(threads(), 2);
  expect_each_chunk_once(100);
}

TEST_F(ThreadPool, FirstExceptionReachesTheCallerAfterAllChunks) {
  for (int nth : {1, 2, 4}) {
    set_threads(nth);
    std::vector<std::atomic<int>> hits(50);
    try {
      parallel_for(50, [&](int64_t c, int) {
        hits[size_t(c)].fetch_add(1);
        if (c == 7) throw std::runtime_error("chunk 7 failed");
      });
      ADD_FAILURE() << "no exception with " << nth << " threads";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "chunk 7 failed");
    }
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    expect_each_chunk_once(100);  // the pool is still usable
  }
}

TEST_F(ThreadPool, ConcurrentCallersBothComplete) {
  // A second thread finding the pool busy runs its chunks itself.
  set_threads(2);
  auto job = [](int64_t n, int64_t& sum) {
    for (int rep = 0; rep < 200; ++rep) {
      std::atomic<int64_t> s{0};
      parallel_for(n, [&](int64_t c, int) { s.fetch_add(c); });
      sum += s.load();
    }
  };
  int64_t a = 0, b = 0;
  std::thread other([&] { job(37, b); });
  job(53, a);
  other.join();
  EXPECT_EQ(a, 200 * (53 * 52 / 2));
  EXPECT_EQ(b, 200 * (37 * 36 / 2));
}

TEST_F(ThreadPool, WorkersTakeChunks) {
  // Two chunks that each wait for the other to start can only finish on two threads. The
  // deadline only keeps a broken pool from hanging the test.
  set_threads(2);
  std::atomic<int> started{0};
  std::atomic<bool> timed_out{false};
  std::vector<int> thread_of(2, -1);
  parallel_for(2, [&](int64_t c, int t) {
    thread_of[size_t(c)] = t;
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (started.load() < 2) {
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        return;
      }
      std::this_thread::yield();
    }
  });
  EXPECT_FALSE(timed_out.load());
  EXPECT_NE(thread_of[0], thread_of[1]);
}

TEST_F(ThreadPool, SetThreadsZeroMeansTheDefault) {
  set_threads(0);
  const int def = threads();
  EXPECT_GE(def, 1);
  set_threads(5);
  EXPECT_EQ(threads(), 5);
  set_threads(-1);
  EXPECT_EQ(threads(), def);
}

}  // namespace
}  // namespace minfer::cpu
