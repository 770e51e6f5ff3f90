// Bounds on one render's work. Chat templates come inside model files, so a hostile one must
// fail with an error, not exhaust memory or run for hours: a string a render builds holds at most
// kMaxStringBytes, a list kMaxItems, all strings built or copied together at most kMaxBuiltBytes,
// and a render takes at most kMaxSteps steps (a statement or an expression is one, a loop
// iteration four, an item a builtin walks through 1/16). Real templates use a small fraction of
// each (a long conversation: thousands of steps, the prompt's bytes a few times); a render that
// uses all of them takes about a second.
#pragma once
#include <cstddef>
#include <cstdint>

namespace minfer::chat {

constexpr size_t kMaxStringBytes = size_t(64) << 20;
constexpr size_t kMaxItems = size_t(1) << 20;
constexpr size_t kMaxBuiltBytes = size_t(1) << 30;
constexpr uint64_t kMaxSteps = uint64_t(1) << 20;

// Opens the budget for the renders on this thread while it lives (the counts start at zero;
// a budget opened inside another one suspends it). Without one, only the per-value caps apply.
class RenderBudget {
 public:
  RenderBudget();
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

 private:
  RenderBudget* outer_;
  friend void charge_bytes(size_t);
  friend void charge_steps(uint64_t);
  size_t built_ = 0;
  uint64_t steps_ = 0;
};

// A string of `bytes` about to be built or copied (EvalError past a bound).
void charge_bytes(size_t bytes);
// A string being built is about to reach `bytes` (EvalError past kMaxStringBytes); what it
// finally holds is charged where it is used.
void check_string_size(size_t bytes);
// A list of `n` items about to be built.
void check_items(size_t n);
// Work about to be done, in steps.
void charge_steps(uint64_t n);
inline void charge_step() { charge_steps(1); }
// A sort of `n` items: its comparisons, n log2 n, as steps.
void charge_sort(size_t n);

}  // namespace minfer::chat
