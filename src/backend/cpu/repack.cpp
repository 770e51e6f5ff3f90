#include "backend/cpu/repack.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backend/cpu/threadpool.h"
#include "common/error.h"
#include "quant/blocks.h"
#include "quant/iq_lattice.h"
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
  if (packed_has_mins(type)) return 0;
  if (type == GgmlType::MXFP4 || type == GgmlType::NVFP4) return 12;
  if (type == GgmlType::Q1_0 || type == GgmlType::Q2_0) return 1;
  return type == GgmlType::Q8_0 || type == GgmlType::IQ4_NL ? 128 : type == GgmlType::Q5_0 ? 16 : 8;
}

namespace {

// Four 32-bit words at once (GCC's vector extension: SSE2 on x86-64, plain words elsewhere).
typedef uint32_t U32x4 __attribute__((vector_size(16)));

inline uint32_t load4(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void store4(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// Row r's 32 bits of a block (bit j: column j) into the 8 chunk masks of its group: chunk k's bit
// 4 r + i is column 4 k + i (Q5_0's fifth bits, Q1_0's signs).
inline void add_chunk_bits(uint64_t (&mask)[8], uint32_t bits, int r) {
  for (int k = 0; k < 8; ++k) mask[k] |= uint64_t((bits >> (4 * k)) & 0xF) << (4 * r);
}

// One group: rows r0..r0+15 of w. A row's 4 columns of a chunk are one 32-bit word in both
// layouts, and a row's fifth bits of a chunk 4 bits of its 64-bit mask, so a block moves in
// words: byte-wise copies and a bit loop ran at 1.7 GB/s (Q8_0) and 0.15 GB/s (Q5_0) of GGUF
// bytes on a core, a third of a model's load time.
void pack_group(const WeightView& w, int64_t r0, uint8_t* out) {
  const int64_t nb = w.cols / 32;
  const size_t qb = packed_quant_bytes(w.type), hb = packed_head_bytes(w.type);
  const size_t bb = type_traits(w.type).type_size;  // GGUF block bytes (34, 18, 20, 22, 24 or 17)
  // IQ4_NL's and MXFP4's nibbles are copied as Q4_0's: the kernels look their values up.
  const bool q8 = w.type == GgmlType::Q8_0, q5 = w.type == GgmlType::Q5_0 || w.type == GgmlType::Q5_1;
  const bool e8m0 = packed_bf16_scales(w.type);  // MXFP4: e, qs[16]
  const bool mins = packed_has_mins(w.type);
  const int words = q8 ? 8 : 4;                 // 32-bit words of quants a row and block
  const uint32_t flip = q8 ? 0x80808080u : 0u;  // Q8_0 is stored + 128 (unsigned)
  // GGUF blocks: d, [m], [qh], qs.
  const size_t qh_at = mins ? 4 : 2, qs_at = e8m0 ? 1 : qh_at + (q5 ? 4 : 0);
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* q = out + packed_quants_at(qb, b, hb);
    uint8_t* scales = out + packed_scales_at(qb, b, hb);
    uint64_t mask[8] = {};  // Q5: chunk k's fifth bits, bit 4 r + j for column 4 k + j of row r
    for (int r = 0; r < kPackRows; ++r) {
      const uint8_t* blk = w.data + size_t(r0 + r) * w.row_bytes + size_t(b) * bb;
      if (e8m0) {  // 2^(e - 128) as BF16: the F32's high half (its low half is zero)
        uint32_t bits;
        const float f = quant::e8m0_to_fp32_half(blk[0]);
        std::memcpy(&bits, &f, 4);
        const uint16_t h = uint16_t(bits >> 16);
        std::memcpy(scales + 2 * r, &h, 2);
      } else {
        std::memcpy(scales + 2 * r, blk, 2);  // d (F16) comes first in the others
      }
      if (mins) std::memcpy(scales + 64 + 2 * r, blk + 2, 2);  // m
      const uint8_t* qs = blk + qs_at;
      for (int k = 0; k < words; ++k) store4(q + 64 * k + 4 * r, load4(qs + 4 * k) ^ flip);
      if (q5) add_chunk_bits(mask, load4(blk + qh_at), r);
    }
    if (q5) std::memcpy(q + 256, mask, sizeof(mask));
  }
  if (nb % 2) {  // an odd last block leaves its pair's second half (scales and quants) unused
    std::memset(out + packed_scales_at(qb, nb, hb), 0, 32);
    if (mins) std::memset(out + packed_scales_at(qb, nb, hb) + 64, 0, 32);
    std::memset(out + packed_quants_at(qb, nb, hb), 0, qb);
  }
}

// One Q1_0 group: block b is the 32 sign bits at 4 (b % 4) of its GGUF group of 128 (bit j of the
// word: column j), as Q5_0's fifth bits are the 32 of its qh: per chunk k a 64-bit mask, bit 4 r + i
// for column 4 k + i of row r; every block's scale is its group's d.
void pack_group_q1_0(const WeightView& w, int64_t r0, uint8_t* out) {
  const int64_t nb = w.cols / 32;  // a multiple of 4: no pair is left half used
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* scales = out + packed_scales_at(64, b);
    uint64_t mask[8] = {};
    for (int r = 0; r < kPackRows; ++r) {
      const uint8_t* grp = w.data + size_t(r0 + r) * w.row_bytes + size_t(b / 4) * sizeof(quant::block_q1_0);
      std::memcpy(scales + 2 * r, grp, 2);
      add_chunk_bits(mask, load4(grp + 2 + 4 * (b % 4)), r);
    }
    std::memcpy(out + packed_quants_at(64, b), mask, sizeof(mask));
  }
}

// One Q2_0 group: block b is the 32 2-bit fields at 8 (b % 2) of its GGUF group of 64 (column j
// at bits 2 j of that 64-bit word), laid out as repack.h says (byte 4 r + i of vector h: columns
// 16 h + 4 c + i at bits 2 c); every block's scale is its group's d.
void pack_group_q2_0(const WeightView& w, int64_t r0, uint8_t* out) {
  const int64_t nb = w.cols / 32;  // even: no pair is left half used
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* scales = out + packed_scales_at(128, b);
    uint8_t* q = out + packed_quants_at(128, b);
    for (int r = 0; r < kPackRows; ++r) {
      const uint8_t* grp = w.data + size_t(r0 + r) * w.row_bytes + size_t(b / 2) * sizeof(quant::block_q2_0);
      std::memcpy(scales + 2 * r, grp, 2);
      uint64_t f;
      std::memcpy(&f, grp + 2 + 8 * (b % 2), 8);
      for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 4; ++i) {
          uint32_t v = 0;
          for (int c = 0; c < 4; ++c) v |= uint32_t((f >> (2 * (16 * h + 4 * c + i))) & 3) << (2 * c);
          q[64 * h + 4 * r + i] = uint8_t(v);
        }
    }
  }
}

