// The lattice i-quants IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S in one shape, for the scalar
// dequantizers (iq_lattice.cpp) and dot products (backend/cpu/kernels_dot.cpp): where group l
// (8 values) of block ib (32) finds its grid bytes, its sign byte and the odd scale 2s + 1 of
// half h (16 columns; both halves alike where a type scales per 32), and the type's final
// factor (x = d x scale x kFinal x grid x sign). Scalar code only: the SIMD units decode
// blocks their own way (simd_tiles.h), sharing no inline function with other ISAs.
#pragma once
#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace minfer::quant {
struct LatBase {
  static uint32_t u32_at(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  static int odd(int nibble) { return 2 * nibble + 1; }
};

struct LatIq2xxs : LatBase {
  using Block = block_iq2_xxs;
  static constexpr float kFinal = 0.125f;
  static uint64_t grid(const Block& b, int ib, int l) {
    return kIq2xxsGrid.v[(u32_at(b.qs + 4 * ib) >> (8 * l)) & 255];
  }
  static uint8_t signs(const Block& b, int ib, int l) { return iq_signs((u32_at(b.qs + 4 * ib + 2) >> (7 * l)) & 127); }
  static int scale(const Block& b, int ib, int) { return odd(int(u32_at(b.qs + 4 * ib + 2) >> 28)); }
};
struct LatIq2xs : LatBase {
  using Block = block_iq2_xs;
  static constexpr float kFinal = 0.125f;
  static uint64_t grid(const Block& b, int ib, int l) { return kIq2xsGrid.v[b.qs[4 * ib + l] & 511]; }
  static uint8_t signs(const Block& b, int ib, int l) { return iq_signs(b.qs[4 * ib + l] >> 9); }
  static int scale(const Block& b, int ib, int h) { return odd((b.scales[ib] >> (4 * h)) & 0xf); }
};
struct LatIq2s : LatBase {
  using Block = block_iq2_s;
  static constexpr float kFinal = 0.125f;
  static uint64_t grid(const Block& b, int ib, int l) {
    return kIq2sGrid.v[b.qs[4 * ib + l] | ((b.qh[ib] << (8 - 2 * l)) & 0x300)];
  }
  static uint8_t signs(const Block& b, int ib, int l) { return b.qs[QK_K / 8 + 4 * ib + l]; }
  static int scale(const Block& b, int ib, int h) { return odd((b.scales[ib] >> (4 * h)) & 0xf); }
};
struct LatIq3xxs : LatBase {  // a group is two 4-value grid entries
  using Block = block_iq3_xxs;
  static constexpr float kFinal = 0.25f;
  static uint64_t grid(const Block& b, int ib, int l) {
    return kIq3xxsGrid.v[b.qs[8 * ib + 2 * l]] | uint64_t(kIq3xxsGrid.v[b.qs[8 * ib + 2 * l + 1]]) << 32;
  }
  static uint8_t signs(const Block& b, int ib, int l) {
    return iq_signs((u32_at(b.qs + QK_K / 4 + 4 * ib) >> (7 * l)) & 127);
  }
  static int scale(const Block& b, int ib, int) { return odd(int(u32_at(b.qs + QK_K / 4 + 4 * ib) >> 28)); }
};
struct LatIq3s : LatBase {
  using Block = block_iq3_s;
  static constexpr float kFinal = 1.0f;
  static uint64_t grid(const Block& b, int ib, int l) {
    const int qh = b.qh[ib];
    return kIq3sGrid.v[b.qs[8 * ib + 2 * l] | ((qh << (8 - 2 * l)) & 256)] |
           uint64_t(kIq3sGrid.v[b.qs[8 * ib + 2 * l + 1] | ((qh << (7 - 2 * l)) & 256)]) << 32;
  }
  static uint8_t signs(const Block& b, int ib, int l) { return b.signs[4 * ib + l]; }
  static int scale(const Block& b, int ib, int) { return odd((b.scales[ib / 2] >> (4 * (ib % 2))) & 0xf); }
};

}  // namespace minfer::quant
