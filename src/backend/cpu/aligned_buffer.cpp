#include "backend/cpu/aligned_buffer.h"

#include <cstdlib>

#include <sys/mman.h>

#include "common/error.h"

namespace minfer::cpu {

void AlignedFree::operator()(uint8_t* p) const { std::free(p); }

AlignedBuffer aligned_buffer(size_t bytes, const char* what) {
  // Decode streams these buffers once per token: on 2 MiB pages the walk costs no TLB misses
  // and the hardware prefetchers are not stopped at every 4 KiB boundary (a two-thread read
  // loop here: 27 -> 31 GB/s). THP is often opt-in (enabled=madvise), hence the advice.
  constexpr size_t kHuge = size_t(2) << 20;
  const bool huge = bytes >= kHuge;
  const size_t align = huge ? kHuge : 64;
  const size_t rounded = ((bytes == 0 ? 1 : bytes) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p) fail("out of memory allocating {} bytes for {}", bytes, what);
#ifdef MADV_HUGEPAGE
  if (huge) (void)::madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return AlignedBuffer(static_cast<uint8_t*>(p));
}

}  // namespace minfer::cpu
