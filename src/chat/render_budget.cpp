#include "chat/render_budget.h"

#include <string>

#include "chat/eval_error.h"

namespace minfer::chat {

namespace {
thread_local RenderBudget* current = nullptr;
}

RenderBudget::RenderBudget() : outer_(current) { current = this; }
RenderBudget::~RenderBudget() { current = outer_; }

void check_string_size(size_t bytes) {
  if (bytes > kMaxStringBytes)
    eval_fail("string too large: " + std::to_string(bytes) + " bytes (at most " + std::to_string(kMaxStringBytes) + ")");
}

void charge_bytes(size_t bytes) {
  check_string_size(bytes);
  if (!current) return;
  current->built_ += bytes;
  if (current->built_ > kMaxBuiltBytes)
    eval_fail("the template built more than " + std::to_string(kMaxBuiltBytes >> 20) + " MiB of text");
}

void check_items(size_t n) {
  if (n > kMaxItems)
    eval_fail("list too large: " + std::to_string(n) + " items (at most " + std::to_string(kMaxItems) + ")");
}

void charge_steps(uint64_t n) {
  if (current && (current->steps_ += n) > kMaxSteps)
    eval_fail("the template ran too long (more than " + std::to_string(kMaxSteps) + " steps)");
}

void charge_sort(size_t n) {
  size_t log2n = 1;
  while ((size_t(1) << log2n) < n) ++log2n;
  charge_steps(1 + n * log2n / 16);
}

}  // namespace minfer::chat
