// The SIMD and multithreaded paths of the non-matmul kernels against their scalar references:
// rms_norm, add, mul, rope and kv_store's F16 conversion bit for bit on every ISA path and
// thread count; swiglu and attention within tolerance of the scalar path, and bit-identical
// across thread counts. Sizes include odd ones (vector tails) and large ones (threaded).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/backend.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels.h"
#include "common/fp16.h"
#include "kernels/random_weights.h"

namespace minfer::cpu {
namespace {

class OpsSimd : public testing::Test {
 protected:
  void TearDown() override {
    reset_isa();
    set_threads(0);
  }
  static std::vector<Isa> isas() { return supported_isas(); }
};

// Floats over a wide exponent range, so that double sums depend on their order.
std::vector<float> wide_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> e(-12.0f, 8.0f);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = nd(rng) * std::exp2(e(rng));
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> zeros(int64_t n) { return std::vector<float>(static_cast<size_t>(n), 0.0f); }

TEST_F(OpsSimd, RmsNormIsBitIdenticalOnEveryPathAndThreadCount) {
  std::mt19937 rng(21);
  for (int64_t d : {1, 3, 7, 8, 9, 15, 16, 17, 31, 64, 100, 128, 896}) {
    for (int64_t nt : {1, 3, 7, 8, 9, 17, 33, 300}) {
      const auto x = wide_floats(size_t(nt * d), rng);
      const auto w = test::random_floats(size_t(d), rng);
      for (const float* wp : {w.data(), static_cast<const float*>(nullptr)}) {
        force_isa(Isa::Scalar);
        set_threads(1);
        auto ref = zeros(nt * d);
        rms_norm(x.data(), wp, nt, d, 1e-6f, ref.data());
        for (Isa isa : isas())
          for (int th : {1, 2, 3}) {
            force_isa(isa);
            set_threads(th);
            auto out = zeros(nt * d);
            rms_norm(x.data(), wp, nt, d, 1e-6f, out.data());
            ASSERT_TRUE(same_bits(out, ref)) << "d " << d << " nt " << nt << " isa " << int(isa)
                                             << " threads " << th << " weight " << (wp != nullptr);
            auto inplace = x;  // the fused QKV epilogue normalizes in place
            rms_norm(inplace.data(), wp, nt, d, 1e-6f, inplace.data());
            ASSERT_TRUE(same_bits(inplace, ref)) << "in place, d " << d << " nt " << nt;
          }
      }
    }
  }
  // Large enough to be split over the threads.
  const int64_t nt = 400, d = 896;
  const auto x = wide_floats(size_t(nt * d), rng);
  force_isa(Isa::Scalar);
  auto ref = zeros(nt * d);
  rms_norm(x.data(), nullptr, nt, d, 1e-5f, ref.data());
  for (Isa isa : isas())
    for (int th : {1, 2, 3}) {
      force_isa(isa);
      set_threads(th);
      auto out = zeros(nt * d);
      rms_norm(x.data(), nullptr, nt, d, 1e-5f, out.data());
      ASSERT_TRUE(same_bits(out, ref)) << "isa " << int(isa) << " threads " << th;
    }
}

TEST_F(OpsSimd, AddAndMulAreBitIdenticalOnEveryPathAndThreadCount) {
  std::mt19937 rng(22);
  for (int64_t n : {1, 5, 15, 16, 17, 33, 1000, 70001, 300007}) {
    const auto a = wide_floats(size_t(n), rng), b = wide_floats(size_t(n), rng);
    for (Isa isa : isas())
      for (int th : {1, 2, 3}) {
        force_isa(isa);
        set_threads(th);
        auto s = zeros(n), p = zeros(n);
        add(a.data(), b.data(), s.data(), n);
        mul(a.data(), b.data(), p.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(s[i], a[i] + b[i]) << "n " << n << " i " << i << " isa " << int(isa);
          ASSERT_EQ(p[i], a[i] * b[i]) << "n " << n << " i " << i << " isa " << int(isa);
        }
        auto io = a;
        add(io.data(), b.data(), io.data(), n);
        ASSERT_TRUE(same_bits(io, s));
      }
  }
}

// The rope kernel as it was before the table and the SIMD paths: the reference, bit for bit.
void rope_reference(float* x, const int32_t* pos, int64_t nt, int64_t n_head, int64_t head_dim,
                    const RopeParams& p) {
  const int64_t half = p.n_rot / 2;
  const float theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot));
  std::vector<float> cs(static_cast<size_t>(2 * half));
  for (int64_t t = 0; t < nt; ++t) {
    float theta = float(pos[t]);
    for (int64_t i = 0; i < half; ++i) {
      const float ff = p.freq_factors ? p.freq_factors[i] : 1.0f;
      const float th = p.freq_scale * (theta / ff);
      cs[2 * i] = std::cos(th);
      cs[2 * i + 1] = std::sin(th);
      theta *= theta_scale;
    }
    for (int64_t h = 0; h < n_head; ++h) {
      float* v = x + (t * n_head + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const int64_t a = p.style == RopeStyle::NeoX ? i : 2 * i;
        const int64_t b = p.style == RopeStyle::NeoX ? i + half : 2 * i + 1;
        const float c = cs[2 * i], s = cs[2 * i + 1];
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * c - x1 * s;
        v[b] = x0 * s + x1 * c;
      }
    }
  }
}

