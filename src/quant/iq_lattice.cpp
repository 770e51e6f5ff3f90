// Dequantization of the lattice i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M):
// every group of 8 (or 4) values is a grid entry (quant/iq_grids.h) times a block scale, with
// explicit sign bits (IQ2, IQ3) or a +-1/8 shift (IQ1). The float expressions follow ggml's
// dequantize_row_iq* so that results are bit-identical.
#include <cstring>

#include "common/fp16.h"
#include "quant/iq_grids.h"
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

// IQ3's half groups: 4 values from each of two grid entries under one sign byte.
inline void put_signed_pair(float* y, float db, uint32_t g1, uint32_t g2, uint8_t signs) {
  put_signed<4>(y, db, g1, signs);
  put_signed<4>(y + 4, db, g2, uint8_t(signs >> 4));
}

// IQ1: y[j] = dl * (grid value + delta).
inline void put_shifted(float* y, float dl, uint64_t grid, float delta) {
  for (int j = 0; j < 8; ++j) y[j] = dl * (float(int8_t(uint8_t(grid >> (8 * j)))) + delta);
}

}  // namespace

void dequantize_iq2_xxs(const block_iq2_xxs* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      uint32_t aux[2];
      std::memcpy(aux, x[i].qs + 4 * ib, 8);
      const float db = d * (0.5f + float(aux[1] >> 28)) * 0.25f;
      for (int l = 0; l < 4; ++l, y += 8)
        put_signed<8>(y, db, kIq2xxsGrid.v[(aux[0] >> (8 * l)) & 0xff], iq_signs((aux[1] >> (7 * l)) & 127));
    }
  }
}

void dequantize_iq2_xs(const block_iq2_xs* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const float db[2] = {d * (0.5f + float(x[i].scales[ib] & 0xf)) * 0.25f,
                           d * (0.5f + float(x[i].scales[ib] >> 4)) * 0.25f};
      for (int l = 0; l < 4; ++l, y += 8) {
        const uint16_t q = x[i].qs[4 * ib + l];
        put_signed<8>(y, db[l / 2], kIq2xsGrid.v[q & 511], iq_signs(q >> 9));
      }
    }
  }
}

void dequantize_iq2_s(const block_iq2_s* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* qs = x[i].qs;
    const uint8_t* signs = x[i].qs + QK_K / 8;
    for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, signs += 4) {
      const float db[2] = {d * (0.5f + float(x[i].scales[ib] & 0xf)) * 0.25f,
                           d * (0.5f + float(x[i].scales[ib] >> 4)) * 0.25f};
      for (int l = 0; l < 4; ++l, y += 8)
        put_signed<8>(y, db[l / 2], kIq2sGrid.v[qs[l] | ((x[i].qh[ib] << (8 - 2 * l)) & 0x300)], signs[l]);
    }
  }
}

void dequantize_iq3_xxs(const block_iq3_xxs* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* qs = x[i].qs;
    const uint8_t* scales_and_signs = x[i].qs + QK_K / 4;
    for (int ib = 0; ib < QK_K / 32; ++ib, qs += 8) {
      uint32_t aux;
      std::memcpy(&aux, scales_and_signs + 4 * ib, 4);
      const float db = d * (0.5f + float(aux >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l, y += 8)
        put_signed_pair(y, db, kIq3xxsGrid.v[qs[2 * l]], kIq3xxsGrid.v[qs[2 * l + 1]],
                        iq_signs((aux >> (7 * l)) & 127));
    }
  }
}

void dequantize_iq3_s(const block_iq3_s* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* qs = x[i].qs;
    const uint8_t* signs = x[i].signs;
    for (int ib = 0; ib < QK_K / 32; ++ib, qs += 8, signs += 4) {
      const float db = d * float(1 + 2 * ((x[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xf));
      const int qh = x[i].qh[ib];
      for (int l = 0; l < 4; ++l, y += 8)
        put_signed_pair(y, db, kIq3sGrid.v[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)],
                        kIq3sGrid.v[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)], signs[l]);
    }
  }
}

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
