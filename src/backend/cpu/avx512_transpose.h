// A 16 x 16 transpose of 32-bit lanes in zmm registers, for the AVX-512 translation units: they
// include this after their `MINFER_ISA_BEGIN` (isa_target.h), with internal linkage as simd_tiles.h.
#ifndef MINFER_AVX512_TRANSPOSE_BODY
#define MINFER_AVX512_TRANSPOSE_BODY

namespace minfer::cpu {
namespace {

// out[g] lane r = in[r] lane g: 32-bit and 64-bit unpacks within 128-bit lanes, then a 4 x 4
// transpose of the 128-bit lanes.
inline void transpose16(__m512i* v) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // u[4i + m], 128-bit lane k: dword 4k + m of rows 4i..4i+3.
  for (int m = 0; m < 4; ++m) {
    const __m512i p = _mm512_shuffle_i32x4(u[m], u[4 + m], 0x44);
    const __m512i q = _mm512_shuffle_i32x4(u[m], u[4 + m], 0xEE);
    const __m512i r = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0x44);
    const __m512i s = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0xEE);
    v[m] = _mm512_shuffle_i32x4(p, r, 0x88);
    v[4 + m] = _mm512_shuffle_i32x4(p, r, 0xDD);
    v[8 + m] = _mm512_shuffle_i32x4(q, s, 0x88);
    v[12 + m] = _mm512_shuffle_i32x4(q, s, 0xDD);
  }
}

// The same for floats (bit moves only).
inline void transpose16(__m512* r) {
  __m512i v[16];
  for (int i = 0; i < 16; ++i) v[i] = _mm512_castps_si512(r[i]);
  transpose16(v);
  for (int i = 0; i < 16; ++i) r[i] = _mm512_castsi512_ps(v[i]);
}

}  // namespace
}  // namespace minfer::cpu

#endif  // MINFER_AVX512_TRANSPOSE_BODY
