// Hand-derived known answers: block bytes built by hand -> expected floats, and small
// vectors whose quantization can be worked out on paper (scales that are exact in f16); and,
// for the search-based IQ4_XS quantizer, the bytes ggml itself wrote for a fixed input.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"

using namespace minfer;
using namespace minfer::quant;

namespace {

constexpr uint16_t kOne = 0x3C00;   // 1.0 in f16
constexpr uint16_t kHalf = 0x3800;  // 0.5
constexpr uint16_t kTwo = 0x4000;   // 2.0

std::vector<float> deq(GgmlType t, const void* blocks, int64_t n) {
  std::vector<float> y(size_t(n), -999.0f);
  dequantize_row(t, blocks, y.data(), n);
  return y;
}

template <typename B>
B zeroed() {
  B b;
  std::memset(&b, 0, sizeof(b));
  return b;
}

}  // namespace

TEST(QuantKnown, BlockSizesMatchTypeTable) {
  EXPECT_EQ(type_traits(GgmlType::Q4_0).type_size, sizeof(block_q4_0));
  EXPECT_EQ(type_traits(GgmlType::Q4_1).type_size, sizeof(block_q4_1));
  EXPECT_EQ(type_traits(GgmlType::Q5_0).type_size, sizeof(block_q5_0));
  EXPECT_EQ(type_traits(GgmlType::Q5_1).type_size, sizeof(block_q5_1));
  EXPECT_EQ(type_traits(GgmlType::Q8_0).type_size, sizeof(block_q8_0));
  EXPECT_EQ(type_traits(GgmlType::Q8_1).type_size, sizeof(block_q8_1));
  EXPECT_EQ(type_traits(GgmlType::Q2_K).type_size, sizeof(block_q2_K));
  EXPECT_EQ(type_traits(GgmlType::Q3_K).type_size, sizeof(block_q3_K));
  EXPECT_EQ(type_traits(GgmlType::Q4_K).type_size, sizeof(block_q4_K));
  EXPECT_EQ(type_traits(GgmlType::Q5_K).type_size, sizeof(block_q5_K));
  EXPECT_EQ(type_traits(GgmlType::Q6_K).type_size, sizeof(block_q6_K));
  EXPECT_EQ(type_traits(GgmlType::Q8_K).type_size, sizeof(block_q8_K));
  EXPECT_EQ(type_traits(GgmlType::IQ4_NL).type_size, sizeof(block_iq4_nl));
  EXPECT_EQ(type_traits(GgmlType::IQ4_XS).type_size, sizeof(block_iq4_xs));
  EXPECT_EQ(type_traits(GgmlType::IQ2_XXS).type_size, sizeof(block_iq2_xxs));
  EXPECT_EQ(type_traits(GgmlType::IQ2_XS).type_size, sizeof(block_iq2_xs));
  EXPECT_EQ(type_traits(GgmlType::IQ2_S).type_size, sizeof(block_iq2_s));
  EXPECT_EQ(type_traits(GgmlType::IQ3_XXS).type_size, sizeof(block_iq3_xxs));
  EXPECT_EQ(type_traits(GgmlType::IQ3_S).type_size, sizeof(block_iq3_s));
  EXPECT_EQ(type_traits(GgmlType::IQ1_S).type_size, sizeof(block_iq1_s));
  EXPECT_EQ(type_traits(GgmlType::IQ1_M).type_size, sizeof(block_iq1_m));
}

TEST(QuantKnown, TableFlagsMatchImplementation) {
  for (uint32_t id = 0; id < 64; ++id) {
    const TypeTraits* tr = type_traits(id);
    if (!tr) continue;
    const GgmlType t = static_cast<GgmlType>(id);
    if (t == GgmlType::Q8_1) {  // activation-only: quant handles it, no weight may use it
      EXPECT_FALSE(tr->has_dequant);
      EXPECT_TRUE(can_dequantize(t) && can_quantize(t));
      continue;
    }
    EXPECT_EQ(tr->has_dequant, can_dequantize(t)) << tr->name;
    EXPECT_EQ(tr->has_quant, can_quantize(t)) << tr->name;
  }
}

TEST(QuantKnown, UnsupportedTypeThrows) {
  float y[256];
  uint8_t buf[256] = {};
  EXPECT_THROW(dequantize_row(GgmlType::I16, buf, y, 128), Error);  // an integer tensor type
  EXPECT_THROW(quantize_row(GgmlType::I16, y, buf, 128), Error);
  // The lattice i-quants dequantize but do not quantize.
  EXPECT_NO_THROW(dequantize_row(GgmlType::IQ2_XXS, buf, y, 256));
  EXPECT_THROW(quantize_row(GgmlType::IQ2_XXS, y, buf, 256), Error);
}

