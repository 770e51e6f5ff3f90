// IQ3_XXS and IQ3_S quantization, as ggml's quantize_row_iq3_xxs_impl / quantize_row_iq3_s_impl
// (llama.cpp v0.4.0), op for op so that files come out byte-identical to llama-quantize's.
// Both fit each block of 32 with groups of 4 values taken from a grid of 256 (IQ3_XXS) or 512
// (IQ3_S) points whose coordinates are the odd 1..15 (2l + 1 for a 3-bit l): a search over
// candidate scales rounds each group to the nearest lattice point and, off the grid, picks the
// best of the point's precomputed nearest grid neighbours; the block scales are then quantized
// to 4 bits against the super-block's d.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "common/fp16.h"
#include "quant/iq_grids.h"
#include "quant/reference.h"
#include "quant/scale_search.h"

namespace minfer::quant::ref {
namespace {

using detail::nearest_int;

constexpr int kMaxQ = 8;         // value indexes l in 0..7, coordinates 2l + 1
constexpr int kMapSize = 4096;   // 4 indexes of 3 bits

// The quantizer's view of a grid (ggml's iq3xs_init_impl): entry j as 4 coordinates 2l + 1;
// map[u] for the 12-bit index u of 4 value indexes: the entry when u is on the grid, else
// -(offset + 1) into `neighbours`, where a count n is followed by the n entries nearest to u
// (those at its `nwant` smallest squared distances, by distance then entry).
struct Iq3Lattice {
  std::vector<std::array<int8_t, 4>> grid;
  std::vector<int> map;
  std::vector<uint16_t> neighbours;
};

Iq3Lattice build_lattice(const uint16_t* packed, int n) {
  Iq3Lattice g;
  g.grid.resize(size_t(n));
  g.map.assign(kMapSize, -1);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < 4; ++i) g.grid[size_t(j)][size_t(i)] = int8_t(2 * ((packed[j] >> (3 * i)) & 7) + 1);
    g.map[packed[j]] = j;  // (the packed entry is the index u of its own point)
  }
  const int nwant = n == 256 ? 2 : 3;
  std::vector<std::pair<int, int>> dist(static_cast<size_t>(n));
  for (int u = 0; u < kMapSize; ++u) {
    if (g.map[size_t(u)] >= 0) continue;
    int8_t pos[4];
    for (int i = 0; i < 4; ++i) pos[i] = int8_t(2 * ((u >> (3 * i)) & 7) + 1);
    for (int j = 0; j < n; ++j) {
      int d2 = 0;
      for (int i = 0; i < 4; ++i) d2 += (g.grid[size_t(j)][size_t(i)] - pos[i]) * (g.grid[size_t(j)][size_t(i)] - pos[i]);
      dist[size_t(j)] = {d2, j};
    }
    std::sort(dist.begin(), dist.end());
    const size_t start = g.neighbours.size();
    g.map[size_t(u)] = -int(start) - 1;
    g.neighbours.push_back(0);
    int d2 = dist[0].first, nhave = 1, count = 0;
    for (int j = 0; j < n; ++j) {
      if (dist[size_t(j)].first > d2) {
        if (nhave == nwant) break;
        d2 = dist[size_t(j)].first;
        ++nhave;
      }
      g.neighbours.push_back(uint16_t(dist[size_t(j)].second));
      ++count;
    }
    g.neighbours[start] = uint16_t(count);
  }
  return g;
}

const Iq3Lattice& lattice(int grid_size) {
  static const Iq3Lattice g256 = build_lattice(iq_grid_detail::kIq3xxsPacked, 256);
  static const Iq3Lattice g512 = build_lattice(iq_grid_detail::kIq3sPacked, 512);
  return grid_size == 256 ? g256 : g512;
}

