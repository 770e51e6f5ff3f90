// Dequantization of the lattice i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M):
// every group of 8 (or 4) values is a grid entry (quant/iq_grids.h) times a block scale, with
// explicit sign bits (IQ2, IQ3) or a +-1/8 shift (IQ1). The float expressions follow ggml's
// dequantize_row_iq* so that results are bit-identical.
#include <cstring>

#include "common/fp16.h"
#include "quant/iq_lattice.h"
#include "quant/reference.h"

namespace minfer::quant::ref {
namespace {

// y[j] = db * grid byte j, negated where sign bit j is set (ggml multiplies by -1.f or 1.f).
template <int N, typename G>
inline void put_signed(float* y, float db, G grid, uint8_t signs) {
  for (int j = 0; j < N; ++j) {
    const float g = float(uint8_t(grid >> (8 * j)));
    y[j] = db * g * ((signs >> j) & 1 ? -1.f : 1.f);
  }
}

// IQ1: y[j] = dl * (grid value + delta).
inline void put_shifted(float* y, float dl, uint64_t grid, float delta) {
  for (int j = 0; j < 8; ++j) y[j] = dl * (float(int8_t(uint8_t(grid >> (8 * j)))) + delta);
}

// IQ2/IQ3 through their group accessors (iq_lattice.h). ggml's block scales, d x (0.5 + s) / 4
// (IQ2), d x (0.5 + s) / 2 (IQ3_XXS), d x (1 + 2s) (IQ3_S), are (d x (2s + 1)) x kFinal to the
// bit: the factors of 2 between them are exact (d is an f16, far from float's subnormals).
template <class L>
void dequantize_lattice(const typename L::Block* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < QK_K / 32; ++ib)
      for (int l = 0; l < 4; ++l, y += 8)
        put_signed<8>(y, d * float(L::scale(x[i], ib, l / 2)) * L::kFinal, L::grid(x[i], ib, l), L::signs(x[i], ib, l));
  }
}

}  // namespace

void dequantize_iq2_xxs(const block_iq2_xxs* x, float* y, int64_t k) { dequantize_lattice<LatIq2xxs>(x, y, k); }
void dequantize_iq2_xs(const block_iq2_xs* x, float* y, int64_t k) { dequantize_lattice<LatIq2xs>(x, y, k); }
void dequantize_iq2_s(const block_iq2_s* x, float* y, int64_t k) { dequantize_lattice<LatIq2s>(x, y, k); }
void dequantize_iq3_xxs(const block_iq3_xxs* x, float* y, int64_t k) { dequantize_lattice<LatIq3xxs>(x, y, k); }
void dequantize_iq3_s(const block_iq3_s* x, float* y, int64_t k) { dequantize_lattice<LatIq3s>(x, y, k); }

void dequantize_iq1_s(const block_iq1_s* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const int qh = x[i].qh[ib];
      const float dl = d * float(2 * ((qh >> 12) & 7) + 1);
      const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
      for (int l = 0; l < 4; ++l, y += 8)
        put_shifted(y, dl, kIq1sGrid.v[x[i].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)], delta);
    }
  }
}

void dequantize_iq1_m(const block_iq1_m* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; ++i) {
    uint16_t sc[4];
    std::memcpy(sc, x[i].scales, 8);
    const float d = fp16_to_fp32(iq1_m_d(x[i]));
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const uint8_t* qs = x[i].qs + 4 * ib;
      const uint8_t* qh = x[i].qh + 2 * ib;
      const float dl[2] = {d * float(2 * ((sc[ib / 2] >> (6 * (ib % 2))) & 7) + 1),
                           d * float(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1)};
      for (int l = 0; l < 4; ++l, y += 8) {
        const int h = qh[l / 2] >> (4 * (l % 2));  // 3 index bits, then the delta's sign bit
        put_shifted(y, dl[l / 2], kIq1sGrid.v[qs[l] | ((h & 7) << 8)], h & 8 ? -kIq1Delta : kIq1Delta);
      }
    }
  }
}

}  // namespace minfer::quant::ref
