// IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S and IQ1_M quantization, as ggml's
// quantize_row_iq3_xxs_impl, quantize_row_iq3_s_impl, quantize_row_iq2_xxs_impl,
// quantize_row_iq2_xs_impl, quantize_row_iq2_s_impl, quantize_row_iq1_s_impl and
// quantize_row_iq1_m_impl (llama.cpp v0.4.0), op for op so that files come out byte-identical
// to llama-quantize's. Each but the IQ1 types (below) fits the groups of a block (4 values
// for IQ3, 8 for IQ2) to a grid of lattice points whose coordinates are the odd 2l + 1 (l of 3
// bits for IQ3, 0..2 for IQ2): a search over candidate scales rounds each group to the nearest
// lattice point and, off the grid, picks the best of that point's precomputed nearest grid
// entries; the block scales are then quantized to 4 bits against the super-block's d.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "common/error.h"
#include "common/fp16.h"
#include "quant/iq_grids.h"
#include "quant/reference.h"
#include "quant/scale_search.h"

namespace minfer::quant::ref {
namespace {

using detail::nearest_int;

// The quantizer's view of a grid (ggml's iq3xs_init_impl / iq2xs_init_impl) of groups of G
// values: entry j as G coordinates 2l + 1; map[u] for the index u of G value indexes (kBits
// each): the entry when u is on the grid, else -(offset + 1) into `neighbours`, where a count n
// is followed by the n entries nearest to u (those at its `nwant` smallest squared distances,
// by distance then entry). Only points whose indexes are all below kmaxq get a list: the
// searches clamp to those.
template <int G>
struct Lattice {
  static constexpr int kBits = G == 4 ? 3 : 2;
  std::vector<std::array<int8_t, G>> grid;
  std::vector<int> map;
  std::vector<uint16_t> neighbours;
};

template <int G>
Lattice<G> build_lattice(const uint16_t* packed, int n, int nwant, int kmaxq) {
  constexpr int kBits = Lattice<G>::kBits;
  Lattice<G> g;
  g.grid.resize(size_t(n));
  g.map.assign(size_t(1) << (kBits * G), -1);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < G; ++i)
      g.grid[size_t(j)][size_t(i)] = int8_t(2 * ((packed[j] >> (kBits * i)) & ((1 << kBits) - 1)) + 1);
    g.map[packed[j]] = j;  // (the packed entry is the index u of its own point)
  }
  std::vector<std::pair<int, int>> dist(static_cast<size_t>(n));
  for (size_t u = 0; u < g.map.size(); ++u) {
    if (g.map[u] >= 0) continue;
    int8_t pos[G];
    bool reachable = true;
    for (int i = 0; i < G; ++i) {
      const int l = int(u >> (kBits * i)) & ((1 << kBits) - 1);
      reachable = reachable && l < kmaxq;
      pos[i] = int8_t(2 * l + 1);
    }
    if (!reachable) continue;
    for (int j = 0; j < n; ++j) {
      int d2 = 0;
      for (int i = 0; i < G; ++i) d2 += (g.grid[size_t(j)][size_t(i)] - pos[i]) * (g.grid[size_t(j)][size_t(i)] - pos[i]);
      dist[size_t(j)] = {d2, j};
    }
    std::sort(dist.begin(), dist.end());
    const size_t start = g.neighbours.size();
    g.map[u] = -int(start) - 1;
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

const Lattice<4>& iq3_lattice(int grid_size) {
  static const Lattice<4> g256 = build_lattice<4>(iq_grid_detail::kIq3xxsPacked, 256, 2, 8);
  static const Lattice<4> g512 = build_lattice<4>(iq_grid_detail::kIq3sPacked, 512, 3, 8);
  return grid_size == 256 ? g256 : g512;
}

const Lattice<8>& iq2_lattice(int grid_size) {
  static const Lattice<8> g256 = build_lattice<8>(iq_grid_detail::kIq2xxsPacked, 256, 2, 3);
  static const Lattice<8> g512 = build_lattice<8>(iq_grid_detail::kIq2xsPacked, 512, 2, 3);
  static const Lattice<8> g1024 = build_lattice<8>(iq_grid_detail::kIq2sPacked, 1024, 1, 3);
  return grid_size == 256 ? g256 : grid_size == 512 ? g512 : g1024;
}

const Lattice<8>& iq1_lattice() {
  static const Lattice<8> g = build_lattice<8>(iq_grid_detail::kIq1sPacked, 2048, 3, 3);
  return g;
}

// IQ1: the grid neighbour of an off-grid group of 8 (values x, weights w) nearest at `scale`,
// each coordinate one of the shifted values xx[0..2] (ggml's iq1_find_best_neighbour2); its
// indexes into L, its entry returned.
int iq1_neighbour(const Lattice<8>& g, int u, const float* x, const float* w, float scale, const float* xx, int8_t* L) {
  const uint16_t* nb = g.neighbours.data() + (-g.map[size_t(u)] - 1);
  float best_d2 = FLT_MAX;
  int index = -1;
  for (int j = 1; j <= nb[0]; ++j) {
    const auto& pg = g.grid[nb[j]];
    float d2 = 0;
    for (int i = 0; i < 8; ++i) {
      const float q = xx[(pg[size_t(i)] - 1) / 2];
      const float diff = scale * q - x[i];
      d2 += w[i] * diff * diff;
    }
    if (d2 < best_d2) {
      best_d2 = d2;
      index = nb[j];
    }
  }
  if (index < 0) fail("IQ1 quantization: no grid neighbour at a finite distance");
  for (int i = 0; i < 8; ++i) L[i] = int8_t((g.grid[size_t(index)][size_t(i)] - 1) / 2);
  return index;
}

// The order of a block's values, ties kept in place (ggml's qsort: glibc's merge sort).
template <int N>
void sorted_order(const float* xb, int* idx) {
  for (int j = 0; j < N; ++j) idx[j] = j;
  std::stable_sort(idx, idx + N, [&](int a, int c) { return xb[a] < xb[c]; });
}

// The neighbour of an off-grid group with the least weighted error at `scale`; its value
// indexes into L, its entry returned.
template <int G>
int best_neighbour(const Lattice<G>& g, int u, const float* xval, const float* weight, float scale, int8_t* L) {
  const uint16_t* nb = g.neighbours.data() + (-g.map[size_t(u)] - 1);
  float best_d2 = FLT_MAX;
  int index = -1;
  for (int j = 1; j <= nb[0]; ++j) {
    const auto& pg = g.grid[nb[j]];
    float d2 = 0;
    for (int i = 0; i < G; ++i) {
      const float q = pg[size_t(i)];
      const float diff = scale * q - xval[i];
      d2 += weight[i] * diff * diff;
    }
    if (d2 < best_d2) {
      best_d2 = d2;
      index = nb[j];
    }
  }
  for (int i = 0; i < G; ++i) L[i] = int8_t((g.grid[size_t(index)][size_t(i)] - 1) / 2);
  return index;
}

// The lattice index of a group's G value indexes.
template <int G>
inline int lattice_index(const int8_t* L) {
  int u = 0;
  for (int i = 0; i < G; ++i) u |= L[i] << (Lattice<G>::kBits * i);
  return u;
}

// How the types' block searches differ (ggml's copies of the same search).
struct Search {
  int block;            // values a block (one scale)
  int kmaxq;            // value indexes 0 .. kmaxq - 1
  int is_max;           // candidate scales (2 kmaxq - 1 + step is) / max, |is| <= is_max
  float step;
  bool start_on_grid;   // is_on_grid's value before the first candidate
  bool repair_all;      // the final pass re-rounds every group, not only the off-grid ones
};

// The final pass at the chosen scale: the groups (all, or those not on the grid when on_grid is
// given) rounded again, off the grid replaced by the best neighbour (on it the indexes stand),
// and the scale refitted to the result.
template <int G>
float regrid(const Lattice<G>& g, const Search& cfg, const float* xval, const float* weight, const float* waux,
             float scale, const bool* on_grid, int8_t* L) {
  const float id = 1 / scale;
  for (int k = 0; k < cfg.block / G; ++k) {
    if (on_grid && on_grid[k]) continue;
    for (int i = 0; i < G; ++i)
      L[G * k + i] = int8_t(std::max(0, std::min(cfg.kmaxq - 1, nearest_int(0.5f * (id * xval[G * k + i] - 1)))));
    const int u = lattice_index<G>(L + G * k);
    if (g.map[size_t(u)] < 0) best_neighbour(g, u, xval + G * k, waux + G * k, scale, L + G * k);
  }
  float sumqx = 0, sumq2 = 0;
  for (int i = 0; i < cfg.block; ++i) {
    const float w = weight[i];
    const float q = float(2 * L[i] + 1);
    sumqx += w * xval[i] * q;
    sumq2 += w * q * q;
  }
  return sumq2 > 0 ? sumqx / sumq2 : scale;
}

// The candidate scales (2 kmaxq - 1 + step is) / ref: each group rounded to the lattice, off
// the grid to its best neighbour; the best candidate's indexes into L (and which of its groups
// were on the grid into on_grid) and scale returned, `scale` when none beats zero.
template <int G>
float best_candidate(const Lattice<G>& g, const Search& cfg, const float* xval, const float* weight,
                     const float* waux, float ref, float scale, int8_t* L, bool* on_grid) {
  const int ngroups = cfg.block / G;
  int8_t Laux[32];
  bool on_grid_aux[8];
  float best = 0;
  for (int is = -cfg.is_max; is <= cfg.is_max; ++is) {
    const float id = (2 * cfg.kmaxq - 1 + is * cfg.step) / ref;
    const float this_scale = 1 / id;
    for (int k = 0; k < ngroups; ++k) {
      for (int i = 0; i < G; ++i) {
        const int l = nearest_int(0.5f * (id * xval[G * k + i] - 1));
        Laux[G * k + i] = int8_t(std::max(0, std::min(cfg.kmaxq - 1, l)));
      }
      const int u = lattice_index<G>(Laux + G * k);
      on_grid_aux[k] = g.map[size_t(u)] >= 0;
      if (!on_grid_aux[k]) best_neighbour(g, u, xval + G * k, waux + G * k, this_scale, Laux + G * k);
    }
    float sumqx = 0, sumq2 = 0;
    for (int i = 0; i < cfg.block; ++i) {
      const float w = weight[i];
      const float q = float(2 * Laux[i] + 1);
      sumqx += w * xval[i] * q;
      sumq2 += w * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      scale = sumqx / sumq2;
      best = scale * sumqx;
      std::memcpy(L, Laux, size_t(cfg.block));
      std::copy(on_grid_aux, on_grid_aux + ngroups, on_grid);
    }
  }
  return scale;
}

// One block (|values| in xval, weights, their square roots in waux): the indexes into L, the
// block's scale returned (possibly negative: the caller flips the signs then).
template <int G>
float search_block(const Lattice<G>& g, const Search& cfg, const float* xval, const float* weight,
                   const float* waux, float max, int8_t* L) {
  const int ngroups = cfg.block / G;
  bool on_grid[8];
  for (int k = 0; k < ngroups; ++k) on_grid[k] = cfg.start_on_grid;
  float scale = best_candidate(g, cfg, xval, weight, waux, max, max / (2 * cfg.kmaxq - 1), L, on_grid);
  int n_off = 0;
  for (int k = 0; k < ngroups; ++k) n_off += !on_grid[k];
  if (n_off > 0 && scale > 0)
    scale = regrid(g, cfg, xval, weight, waux, scale, cfg.repair_all ? nullptr : on_grid, L);
  return scale;
}

// IQ2_XXS's search: the candidates around make_qp_quants's scale, and every group taken to the
// grid again at the end. nullopt: a block that scale leaves empty (ggml writes nothing for it).
std::optional<float> search_block_qp(const Lattice<8>& g, const Search& cfg, const float* xval,
                                     const float* weight, const float* waux, int8_t* L) {
  float scale = detail::make_qp_quants(cfg.block, cfg.kmaxq + 1, xval, reinterpret_cast<uint8_t*>(L), weight);
  const float eff_max = scale * cfg.kmaxq;
  if (eff_max <= 0) return std::nullopt;
  bool on_grid[8];  // (not used: every group is regridded)
  scale = best_candidate(g, cfg, xval, weight, waux, eff_max, scale, L, on_grid);
  if (scale > 0) scale = regrid(g, cfg, xval, weight, waux, scale, nullptr, L);
  return scale;
}

// A group's grid entry (every group of L is on the grid by now).
template <int G>
int entry_of(const Lattice<G>& g, const int8_t* L) {
  const size_t u = size_t(lattice_index<G>(L));
  const int index = u < g.map.size() ? g.map[u] : -1;
  if (index < 0) fail("lattice quantization: a group left off the grid");  // (ggml aborts)
  return index;
}

// Importance weights of a block of n (IQ3 without an imatrix: x^2) and their square roots.
void block_weights(int n, const float* xb, const float* qw, float sigma2, float* weight, float* waux) {
  for (int i = 0; i < n; ++i) weight[i] = qw ? qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
  for (int i = 0; i < n; ++i) waux[i] = std::sqrt(weight[i]);
}

// The mean square of a super-block, times 2 (IQ3, IQ2_S) or 1 (IQ2_XXS, IQ2_XS).
float sigma2_of(const float* x, float times) {
  float sumx2 = 0;
  for (int i = 0; i < QK_K; ++i) sumx2 += x[i] * x[i];
  return times * sumx2 / QK_K;
}

// The signs of groups of 8 as bits, |x| into xval.
inline uint8_t split_signs(const float* xb, float* xval) {
  uint8_t s = 0;
  for (int i = 0; i < 8; ++i) {
    if (xb[i] >= 0) {
      xval[i] = xb[i];
    } else {
      xval[i] = -xb[i];
      s |= uint8_t(1 << i);
    }
  }
  return s;
}

// Signs in 7 bits a group of 8, the eighth being the parity: an odd count of negatives flips
// the value that costs least (|x| into xval, that one negated).
inline uint8_t parity_signs(const float* xb, const float* weight, float* xval) {
  uint8_t s = split_signs(xb, xval);
  if (__builtin_popcount(s) % 2) {
    int imin = 0;
    float min = weight[0] * xb[0] * xb[0];
    for (int i = 1; i < 8; ++i) {
      const float ax = weight[i] * xb[i] * xb[i];
      if (ax < min) {
        min = ax;
        imin = i;
      }
    }
    xval[imin] = -xval[imin];
    s ^= uint8_t(1 << imin);
  }
  return s & 127;
}

void require_weights(const float* qw, const char* type) {
  if (!qw) fail("{} quantization needs importance weights (an imatrix), as ggml's", type);
}

// What the types' blocks differ in besides the search.
struct BlockKind {
  int block;         // values a scale
  bool parity;       // 7 sign bits a group of 8, the eighth the parity (else 8 bits)
  float eps;         // a block whose largest |x| is under it is left empty
  float plain_sigma;  // weights without an imatrix: x^2, plus this x sigma2 (IQ2_S's 1/4)
  bool qp_start;     // IQ2_XXS's search (search_block_qp) instead of search_block
};

// A block's signs (into `signs`, a byte a group of 8) and its fit by `search(xval, max)` (into
// L): the scale, made positive by flipping the signs, or nullopt for a block left empty.
template <class SearchFn>
std::optional<float> fit_block(const BlockKind& kind, const float* xb, const float* weight, SearchFn&& search,
                               uint8_t* signs) {
  float xval[32] = {};  // (all written for block >= 8: GCC cannot tell)
  for (int k = 0; k < kind.block / 8; ++k)
    signs[k] = kind.parity ? parity_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k) : split_signs(xb + 8 * k, xval + 8 * k);
  float max = xval[0];
  for (int i = 1; i < kind.block; ++i) max = max > xval[i] ? max : xval[i];
  if (max < kind.eps) return std::nullopt;
  std::optional<float> scale = search(xval, max);
  if (scale && *scale < 0) {
    *scale = -*scale;
    for (int k = 0; k < kind.block / 8; ++k) signs[k] = uint8_t(kind.parity ? ~signs[k] & 127 : ~signs[k]);
  }
  return scale;
}

// A block of a lattice type: its weights, signs (into `signs`) and fit (into L); its scale, or
// nullopt for a block left empty.
template <int G>
std::optional<float> fit_lattice_block(const Lattice<G>& g, const Search& cfg, const BlockKind& kind, const float* xb,
                                       const float* qwb, float sigma2, int8_t* L, uint8_t* signs) {
  float weight[32], waux[32];
  if (qwb || kind.plain_sigma == 0) {
    block_weights(kind.block, xb, qwb, sigma2, weight, waux);
  } else {
    for (int i = 0; i < kind.block; ++i) weight[i] = kind.plain_sigma * sigma2 + xb[i] * xb[i];
    for (int i = 0; i < kind.block; ++i) waux[i] = std::sqrt(weight[i]);
  }
  return fit_block(kind, xb, weight, [&](const float* xval, float max) -> std::optional<float> {
    if constexpr (G == 8)
      if (kind.qp_start) return search_block_qp(g, cfg, xval, weight, waux, L);
    return search_block(g, cfg, xval, weight, waux, max, L);
  }, signs);
}

// A super-block of a lattice type (qwb: its importance weights or nullptr): each block fitted
// and, unless left empty, handed to pack(ib, L, signs); the block scales (0 for an empty block)
// into `scales`, the largest returned.
template <int G, class PackFn>
float fit_superblock(const Lattice<G>& g, const Search& cfg, const BlockKind& kind, const float* x,
                     const float* qwb, float sigma_times, float* scales, PackFn&& pack) {
  const float sigma2 = sigma2_of(x, sigma_times);
  float max_scale = 0;
  for (int ib = 0; ib < QK_K / kind.block; ++ib) {
    int8_t L[32] = {};
    uint8_t signs[4];
    const auto scale = fit_lattice_block(g, cfg, kind, x + kind.block * ib, qwb ? qwb + kind.block * ib : nullptr,
                                         sigma2, L, signs);
    scales[ib] = scale.value_or(0.f);
    if (!scale) continue;
    pack(ib, L, signs);
    max_scale = max_scale > *scale ? max_scale : *scale;
  }
  return max_scale;
}

// The super-block scale as ggml stores it (max_scale / 31 times the type's factor, as F16) into
// *d; returns the 1 / d (before the factor) that the block scales are coded against.
inline float store_superblock_d(float max_scale, float factor, uint16_t* d) {
  const float dd = max_scale / 31;
  *d = fp32_to_fp16(dd * factor);
  return 1 / dd;
}

// A block scale's 4-bit code against the super-block's 1 / d.
inline int scale_code(float id, float scale) {
  return std::max(0, std::min(15, nearest_int(0.5f * (id * scale - 1))));
}

// n block scales' 4-bit codes, two a byte (the even block's low).
inline void scale_pairs(float id, const float* scales, int n, uint8_t* out) {
  for (int ib = 0; ib < n; ib += 2)
    out[ib / 2] = uint8_t(scale_code(id, scales[ib]) | (scale_code(id, scales[ib + 1]) << 4));
}

}  // namespace