// The neighbour of an off-grid group with the least weighted error at `scale`; its value
// indexes into L, its entry returned.
int best_neighbour(const Iq3Lattice& g, int u, const float* xval, const float* weight, float scale, int8_t* L) {
  const uint16_t* nb = g.neighbours.data() + (-g.map[size_t(u)] - 1);
  float best_d2 = FLT_MAX;
  int index = -1;
  for (int j = 1; j <= nb[0]; ++j) {
    const auto& pg = g.grid[nb[j]];
    float d2 = 0;
    for (int i = 0; i < 4; ++i) {
      const float q = pg[size_t(i)];
      const float diff = scale * q - xval[i];
      d2 += weight[i] * diff * diff;
    }
    if (d2 < best_d2) {
      best_d2 = d2;
      index = nb[j];
    }
  }
  for (int i = 0; i < 4; ++i) L[i] = int8_t((g.grid[size_t(index)][size_t(i)] - 1) / 2);
  return index;
}

// The 12-bit lattice index of 4 value indexes.
inline int lattice_index(const int8_t* L) {
  int u = 0;
  for (int i = 0; i < 4; ++i) u |= L[i] << (3 * i);
  return u;
}

// How the two types' block searches differ (ggml's two copies of the same search).
struct Iq3Search {
  int is_max;           // candidate scales (2 kMaxQ - 1 + 0.2 is) / max, |is| <= is_max
  bool start_on_grid;   // is_on_grid's value before the first candidate
  bool repair_all;      // the final pass re-rounds every group, not only the off-grid ones
};

// One block of 32 (|values| in xval, weights, their square roots in waux): the indexes into L,
// the block's scale returned (possibly negative: the caller flips the signs then).
float search_block(const Iq3Lattice& g, const Iq3Search& cfg, const float* xval, const float* weight,
                   const float* waux, float max, int8_t* L) {
  int8_t Laux[32];
  bool on_grid[8], on_grid_aux[8];
  float best = 0;
  float scale = max / (2 * kMaxQ - 1);
  for (int k = 0; k < 8; ++k) on_grid[k] = cfg.start_on_grid;
  for (int is = -cfg.is_max; is <= cfg.is_max; ++is) {
    const float id = (2 * kMaxQ - 1 + is * 0.2f) / max;
    const float this_scale = 1 / id;
    for (int k = 0; k < 8; ++k) {
      for (int i = 0; i < 4; ++i) {
        const int l = nearest_int(0.5f * (id * xval[4 * k + i] - 1));
        Laux[4 * k + i] = int8_t(std::max(0, std::min(kMaxQ - 1, l)));
      }
      const int u = lattice_index(Laux + 4 * k);
      on_grid_aux[k] = g.map[size_t(u)] >= 0;
      if (!on_grid_aux[k]) best_neighbour(g, u, xval + 4 * k, waux + 4 * k, this_scale, Laux + 4 * k);
    }
    float sumqx = 0, sumq2 = 0;
    for (int i = 0; i < 32; ++i) {
      const float w = weight[i];
      const float q = float(2 * Laux[i] + 1);
      sumqx += w * xval[i] * q;
      sumq2 += w * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      scale = sumqx / sumq2;
      best = scale * sumqx;
      std::memcpy(L, Laux, 32);
      std::copy(on_grid_aux, on_grid_aux + 8, on_grid);
    }
  }
  int n_off = 0;
  for (int k = 0; k < 8; ++k) n_off += !on_grid[k];
  if (n_off > 0 && scale > 0) {
    const float id = 1 / scale;
    for (int k = 0; k < 8; ++k) {
      if (on_grid[k] && !cfg.repair_all) continue;
      int8_t l4[4];
      for (int i = 0; i < 4; ++i)
        l4[i] = int8_t(std::max(0, std::min(kMaxQ - 1, nearest_int(0.5f * (id * xval[4 * k + i] - 1)))));
      const int u = lattice_index(l4);
      int index = g.map[size_t(u)];
      if (index < 0) index = best_neighbour(g, u, xval + 4 * k, waux + 4 * k, scale, L + 4 * k);
      for (int i = 0; i < 4; ++i) L[4 * k + i] = int8_t((g.grid[size_t(index)][size_t(i)] - 1) / 2);
    }
    float sumqx = 0, sumq2 = 0;
    for (int i = 0; i < 32; ++i) {
      const float w = weight[i];
      const float q = float(2 * L[i] + 1);
      sumqx += w * xval[i] * q;
      sumq2 += w * q * q;
    }
    if (sumq2 > 0) scale = sumqx / sumq2;
  }
  return scale;
}