// One NVFP4 group: each GGUF block of 64 is a pair of 32-column blocks. Its sub-block s's 16
// codes are 8 bytes, elements 0-7 in the low nibbles and 8-15 in the high ones; block b's
// column t < 16 is element t of sub-block 2 (b % 2), column 16 + t element t of the next one,
// and Q4_0's byte t holds columns t and 16 + t.
void pack_group_nvfp4(const WeightView& w, int64_t r0, uint8_t* out) {
  const int64_t nb = w.cols / 32;  // even: NVFP4 rows are whole blocks of 64
  constexpr uint64_t m4 = 0x0F0F0F0F0F0F0F0FULL;
  for (int r = 0; r < kPackRows; ++r)
    for (int64_t p = 0; p < nb / 2; ++p) {
      const auto& blk = reinterpret_cast<const quant::block_nvfp4*>(w.data + size_t(r0 + r) * w.row_bytes)[p];
      uint8_t* pair = out + size_t(p) * packed_pair_bytes(256);
      // (ggml reads a code's low 7 bits, and 0x7F as 0: 0xFF is 0x7F's 240)
      for (int s = 0; s < 4; ++s) pair[16 * s + r] = blk.d[s] == 0x7F ? 0 : blk.d[s] & 0x7F;
      for (int h = 0; h < 2; ++h) {
        uint64_t a, c;
        std::memcpy(&a, blk.qs + 16 * h, 8);
        std::memcpy(&c, blk.qs + 16 * h + 8, 8);
        const uint64_t lo = (a & m4) | ((c & m4) << 4), hi = ((a >> 4) & m4) | (c & ~m4);
        uint8_t* q = pair + 64 + 256 * size_t(h);
        for (int k = 0; k < 4; ++k) store4(q + 64 * k + 4 * r, uint32_t(k < 2 ? lo >> (32 * k) : hi >> (32 * (k - 2))));
      }
    }
}

