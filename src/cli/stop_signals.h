// Ctrl-C and SIGTERM stop a server cleanly: the signals are blocked in every thread (block them
// before any thread starts, so the threads inherit the mask) and taken by one thread with
// sigwait, since nothing a server does is async-signal-safe.
#pragma once
#include <signal.h>

#include <functional>

namespace minfer::cli {

sigset_t block_stop_signals();
// Runs listen() until it returns; SIGINT/SIGTERM call stop(), which must make listen() return.
void listen_until_signal(const sigset_t& set, const std::function<void()>& listen,
                         const std::function<void()>& stop);

}  // namespace minfer::cli
