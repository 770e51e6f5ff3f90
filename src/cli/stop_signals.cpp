#include "cli/stop_signals.h"

#include <pthread.h>

#include <atomic>
#include <thread>

namespace minfer::cli {

sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

void listen_until_signal(const sigset_t& set, const std::function<void()>& listen,
                         const std::function<void()>& stop) {
  std::atomic<bool> signalled{false};
  std::thread sig([&] {
    int s = 0;
    sigwait(&set, &s);
    signalled = true;
    stop();
  });
  listen();
  // listen() also returns when the server failed: make sure the signal thread can end.
  if (!signalled) pthread_kill(sig.native_handle(), SIGTERM);
  sig.join();
}

}  // namespace minfer::cli