// A block's grid entries (every group of L is on the grid by now).
int entry_of(const Iq3Lattice& g, const int8_t* L) {
  const int index = g.map[size_t(lattice_index(L))];
  if (index < 0) fail("IQ3 quantization: a group left off the grid");  // (ggml aborts)
  return index;
}

// Importance weights of a block (x^2 without an imatrix) and their square roots.
void block_weights(const float* xb, const float* qw, float sigma2, float* weight, float* waux) {
  for (int i = 0; i < 32; ++i) weight[i] = qw ? qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
  for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
}

float sigma2_of(const float* x) {
  float sumx2 = 0;
  for (int i = 0; i < QK_K; ++i) sumx2 += x[i] * x[i];
  return 2 * sumx2 / QK_K;
}

}  // namespace

void quantize_iq3_xxs(const float* x, block_iq3_xxs* y, int64_t k, const float* qw) {
  const Iq3Lattice& g = lattice(256);
  constexpr Iq3Search cfg{15, true, false};
  for (int64_t ibl = 0; ibl < k / QK_K; ++ibl, x += QK_K) {
    block_iq3_xxs& b = y[ibl];
    b.d = fp32_to_fp16(0.f);
    uint8_t q3[3 * QK_K / 8] = {};  // 64 grid entries, then 8 words of signs and scale
    uint32_t scales_and_signs[QK_K / 32] = {};
    float scales[QK_K / 32];
    float max_scale = 0;
    const float sigma2 = sigma2_of(x);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const float* xb = x + 32 * ib;
      float weight[32], waux[32], xval[32];
      block_weights(xb, qw ? qw + QK_K * ibl + 32 * ib : nullptr, sigma2, weight, waux);
      uint8_t block_signs[4];
      // Signs come in 7 bits a group of 8: the eighth is the parity, so an odd count of
      // negatives flips the value that costs least.
      for (int kk = 0; kk < 4; ++kk) {
        int nflip = 0;
        uint8_t s = 0;
        for (int i = 0; i < 8; ++i) {
          if (xb[8 * kk + i] >= 0) {
            xval[8 * kk + i] = xb[8 * kk + i];
          } else {
            xval[8 * kk + i] = -xb[8 * kk + i];
            ++nflip;
            s |= uint8_t(1 << i);
          }
        }
        if (nflip % 2) {
          int imin = 0;
          float min = weight[8 * kk] * xb[8 * kk] * xb[8 * kk];
          for (int i = 1; i < 8; ++i) {
            const float ax = weight[8 * kk + i] * xb[8 * kk + i] * xb[8 * kk + i];
            if (ax < min) {
              min = ax;
              imin = i;
            }
          }
          xval[8 * kk + imin] = -xval[8 * kk + imin];
          s ^= uint8_t(1 << imin);
        }
        block_signs[kk] = s & 127;
      }
      float max = xval[0];
      for (int i = 1; i < 32; ++i) max = max > xval[i] ? max : xval[i];
      int8_t L[32] = {};
      if (max < 1e-8f) {  // GROUP_MAX_EPS_IQ3_XXS
        scales[ib] = 0;
        continue;
      }
      float scale = search_block(g, cfg, xval, weight, waux, max, L);
      if (scale < 0) {
        scale = -scale;
        for (uint8_t& s : block_signs) s = uint8_t(~s & 127);
      }
      for (int kk = 0; kk < 8; ++kk) q3[8 * ib + kk] = uint8_t(entry_of(g, L + 4 * kk));
      scales_and_signs[ib] = uint32_t(block_signs[0]) | uint32_t(block_signs[1]) << 7 |
                             uint32_t(block_signs[2]) << 14 | uint32_t(block_signs[3]) << 21;
      scales[ib] = scale;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) {
      std::memset(b.qs, 0, sizeof(b.qs));
      continue;
    }
    const float d = max_scale / 31;
    b.d = fp32_to_fp16(d * 1.0125f);
    const float id = 1 / d;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const int l = std::max(0, std::min(15, nearest_int(0.5f * (id * scales[ib] - 1))));
      scales_and_signs[ib] |= uint32_t(l) << 28;
    }
    std::memcpy(b.qs, q3, QK_K / 4);
    std::memcpy(b.qs + QK_K / 4, scales_and_signs, sizeof(scales_and_signs));
  }
}

