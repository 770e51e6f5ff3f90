// AVX2 + FMA + F16C kernels, chosen at run time (cpu_features.h); the code is simd_tiles.h.
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

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
// Only the explicit _mm256_fmadd_ps may fuse: scalar steps must round like the scalar kernels.
#pragma GCC optimize("fp-contract=off")

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

namespace minfer::cpu {

DotTileFn dot_tile_avx2(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return f_tiles<LoadF32, 4, 2>;
    case GgmlType::F16: return &half_tiles<LoadF16, 4, 2>;
    case GgmlType::BF16: return &half_tiles<LoadBF16, 4, 2>;
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

#pragma GCC pop_options
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
