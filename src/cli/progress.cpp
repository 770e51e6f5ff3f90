#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace minfer::cli {

bool stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::string label, bool enabled)
    : label_(std::move(label)),
      active_(enabled && stderr_is_tty()),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { finish(); }

void Progress::update(double fraction) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  // Quick work never shows a bar: only after half a second, then at ~10 Hz.
  if (now - start_ < std::chrono::milliseconds(500)) return;
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100) && fraction < 1.0) return;
  const int permille = int(std::clamp(fraction, 0.0, 1.0) * 1000);
  if (permille == last_permille_) return;
  last_permille_ = permille;
  last_draw_ = now;
  constexpr int width = 30;
  const int filled = permille * width / 1000;
  std::string bar(size_t(filled), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "\r%s [%s] %3d%%", label_.c_str(), bar.c_str(), permille / 10);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (active_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  drawn_ = false;
  active_ = false;
}

}  // namespace minfer::cli