void quantize_iq3_xxs(const float* x, block_iq3_xxs* y, int64_t k, const float* qw) {
  const Lattice<4>& g = iq3_lattice(256);
  constexpr Search cfg{32, 8, 15, 0.2f, true, false};
  constexpr BlockKind kind{32, true, 1e-8f, 0, false};  // (GROUP_MAX_EPS_IQ3_XXS)
  for (int64_t ibl = 0; ibl < k / QK_K; ++ibl, x += QK_K) {
    block_iq3_xxs& b = y[ibl];
    b.d = fp32_to_fp16(0.f);
    uint8_t q3[QK_K / 4] = {};  // 8 grid entries a block
    uint32_t scales_and_signs[QK_K / 32] = {};
    float scales[QK_K / 32];
    const float max_scale = fit_superblock(g, cfg, kind, x, qw ? qw + QK_K * ibl : nullptr, 2, scales,
                                           [&](int ib, const int8_t* L, const uint8_t* signs) {
      for (int kk = 0; kk < 8; ++kk) q3[8 * ib + kk] = uint8_t(entry_of(g, L + 4 * kk));
      scales_and_signs[ib] = uint32_t(signs[0]) | uint32_t(signs[1]) << 7 | uint32_t(signs[2]) << 14 |
                             uint32_t(signs[3]) << 21;
    });
    if (!max_scale) {
      std::memset(b.qs, 0, sizeof(b.qs));
      continue;
    }
    const float id = store_superblock_d(max_scale, 1.0125f, &b.d);
    for (int ib = 0; ib < QK_K / 32; ++ib) scales_and_signs[ib] |= uint32_t(scale_code(id, scales[ib])) << 28;
    std::memcpy(b.qs, q3, sizeof(q3));
    std::memcpy(b.qs + sizeof(q3), scales_and_signs, sizeof(scales_and_signs));
  }
}

