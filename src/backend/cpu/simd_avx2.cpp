// AVX2 + FMA + F16C kernels, chosen at run time (cpu_features.h); the code is simd_tiles.h.
#include <algorithm>
#include <type_traits>
#include <cmath>
#include <cstdint>

#include "backend/cpu/act_quant.h"
#include "backend/cpu/kernels_dot.h"
#include "backend/cpu/scratch.h"
#include "common/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "backend/cpu/isa_target.h"

MINFER_ISA_BEGIN(MINFER_ISA_AVX2)
#if !defined(__clang__)
// Only the explicit _mm256_fmadd_ps may fuse: scalar steps must round like the scalar kernels.
#pragma GCC optimize("fp-contract=off")
#endif

namespace minfer::cpu {
namespace {
// Products of |w| (u8) and signed x (s8) summed in pairs (i16, cannot overflow for |x| <= 127),
// then in quads (i32).
struct I8Ops {
  static constexpr bool kVnni = false;
  static __m256i dot(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
  static __m256i dot_acc(__m256i acc, __m256i u, __m256i s) { return _mm256_add_epi32(acc, dot(u, s)); }
};
}  // namespace
}  // namespace minfer::cpu

#include "backend/cpu/simd_tiles.h"
#include "backend/cpu/avx2_transpose.h"

namespace minfer::cpu {
namespace {

// ---- F16 / BF16 prompts: 8 rows in the lanes, weights widened once per call -----------------
// simd_avx512.cpp's fpanel_gemm on 256-bit vectors: the call's activations widened to F32 once,
// each 8-row group's weights once into a panel (column k: the 8 rows' values, by 8 x 8
// transposes), and per column and pair of groups two panel loads and 2 T FMAs with each token's
// value broadcast; sums in blocks of kFPanelBlock columns, then added (fpanel_gemm's order). The
// 4 x 2 tile widened every weight vector for each pair of tokens (BF16: two instructions a
// vector, as many as its FMAs).
constexpr int64_t kFPanelBlock = 256;

template <int T>
inline void fpanel2_tile(const float* p0, const float* p1, int64_t n, const float* xf, int64_t t0,
                         float (&tot)[2][T][8]) {
  const float* xt = xf + t0 * n;
  for (int64_t k0 = 0; k0 < n; k0 += kFPanelBlock) {
    const int64_t k1 = std::min(n, k0 + kFPanelBlock);
    __m256 a0[T], a1[T];
    for (int t = 0; t < T; ++t) a0[t] = a1[t] = _mm256_setzero_ps();
    for (int64_t k = k0; k < k1; ++k) {
      const __m256 w0 = _mm256_load_ps(p0 + 8 * k), w1 = _mm256_load_ps(p1 + 8 * k);
      for (int t = 0; t < T; ++t) {
        const __m256 xv = _mm256_broadcast_ss(xt + t * n + k);
        a0[t] = _mm256_fmadd_ps(w0, xv, a0[t]);
        a1[t] = _mm256_fmadd_ps(w1, xv, a1[t]);
      }
    }
    for (int t = 0; t < T; ++t) {
      const bool first = k0 == 0;
      _mm256_store_ps(tot[0][t], first ? a0[t] : _mm256_add_ps(_mm256_load_ps(tot[0][t]), a0[t]));
      _mm256_store_ps(tot[1][t], first ? a1[t] : _mm256_add_ps(_mm256_load_ps(tot[1][t]), a1[t]));
    }
  }
}

template <class L>
void fpanel_gemm(GgmlType t, int64_t n, const uint8_t* w, size_t ws, int64_t nr, const uint8_t* x, size_t xs,
                 int64_t nt, float* y, int64_t ldy) {
  if (nt < kFloatPanelTokens) {
    half_tiles<L, 4, 2>(t, n, w, ws, nr, x, xs, nt, y, ldy);
    return;
  }
  float* xf = thread_scratch_array<float>(ScratchSlot::TileA, size_t(nt * n));
  for (int64_t tk = 0; tk < nt; ++tk) {
    const uint8_t* row = x + size_t(tk) * xs;
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) _mm256_storeu_ps(xf + tk * n + k, L::v(row, k));
    for (; k < n; ++k) xf[tk * n + k] = L::s(row, k);
  }
  float* pan = thread_scratch_array<float>(ScratchSlot::TileB, size_t(16 * n));
  // Rows r0.. (at most 8) of w into the panel at pn, zero past the last row.
  auto fill = [&](int64_t r0, float* pn) {
    const int rows = int(std::min<int64_t>(8, nr - r0));
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
      __m256 v[8];
      for (int r = 0; r < 8; ++r) v[r] = r < rows ? L::v(w + size_t(r0 + r) * ws, k) : _mm256_setzero_ps();
      transpose8(v);
      for (int c = 0; c < 8; ++c) _mm256_store_ps(pn + 8 * (k + c), v[c]);
    }
    for (; k < n; ++k)
      for (int r = 0; r < 8; ++r) pn[8 * k + r] = r < rows ? L::s(w + size_t(r0 + r) * ws, k) : 0.0f;
    return rows;
  };
  for (int64_t r0 = 0; r0 < nr; r0 += 16) {
    const int rows0 = fill(r0, pan), rows1 = r0 + 8 < nr ? fill(r0 + 8, pan + 8 * n) : 0;
    if (rows1 == 0) std::fill(pan + 8 * n, pan + 16 * n, 0.0f);
    auto run = [&](auto tw, int64_t t0) {
      constexpr int T = decltype(tw)::value;
      alignas(32) float tot[2][T][8];
      fpanel2_tile<T>(pan, pan + 8 * n, n, xf, t0, tot);
      for (int tt = 0; tt < T; ++tt) {
        for (int r = 0; r < rows0; ++r) y[(t0 + tt) * ldy + r0 + r] = tot[0][tt][r];
        for (int r = 0; r < rows1; ++r) y[(t0 + tt) * ldy + r0 + 8 + r] = tot[1][tt][r];
      }
    };
    int64_t t0 = 0;
    for (; t0 + 6 <= nt; t0 += 6) run(std::integral_constant<int, 6>{}, t0);
    for (; t0 + 2 <= nt; t0 += 2) run(std::integral_constant<int, 2>{}, t0);
    for (; t0 < nt; ++t0) run(std::integral_constant<int, 1>{}, t0);
  }
}

}  // namespace
}  // namespace minfer::cpu