TEST_F(OpsSimd, RopeIsBitIdenticalToTheDirectFormulaOnEveryPath) {
  std::mt19937 rng(23);
  std::vector<float> ff(64);
  for (size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + float(i) * 0.37f;
  struct Case {
    RopeStyle style;
    int64_t head_dim, n_rot, n_head;
    bool factors;
    float scale;
  };
  const Case cases[] = {{RopeStyle::NeoX, 64, 64, 14, false, 1.0f},
                        {RopeStyle::Normal, 64, 64, 14, false, 1.0f},
                        {RopeStyle::NeoX, 80, 48, 3, true, 0.25f},
                        {RopeStyle::Normal, 80, 48, 3, true, 1.0f},
                        {RopeStyle::NeoX, 12, 12, 5, false, 1.0f},  // 6 pairs: tails only
                        {RopeStyle::Normal, 14, 10, 5, false, 0.5f},
                        {RopeStyle::NeoX, 128, 128, 2, true, 1.0f},
                        {RopeStyle::NeoX, 64, 64, 40, false, 1.0f}};  // threaded at 130 tokens
  for (const Case& c : cases)
    for (int64_t nt : {1, 3, 40, 130}) {
      std::vector<int32_t> pos(static_cast<size_t>(nt));
      for (int64_t t = 0; t < nt; ++t) pos[t] = int32_t((t * 37 + 5) % 3000);  // unsorted
      RopeParams p;
      p.style = c.style;
      p.n_rot = c.n_rot;
      p.freq_base = 1e6f;
      p.freq_scale = c.scale;
      p.freq_factors = c.factors ? ff.data() : nullptr;
      const auto x = test::random_floats(size_t(nt * c.n_head * c.head_dim), rng);
      auto ref = x;
      rope_reference(ref.data(), pos.data(), nt, c.n_head, c.head_dim, p);
      for (Isa isa : isas())
        for (int th : {1, 2}) {
          force_isa(isa);
          set_threads(th);
          for (int rep = 0; rep < 2; ++rep) {  // the second call reuses the cached table
            auto out = x;
            rope(out.data(), pos.data(), nt, c.n_head, c.head_dim, p);
            ASSERT_TRUE(same_bits(out, ref)) << "style " << int(c.style) << " n_rot " << c.n_rot
                                             << " nt " << nt << " isa " << int(isa);
            std::vector<float> y(x.size(), -1.0f);  // out of place: pass-through dims copied
            rope_to(x.data(), y.data(), pos.data(), nt, c.n_head, c.head_dim, p);
            ASSERT_TRUE(same_bits(y, ref)) << "rope_to, style " << int(c.style) << " n_rot "
                                           << c.n_rot << " nt " << nt << " isa " << int(isa);
          }
        }
    }
}

TEST_F(OpsSimd, RopeTableFollowsPositionsParametersAndFactors) {
  std::mt19937 rng(24);
  const int64_t nt = 4, n_head = 2, hd = 32;
  std::vector<int32_t> pos = {3, 4, 5, 6};
  std::vector<float> ff(16, 2.0f);
  RopeParams p;
  p.style = RopeStyle::NeoX;
  p.n_rot = hd;
  p.freq_factors = ff.data();
  const auto x = test::random_floats(size_t(nt * n_head * hd), rng);
  auto check = [&] {
    auto out = x, ref = x;
    rope(out.data(), pos.data(), nt, n_head, hd, p);
    rope_reference(ref.data(), pos.data(), nt, n_head, hd, p);
    return same_bits(out, ref);
  };
  EXPECT_TRUE(check());
  pos[2] = 50;  // same buffer, new positions
  EXPECT_TRUE(check());
  ff[3] = 7.0f;  // same pointer, new factor values
  EXPECT_TRUE(check());
  p.freq_base = 500000.0f;
  EXPECT_TRUE(check());
  p.style = RopeStyle::Normal;
  EXPECT_TRUE(check());
  p.freq_factors = nullptr;
  EXPECT_TRUE(check());
  p.n_rot = 16;
  EXPECT_TRUE(check());
}

TEST_F(OpsSimd, SwigluMatchesScalarPathOnEveryIsaAndThreadCount) {
  std::mt19937 rng(25);
  for (int64_t n : {1, 15, 17, 33, 4864, 70001, 200003}) {
    const auto g = test::random_floats(size_t(n), rng, 6.0f);
    const auto u = test::random_floats(size_t(n), rng);
    force_isa(Isa::Scalar);
    set_threads(1);
    auto ref = zeros(n), ref_silu = zeros(n);
    swiglu(g.data(), u.data(), ref.data(), n);
    silu(g.data(), ref_silu.data(), n);
    for (Isa isa : isas()) {
      force_isa(isa);
      std::vector<float> first;
      for (int th : {1, 2, 3}) {
        set_threads(th);
        auto out = zeros(n), s = zeros(n);
        swiglu(g.data(), u.data(), out.data(), n);
        silu(g.data(), s.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_NEAR(out[i], ref[i], 1e-6f * std::fabs(ref[i]) + 1e-38f) << "n " << n << " i " << i;
          ASSERT_NEAR(s[i], ref_silu[i], 1e-6f * std::fabs(ref_silu[i]) + 1e-38f) << "n " << n << " i " << i;
        }
        if (first.empty()) first = out;
        ASSERT_TRUE(same_bits(out, first)) << "thread count changed the result, n " << n;
      }
    }
  }
}

TEST_F(OpsSimd, KvStoreF16IsBitIdenticalToTheScalarConversion) {
  std::mt19937 rng(26);
  std::vector<float> src = {0.0f, -0.0f, 1.0f, 65504.0f, 65520.0f, 1e6f, -1e6f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(), 5.96e-8f, 2.98e-8f,
                            2.99e-8f, 1e-10f, 6.1e-5f, 6.09e-5f, 1.00048828125f, 1.00146484375f};
  std::uniform_int_distribution<uint32_t> bits;
  while (src.size() < 4096 + 19) {
    const uint32_t b = bits(rng);
    float f;
    std::memcpy(&f, &b, 4);
    src.push_back(f);
  }
  const int64_t width = int64_t(src.size());
  for (Isa isa : isas()) {
    force_isa(isa);
    std::vector<uint16_t> mem(static_cast<size_t>(width));
    KvRegion r = make_kv_region(GgmlType::F16, reinterpret_cast<uint8_t*>(mem.data()), width, 1);
    const int32_t pos = 0;
    kv_store(r, src.data(), &pos, 1);
    for (int64_t i = 0; i < width; ++i)
      ASSERT_EQ(mem[i], fp32_to_fp16(src[i])) << "isa " << int(isa) << " value " << src[i];
  }
}

// A prompt's kv_store (heads spread over the threads, each head's tokens in order) writes what
// one store per token writes, byte for byte, for every cache type, unsorted positions and 1-3
// threads; positions not stored stay untouched.
TEST_F(OpsSimd, KvStoreOfAPromptEqualsOneStorePerToken) {
  std::mt19937 rng(28);
  const int64_t n_heads = 8, width = n_heads * 128, n_ctx = 200, nt = 90;  // nt x width: threaded
  const auto src = test::random_floats(size_t(nt * width), rng);
  std::vector<int32_t> pos(static_cast<size_t>(nt));
  for (int64_t t = 0; t < nt; ++t) pos[size_t(t)] = int32_t((t * 37 + 11) % n_ctx);
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0}) {
    const size_t bytes = kv_region_bytes(type, width, n_ctx, n_heads);
    std::vector<uint8_t> ref(bytes, 0xAB);
    KvRegion r = make_kv_region(type, ref.data(), width, n_ctx, n_heads);
    set_threads(1);
    for (int64_t t = 0; t < nt; ++t) kv_store(r, src.data() + t * width, &pos[size_t(t)], 1);
    if (type == GgmlType::F32) {  // the layout itself: head h of token t at (h, pos[t])
      for (int64_t t = 0; t < nt; ++t) {
        for (int64_t h = 0; h < n_heads; ++h) {
          ASSERT_EQ(0, std::memcmp(kv_row(r, h, pos[size_t(t)]), src.data() + t * width + h * 128, 128 * sizeof(float)))
              << "token " << t << " head " << h;
        }
      }
    }
    for (int th : {1, 2, 3}) {
      set_threads(th);
      std::vector<uint8_t> got(bytes, 0xAB);
      KvRegion g = make_kv_region(type, got.data(), width, n_ctx, n_heads);
      kv_store(g, src.data(), pos.data(), nt);
      ASSERT_EQ(got, ref) << type_name(type) << " " << th << " threads";
    }
  }
  set_threads(0);
}