void quantize_iq3_s(const float* x, block_iq3_s* y, int64_t k, const float* qw) {
  const Lattice<4>& g = iq3_lattice(512);
  constexpr Search cfg{32, 8, 9, 0.2f, false, true};
  constexpr BlockKind kind{32, false, std::numeric_limits<float>::denorm_min(), 0, false};  // (max == 0)
  for (int64_t ibl = 0; ibl < k / QK_K; ++ibl, x += QK_K) {
    block_iq3_s& b = y[ibl];
    std::memset(&b, 0, sizeof(b));
    // As ggml's: the quants and signs of a block whose values are all zero are not written,
    // and the blocks after it move up into its place (the high index bits stay in place).
    uint8_t* qs = b.qs;
    uint8_t* signs = b.signs;
    float scales[QK_K / 32];
    const float max_scale = fit_superblock(g, cfg, kind, x, qw ? qw + QK_K * ibl : nullptr, 2, scales,
                                           [&](int ib, const int8_t* L, const uint8_t* block_signs) {
      for (int kk = 0; kk < 8; ++kk) {
        const int index = entry_of(g, L + 4 * kk);
        qs[kk] = uint8_t(index & 255);
        b.qh[(ib * 8 + kk) / 8] |= uint8_t((index >> 8) << ((ib * 8 + kk) % 8));
      }
      qs += 8;
      std::memcpy(signs, block_signs, 4);
      signs += 4;
    });
    if (!max_scale) continue;
    const float id = store_superblock_d(max_scale, 1.033f, &b.d);
    scale_pairs(id, scales, QK_K / 32, b.scales);
  }
}