// The lattice i-quants against ggml's own dequantizers (llama.cpp v0.4.0's libggml-base,
// to_float): 8 super-blocks of bytes from mt19937(11) with d = 0.0625, -0.25, 0.0039, 0.33
// (IQ1_M: d in its scales' top nibbles); FNV-1a of the 2048 floats ggml returned.
TEST(QuantKnown, LatticeIQuantsDequantizeAsGgml) {
  struct Want {
    GgmlType t;
    uint64_t fnv;
  };
  const Want wants[] = {{GgmlType::IQ2_XXS, 0x0aa8b4da3122bb4dull}, {GgmlType::IQ2_XS, 0xd566e899e0b787b4ull},
                        {GgmlType::IQ2_S, 0xd9c5c96b47402a3full},   {GgmlType::IQ3_XXS, 0x9e28dd86eadf9380ull},
                        {GgmlType::IQ3_S, 0x0ccc7f1748cb9a68ull},   {GgmlType::IQ1_S, 0x693131db22076a27ull},
                        {GgmlType::IQ1_M, 0x8d4bc005aebc8ca5ull}};
  const uint16_t ds[4] = {0x2C00, 0xB400, 0x1C00, 0x3555};
  for (const Want& w : wants) {
    const size_t bs = type_traits(w.t).type_size;
    std::mt19937 rng(11);
    std::vector<uint8_t> b(bs * 8);
    for (auto& x : b) x = uint8_t(rng());
    for (size_t i = 0; i < 8; ++i) {
      uint8_t* o = b.data() + i * bs;
      const uint16_t d = ds[i % 4];
      if (w.t != GgmlType::IQ1_M) {
        std::memcpy(o, &d, 2);
      } else {
        uint16_t sc[4];
        std::memcpy(sc, o + 48, 8);
        for (int k = 0; k < 4; ++k) sc[k] = uint16_t((sc[k] & 0x0fff) | (((d >> (4 * k)) & 0xf) << 12));
        std::memcpy(o + 48, sc, 8);
      }
    }
    const auto y = deq(w.t, b.data(), 2048);
    uint64_t h = 0xcbf29ce484222325ull;
    for (float f : y) {
      uint8_t bytes[4];
      std::memcpy(bytes, &f, 4);
      for (uint8_t c : bytes) h = (h ^ c) * 0x100000001b3ull;
    }
    EXPECT_EQ(h, w.fnv) << type_name(w.t);
  }
}

TEST(QuantKnown, DequantIQ2_XXSByHand) {
  // Grid entry 0 is eight 8s; scale nibble 3 gives db = d (0.5 + 3) / 4; sign bits 0b0000101
  // negate elements 0 and 2 (7 stored bits with an even count: bit 7 stays clear).
  auto b = zeroed<block_iq2_xxs>();
  b.d = kTwo;
  b.qs[2] = uint16_t(0b0000101);        // first group's sign bits (bits 0-6 of the second word)
  b.qs[3] = uint16_t(3u << 12);          // scale in the top 4 bits of that word
  auto y = deq(GgmlType::IQ2_XXS, &b, 256);
  const float v = 2.0f * 3.5f * 0.25f * 8.0f;
  for (int j = 0; j < 8; ++j) EXPECT_EQ(y[size_t(j)], j == 0 || j == 2 ? -v : v) << j;
  for (int j = 8; j < 32; ++j) EXPECT_EQ(y[size_t(j)], v) << j;
}

// ---- dequantization of hand-built blocks ----

TEST(QuantKnown, DequantQ4_0) {
  auto b = zeroed<block_q4_0>();
  b.d = kHalf;
  for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | ((15 - j) << 4));
  auto y = deq(GgmlType::Q4_0, &b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 0.5f);
    EXPECT_EQ(y[j + 16], (7 - j) * 0.5f);
  }
}

TEST(QuantKnown, DequantQ4_1) {
  auto b = zeroed<block_q4_1>();
  b.d = kTwo;
  b.m = 0xBC00;  // -1.0
  for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | (3 << 4));
  auto y = deq(GgmlType::Q4_1, &b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j * 2.0f - 1.0f);
    EXPECT_EQ(y[j + 16], 5.0f);
  }
}

