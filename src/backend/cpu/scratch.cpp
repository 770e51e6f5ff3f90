#include "backend/cpu/scratch.h"

#include <vector>

namespace minfer::cpu {

uint8_t* thread_scratch(ScratchSlot slot, size_t bytes) {
  thread_local std::vector<uint8_t> bufs[int(ScratchSlot::kCount)];
  std::vector<uint8_t>& b = bufs[int(slot)];
  if (b.size() < bytes + 64) b.resize(bytes + 64);
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(b.data()) + 63) & ~uintptr_t(63));
}

}  // namespace minfer::cpu
