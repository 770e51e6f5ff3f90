// An 8 x 8 transpose of floats in ymm registers, for the AVX2 and AVX-512 translation units:
// they include this after their `MINFER_ISA_BEGIN` (isa_target.h), with internal linkage as simd_tiles.h.
#ifndef MINFER_AVX2_TRANSPOSE_BODY
#define MINFER_AVX2_TRANSPOSE_BODY

namespace minfer::cpu {
namespace {

// 8 x 8 transpose: r[m] = element m of rows r[0..7].
inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int k = 0; k < 2; ++k) {
    u[4 * k + 0] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
    u[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
    u[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
    u[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
  }
  for (int m = 0; m < 4; ++m) {
    r[m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x20);
    r[4 + m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x31);
  }
}

}  // namespace
}  // namespace minfer::cpu

#endif  // MINFER_AVX2_TRANSPOSE_BODY
