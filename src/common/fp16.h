// IEEE half and bfloat16 conversions, bit-exact with ggml's (round to nearest even).
// Scalar and branch-light so that they serve reference kernels and quantizers alike.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace minfer {

inline float f32_from_bits(uint32_t w) { float f; std::memcpy(&f, &w, 4); return f; }
inline uint32_t f32_to_bits(float f) { uint32_t w; std::memcpy(&w, &f, 4); return w; }

inline float fp16_to_fp32(uint16_t h) {
  const uint32_t w = uint32_t(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const float exp_scale = 0x1.0p-112f;
  const float normalized = f32_from_bits((two_w >> 4) + (0xE0u << 23)) * exp_scale;
  const float denormalized = f32_from_bits((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t result =
      sign | (two_w < (1u << 27) ? f32_to_bits(denormalized) : f32_to_bits(normalized));
  return f32_from_bits(result);
}

inline uint16_t fp32_to_fp16(float f) {
  float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = f32_to_bits(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = f32_from_bits((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = f32_to_bits(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return uint16_t((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

inline float bf16_to_fp32(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }

inline uint16_t fp32_to_bf16(float f) {
  const uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 64);  // quiet NaN
  return uint16_t((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

}  // namespace minfer
