// vpdpbusd with its 4 signed bytes broadcast from memory (and the in-place nibble products built
// on it), for the AVX-512 translation units: they
// include this after their `MINFER_ISA_BEGIN` (isa_target.h), with internal linkage as avx512_transpose.h.
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

// One 64-byte chunk of 4-bit quants (two nibbles a byte) against the 4 activation bytes of each
// nibble: lo += (v & 0x0F) . xlo, hi16 += (v & 0xF0) . xhi. The high nibbles stay in place, 16
// times their value (one AND instead of a shift and an AND), so hi16 is exactly 16 x their sum:
// the caller shifts it right by 4 once a block (a chunk adds at most 4 x 240 x 128 a lane: under
// 2^20 for the 4 chunks the decode kernels sum).
// v is held in a register (the empty asm): GCC otherwise folded its load into both ANDs, two
// 64-byte loads a chunk, and a one-token step is bound by the loads (with the activations'
// broadcasts: one core of AMD Zen 4, from cache, GemvPacked Q4_0 70 -> 74-77 GB/s).
inline void dpbusd_nibbles(__m512i& lo, __m512i& hi16, __m512i v, const uint8_t* xlo,
                           const uint8_t* xhi) {
  asm("" : "+v"(v));
  dpbusd_bcast(lo, _mm512_and_si512(v, _mm512_set1_epi8(0x0F)), xlo);
  dpbusd_bcast(hi16, _mm512_and_si512(v, _mm512_set1_epi8(char(0xF0))), xhi);
}

}  // namespace
}  // namespace minfer::cpu

#endif
