// vpdpbusd with its 4 signed bytes broadcast from memory, for the AVX-512 translation units: they
// include this after their `#pragma GCC target` (internal linkage, as avx512_transpose.h).
#ifndef MINFER_AVX512_VNNI_BODY
#define MINFER_AVX512_VNNI_BODY

#include <cstdint>

namespace minfer::cpu {
namespace {

// s += w . (the 4 bytes at p, in every lane): one micro-fused load + vpdpbusd. GCC emits a
// separate vpbroadcastd for _mm512_dpbusd_epi32(s, w, _mm512_set1_epi32(...)).
inline void dpbusd_bcast(__m512i& s, __m512i w, const uint8_t* p) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(s) : "v"(w), "m"(*reinterpret_cast<const int32_t*>(p)));
}

}  // namespace
}  // namespace minfer::cpu

#endif
