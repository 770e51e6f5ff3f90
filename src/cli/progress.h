// A one-line progress bar on stderr, drawn only when stderr is a terminal (so logs and pipes
// stay clean) and only for work that takes long enough to be worth watching.
#pragma once
#include <chrono>
#include <string>

namespace minfer::cli {

class Progress {
 public:
  // enabled = false (e.g. --quiet) or a non-tty stderr makes every call a no-op.
  Progress(std::string label, bool enabled = true);
  ~Progress();
  void update(double fraction);  // 0..1; redraws at most ~10 times a second
  void finish();                 // clears the line

 private:
  std::string label_;
  bool active_;
  bool drawn_ = false;
  int last_permille_ = -1;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

bool stderr_is_tty();

}  // namespace minfer::cli