inline U32x4 load16(const uint8_t* p) {
  U32x4 v;
  std::memcpy(&v, p, 16);
  return v;
}
// The 4-bit fields at bit sn of the 16 bytes at p (low) and at p + 16 (high) as one row's 4
// chunk words: low | high << 4 per byte, the packed nibbles of columns 4 c + i and 16 + 4 c + i.
inline U32x4 nibble_words(const uint8_t* p, int sn) {
  constexpr uint32_t m4 = 0x0F0F0F0F;
  return ((load16(p) >> sn) & m4) | (((load16(p + 16) >> sn) & m4) << 4);
}
// Row r's words of sub-block j's 4 chunks (packed_kq_quants).
template <GgmlType T>
inline void store_chunk_words(uint8_t* o, int j, int r, U32x4 v) {
  for (int c = 0; c < 4; ++c) store4(o + packed_kq_quants(T, j, c) + 4 * r, v[c]);
}

// The 4-bit code of each grid value (a grid byte with its sign) of a packed_iq4_layout type:
// codes[v + 128] (0xFF: none).
struct Iq4Codes {
  uint8_t of[256];
  explicit constexpr Iq4Codes(GgmlType t) : of{} {
    for (auto& c : of) c = 0xFF;
    const PackedIq4Values v = packed_iq4_values(t);
    for (int q = 0; q < 16; ++q) of[v.v[q] * packed_iq4_grid_divisor(t) + 128] = uint8_t(q);
  }
};

// A lattice super-block's sub-block j (IQ3_S, IQ3_XXS: quant::LatIq3s, LatIq3xxs) as IQ4_XS's
// 16 bytes of nibbles (low: columns 0-15, high: 16-31) of its values' codes.
template <class L>
inline U32x4 lattice_nibbles(const typename L::Block& q, int j, const Iq4Codes& codes) {
  uint8_t c[32];
  for (int l = 0; l < 4; ++l) {
    const uint64_t g = L::grid(q, j, l);
    const uint8_t s = L::signs(q, j, l);
    for (int k = 0; k < 8; ++k) {
      const int v = int(uint8_t(g >> (8 * k)));
      c[8 * l + k] = codes.of[((s >> k) & 1 ? -v : v) + 128];
    }
  }
  uint8_t nib[16];
  for (int i = 0; i < 16; ++i) nib[i] = uint8_t(c[i] | (c[16 + i] << 4));
  return load16(nib);
}

