// The pool behind parallel_for (see threadpool.h for why it replaces OpenMP).
//
// One job at a time (a mutex, held by the calling thread for the whole call). The job's state is
// one 64-bit word, tag:32 | remaining:32: a thread claims a chunk by decrementing `remaining`
// with a CAS, so a claim can only succeed while the job is live (the tag changes with every job,
// so a worker that slept through several jobs cannot claim from a stale one). The job's fields
// (fn, ctx, n) are therefore read only after a successful claim, when they cannot change until
// that chunk is reported done. The caller waits for `done` == n, i.e. only for chunks that some
// thread has started; workers that never woke up are simply not waited for.
#include "backend/cpu/threadpool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "backend/cpu/kernels.h"
#include "common/error.h"

namespace minfer::cpu {
namespace {

using Clock = std::chrono::steady_clock;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Sleeping on a 32-bit word: futex directly on Linux (the wake is skipped by the callers when
// nobody sleeps), the C++20 atomic wait elsewhere.
void wait_while_equal(std::atomic<uint32_t>& a, uint32_t value) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&a), FUTEX_WAIT_PRIVATE, value, nullptr,
          nullptr, 0);
#else
  a.wait(value);
#endif
}

void wake_all(std::atomic<uint32_t>& a) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&a), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
#else
  a.notify_all();
#endif
}

// How long an idle thread spins before it sleeps: long enough to bridge the serial gap between
// two parallel kernels of a decode step (a norm, attention, a rope: tens of microseconds),
// short enough that a spinning thread on a loaded machine gives its core back quickly (the
// spin also yields now and then). MINFER_SPIN_US overrides it (0 = sleep at once). Measured on
// an idle machine, qwen2.5-0.5b Q8_0 tg64 at 2 threads: 5 us 40.8/39.5 t/s, 20 us 43.3/41.8,
// 50 us 43.3/42.9, 100 us 43.1/43.5, 1000 us 41.0/41.9.
Clock::duration spin_budget() {
  static const Clock::duration d = [] {
    long us = 50;
    if (const char* s = std::getenv("MINFER_SPIN_US")) {
      char* end = nullptr;
      const long v = std::strtol(s, &end, 10);
      if (end != s && *end == '\0' && v >= 0 && v <= 1000000) us = v;
    }
    return std::chrono::duration_cast<Clock::duration>(std::chrono::microseconds(us));
  }();
  return d;
}

// Spins (pause, and a yield now and then so that a runnable thread sharing the core gets it)
// until done() or the spin budget is spent; returns done().
template <class Done>
bool spin_until(Done done) {
  if (done()) return true;
  const Clock::duration budget = spin_budget();
  if (budget.count() == 0) return false;
  const Clock::time_point t0 = Clock::now();
  for (unsigned i = 1;; ++i) {
    for (int k = 0; k < 16; ++k) cpu_relax();
    if (done()) return true;
    if (Clock::now() - t0 >= budget) return done();
    if (i % 64 == 0) std::this_thread::yield();
  }
}

int usable_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

thread_local bool t_in_parallel = false;