void quantize_iq3_s(const float* x, block_iq3_s* y, int64_t k, const float* qw) {
  const Iq3Lattice& g = lattice(512);
  constexpr Iq3Search cfg{9, false, true};
  for (int64_t ibl = 0; ibl < k / QK_K; ++ibl, x += QK_K) {
    block_iq3_s& b = y[ibl];
    std::memset(&b, 0, sizeof(b));
    // As ggml's: the quants and signs of a block whose values are all zero are not written,
    // and the blocks after it move up into its place (the high index bits stay in place).
    uint8_t* qs = b.qs;
    uint8_t* signs = b.signs;
    float scales[QK_K / 32];
    float max_scale = 0;
    const float sigma2 = sigma2_of(x);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const float* xb = x + 32 * ib;
      float weight[32], waux[32], xval[32];
      block_weights(xb, qw ? qw + QK_K * ibl + 32 * ib : nullptr, sigma2, weight, waux);
      uint8_t block_signs[4];
      for (int kk = 0; kk < 4; ++kk) {
        uint8_t s = 0;
        for (int i = 0; i < 8; ++i) {
          if (xb[8 * kk + i] >= 0) {
            xval[8 * kk + i] = xb[8 * kk + i];
          } else {
            xval[8 * kk + i] = -xb[8 * kk + i];
            s |= uint8_t(1 << i);
          }
        }
        block_signs[kk] = s;
      }
      float max = xval[0];
      for (int i = 1; i < 32; ++i) max = max > xval[i] ? max : xval[i];
      int8_t L[32] = {};
      if (!max) {
        scales[ib] = 0;
        continue;
      }
      float scale = search_block(g, cfg, xval, weight, waux, max, L);
      if (scale < 0) {
        scale = -scale;
        for (uint8_t& s : block_signs) s = uint8_t(~s);
      }
      for (int kk = 0; kk < 8; ++kk) {
        const int index = entry_of(g, L + 4 * kk);
        qs[kk] = uint8_t(index & 255);
        b.qh[(ib * 8 + kk) / 8] |= uint8_t((index >> 8) << ((ib * 8 + kk) % 8));
      }
      qs += 8;
      std::memcpy(signs, block_signs, 4);
      signs += 4;
      scales[ib] = scale;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) continue;
    const float d = max_scale / 31;
    b.d = fp32_to_fp16(d * 1.033f);
    const float id = 1 / d;
    for (int ib = 0; ib < QK_K / 32; ib += 2) {
      const int l1 = std::max(0, std::min(15, nearest_int(0.5f * (id * scales[ib] - 1))));
      const int l2 = std::max(0, std::min(15, nearest_int(0.5f * (id * scales[ib + 1] - 1))));
      b.scales[ib / 2] = uint8_t(l1 | (l2 << 4));
    }
  }
}

}  // namespace minfer::quant::ref