// Attention on every path against the scalar path, at sizes the SIMD blocks split: many
// tokens (several blocks of queries), contexts over several key blocks, unsorted positions,
// groups larger than one register tile, head sizes off the vector width.
TEST_F(OpsSimd, AttentionMatchesScalarPathAndIgnoresThreadCount) {
  std::mt19937 rng(27);
  struct Case {
    GgmlType kt, vt;
    int64_t n_head, n_head_kv, hd, hdv, nt;
  };
  const Case cases[] = {{GgmlType::F16, GgmlType::F16, 14, 2, 64, 64, 37},
                        {GgmlType::F32, GgmlType::F32, 14, 2, 64, 64, 37},
                        {GgmlType::F32, GgmlType::F16, 12, 1, 40, 24, 19},
                        {GgmlType::F16, GgmlType::F32, 9, 3, 16, 48, 5},
                        {GgmlType::F32, GgmlType::F32, 2, 2, 128, 128, 1},
                        {GgmlType::F16, GgmlType::F16, 32, 8, 128, 128, 1},
                        {GgmlType::F16, GgmlType::F16, 16, 8, 128, 128, 37},  // qwen3: 2 a group
                        {GgmlType::F32, GgmlType::F16, 5, 5, 32, 32, 21},     // MHA: tokens share tiles
                        {GgmlType::F16, GgmlType::F32, 6, 2, 20, 12, 9},      // heads off 8 lanes
                        {GgmlType::F32, GgmlType::F16, 3, 3, 36, 44, 3},
                        {GgmlType::Q8_0, GgmlType::Q8_0, 4, 2, 64, 64, 20}};
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << type_name(c.kt) << "/" << type_name(c.vt) << " heads "
                                    << c.n_head << "/" << c.n_head_kv << " hd " << c.hd << "/"
                                    << c.hdv << " nt " << c.nt);
    const int64_t n_ctx = 700;
    std::vector<uint8_t> km(kv_region_bytes(c.kt, c.n_head_kv * c.hd, n_ctx, c.n_head_kv));
    std::vector<uint8_t> vm(kv_region_bytes(c.vt, c.n_head_kv * c.hdv, n_ctx, c.n_head_kv));
    KvRegion k = make_kv_region(c.kt, km.data(), c.n_head_kv * c.hd, n_ctx, c.n_head_kv);
    KvRegion v = make_kv_region(c.vt, vm.data(), c.n_head_kv * c.hdv, n_ctx, c.n_head_kv);
    std::vector<int32_t> all(static_cast<size_t>(n_ctx));
    for (int64_t i = 0; i < n_ctx; ++i) all[i] = int32_t(i);
    const auto ks = test::random_floats(size_t(n_ctx * k.width), rng);
    const auto vs = test::random_floats(size_t(n_ctx * v.width), rng);
    kv_store(k, ks.data(), all.data(), n_ctx);
    kv_store(v, vs.data(), all.data(), n_ctx);
    // F16 keys also in the blocked layout the KV store gives them (kernels.h), stored as a
    // prompt's would be (the store may run on any ISA): every path must give the row layout's
    // bits from it.
    const bool blocked_too = c.kt == GgmlType::F16;
    std::vector<uint8_t> kbm(blocked_too ? kv_region_bytes(c.kt, k.width, n_ctx, c.n_head_kv, true) : 0, 0xFF);
    KvRegion kb = k;
    if (blocked_too) {
      kb = make_kv_region(c.kt, kbm.data(), k.width, n_ctx, c.n_head_kv, true);
      kv_store(kb, ks.data(), all.data(), n_ctx);
    }
    std::vector<int32_t> pos(static_cast<size_t>(c.nt));
    for (int64_t t = 0; t < c.nt; ++t) pos[t] = int32_t((t * 113 + 650) % n_ctx);
    const auto q = test::random_floats(size_t(c.nt * c.n_head * c.hd), rng, 0.7f);
    const AttnParams p{c.n_head, c.n_head_kv, c.hd, c.hdv, 1.0f / std::sqrt(float(c.hd))};
    force_isa(Isa::Scalar);
    set_threads(1);
    auto ref = zeros(c.nt * c.n_head * c.hdv);
    attention(q.data(), pos.data(), c.nt, k, v, p, ref.data());
    for (Isa isa : isas()) {
      force_isa(isa);
      std::vector<float> first;
      for (int th : {1, 2, 3}) {
        set_threads(th);
        auto out = zeros(c.nt * c.n_head * c.hdv);
        attention(q.data(), pos.data(), c.nt, k, v, p, out.data());
        for (size_t i = 0; i < out.size(); ++i)
          ASSERT_NEAR(out[i], ref[i], 2e-6f + 2e-5f * std::fabs(ref[i])) << "isa " << int(isa) << " i " << i;
        if (first.empty()) first = out;
        ASSERT_TRUE(same_bits(out, first)) << "isa " << int(isa) << " threads " << th;
        if (blocked_too) {
          auto outb = zeros(c.nt * c.n_head * c.hdv);
          attention(q.data(), pos.data(), c.nt, kb, v, p, outb.data());
          ASSERT_TRUE(same_bits(outb, first)) << "blocked keys, isa " << int(isa) << " threads " << th;
        }
      }
      // A token's output does not depend on the batch it came in (decode vs prefill).
      const int64_t per = c.n_head * c.hdv;
      for (int64_t t = 0; t < c.nt; ++t) {
        auto one = zeros(per);
        attention(q.data() + t * c.n_head * c.hd, pos.data() + t, 1, k, v, p, one.data());
        ASSERT_TRUE(same_bits(one, std::vector<float>(first.begin() + t * per, first.begin() + (t + 1) * per)))
            << "isa " << int(isa) << " token " << t;
        if (blocked_too) {
          attention(q.data() + t * c.n_head * c.hd, pos.data() + t, 1, kb, v, p, one.data());
          ASSERT_TRUE(same_bits(one, std::vector<float>(first.begin() + t * per, first.begin() + (t + 1) * per)))
              << "blocked keys, isa " << int(isa) << " token " << t;
        }
      }
    }
  }
}

}  // namespace
}  // namespace minfer::cpu