void quantize_iq2_s(const float* x, block_iq2_s* y, int64_t k, const float* qw) {
  const Lattice<8>& g = iq2_lattice(1024);
  constexpr Search cfg{16, 3, 9, 0.1f, true, false};
  constexpr BlockKind kind{16, false, 1e-8f, 0.25f, false};  // (GROUP_MAX_EPS_IQ2_S)
  for (int64_t ibl = 0; ibl < k / QK_K; ++ibl, x += QK_K) {
    block_iq2_s& b = y[ibl];
    std::memset(&b, 0, sizeof(b));
    float scales[QK_K / 16];
    const float max_scale = fit_superblock(g, cfg, kind, x, qw ? qw + QK_K * ibl : nullptr, 2, scales,
                                           [&](int ib, const int8_t* L, const uint8_t* signs) {
      for (int kk = 0; kk < 2; ++kk) {
        const int index = entry_of(g, L + 8 * kk);
        const int i8 = 2 * ib + kk;
        b.qs[i8] = uint8_t(index & 255);
        b.qh[i8 / 4] |= uint8_t((index >> 8) << (2 * (i8 % 4)));
        b.qs[QK_K / 8 + i8] = signs[kk];
      }
    });
    if (!max_scale) continue;
    const float id = store_superblock_d(max_scale, 0.9875f, &b.d);
    scale_pairs(id, scales, QK_K / 16, b.scales);
  }
}