TEST(QuantKnown, DequantQ5_0) {
  auto b = zeroed<block_q5_0>();
  b.d = kOne;
  for (int j = 0; j < 16; ++j) b.qs[j] = 0x00;
  // High bits: element 0 and element 17 set -> 16-16 = 0 and 16-16 = 0; others -16.
  const uint32_t qh = (1u << 0) | (1u << 17);
  std::memcpy(b.qh, &qh, 4);
  b.qs[3] = 0xF5;  // element 3: 5 -> -11, element 19: 15 -> -1
  auto y = deq(GgmlType::Q5_0, &b, 32);
  for (int j = 0; j < 32; ++j) {
    float want = -16;
    if (j == 0 || j == 17) want = 0;
    if (j == 3) want = -11;
    if (j == 19) want = -1;
    EXPECT_EQ(y[j], want) << j;
  }
}

TEST(QuantKnown, DequantQ5_1) {
  auto b = zeroed<block_q5_1>();
  b.d = kHalf;
  b.m = kOne;
  const uint32_t qh = 0xFFFF0000u;  // bit 4 set for elements 16..31
  std::memcpy(b.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | (j << 4));
  auto y = deq(GgmlType::Q5_1, &b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], j * 0.5f + 1.0f) << j;
}

TEST(QuantKnown, DequantQ8_0) {
  auto b = zeroed<block_q8_0>();
  b.d = 0x3400;  // 0.25
  for (int j = 0; j < 32; ++j) b.qs[j] = int8_t(j * 8 - 128);
  auto y = deq(GgmlType::Q8_0, &b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (j * 8 - 128) * 0.25f);
}

TEST(QuantKnown, DequantQ2_K) {
  auto b = zeroed<block_q2_K>();
  b.d = kOne;
  b.dmin = kOne;
  for (auto& s : b.scales) s = (1 << 4) | 2;  // scale 2, min 1
  for (auto& q : b.qs) q = 0xE4;              // 2-bit fields 0,1,2,3 from low to high
  auto y = deq(GgmlType::Q2_K, &b, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], 2.0f * ((e % 128) / 32) - 1.0f) << e;
}

TEST(QuantKnown, DequantQ3_K) {
  auto b = zeroed<block_q3_K>();
  b.d = kOne;
  // Every 6-bit scale = 33 (-> +1): low nibble 1, high 2 bits = 2; scale 3 = 27 (-> -5).
  for (int i = 0; i < 8; ++i) b.scales[i] = 0x11;
  for (int i = 8; i < 12; ++i) b.scales[i] = 0xAA;
  b.scales[3] = 0x1B;
  b.scales[11] = 0xA9;
  for (auto& q : b.qs) q = 0xE4;
  for (int l = 0; l < 16; ++l) b.hmask[l] = 0xFF;  // high bit set: no -4 offset
  auto y = deq(GgmlType::Q3_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const int l = e % 32;
    const float q = float((e % 128) / 32 - (l < 16 ? 0 : 4));
    const float scale = (e / 16 == 3) ? -5.0f : 1.0f;
    EXPECT_EQ(y[e], scale * q) << e;
  }
}

TEST(QuantKnown, DequantQ4_K) {
  auto b = zeroed<block_q4_K>();
  b.d = kOne;
  b.dmin = kHalf;
  // Sub-block j: scale j+1, min j (all < 16, so the high bits are zero) ...
  for (int j = 0; j < 4; ++j) {
    b.scales[j] = uint8_t(j + 1);
    b.scales[j + 4] = uint8_t(j);
  }
  for (int j = 4; j < 8; ++j) b.scales[j + 4] = uint8_t((j + 1) | (j << 4));
  // ... except sub-block 5 whose scale is 40: low nibble 8 in byte 9, high bits 2 in byte 1.
  b.scales[9] = uint8_t(8 | (5 << 4));
  b.scales[1] |= 2 << 6;
  for (auto& q : b.qs) q = 0x21;  // low nibble 1 (even sub-blocks), high nibble 2 (odd)
  auto y = deq(GgmlType::Q4_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    const float sc = j == 5 ? 40.0f : float(j + 1);
    const float q = (j % 2 == 0) ? 1.0f : 2.0f;
    EXPECT_EQ(y[e], sc * q - 0.5f * j) << e;
  }
}

TEST(QuantKnown, DequantQ5_K) {
  auto b = zeroed<block_q5_K>();
  b.d = kOne;
  b.dmin = kOne;
  const uint8_t scales[12] = {1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};
  std::memcpy(b.scales, scales, 12);
  for (auto& q : b.qs) q = 0x21;
  for (auto& h : b.qh) h = 0x01;  // 5th bit for the first 32 elements only
  auto y = deq(GgmlType::Q5_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const float want = e < 32 ? 17.0f : ((e / 32) % 2 == 0 ? 1.0f : 2.0f);
    EXPECT_EQ(y[e], want) << e;
  }
}

