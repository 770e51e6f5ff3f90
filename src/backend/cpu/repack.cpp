#include "backend/cpu/repack.h"

#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

#include "backend/cpu/threadpool.h"
#include "common/error.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace minfer::cpu {

bool packable(GgmlType type, int64_t rows, int64_t cols) {
  return (packed_quant_bytes(type) != 0 || packed_kquant(type)) && rows >= kPackRows && cols > 0 &&
         cols % packed_block_cols(type) == 0;
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

// One row's K-quant super-block as 256 unsigned quants (Q4_K 0-15, Q5_K 0-31, Q6_K q + 32 in
// 0-63) and its sub-block scales (Q4_K/Q5_K: 8 scales and 8 mins; Q6_K: 16 int8 scales).
struct KBlock {
  uint8_t q[256];
  uint8_t sc[16];
  uint8_t mn[8];
  uint16_t d, dmin;
};

KBlock decode_kblock(GgmlType t, const uint8_t* blk) {
  KBlock k{};
  if (t == GgmlType::Q6_K) {
    const auto* b = reinterpret_cast<const quant::block_q6_K*>(blk);
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < 4; ++r)
        for (int l = 0; l < 32; ++l) {
          const int lo = (b->ql[64 * h + l + 32 * (r & 1)] >> (4 * (r >> 1))) & 0x0F;
          k.q[128 * h + 32 * r + l] = uint8_t(lo | (((b->qh[32 * h + l] >> (2 * r)) & 3) << 4));
        }
    std::memcpy(k.sc, b->scales, 16);
    k.d = b->d;
    return k;
  }
  const bool q5 = t == GgmlType::Q5_K;
  const uint8_t* scales = q5 ? reinterpret_cast<const quant::block_q5_K*>(blk)->scales
                             : reinterpret_cast<const quant::block_q4_K*>(blk)->scales;
  const uint8_t* qs = q5 ? reinterpret_cast<const quant::block_q5_K*>(blk)->qs
                         : reinterpret_cast<const quant::block_q4_K*>(blk)->qs;
  for (int j = 0; j < 8; ++j) {
    quant::get_scale_min_k4(j, scales, &k.sc[j], &k.mn[j]);
    for (int l = 0; l < 32; ++l) {
      int v = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0x0F;
      if (q5) v |= ((reinterpret_cast<const quant::block_q5_K*>(blk)->qh[l] >> j) & 1) << 4;
      k.q[32 * j + l] = uint8_t(v);
    }
  }
  std::memcpy(&k.d, blk, 2);
  std::memcpy(&k.dmin, blk + 2, 2);
  return k;
}

// One K-quant group: rows r0..r0+15 of w (layout in repack.h).
void pack_kgroup(const WeightView& w, int64_t r0, uint8_t* out) {
  const int64_t nsb = w.cols / 256;
  const size_t bb = type_traits(w.type).type_size;
  const size_t kb = packed_kq_block_bytes(w.type);
  const bool q5 = w.type == GgmlType::Q5_K, q6 = w.type == GgmlType::Q6_K;
  for (int64_t b = 0; b < nsb; ++b) {
    uint8_t* o = out + size_t(b) * kb;
    std::memset(o, 0, kb);
    uint8_t* ext = o + kKqExtra;                  // Q5_K masks or Q6_K high bits
    uint8_t* par = o + packed_kq_scales(w.type);  // scales (and mins)
    for (int r = 0; r < kPackRows; ++r) {
      const KBlock k = decode_kblock(w.type, w.data + size_t(r0 + r) * w.row_bytes + size_t(b) * bb);
      for (int j = 0; j < 8; ++j)
        for (int c = 0; c < 4; ++c)
          for (int i = 0; i < 4; ++i) {
            const int lo = k.q[32 * j + 4 * c + i], hi = k.q[32 * j + 16 + 4 * c + i];
            const int lane = 4 * r + i;
            o[256 * j + 64 * c + lane] = uint8_t((lo & 0x0F) | ((hi & 0x0F) << 4));
            if (q5) {
              uint8_t* m = ext + 64 * j + 16 * c;
              m[lane / 8] |= uint8_t(((lo >> 4) & 1) << (lane % 8));
              m[8 + lane / 8] |= uint8_t(((hi >> 4) & 1) << (lane % 8));
            }
            if (q6) {
              // Chunk c's high bits go to vector c / 2, at bits 4 (c % 2) (low) and + 2 (high).
              const int sh = 4 * (c % 2);
              ext[128 * j + 64 * (c / 2) + lane] |= uint8_t(((lo >> 4) << sh) | ((hi >> 4) << (sh + 2)));
            }
          }
      if (q6) {
        for (int s = 0; s < 16; ++s) par[16 * s + r] = k.sc[s];
        std::memcpy(par + kKqD + 2 * r, &k.d, 2);
      } else {
        for (int j = 0; j < 8; ++j) {
          par[16 * j + r] = k.sc[j];
          par[kKqMins + 32 * (j / 2) + 2 * r + j % 2] = k.mn[j];
        }
        std::memcpy(par + kKqD + 2 * r, &k.d, 2);
        std::memcpy(par + kKqDmin + 2 * r, &k.dmin, 2);
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
  const bool k = packed_kquant(w.type);
  parallel_for(groups, [&](int64_t g, int) {
    uint8_t* o = out + size_t(g) * gb;
    k ? pack_kgroup(w, g * kPackRows, o) : pack_group(w, g * kPackRows, o);
  });
}

}  // namespace minfer::cpu