void quantize_iq2_xxs(const float* x, block_iq2_xxs* y, int64_t k, const float* qw) {
  require_weights(qw, "IQ2_XXS");
  const Lattice<8>& g = iq2_lattice(256);
  constexpr Search cfg{32, 3, 6, 0.1f, false, true};
  constexpr BlockKind kind{32, true, detail::kGroupMaxEps, 0, true};
  for (int64_t ibl = 0; ibl < k / QK_K; ++ibl, x += QK_K) {
    block_iq2_xxs& b = y[ibl];
    b.d = fp32_to_fp16(0.f);
    uint32_t q2[QK_K / 16] = {};  // a block: 4 grid entries, then 4 x 7 sign bits and the scale
    float scales[QK_K / 32];
    const float max_scale = fit_superblock(g, cfg, kind, x, qw + QK_K * ibl, 1, scales,
                                           [&](int ib, const int8_t* L, const uint8_t* signs) {
      for (int kk = 0; kk < 4; ++kk) {
        q2[2 * ib] |= uint32_t(entry_of(g, L + 8 * kk)) << (8 * kk);
        q2[2 * ib + 1] |= uint32_t(signs[kk]) << (7 * kk);
      }
    });
    if (!max_scale) {
      std::memset(b.qs, 0, sizeof(b.qs));
      continue;
    }
    const float id = store_superblock_d(max_scale, 1.0f, &b.d);
    for (int ib = 0; ib < QK_K / 32; ++ib) q2[2 * ib + 1] |= uint32_t(scale_code(id, scales[ib])) << 28;
    std::memcpy(b.qs, q2, sizeof(q2));
  }
}