// One K-quant group: rows r0..r0+15 of w (layout in repack.h). Four lanes (columns) at a
// time as 32-bit words: the GGUF nibbles of columns 4c..4c+3 and 16+4c..16+4c+3 of a
// sub-block lie 4 bytes apart in both layouts.
template <GgmlType T>
void pack_kgroup(const WeightView& w, int64_t r0, uint8_t* out) {
  constexpr bool q2 = T == GgmlType::Q2_K, q3 = T == GgmlType::Q3_K, q5 = T == GgmlType::Q5_K,
                 q6 = T == GgmlType::Q6_K, iq4 = T == GgmlType::IQ4_XS,
                 iq3 = T == GgmlType::IQ3_S || T == GgmlType::IQ3_XXS;
  constexpr uint32_t m2 = 0x03030303;
  const int64_t nsb = w.cols / 256;
  const size_t bb = type_traits(T).type_size;
  constexpr size_t kb = packed_kq_block_bytes(T);
  // Row by row, each row's super-blocks one sequential stream (16 rows a super-block apart left
  // the loads waiting), into the group zeroed first: the bit fields are ORed in.
  std::memset(out, 0, size_t(nsb) * kb);
  for (int r = 0; r < kPackRows; ++r) {
    for (int64_t b = 0; b < nsb; ++b) {
      uint8_t* o = out + size_t(b) * kb;
      uint8_t* par = o + packed_kq_scales(T);  // scales (and mins)
      const uint8_t* blk = w.data + size_t(r0 + r) * w.row_bytes + size_t(b) * bb;
      if constexpr (q2 || q3) {
        // Sub-block j is columns 32 (j % 4) + l of half j / 4: bits 2 (j % 4) of qs[32 (j / 4)
        // + l] (and Q3_K's bit j of hmask[l]).
        const uint8_t* qs = q2 ? reinterpret_cast<const quant::block_q2_K*>(blk)->qs
                               : reinterpret_cast<const quant::block_q3_K*>(blk)->qs;
        // Each word of the packed row takes its 4 chunks' fields from one 4-word vector.
        for (int j = 0; j < 8; ++j) {
          const int sh = 2 * (j % 4);
          uint32_t third = 0;
          for (int h = 0; h < 2; ++h) {
            const U32x4 f = (load16(qs + 32 * (j / 4) + 16 * h) >> sh) & m2;  // chunk c's 2 bits go to bits 2 c
            store4(o + packed_kq_quants(T, j, h) + 4 * r, f[0] | (f[1] << 2) | (f[2] << 4) | (f[3] << 6));
            if constexpr (q3) {  // third bits: bit 4 h + c of byte 4 r + i (repack.h)
              const U32x4 t = (load16(reinterpret_cast<const quant::block_q3_K*>(blk)->hmask + 16 * h) >> j) & 0x01010101u;
              third |= (t[0] | (t[1] << 1) | (t[2] << 2) | (t[3] << 3)) << (4 * h);
            }
          }
          if constexpr (q3) store4(o + packed_kq_extra(T, j) + 4 * r, third);
        }
        if constexpr (q2) {
          const auto* q = reinterpret_cast<const quant::block_q2_K*>(blk);
          for (int k = 0; k < 16; ++k) par[32 * (k / 2) + 2 * r + k % 2] = q->scales[k];
          std::memcpy(par + kKqD + 2 * r, &q->d, 2);
          std::memcpy(par + kKqDmin + 2 * r, &q->dmin, 2);
        } else {
          const auto* q = reinterpret_cast<const quant::block_q3_K*>(blk);
          for (int k = 0; k < 16; ++k) par[16 * k + r] = uint8_t(quant::get_scale_q3_K(k, q->scales));
          std::memcpy(par + kKqD + 2 * r, &q->d, 2);
        }
      } else if constexpr (iq4) {
        // Block j's 16 bytes of nibbles (low: columns 0-15, high: 16-31) are Q4_0's: chunk c
        // takes bytes 4 c .. 4 c + 3.
        const auto* q = reinterpret_cast<const quant::block_iq4_xs*>(blk);
        for (int j = 0; j < 8; ++j) {
          store_chunk_words<T>(o, j, r, load16(q->qs + 16 * j));
          par[16 * j + r] = uint8_t(int8_t(quant::iq4_xs_scale(*q, j)));
        }
        std::memcpy(par + kKqD + 2 * r, &q->d, 2);
      } else if constexpr (iq3) {
        using L = std::conditional_t<T == GgmlType::IQ3_S, quant::LatIq3s, quant::LatIq3xxs>;
        static constexpr Iq4Codes kCodes(T);
        const auto& q = *reinterpret_cast<const typename L::Block*>(blk);
        for (int j = 0; j < 8; ++j) {
          store_chunk_words<T>(o, j, r, lattice_nibbles<L>(q, j, kCodes));
          par[16 * j + r] = uint8_t(L::scale(q, j, 0));
        }
        std::memcpy(par + kKqD + 2 * r, &q.d, 2);
      } else if constexpr (q6) {
        const auto* q = reinterpret_cast<const quant::block_q6_K*>(blk);
        for (int j = 0; j < 8; ++j) {
          // Sub-block j is columns 32 (j % 4) + l of half j / 4: ql's low (j % 4 < 2) or high
          // nibbles, from byte 32 (j % 2), and bits 2 (j % 4) of qh.
          const int h = j / 4, rr = j % 4;
          const uint8_t* ql = q->ql + 64 * h + 32 * (rr & 1);
          const uint8_t* qh = q->qh + 32 * h;
          const int sn = 4 * (rr >> 1), sh = 2 * rr;
          store_chunk_words<T>(o, j, r, nibble_words(ql, sn));
          // Chunk c's high bits go to vector c / 2, at bits 4 (c % 2) (low) and + 2 (high).
          const U32x4 hb = ((load16(qh) >> sh) & m2) | (((load16(qh + 16) >> sh) & m2) << 2);
          store4(o + packed_kq_extra(T, j) + 4 * r, hb[0] | (hb[1] << 4));
          store4(o + packed_kq_extra(T, j) + 64 + 4 * r, hb[2] | (hb[3] << 4));
        }
        for (int k = 0; k < 16; ++k) par[16 * k + r] = uint8_t(q->scales[k]);
        std::memcpy(par + kKqD + 2 * r, &q->d, 2);
      } else {
        const uint8_t* scales = q5 ? reinterpret_cast<const quant::block_q5_K*>(blk)->scales
                                   : reinterpret_cast<const quant::block_q4_K*>(blk)->scales;
        const uint8_t* qs = q5 ? reinterpret_cast<const quant::block_q5_K*>(blk)->qs
                               : reinterpret_cast<const quant::block_q4_K*>(blk)->qs;
        for (int j = 0; j < 8; ++j) {
          store_chunk_words<T>(o, j, r, nibble_words(qs + 32 * (j / 2), 4 * (j % 2)));
          if constexpr (q5) {
            // Fifth bits: bit j of qh[column], column 4 c + i at bit 4 r + i of chunk c's 64-bit
            // masks (the low half's, then the high half's). The 4 columns' bits (one a byte)
            // gather into a nibble by one multiply: byte i's bit lands at bit 24 + i.
            const uint8_t* qh = reinterpret_cast<const quant::block_q5_K*>(blk)->qh;
            for (int c = 0; c < 4; ++c) {
              const uint32_t nl = (((load4(qh + 4 * c) >> j) & 0x01010101u) * 0x01020408u) >> 24;
              const uint32_t nh = (((load4(qh + 16 + 4 * c) >> j) & 0x01010101u) * 0x01020408u) >> 24;
              uint8_t* m = o + packed_kq_extra(T, j) + 16 * c;
              uint64_t ml, mh;
              std::memcpy(&ml, m, 8);
              std::memcpy(&mh, m + 8, 8);
              ml |= uint64_t(nl) << (4 * r);
              mh |= uint64_t(nh) << (4 * r);
              std::memcpy(m, &ml, 8);
              std::memcpy(m + 8, &mh, 8);
            }
          }
          uint8_t sc, mn;
          quant::get_scale_min_k4(j, scales, &sc, &mn);
          par[16 * j + r] = sc;
          par[kKqMins + 32 * (j / 2) + 2 * r + j % 2] = mn;
        }
        std::memcpy(par + kKqD + 2 * r, blk, 2);         // d
        std::memcpy(par + kKqDmin + 2 * r, blk + 2, 2);  // dmin
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
  parallel_for(groups, [&](int64_t g, int) {
    uint8_t* o = out + size_t(g) * gb;
    const int64_t r0 = g * kPackRows;
    switch (w.type) {
      case GgmlType::Q2_K: pack_kgroup<GgmlType::Q2_K>(w, r0, o); break;
      case GgmlType::Q3_K: pack_kgroup<GgmlType::Q3_K>(w, r0, o); break;
      case GgmlType::Q4_K: pack_kgroup<GgmlType::Q4_K>(w, r0, o); break;
      case GgmlType::Q5_K: pack_kgroup<GgmlType::Q5_K>(w, r0, o); break;
      case GgmlType::Q6_K: pack_kgroup<GgmlType::Q6_K>(w, r0, o); break;
      case GgmlType::IQ4_XS: pack_kgroup<GgmlType::IQ4_XS>(w, r0, o); break;
      case GgmlType::IQ3_S: pack_kgroup<GgmlType::IQ3_S>(w, r0, o); break;
      case GgmlType::IQ3_XXS: pack_kgroup<GgmlType::IQ3_XXS>(w, r0, o); break;
      case GgmlType::NVFP4: pack_group_nvfp4(w, r0, o); break;
      case GgmlType::Q1_0: pack_group_q1_0(w, r0, o); break;
      case GgmlType::Q2_0: pack_group_q2_0(w, r0, o); break;
      default: pack_group(w, r0, o);
    }
  });
}

void convert_weight(const WeightView& w, GgmlType to, uint8_t* out) {
  if (w.type != GgmlType::TQ1_0 || to != GgmlType::TQ2_0)
    fail("cannot convert a {} weight to {}", type_name(w.type), type_name(to));
  const int64_t nb = w.cols / quant::QK_K;
  const size_t out_row = row_size(to, w.cols);
  parallel_for(w.rows, [&](int64_t r, int) {
    quant::tq1_0_to_tq2_0(w.data + size_t(r) * w.row_bytes, out + size_t(r) * out_row, nb);
  });
}

void copy_weight(const uint8_t* src, size_t n, uint8_t* out) {
  constexpr size_t kPiece = size_t(1) << 20;
  parallel_for(int64_t((n + kPiece - 1) / kPiece), [&](int64_t i, int) {
    const size_t o = size_t(i) * kPiece;
    std::memcpy(out + o, src + o, std::min(kPiece, n - o));
  });
}

}  // namespace minfer::cpu