TEST(QuantKnown, DequantQ6_K) {
  auto b = zeroed<block_q6_K>();
  b.d = kHalf;
  for (int i = 0; i < 16; ++i) b.scales[i] = int8_t(i - 8);
  b.ql[0] = 0x5A;
  b.qh[0] = 0xE4;
  auto y = deq(GgmlType::Q6_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    int q = -32;
    if (e == 0) q = -22;
    if (e == 32) q = -16;
    if (e == 64) q = 5;
    if (e == 96) q = 16;
    EXPECT_EQ(y[e], 0.5f * (e / 16 - 8) * q) << e;
  }
}

TEST(QuantKnown, DequantQ8_K) {
  auto b = zeroed<block_q8_K>();
  b.d = 0.5f;
  for (int j = 0; j < 256; ++j) b.qs[j] = int8_t(j - 128);
  auto y = deq(GgmlType::Q8_K, &b, 256);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(y[j], (j - 128) * 0.5f);
}

TEST(QuantKnown, DequantIQ4_NL) {
  auto b = zeroed<block_iq4_nl>();
  b.d = kTwo;
  for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | ((15 - j) << 4));
  auto y = deq(GgmlType::IQ4_NL, &b, 32);
  const int table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * table[j]);
    EXPECT_EQ(y[j + 16], 2.0f * table[15 - j]);
  }
}

TEST(QuantKnown, DequantIQ4_XS) {
  // Block scales ls = 0, 1, 31, 32, 33, 47, 62, 63 (value ls - 32): 4 low bits in scales_l
  // (even blocks low nibble), 2 high bits at 2 x ib in scales_h.
  auto b = zeroed<block_iq4_xs>();
  b.d = kHalf;
  const int ls[8] = {0, 1, 31, 32, 33, 47, 62, 63};
  for (int ib = 0; ib < 8; ++ib) {
    b.scales_l[ib / 2] = uint8_t(b.scales_l[ib / 2] | ((ls[ib] & 0xF) << (4 * (ib % 2))));
    b.scales_h = uint16_t(b.scales_h | ((ls[ib] >> 4) << (2 * ib)));
    for (int j = 0; j < 16; ++j) b.qs[16 * ib + j] = uint8_t(((j + ib) & 15) | ((15 - j) << 4));
  }
  auto y = deq(GgmlType::IQ4_XS, &b, 256);
  for (int ib = 0; ib < 8; ++ib)
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(y[32 * ib + j], 0.5f * float(ls[ib] - 32) * kvalues_iq4nl[(j + ib) & 15]) << ib << " " << j;
      EXPECT_EQ(y[32 * ib + 16 + j], 0.5f * float(ls[ib] - 32) * kvalues_iq4nl[15 - j]) << ib << " " << j;
    }
}

// The bytes llama.cpp's ggml (release v0.4.0's libggml-base, ggml_quantize_chunk) wrote for
// two super-blocks of exact values (a zero block, an outlier, a block 1024x smaller), without
// and with an importance matrix.
TEST(QuantKnown, IQ4_XSMatchesGgmlBytes) {
  std::vector<float> x(512), qw(512);
  for (int i = 0; i < 512; ++i) {
    float v = float((i * 37) % 101 - 50) / 16.0f;
    if (i >= 64 && i < 96) v = 0.0f;
    if (i == 300) v = 40.0f;
    if (i >= 448) v /= 1024.0f;
    x[size_t(i)] = v;
    qw[size_t(i)] = 1.0f + float(i % 5) / 4.0f;
  }
  auto hex = [](const uint8_t* p, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", p[i]);
    return s;
  };
  block_iq4_xs b[2];
  quantize_row(GgmlType::IQ4_XS, x.data(), b, 512);
  EXPECT_EQ(hex(reinterpret_cast<const uint8_t*>(b), sizeof(b)),
            "ab922ccfe020fff2e035acf157ce1369df249be136adf258630fc942fea721ec751fda530eb842fd8888888888888888"
            "88888888888888880269df138be035adf147ce1269df249b31ec8520db641fb942fda731ec751fda8520db641fc942fe"
            "a731ec851fda630e259cf147be0269df138be035adf147ce1fc952fea731ec8520db641fb942fda70a2151a60ddde200"
            "53fda842ec8621db641eb953eda732dc88779888778888798887988870988879ec9631db742eb953fda742ec8621ca64"
            "31db752ec953fda842ec8621db641eb99cf035be0158df027bff14adf036ce01db520fb830fe9510ec630fda41ffb720"
            "8888888888888888888888888888888888888888888888888888888888888888");
  quantize_row(GgmlType::IQ4_XS, x.data(), b, 512, qw.data());
  EXPECT_EQ(hex(reinterpret_cast<const uint8_t*>(b), sizeof(b)),
            "a59220cf2020fef2e035acf157ce1369df249be136adf258acf147ce0269df248be036adf158ce138888888888888888"
            "88888888888888880269df138be035adf147ce1269df249b31ed8520db630fc942fea721ec751fda8520db641fc942fe"
            "a731ec851fda630e259cf147be0269df138be035adf147ce1fc952fea731ec8520db631fb942fda7032191a60d2de300"
            "53fda842ec8621db641eb953eda732dc88779888778888798887988870988879ec9631db742eb953fda742ec8621ca64"
            "ff139cf036ce0158ef027bff24adf0379be146ac1268ce247adf359be247bd13db520fb830fe9510ec630fda41ffb720"
            "8888888888888888888888888888888888888888888888888888888888888888");
}