void quantize_iq2_xs(const float* x, block_iq2_xs* y, int64_t k, const float* qw) {
  require_weights(qw, "IQ2_XS");
  const Lattice<8>& g = iq2_lattice(512);
  constexpr Search cfg{16, 3, 9, 0.1f, true, false};
  constexpr BlockKind kind{16, true, detail::kGroupMaxEps, 0, false};
  for (int64_t ibl = 0; ibl < k / QK_K; ++ibl, x += QK_K) {
    block_iq2_xs& b = y[ibl];
    b.d = fp32_to_fp16(0.f);
    std::memset(b.scales, 0, sizeof(b.scales));
    uint16_t q2[QK_K / 8] = {};  // a group: 9-bit grid entry | 7 sign bits << 9
    float scales[QK_K / 16];
    const float max_scale = fit_superblock(g, cfg, kind, x, qw + QK_K * ibl, 1, scales,
                                           [&](int ib, const int8_t* L, const uint8_t* signs) {
      for (int kk = 0; kk < 2; ++kk) q2[2 * ib + kk] = uint16_t(entry_of(g, L + 8 * kk) | (signs[kk] << 9));
    });
    if (!max_scale) {
      std::memset(b.qs, 0, sizeof(b.qs));
      continue;
    }
    const float id = store_superblock_d(max_scale, 1.0f, &b.d);
    scale_pairs(id, scales, QK_K / 16, b.scales);
    std::memcpy(b.qs, q2, sizeof(q2));
  }
}

// IQ1_S: each block of 32 takes the values -1, 0, 1 plus a common shift of +-1/8, its best
// split of the sorted values into those three found exhaustively (prefix sums over the sorted
// order: ggml sorts by qsort, whose glibc merge sort keeps equal values in order, as
// std::stable_sort), then each group of 8 on the grid of 2048, off it the neighbour nearest at
// the block's scale and shift; 3-bit block scales and the shift's sign under d.
void quantize_iq1_s(const float* x, block_iq1_s* y, int64_t k, const float* qw) {
  require_weights(qw, "IQ1_S");
  const Lattice<8>& g = iq1_lattice();
  constexpr float kDelta = 0.125f;  // IQ1S_DELTA
  const float x_p[3] = {-1 + kDelta, kDelta, 1 + kDelta};
  const float x_m[3] = {-1 - kDelta, -kDelta, 1 - kDelta};
  for (int64_t ibl = 0; ibl < k / QK_K; ++ibl, x += QK_K) {
    block_iq1_s& b = y[ibl];
    b.d = fp32_to_fp16(0.f);
    std::memset(b.qs, 0, sizeof(b.qs));
    std::memset(b.qh, 0, sizeof(b.qh));
    float scales[QK_K / 32];
    int shifts[QK_K / 32];
    float max_scale = 0;
    const float sigma2 = sigma2_of(x, 2);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const float* xb = x + 32 * ib;
      float weight[32], waux[32];
      block_weights(32, xb, qw + QK_K * ibl + 32 * ib, sigma2, weight, waux);
      float max = std::fabs(xb[0]);
      for (int i = 1; i < 32; ++i) max = max > std::fabs(xb[i]) ? max : std::fabs(xb[i]);
      scales[ib] = 0;
      shifts[ib] = 1;
      if (max < 1e-12f) continue;  // (GROUP_MAX_EPS_IQ1_S)
      int idx[32];
      sorted_order<32>(xb, idx);
      float sumx[33], sumw[33];
      sumx[0] = sumw[0] = 0;
      for (int j = 0; j < 32; ++j) {
        sumx[j + 1] = sumx[j] + weight[idx[j]] * xb[idx[j]];
        sumw[j + 1] = sumw[j] + weight[idx[j]];
      }
      float best_score = -FLT_MAX, scale = max;
      int besti1 = -1, besti2 = -1, best_shift = 0;
      for (int i1 = 0; i1 <= 32; ++i1)
        for (int i2 = i1; i2 <= 32; ++i2)
          for (int sh : {1, -1}) {
            const float* xs = sh == 1 ? x_p : x_m;
            const float sumqx = (sumx[i1] - sumx[0]) * xs[0] + (sumx[i2] - sumx[i1]) * xs[1] + (sumx[32] - sumx[i2]) * xs[2];
            const float sumq2 = (sumw[i1] - sumw[0]) * xs[0] * xs[0] + (sumw[i2] - sumw[i1]) * xs[1] * xs[1] +
                                (sumw[32] - sumw[i2]) * xs[2] * xs[2];
            if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
              scale = sumqx / sumq2;
              best_score = scale * sumqx;
              besti1 = i1;
              besti2 = i2;
              best_shift = sh;
            }
          }
      if (besti1 < 0 || besti2 < 0 || best_shift == 0) continue;
      int8_t L[32];
      for (int j = 0; j < 32; ++j) L[idx[j]] = int8_t(j < besti1 ? 0 : j < besti2 ? 1 : 2);
      if (scale < 0) {
        for (int j = 0; j < 32; ++j) L[j] = int8_t(2 - L[j]);
        scale = -scale;
        best_shift = -best_shift;
      }
      const float* xx = best_shift == 1 ? x_p : x_m;
      bool all_on_grid = true;
      int index[4];
      for (int kk = 0; kk < 4; ++kk) {
        const int u = lattice_index<8>(L + 8 * kk);
        index[kk] = g.map[size_t(u)];
        if (index[kk] >= 0) continue;
        all_on_grid = false;
        index[kk] = iq1_neighbour(g, u, xb + 8 * kk, weight + 8 * kk, scale, xx, L + 8 * kk);
      }
      if (!all_on_grid) {
        float sumqx = 0, sumq2 = 0;
        for (int kk = 0; kk < 4; ++kk)
          for (int j = 0; j < 8; ++j) {
            const float w = weight[8 * kk + j];
            const float q = xx[(g.grid[size_t(index[kk])][size_t(j)] - 1) / 2];
            sumqx += w * q * xb[8 * kk + j];
            sumq2 += w * q * q;
          }
        if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
      }
      uint16_t h = 0;
      for (int kk = 0; kk < 4; ++kk) {
        b.qs[4 * ib + kk] = uint8_t(index[kk] & 255);
        h = uint16_t(h | ((index[kk] >> 8) << (3 * kk)));
      }
      b.qh[ib] = h;
      scales[ib] = scale;
      shifts[ib] = best_shift;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) continue;
    const float d = max_scale / 15;
    b.d = fp32_to_fp16(d * 1.125f);
    const float id = 1 / d;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      int l = std::max(0, std::min(7, nearest_int(0.5f * (id * scales[ib] - 1))));
      if (shifts[ib] == -1) l |= 8;
      b.qh[ib] = uint16_t(b.qh[ib] | (l << 12));
    }
  }
}

