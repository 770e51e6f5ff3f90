#include "backend/cpu/repack.h"

#include <cstdlib>
#include <cstring>

#include "backend/cpu/threadpool.h"
#include "common/error.h"
#include "quant/quant.h"

namespace minfer::cpu {

bool packable(GgmlType type, int64_t rows, int64_t cols) {
  return (type == GgmlType::Q8_0 || type == GgmlType::Q4_0) && rows > 0 &&
         rows % kPackRows == 0 && cols > 0 && cols % 32 == 0;
}

size_t packed_bytes(GgmlType type, int64_t rows, int64_t cols) {
  return size_t(rows / kPackRows) * packed_group_bytes(type, cols);
}

int packed_offset(GgmlType type) { return type == GgmlType::Q8_0 ? 128 : 8; }

void AlignedFree::operator()(uint8_t* p) const { std::free(p); }

AlignedBuffer aligned_buffer(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p) fail("out of memory allocating {} bytes for repacked weights", bytes);
  return AlignedBuffer(static_cast<uint8_t*>(p));
}

namespace {

// One group: rows r0..r0+15 of w.
void pack_group(const WeightView& w, int64_t r0, uint8_t* out) {
  const int64_t nb = w.cols / 32;
  const size_t qb = packed_quant_bytes(w.type);
  const size_t bb = type_traits(w.type).type_size;  // GGUF block bytes (34 or 18)
  uint8_t* scales = out + size_t(nb) * qb;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* q = out + size_t(b) * qb;
    for (int r = 0; r < kPackRows; ++r) {
      const uint8_t* blk = w.data + size_t(r0 + r) * w.row_bytes + size_t(b) * bb;
      std::memcpy(scales + size_t(b) * 32 + 2 * r, blk, 2);  // d (F16) comes first in both
      const uint8_t* qs = blk + 2;
      for (size_t k4 = 0; k4 < qb / 64; ++k4)
        for (int j = 0; j < 4; ++j) {
          const uint8_t v = qs[4 * k4 + j];
          q[64 * k4 + 4 * r + j] = w.type == GgmlType::Q8_0 ? uint8_t(v ^ 0x80) : v;
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