// The formats llama.cpp added in 2025-26 (Q1_0, Q2_0, MXFP4, NVFP4) and the ternary ones: the
// bytes llama.cpp v0.4.0's libggml-base wrote (ggml_quantize_chunk, no importance matrix) for
// 1024 values with a zero block, an outlier, a block 1024x smaller and a stretch of few levels,
// and the floats its to_float returned for those bytes (FNV-1a of each).
TEST(QuantKnown, NewFormatsMatchGgmlBytesAndValues) {
  struct Want {
    GgmlType t;
    size_t bytes;
    uint64_t fnv_q, fnv_y;
  };
  const Want wants[] = {
      {GgmlType::Q1_0, 144, 0x331ac16b850a9169ull, 0x960c2cb6ecd43aa5ull},
      {GgmlType::Q2_0, 288, 0xd44d149e89d8ec15ull, 0x7386947aeb9cf040ull},
      {GgmlType::MXFP4, 544, 0xc34d2e4289799e04ull, 0x16b42ace7d70cb55ull},
      {GgmlType::NVFP4, 576, 0x9238e9c6f4a5554dull, 0x98542f99240ef63full},
      {GgmlType::TQ1_0, 216, 0xef3868e53e9033b0ull, 0xa3490e5c0b918d38ull},
      {GgmlType::TQ2_0, 264, 0x0282bbaec9357edfull, 0xa3490e5c0b918d38ull},
  };
  std::vector<float> x(1024);
  for (int i = 0; i < 1024; ++i) {
    float v = float((i * 37) % 101 - 50) / 16.0f;
    if (i >= 64 && i < 96) v = 0.0f;
    if (i == 300) v = 40.0f;
    if (i >= 448 && i < 512) v /= 1024.0f;
    if (i >= 768) v = float((i * 13) % 7 - 3) * 0.37f;
    x[size_t(i)] = v;
  }
  auto fnv = [](const void* p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 0x100000001b3ull;
    return h;
  };
  for (const Want& w : wants) {
    ASSERT_EQ(row_size(w.t, 1024), w.bytes) << type_name(w.t);
    std::vector<uint8_t> q(w.bytes);
    quantize_row(w.t, x.data(), q.data(), 1024);
    EXPECT_EQ(fnv(q.data(), q.size()), w.fnv_q) << type_name(w.t);
    const auto y = deq(w.t, q.data(), 1024);
    EXPECT_EQ(fnv(y.data(), y.size() * sizeof(float)), w.fnv_y) << type_name(w.t);
  }
}