// IQ1_M: blocks of 16, each half of 8 with its own shift sign (4 combinations searched with
// the split), 3-bit block scales, and d refitted to the quantized scales at the end, its f16
// bits spread over the scales' top nibbles.
void quantize_iq1_m(const float* x, block_iq1_m* y, int64_t k, const float* qw) {
  const Lattice<8>& g = iq1_lattice();
  constexpr float kDelta = 0.125f;  // IQ1M_DELTA
  const float x_p[3] = {-1 + kDelta, kDelta, 1 + kDelta};
  const float x_m[3] = {-1 - kDelta, -kDelta, 1 - kDelta};
  constexpr uint8_t kMasks[4] = {0x00, 0x80, 0x08, 0x88};
  // Shift combination k: the first half's values, then the second's.
  auto first = [&](int kk) { return kk < 2 ? x_p : x_m; };
  auto second = [&](int kk) { return kk % 2 == 0 ? x_p : x_m; };
  for (int64_t ibl = 0; ibl < k / QK_K; ++ibl, x += QK_K) {
    block_iq1_m& b = y[ibl];
    std::memset(&b, 0, sizeof(b));
    float scales[QK_K / 16];
    int shifts[QK_K / 16];
    float max_scale = 0;
    const float sigma2 = sigma2_of(x, 2);
    for (int ib = 0; ib < QK_K / 16; ++ib) {
      const float* xb = x + 16 * ib;
      float weight[16], waux[16];
      block_weights(16, xb, qw ? qw + QK_K * ibl + 16 * ib : nullptr, sigma2, weight, waux);
      float max = std::fabs(xb[0]);
      for (int i = 1; i < 16; ++i) max = max > std::fabs(xb[i]) ? max : std::fabs(xb[i]);
      scales[ib] = 0;
      shifts[ib] = 0;
      if (max < 1e-7f) continue;  // (GROUP_MAX_EPS_IQ1_M)
      int idx[16];
      sorted_order<16>(xb, idx);
      float best_score = -FLT_MAX, scale = max;
      int besti1 = -1, besti2 = -1, best_k = -1;
      for (int i1 = 0; i1 <= 16; ++i1)
        for (int i2 = i1; i2 <= 16; ++i2) {
          float sumqx[4] = {}, sumq2[4] = {};
          // In ggml's order: the values below i1 (level 0), to i2 (1), then the rest (2).
          for (int j = 0; j < 16; ++j) {
            const int lev = j < i1 ? 0 : j < i2 ? 1 : 2;
            const int i = idx[j];
            const float p = x_p[lev], m = x_m[lev];
            // Combinations 0..3: (+, +), (+, -), (-, +), (-, -) for the two halves.
            if (i < 8) {
              sumqx[0] += weight[i] * p * xb[i];
              sumqx[1] += weight[i] * p * xb[i];
              sumqx[2] += weight[i] * m * xb[i];
              sumqx[3] += weight[i] * m * xb[i];
              sumq2[0] += weight[i] * p * p;
              sumq2[1] += weight[i] * p * p;
              sumq2[2] += weight[i] * m * m;
              sumq2[3] += weight[i] * m * m;
            } else {
              sumqx[0] += weight[i] * p * xb[i];
              sumqx[2] += weight[i] * p * xb[i];
              sumqx[1] += weight[i] * m * xb[i];
              sumqx[3] += weight[i] * m * xb[i];
              sumq2[0] += weight[i] * p * p;
              sumq2[2] += weight[i] * p * p;
              sumq2[1] += weight[i] * m * m;
              sumq2[3] += weight[i] * m * m;
            }
          }
          for (int kk = 0; kk < 4; ++kk)
            if (sumq2[kk] > 0 && sumqx[kk] * sumqx[kk] > best_score * sumq2[kk]) {
              scale = sumqx[kk] / sumq2[kk];
              best_score = scale * sumqx[kk];
              besti1 = i1;
              besti2 = i2;
              best_k = kk;
            }
        }
      if (besti1 < 0 || besti2 < 0 || best_k < 0) continue;
      int8_t L[16];
      for (int j = 0; j < 16; ++j) L[idx[j]] = int8_t(j < besti1 ? 0 : j < besti2 ? 1 : 2);
      if (scale < 0) {
        for (int j = 0; j < 16; ++j) L[j] = int8_t(2 - L[j]);
        scale = -scale;
        best_k = 3 - best_k;
      }
      bool all_on_grid = true;
      int index[2];
      for (int kk = 0; kk < 2; ++kk) {
        const float* xx = kk == 0 ? first(best_k) : second(best_k);
        const int u = lattice_index<8>(L + 8 * kk);
        index[kk] = g.map[size_t(u)];
        if (index[kk] >= 0) continue;
        all_on_grid = false;
        index[kk] = iq1_neighbour(g, u, xb + 8 * kk, weight + 8 * kk, scale, xx, L + 8 * kk);
      }
      if (!all_on_grid) {
        float sumqx_f = 0, sumq2_f = 0;
        for (int kk = 0; kk < 2; ++kk) {
          const float* xx = kk == 0 ? first(best_k) : second(best_k);
          for (int j = 0; j < 8; ++j) {
            const float w = weight[8 * kk + j];
            const float q = xx[(g.grid[size_t(index[kk])][size_t(j)] - 1) / 2];
            sumqx_f += w * q * xb[8 * kk + j];
            sumq2_f += w * q * q;
          }
        }
        if (sumqx_f > 0 && sumq2_f > 0) scale = sumqx_f / sumq2_f;
      }
      b.qs[2 * ib] = uint8_t(index[0] & 255);
      b.qs[2 * ib + 1] = uint8_t(index[1] & 255);
      b.qh[ib] = uint8_t((index[0] >> 8) | ((index[1] >> 8) << 4));
      scales[ib] = scale;
      shifts[ib] = best_k;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) continue;
    uint16_t sc[4] = {};
    float d = max_scale / 15;
    const float id = 1 / d;
    float sumqx_f = 0, sumq2_f = 0;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
      const int l = std::max(0, std::min(7, nearest_int(0.5f * (id * scales[ib] - 1))));
      sc[ib / 4] = uint16_t(sc[ib / 4] | (l << (3 * (ib % 4))));
      b.qh[ib] |= kMasks[shifts[ib]];
      const float* xb = x + 16 * ib;
      float weight[16], waux[16];
      block_weights(16, xb, qw ? qw + QK_K * ibl + 16 * ib : nullptr, sigma2, weight, waux);
      for (int kk = 0; kk < 2; ++kk) {
        const float* xx = kk == 0 ? first(shifts[ib]) : second(shifts[ib]);
        const int entry = b.qs[2 * ib + kk] + ((b.qh[ib] << (8 - 4 * kk)) & 0x700);
        for (int j = 0; j < 8; ++j) {
          const float w = weight[8 * kk + j];
          const float q = xx[(g.grid[size_t(entry)][size_t(j)] - 1) / 2] * float(2 * l + 1);
          sumqx_f += w * q * xb[8 * kk + j];
          sumq2_f += w * q * q;
        }
      }
    }
    if (sumq2_f > 0) d = sumqx_f / sumq2_f;
    const uint16_t dh = fp32_to_fp16(d * 1.1125f);
    sc[0] = uint16_t(sc[0] | ((dh & 0x000f) << 12));
    sc[1] = uint16_t(sc[1] | ((dh & 0x00f0) << 8));
    sc[2] = uint16_t(sc[2] | ((dh & 0x0f00) << 4));
    sc[3] = uint16_t(sc[3] | (dh & 0xf000));
    std::memcpy(b.scales, sc, sizeof(sc));
  }
}

}  // namespace minfer::quant::ref