namespace minfer::cpu {

DotTileFn dot_tile_avx2(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return f_tiles<LoadF32, 4, 2>;
    case GgmlType::F16: return &fpanel_gemm<LoadF16>;
    case GgmlType::BF16: return &fpanel_gemm<LoadBF16>;
    case GgmlType::Q8_0: return q8_tiles<DecQ8_0, 4, 2>;
    case GgmlType::Q4_0: return q8_tiles<DecQ4_0, 4, 2>;
    case GgmlType::Q5_0: return q8_tiles<DecQ5_0, 4, 2>;
    case GgmlType::IQ4_NL: return q8_tiles<DecIQ4NL, 4, 2>;
    case GgmlType::Q1_0: return q8_tiles<DecQ1_0, 4, 2>;
    case GgmlType::Q2_0: return q8_tiles<DecQ2_0, 4, 2>;
    case GgmlType::MXFP4: return q8_tiles<DecMXFP4, 4, 2>;
    case GgmlType::NVFP4: return q8_tiles<DecNVFP4, 4, 2>;
    case GgmlType::Q4_1: return q81_tiles<DecQ4_1, 4, 2>;
    case GgmlType::Q5_1: return q81_tiles<DecQ5_1, 4, 2>;
    case GgmlType::Q2_K: return q2k_tiles;
    case GgmlType::Q3_K: return q3k_tiles;
    case GgmlType::Q4_K: return q45k_tiles<false>;
    case GgmlType::Q5_K: return q45k_tiles<true>;
    case GgmlType::Q6_K: return q6k_tiles;
    case GgmlType::IQ4_XS: return &iqlat_gemm<DecIq4xs>;
    case GgmlType::IQ2_XXS: return &iqlat_gemm<DecIq2xxs>;
    case GgmlType::IQ2_XS: return &iqlat_gemm<DecIq2xs>;
    case GgmlType::IQ2_S: return &iqlat_gemm<DecIq2s>;
    case GgmlType::IQ3_XXS: return &iqlat_gemm<DecIq3xxs>;
    case GgmlType::IQ3_S: return &iqlat_gemm<DecIq3s>;
    case GgmlType::IQ1_S: return &iqlat_gemm<DecIq1s>;
    case GgmlType::IQ1_M: return &iqlat_gemm<DecIq1m>;
    case GgmlType::TQ1_0: return &tq_gemm_256<DecTq1>;
    case GgmlType::TQ2_0: return &tq_gemm_256<DecTq2>;
    default: return nullptr;
  }
}

VsumFn vsum_avx2() { return &vsum_simd; }
Q8RowFn quantize_q8_0_avx2() { return &quantize_q8_0_simd; }
Q8_1RowFn quantize_q8_1_avx2() { return &quantize_q8_1_simd; }
Q8KRowFn quantize_q8_K_avx2() { return &quantize_q8_K_simd; }
SoftmaxFn softmax_avx2() { return &softmax_simd; }
SwigluFn swiglu_avx2() { return &swiglu_simd; }

}  // namespace minfer::cpu

MINFER_ISA_END()
#else
namespace minfer::cpu {
DotTileFn dot_tile_avx2(GgmlType) { return nullptr; }
VsumFn vsum_avx2() { return nullptr; }
Q8RowFn quantize_q8_0_avx2() { return nullptr; }
Q8_1RowFn quantize_q8_1_avx2() { return nullptr; }
Q8KRowFn quantize_q8_K_avx2() { return nullptr; }
SoftmaxFn softmax_avx2() { return nullptr; }
SwigluFn swiglu_avx2() { return nullptr; }
}  // namespace minfer::cpu
#endif