// IQ3_XXS, IQ3_S, IQ2_S, IQ2_XXS, IQ2_XS, IQ1_S and IQ1_M quantization: the bytes llama.cpp
// v0.4.0's libggml-base wrote
// (ggml_quantize_chunk, 24 rows of 1024, without and with importance weights) for rows with a
// zero block (IQ3_S then moves its later blocks' quants up, as ggml does), a block under
// IQ3_XXS's 1e-8 threshold, an outlier, an all-negative block (the parity sign flip): FNV-1a.
// IQ2_XXS, IQ2_XS and IQ1_S only with the weights: ggml's quantizers require them, minfer's
// throw.
TEST(QuantKnown, LatticeQuantizeMatchesGgmlBytes) {
  constexpr int kRows = 24;
  std::vector<float> x(size_t(kRows) * 1024), qw(1024);
  uint32_t s = 12345u;
  for (int r = 0; r < kRows; ++r)
    for (int i = 0; i < 1024; ++i) {
      s = s * 1664525u + 1013904223u;
      const float u = float((s >> 8) & 0xffff) / 65536.0f - 0.5f;
      float v = u * 3.0f * (1.0f + float(r % 5));
      if (r % 3 == 1 && i >= 64 && i < 96) v = 0.0f;
      if (r % 4 == 2 && i >= 256 && i < 288) v *= 1e-9f;
      if (i == 300 + r) v = 40.0f;
      if (r % 7 == 3 && i < 32) v = -std::fabs(v);
      x[size_t(r) * 1024 + size_t(i)] = v;
      qw[size_t(i)] = 0.5f + 0.25f * float((i * 7) % 11);
    }
  auto fnv = [](const std::vector<uint8_t>& q) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint8_t b : q) h = (h ^ b) * 0x100000001b3ull;
    return h;
  };
  struct Want {
    GgmlType t;
    bool weighted;
    uint64_t fnv_q;
  };
  for (const Want& w : {Want{GgmlType::IQ3_XXS, false, 0xe3182b0dd126d27cull},
                        Want{GgmlType::IQ3_XXS, true, 0x95785276ab9d4089ull},
                        Want{GgmlType::IQ3_S, false, 0xf89f9429fa7a77cbull},
                        Want{GgmlType::IQ3_S, true, 0x84c484e7ba94c7c7ull},
                        Want{GgmlType::IQ2_S, false, 0x5006fa2f90be8aecull},
                        Want{GgmlType::IQ2_S, true, 0xde8deb194553274eull},
                        Want{GgmlType::IQ2_XXS, true, 0x0fe30a53b25c41f7ull},
                        Want{GgmlType::IQ2_XS, true, 0xee9a66691e098e53ull},
                        Want{GgmlType::IQ1_S, true, 0x0cebaee199371970ull},
                        Want{GgmlType::IQ1_M, false, 0x7d0992baffa9700bull},
                        Want{GgmlType::IQ1_M, true, 0x39cb750e2d4bf065ull}}) {
    std::vector<uint8_t> q(row_size(w.t, 1024) * kRows);
    quantize_rows(w.t, x.data(), q.data(), kRows, 1024, w.weighted ? qw.data() : nullptr);
    EXPECT_EQ(fnv(q), w.fnv_q) << type_name(w.t) << (w.weighted ? " with importance weights" : "");
  }
  for (GgmlType t : {GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ1_S}) {
    std::vector<uint8_t> q(row_size(t, 1024));
    EXPECT_THROW(quantize_row(t, x.data(), q.data(), 1024), Error) << type_name(t);
  }
}

// Hand-checkable values of each new format's layout.
TEST(QuantKnown, DequantNewFormatsByHand) {
  auto q1 = zeroed<block_q1_0>();
  q1.d = kTwo;
  q1.qs[1] = 0x81;  // elements 8 and 15 positive, all others negative
  auto y1 = deq(GgmlType::Q1_0, &q1, 128);
  for (int j = 0; j < 128; ++j) EXPECT_EQ(y1[size_t(j)], j == 8 || j == 15 ? 2.0f : -2.0f) << j;

  auto q2 = zeroed<block_q2_0>();
  q2.d = kTwo;
  q2.qs[0] = 0b11100100;  // elements 0..3: q = 0, 1, 2, 3 -> -1, 0, 1, 2
  auto y2 = deq(GgmlType::Q2_0, &q2, 64);
  EXPECT_EQ((std::vector<float>(y2.begin(), y2.begin() + 5)), (std::vector<float>{-2, 0, 2, 4, -2}));

  auto mx = zeroed<block_mxfp4>();
  mx.e = 128;           // 2^(128 - 128) = 1: the doubled E2M1 values as they are
  mx.qs[0] = 0x97;      // element 0: code 7 (12), element 16: code 9 (-1)
  auto ym = deq(GgmlType::MXFP4, &mx, 32);
  EXPECT_EQ(ym[0], 12.0f);
  EXPECT_EQ(ym[16], -1.0f);
  EXPECT_EQ(ym[1], 0.0f);

  auto nv = zeroed<block_nvfp4>();
  nv.d[1] = (7 << 3) | 4;  // UE4M3 1.5 x 2^0, halved: 0.75
  nv.qs[8] = 0x5F;         // sub-block 1: element 16 code 15 (-12), element 24 code 5 (6)
  auto yn = deq(GgmlType::NVFP4, &nv, 64);
  EXPECT_EQ(yn[16], -9.0f);
  EXPECT_EQ(yn[24], 4.5f);
  EXPECT_EQ(yn[0], 0.0f);  // scale code 0 is zero

  auto t2 = zeroed<block_tq2_0>();
  t2.d = kTwo;
  t2.qs[0] = 0b00100100;  // elements 0, 32, 64, 96: t = 0, 1, 2, 0 -> -1, 0, 1, -1
  auto yt = deq(GgmlType::TQ2_0, &t2, 256);
  EXPECT_EQ(yt[0], -2.0f);
  EXPECT_EQ(yt[32], 0.0f);
  EXPECT_EQ(yt[64], 2.0f);
  EXPECT_EQ(yt[96], -2.0f);

  // TQ1_0: a byte is ceil(v * 256 / 243) of the base-3 number v of its 5 trits (first the most
  // significant); trits 2, 0, 1, 1, 0 (v = 162 + 9 + 3 = 174) -> 184.
  auto t1 = zeroed<block_tq1_0>();
  t1.d = kTwo;
  t1.qs[0] = 184;
  auto y1t = deq(GgmlType::TQ1_0, &t1, 256);
  EXPECT_EQ((std::vector<float>{y1t[0], y1t[32], y1t[64], y1t[96], y1t[128]}),
            (std::vector<float>{2, -2, 0, 0, -2}));
}

