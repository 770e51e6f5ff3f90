#include "backend/cpu/repack.h"

#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

#include "backend/cpu/threadpool.h"
#include "common/error.h"
#include "quant/quant.h"

namespace minfer::cpu {

bool packable(GgmlType type, int64_t rows, int64_t cols) {
  return packed_quant_bytes(type) != 0 && rows >= kPackRows && cols > 0 && cols % 32 == 0;
}

size_t packed_bytes(GgmlType type, int64_t rows, int64_t cols) {
  return size_t(rows / kPackRows) * packed_group_bytes(type, cols);
}

int packed_offset(GgmlType type) {
  return type == GgmlType::Q8_0 ? 128 : type == GgmlType::Q5_0 ? 16 : 8;
}

void AlignedFree::operator()(uint8_t* p) const { std::free(p); }

AlignedBuffer aligned_buffer(size_t bytes) {
  // Decode streams these buffers once per token: on 2 MiB pages the walk costs no TLB misses
  // and the hardware prefetchers are not stopped at every 4 KiB boundary (a two-thread read
  // loop here: 27 -> 31 GB/s). THP is often opt-in (enabled=madvise), hence the advice.
  constexpr size_t kHuge = size_t(2) << 20;
  const bool huge = bytes >= kHuge;
  const size_t align = huge ? kHuge : 64;
  const size_t rounded = ((bytes == 0 ? 1 : bytes) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p) fail("out of memory allocating {} bytes for repacked weights", bytes);
#ifdef MADV_HUGEPAGE
  if (huge) (void)::madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return AlignedBuffer(static_cast<uint8_t*>(p));
}

namespace {

// One group: rows r0..r0+15 of w.
void pack_group(const WeightView& w, int64_t r0, uint8_t* out) {
  const int64_t nb = w.cols / 32;
  const size_t qb = packed_quant_bytes(w.type);
  const size_t bb = type_traits(w.type).type_size;  // GGUF block bytes (34, 18 or 22)
  const bool q8 = w.type == GgmlType::Q8_0, q5 = w.type == GgmlType::Q5_0;
  uint8_t* scales = out + size_t(nb) * qb;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* q = out + size_t(b) * qb;
    if (q5) std::memset(q + 256, 0, 64);
    for (int r = 0; r < kPackRows; ++r) {
      const uint8_t* blk = w.data + size_t(r0 + r) * w.row_bytes + size_t(b) * bb;
      std::memcpy(scales + size_t(b) * 32 + 2 * r, blk, 2);  // d (F16) comes first in all three
      const uint8_t* qs = blk + (q5 ? 6 : 2);
      for (int k4 = 0; k4 < (q8 ? 8 : 4); ++k4)
        for (int j = 0; j < 4; ++j) {
          const uint8_t v = qs[4 * k4 + j];
          q[64 * k4 + 4 * r + j] = q8 ? uint8_t(v ^ 0x80) : v;
        }
      if (q5) {
        uint32_t qh;
        std::memcpy(&qh, blk + 2, 4);
        for (int e = 0; e < 32; ++e)
          if ((qh >> e) & 1) {
            // Column e lies in chunk e / 4, byte lane 4 r + e % 4 of that chunk's mask.
            const int bit = 4 * r + e % 4;
            q[256 + 8 * (e / 4) + bit / 8] |= uint8_t(1u << (bit % 8));
          }
      }
    }
  }
}

}  // namespace

void pack_weight(const WeightView& w, uint8_t* out) {
  if (!packable(w.type, w.rows, w.cols))
    fail("cannot repack a {} weight of {} x {}", type_name(w.type), w.rows, w.cols);
  const size_t gb = packed_group_bytes(w.type, w.cols);
  const int64_t groups = w.rows / kPackRows;
  parallel_for(groups, [&](int64_t g, int) { pack_group(w, g * kPackRows, out + size_t(g) * gb); });
}

}  // namespace minfer::cpu
