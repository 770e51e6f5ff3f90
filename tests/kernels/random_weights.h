// Test helpers: random weight matrices in any GGUF type. Quantized blocks get random bytes
// (every bit pattern a file may hold, not just what a quantizer emits) with their F16 scale
// fields replaced by sane values, so results stay finite.
#pragma once
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "common/fp16.h"
#include "quant/blocks.h"
#include "quant/types.h"

namespace minfer::test {

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& f : v) f = nd(rng);
  return v;
}

inline uint16_t random_half(std::mt19937& rng, float lo, float hi, bool allow_negative) {
  std::uniform_real_distribution<float> ud(lo, hi);
  float v = ud(rng);
  if (allow_negative && (rng() & 1)) v = -v;
  return fp32_to_fp16(v);
}

// Bytes of a [rows][cols] matrix of type t; returns the buffer (row-major, row_size(t, cols)).
inline std::vector<uint8_t> random_weights(GgmlType t, int64_t rows, int64_t cols,
                                           std::mt19937& rng) {
  using namespace quant;
  const size_t rs = row_size(t, cols);
  std::vector<uint8_t> buf(rs * size_t(rows));
  if (t == GgmlType::F32) {
    auto f = random_floats(size_t(rows * cols), rng);
    std::memcpy(buf.data(), f.data(), buf.size());
    return buf;
  }
  if (t == GgmlType::F16 || t == GgmlType::BF16) {
    auto f = random_floats(size_t(rows * cols), rng);
    auto* h = reinterpret_cast<uint16_t*>(buf.data());
    for (size_t i = 0; i < f.size(); ++i)
      h[i] = t == GgmlType::F16 ? fp32_to_fp16(f[i]) : fp32_to_bf16(f[i]);
    return buf;
  }
  for (auto& b : buf) b = uint8_t(rng());
  const int64_t nb = int64_t(buf.size() / type_traits(t).type_size);
  auto each = [&](auto* blocks, auto&& fix) {
    for (int64_t i = 0; i < nb; ++i) fix(blocks[i]);
  };
  auto d = [&] { return random_half(rng, 0.002f, 0.05f, true); };
  auto dpos = [&] { return random_half(rng, 0.002f, 0.05f, false); };
  void* p = buf.data();
  switch (t) {
    case GgmlType::Q4_0: each((block_q4_0*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::Q4_1: each((block_q4_1*)p, [&](auto& b) { b.d = dpos(); b.m = d(); }); break;
    case GgmlType::Q5_0: each((block_q5_0*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::Q5_1: each((block_q5_1*)p, [&](auto& b) { b.d = dpos(); b.m = d(); }); break;
    case GgmlType::Q8_0: each((block_q8_0*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::IQ4_NL: each((block_iq4_nl*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::Q2_K: each((block_q2_K*)p, [&](auto& b) { b.d = dpos(); b.dmin = dpos(); }); break;
    case GgmlType::Q3_K: each((block_q3_K*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::Q4_K: each((block_q4_K*)p, [&](auto& b) { b.d = dpos(); b.dmin = dpos(); }); break;
    case GgmlType::Q5_K: each((block_q5_K*)p, [&](auto& b) { b.d = dpos(); b.dmin = dpos(); }); break;
    case GgmlType::Q6_K: each((block_q6_K*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::IQ4_XS: each((block_iq4_xs*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::IQ2_XXS: each((block_iq2_xxs*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::IQ2_XS: each((block_iq2_xs*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::IQ2_S: each((block_iq2_s*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::IQ3_XXS: each((block_iq3_xxs*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::IQ3_S: each((block_iq3_s*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::IQ1_S: each((block_iq1_s*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::IQ1_M:  // d lives in the top nibbles of the four scale words
      each((block_iq1_m*)p, [&](auto& b) {
        const uint16_t h = d();
        uint16_t sc[4];
        std::memcpy(sc, b.scales, 8);
        for (int k = 0; k < 4; ++k) sc[k] = uint16_t((sc[k] & 0x0fff) | (((h >> (4 * k)) & 0xf) << 12));
        std::memcpy(b.scales, sc, 8);
      });
      break;
    case GgmlType::Q1_0: each((block_q1_0*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::Q2_0: each((block_q2_0*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::TQ1_0: each((block_tq1_0*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::TQ2_0: each((block_tq2_0*)p, [&](auto& b) { b.d = d(); }); break;
    case GgmlType::MXFP4:  // 2^(e - 128) from 1/512 to 1/32
      each((block_mxfp4*)p, [&](auto& b) { b.e = uint8_t(119 + rng() % 5); });
      break;
    case GgmlType::NVFP4:  // UE4M3 exponents 1..6: scales of 2^-7 to 2^-1
      each((block_nvfp4*)p, [&](auto& b) {
        for (auto& sd : b.d) sd = uint8_t(((1 + rng() % 6) << 3) | (rng() & 7));
      });
      break;
    default: break;
  }
  return buf;
}

// Every weight type the CPU matmul supports.
inline const std::vector<GgmlType>& matmul_types() {
  static const std::vector<GgmlType> v = {
      GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
      GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K,
      GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS,
      GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
      GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::Q1_0, GgmlType::Q2_0, GgmlType::MXFP4,
      GgmlType::NVFP4, GgmlType::TQ1_0, GgmlType::TQ2_0};
  return v;
}

}  // namespace minfer::test