// The load-time TQ1_0 -> TQ2_0 rewrite (quant::tq1_0_to_tq2_0) keeps every value and d: blocks
// of random bytes (bytes 243-255 too, which no quantizer writes but ggml reads) dequantize alike.
TEST(QuantKnown, Tq1_0RewrittenAsTq2_0KeepsEveryValue) {
  std::mt19937 rng(3);
  std::vector<block_tq1_0> t1(6);
  for (auto& b : t1) {
    for (auto& q : b.qs) q = uint8_t(rng());
    for (auto& q : b.qh) q = uint8_t(rng());
    b.d = uint16_t(0x3000 + rng() % 0x1000);
  }
  t1[0].qs[0] = 255, t1[0].qh[3] = 243;
  std::vector<block_tq2_0> t2(t1.size());
  quant::tq1_0_to_tq2_0(t1.data(), t2.data(), int64_t(t1.size()));
  const int64_t n = int64_t(t1.size()) * 256;
  EXPECT_EQ(deq(GgmlType::TQ2_0, t2.data(), n), deq(GgmlType::TQ1_0, t1.data(), n));
}

TEST(QuantKnown, DequantHalfTypes) {
  const uint16_t f16[4] = {0x3C00, 0xC000, 0x0001, 0x7BFF};  // 1, -2, smallest subnormal, max
  auto y = deq(GgmlType::F16, f16, 4);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 0x1p-24f);
  EXPECT_EQ(y[3], 65504.0f);
  const uint16_t bf16[2] = {0x3F80, 0xC040};  // 1, -3
  auto z = deq(GgmlType::BF16, bf16, 2);
  EXPECT_EQ(z[0], 1.0f);
  EXPECT_EQ(z[1], -3.0f);
}

// ---- quantization of vectors with hand-derivable answers ----

TEST(QuantKnown, QuantQ8_0RoundsHalfAwayFromZero) {
  // amax 127 -> d = 1 exactly, so q = roundf(x): halves round away from zero.
  float x[32];
  x[0] = 127;
  for (int j = 1; j < 32; ++j) x[j] = (j % 2 ? 1 : -1) * (j + 0.5f);
  block_q8_0 b;
  quantize_row(GgmlType::Q8_0, x, &b, 32);
  EXPECT_EQ(b.d, kOne);
  EXPECT_EQ(b.qs[0], 127);
  for (int j = 1; j < 32; ++j) EXPECT_EQ(b.qs[j], (j % 2 ? 1 : -1) * (j + 1)) << j;
}

TEST(QuantKnown, QuantQ4_0) {
  // Largest magnitude -8 -> d = -8/-8 = 1, q = trunc(x + 8.5) capped at 15.
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = float(j % 16) - 8;  // -8..7
  x[5] = 0.5f;                                            // 9.0 -> 9
  x[6] = 0.49f;                                           // 8.99 -> 8
  block_q4_0 b;
  quantize_row(GgmlType::Q4_0, x, &b, 32);
  EXPECT_EQ(b.d, kOne);
  for (int j = 0; j < 16; ++j) {
    int lo = j;
    if (j == 5) lo = 9;
    if (j == 6) lo = 8;
    EXPECT_EQ(b.qs[j], uint8_t(lo | (j << 4))) << j;
  }
  // Largest magnitude +8 -> d = -1: q = trunc(-x + 8.5), and x = -8 saturates at 15.
  for (int j = 0; j < 32; ++j) x[j] = 0;
  x[0] = 8;
  x[1] = -8;
  x[2] = 3;
  quantize_row(GgmlType::Q4_0, x, &b, 32);
  EXPECT_EQ(b.d, 0xBC00);
  EXPECT_EQ(b.qs[0] & 0xF, 0);
  EXPECT_EQ(b.qs[1] & 0xF, 15);
  EXPECT_EQ(b.qs[2] & 0xF, 5);
  EXPECT_EQ(b.qs[3], 0x88);
}