void run_inline(int64_t n, ChunkFn fn, void* ctx) {
  const bool outer = t_in_parallel;
  t_in_parallel = true;
  struct Reset {
    bool v;
    ~Reset() { t_in_parallel = v; }
  } reset{outer};
  std::exception_ptr first;  // same contract as the pool: every chunk runs, then rethrow
  for (int64_t c = 0; c < n; ++c) {
    try {
      fn(ctx, c, 0);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

class Pool {
 public:
  ~Pool() {
    std::lock_guard<std::mutex> lk(mu_);
    stop_workers();
  }

  void run(int64_t n, ChunkFn fn, void* ctx, int n_threads) {
    std::unique_lock<std::mutex> lk(mu_, std::try_to_lock);
    if (!lk.owns_lock()) return run_inline(n, fn, ctx);  // another thread holds the pool
    ensure_workers(n_threads - 1);
    if (workers_.empty()) return run_inline(n, fn, ctx);

    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    error_ = nullptr;
    done_.store(0, std::memory_order_relaxed);
    ++tag_;
    state_.store((uint64_t(tag_) << 32) | uint64_t(n), std::memory_order_release);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) wake_all(epoch_);

    t_in_parallel = true;
    run_chunks(0);
    t_in_parallel = false;

    const uint32_t all = uint32_t(n);
    if (!spin_until([&] { return done_.load(std::memory_order_acquire) == all; })) {
      caller_sleeping_.store(true, std::memory_order_seq_cst);
      for (uint32_t d; (d = done_.load(std::memory_order_seq_cst)) != all;)
        wait_while_equal(done_, d);
      caller_sleeping_.store(false, std::memory_order_relaxed);
    }
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  // Claims the next chunk of the live job, if any; its index is in [0, n_).
  bool claim(int64_t& chunk) {
    uint64_t s = state_.load(std::memory_order_acquire);
    while (uint32_t(s) != 0) {
      if (state_.compare_exchange_weak(s, s - 1, std::memory_order_acquire,
                                       std::memory_order_acquire)) {
        chunk = n_ - int64_t(uint32_t(s));  // ascending order: neighbours share cache lines
        return true;
      }
    }
    return false;
  }

  void run_chunks(int thread) {
    for (int64_t c; claim(c);) {
      const uint32_t all = uint32_t(n_);
      try {
        fn_(ctx_, c, thread);
      } catch (...) {
        std::lock_guard<std::mutex> lk(error_mu_);
        if (!error_) error_ = std::current_exception();
      }
      // After the last chunk's increment the caller may start the next job: only pool
      // members (not the job's fields) are touched past this point.
      if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == all &&
          caller_sleeping_.load(std::memory_order_seq_cst))
        wake_all(done_);
    }
  }

  // `seen`: the epoch when the worker was created (it may start running after the first job
  // was published, which it should then join).
  void worker(int thread, uint32_t seen) {
    t_in_parallel = true;  // a chunk that calls parallel_for runs it inline
    for (;;) {
      if (!spin_until([&] { return epoch_.load(std::memory_order_acquire) != seen; })) {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        while (epoch_.load(std::memory_order_seq_cst) == seen) wait_while_equal(epoch_, seen);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
      seen = epoch_.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_acquire)) return;
      run_chunks(thread);
    }
  }

  // Called with mu_ held and no job live.
  void ensure_workers(int n) {
    if (int(workers_.size()) == n) return;
    stop_workers();
    const uint32_t e = epoch_.load(std::memory_order_relaxed);
    try {
      for (int i = 0; i < n; ++i) workers_.emplace_back([this, i, e] { worker(i + 1, e); });
    } catch (const std::system_error& e) {
      const size_t started = workers_.size();
      stop_workers();
      fail("thread pool: could not start worker {} of {}: {}", started + 1, n, e.what());
    }
  }

  void stop_workers() {
    if (workers_.empty()) return;
    stop_.store(true, std::memory_order_release);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    wake_all(epoch_);
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stop_.store(false, std::memory_order_relaxed);
  }

  std::mutex mu_;
  std::vector<std::thread> workers_;
  uint32_t tag_ = 0;

  // The live job; written by the caller before `state_` is published.
  ChunkFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  std::mutex error_mu_;
  std::exception_ptr error_;

  std::atomic<uint64_t> state_{0};        // tag:32 | chunks not yet claimed:32
  std::atomic<uint32_t> done_{0};         // chunks finished (futex word of the caller)
  std::atomic<uint32_t> epoch_{0};        // bumped per job (futex word of the workers)
  std::atomic<uint32_t> sleepers_{0};     // workers in (or entering) a futex wait
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
};

Pool& pool() {
  static Pool p;
  return p;
}

std::atomic<int> g_threads{0};

}  // namespace

void set_threads(int n) {
  if (in_parallel()) fail("set_threads({}) called from inside a parallel_for chunk", n);
  g_threads.store(n <= 0 ? 0 : std::min(n, 4096), std::memory_order_relaxed);
}

int threads() {
  static const int by_default = usable_cpus();
  const int n = g_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : by_default;
}

bool in_parallel() { return t_in_parallel; }

void parallel_for_raw(int64_t n_chunks, ChunkFn fn, void* ctx) {
  if (n_chunks <= 0) return;
  if (n_chunks > int64_t(UINT32_MAX))
    fail("parallel_for: {} chunks is more than a job can count", n_chunks);
  const int nth = threads();
  if (n_chunks == 1 || nth == 1 || t_in_parallel) return run_inline(n_chunks, fn, ctx);
  pool().run(n_chunks, fn, ctx, nth);
}

}  // namespace minfer::cpu