TEST(QuantKnown, QuantQ4_1) {
  // min 100, max 115 -> d = 1, m = 100 (0x5640), q = x - 100.
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 100.0f + float(j % 16);
  block_q4_1 b;
  quantize_row(GgmlType::Q4_1, x, &b, 32);
  EXPECT_EQ(b.d, kOne);
  EXPECT_EQ(b.m, 0x5640);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], uint8_t(j | (j << 4)));
}

TEST(QuantKnown, QuantQ5_0) {
  // Largest magnitude -16 -> d = 1, q = x + 16 with the 5th bit in qh.
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = float(j) - 16;  // -16..15
  block_q5_0 b;
  quantize_row(GgmlType::Q5_0, x, &b, 32);
  EXPECT_EQ(b.d, kOne);
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  EXPECT_EQ(qh, 0xFFFF0000u);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], uint8_t(j | (j << 4)));
}

TEST(QuantKnown, QuantQ5_1) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = float(j) * 0.5f;  // min 0, max 15.5 -> d = 0.5
  block_q5_1 b;
  quantize_row(GgmlType::Q5_1, x, &b, 32);
  EXPECT_EQ(b.d, kHalf);
  EXPECT_EQ(b.m, 0);
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  EXPECT_EQ(qh, 0xFFFF0000u);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], uint8_t(j | (j << 4)));
}

TEST(QuantKnown, QuantQ8_K) {
  // Largest magnitude -127 -> iscale = 1, d = 1, q = x.
  float x[256];
  for (int j = 0; j < 255; ++j) x[j] = float(j - 127);
  x[255] = 0;
  block_q8_K b;
  quantize_row(GgmlType::Q8_K, x, &b, 256);
  EXPECT_EQ(b.d, 1.0f);
  for (int j = 0; j < 255; ++j) EXPECT_EQ(b.qs[j], j - 127);
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int j = 16 * g; j < 16 * g + 16; ++j) sum += (j < 255 ? j - 127 : 0);
    EXPECT_EQ(b.bsums[g], sum);
  }
}

TEST(QuantKnown, QuantHalfTypesRoundToNearestEven) {
  // 1 + 2^-11 is halfway between two halves: ties to even (1.0); 1 + 3*2^-11 -> 1 + 2^-9.
  const float x[3] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -2.0f};
  uint16_t h[3];
  quantize_row(GgmlType::F16, x, h, 3);
  EXPECT_EQ(h[0], 0x3C00);
  EXPECT_EQ(h[1], 0x3C02);
  EXPECT_EQ(h[2], 0xC000);
  const float y[2] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f};  // bf16 has 7 fraction bits
  uint16_t b[2];
  quantize_row(GgmlType::BF16, y, b, 2);
  EXPECT_EQ(b[0], 0x3F80);
  EXPECT_EQ(b[1], 0x3F82);
}

TEST(QuantKnown, IQ4_NLReproducesTableValues) {
  // x = the table itself (scaled by 1): the best scale is 1 and every index is exact.
  float x[32];
  const int8_t* v = kvalues_iq4nl;
  for (int j = 0; j < 16; ++j) {
    x[j] = v[j];
    x[j + 16] = v[15 - j];
  }
  block_iq4_nl b;
  quantize_row(GgmlType::IQ4_NL, x, &b, 32);
  EXPECT_EQ(b.d, kOne);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], uint8_t(j | ((15 - j) << 4)));
}

TEST(QuantKnown, F16ScaleOverflowBoundary) {
  // Q8_0's d = amax/127 must fit an f16 (max 65504): amax = 65504*127 is the largest that does.
  float x[32] = {};
  block_q8_0 b;
  x[0] = 65504.0f * 127;
  EXPECT_NO_THROW(quantize_row(GgmlType::Q8_0, x, &b, 32));
  EXPECT_EQ(b.d, 0x7BFF);
  EXPECT_EQ(b.qs[0], 127);
  x[0] = 65536.0f * 127;  // d = 65536 rounds to inf in f16
  EXPECT_THROW(quantize_row(GgmlType::Q8_0, x, &b, 32), Error);
  // Q6_K's input limit (65504 * 128 * 32) is checked before ggml's search could overflow.
  std::vector<float> y(256, 1.0f);
  std::vector<uint8_t> q(sizeof(block_q6_K));
  y[5] = 65504.0f * 128 * 32 * 1.01f;
  EXPECT_THROW(quantize_row(GgmlType::Q6_K, y.data(), q.data(), 256), Error);
  y[5] = 1e6f;
  EXPECT_NO_THROW(quantize_row(GgmlType::Q6_K, y.data(), q.data(), 256));
}
