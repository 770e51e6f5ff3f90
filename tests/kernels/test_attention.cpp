// attention against a naive double-precision reference (GQA, causal by position, every cache
// type), and kv_store's conversions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/act_quant.h"
#include "backend/cpu/backend.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels.h"
#include "common/error.h"
#include "common/fp16.h"
#include "kernels/random_weights.h"
#include "quant/quant.h"

namespace minfer::cpu {
namespace {

struct Region {
  std::vector<uint8_t> mem;
  KvRegion r;
  Region(GgmlType t, int64_t width, int64_t n_ctx, int64_t n_heads) {
    mem.assign(kv_region_bytes(t, width, n_ctx, n_heads), 0);
    r = make_kv_region(t, mem.data(), width, n_ctx, n_heads);
  }
  // Row j (all heads, in order) as the kernels see it.
  std::vector<float> row(int64_t j) const {
    const int64_t hw = r.width / r.n_heads;
    std::vector<float> out(size_t(r.width));
    for (int64_t h = 0; h < r.n_heads; ++h)
      quant::dequantize_row(r.type, kv_row(r, h, j), out.data() + h * hw, hw);
    return out;
  }
};

// What the score dot product multiplies for a query under each K type.
std::vector<float> rounded_query(GgmlType kt, const float* q, int64_t n) {
  std::vector<float> out(q, q + n);
  if (kt == GgmlType::F16)
    for (auto& v : out) v = fp16_to_fp32(fp32_to_fp16(v));
  if (kt == GgmlType::Q8_0) {
    std::vector<quant::block_q8_0> b(size_t(n / 32));
    quantize_act_q8_0(q, b.data(), n);
    quant::dequantize_row(GgmlType::Q8_0, b.data(), out.data(), n);
  }
  return out;
}

// Queries at positions pos against a cache of n_fill rows (of n_ctx), checked against a plain
// double-precision softmax attention.
void check_attention(GgmlType kt, GgmlType vt, int64_t n_head, int64_t n_head_kv, int64_t hd,
                     int64_t hdv, const std::vector<int32_t>& pos = {0, 5, 10, 11}, int64_t n_fill = 12,
                     int64_t n_ctx = 20) {
  SCOPED_TRACE(testing::Message() << "K " << type_name(kt) << " V " << type_name(vt) << " heads "
                                  << n_head << "/" << n_head_kv << " isa "
                                  << isa_name(active_isa()) << " tokens " << pos.size());
  std::mt19937 rng(11);
  Region k(kt, n_head_kv * hd, n_ctx, n_head_kv), v(vt, n_head_kv * hdv, n_ctx, n_head_kv);
  std::vector<int32_t> fill_pos(n_fill);
  for (int64_t i = 0; i < n_fill; ++i) fill_pos[i] = int32_t(i);
  auto ksrc = test::random_floats(size_t(n_fill * n_head_kv * hd), rng);
  auto vsrc = test::random_floats(size_t(n_fill * n_head_kv * hdv), rng);
  kv_store(k.r, ksrc.data(), fill_pos.data(), n_fill);
  kv_store(v.r, vsrc.data(), fill_pos.data(), n_fill);

  const int64_t nt = int64_t(pos.size());
  auto q = test::random_floats(size_t(nt * n_head * hd), rng, 0.5f);
  AttnParams p{n_head, n_head_kv, hd, hdv, 1.0f / std::sqrt(float(hd))};
  std::vector<float> out(size_t(nt * n_head * hdv));
  attention(q.data(), pos.data(), nt, k.r, v.r, p, out.data());

  const int64_t group = n_head / n_head_kv;
  std::vector<std::vector<float>> krows, vrows;  // the cache rows as the kernels see them
  for (int64_t j = 0; j < n_fill; ++j) krows.push_back(k.row(j)), vrows.push_back(v.row(j));
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t hk = h / group;
      const auto qr = rounded_query(kt, q.data() + (t * n_head + h) * hd, hd);
      std::vector<double> s;
      for (int64_t j = 0; j <= pos[t]; ++j) {
        const auto& kr = krows[size_t(j)];
        double d = 0;
        for (int64_t i = 0; i < hd; ++i) d += double(qr[i]) * kr[hk * hd + i];
        s.push_back(d * p.scale);
      }
      const double mx = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double& e : s) sum += (e = std::exp(e - mx));
      for (int64_t i = 0; i < hdv; ++i) {
        double e = 0;
        for (int64_t j = 0; j <= pos[t]; ++j) e += s[j] / sum * vrows[size_t(j)][hk * hdv + i];
        ASSERT_NEAR(out[(t * n_head + h) * hdv + i], e, 2e-5) << "t=" << t << " h=" << h << " i=" << i;
      }
    }
}

class AttentionTest : public testing::Test {
 protected:
  void TearDown() override { reset_isa(); }
};

TEST_F(AttentionTest, MatchesNaiveReferenceForEveryCacheType) {
  for (Isa isa : supported_isas()) {
    force_isa(isa);
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0}) {
      check_attention(t, t, 4, 2, 64, 64);  // GQA
      check_attention(t, t, 2, 2, 32, 32);  // MHA
    }
    check_attention(GgmlType::F16, GgmlType::F32, 6, 1, 64, 32);  // MQA, V narrower than K
    check_attention(GgmlType::F16, GgmlType::F16, 14, 2, 64, 64);  // qwen2.5's 7 heads per group
    check_attention(GgmlType::F32, GgmlType::F32, 3, 3, 16, 40);   // row tails off the SIMD width
  }
}

// A prompt's tokens are split into blocks of 64, 32 or 16 per KV head (by how many work items
// the threads get): prompts of several blocks, on one and two threads, give the reference.
TEST_F(AttentionTest, LongPromptsMatchTheReferenceOnAnyThreadCount) {
  for (int threads : {1, 2}) {
    set_threads(threads);
    for (Isa isa : supported_isas()) {
      force_isa(isa);
      for (int64_t nt : {40, 100}) {
        std::vector<int32_t> pos(static_cast<size_t>(nt));
        for (int64_t i = 0; i < nt; ++i) pos[size_t(i)] = int32_t(i);
        check_attention(GgmlType::F16, GgmlType::F16, 4, 2, 64, 64, pos, nt, nt);
        check_attention(GgmlType::F16, GgmlType::F16, 7, 1, 32, 32, pos, nt, nt);  // one KV head
        check_attention(GgmlType::F32, GgmlType::F32, 8, 8, 16, 16, pos, nt, nt);
        check_attention(GgmlType::F16, GgmlType::F16, 16, 8, 128, 128, pos, nt, nt);  // qwen3's shape
      }
    }
  }
  set_threads(0);
}

// A Q8_0 V cache is summed from its blocks: the result is the one of an F32 cache holding the
// same rows dequantized, bit for bit, on every ISA path and thread count (K is Q8_0 in both, so
// both take the same score path).
TEST_F(AttentionTest, Q8_0ValuesSumAsTheirDequantizedRows) {
  const int64_t n_head = 4, n_head_kv = 2, hd = 64, n_fill = 300, n_ctx = 320;
  std::mt19937 rng(13);
  Region k(GgmlType::Q8_0, n_head_kv * hd, n_ctx, n_head_kv), vq(GgmlType::Q8_0, n_head_kv * hd, n_ctx, n_head_kv),
      vf(GgmlType::F32, n_head_kv * hd, n_ctx, n_head_kv);
  std::vector<int32_t> fill_pos(static_cast<size_t>(n_fill));
  for (int64_t i = 0; i < n_fill; ++i) fill_pos[size_t(i)] = int32_t(i);
  const auto ksrc = test::random_floats(size_t(n_fill * n_head_kv * hd), rng);
  const auto vsrc = test::random_floats(size_t(n_fill * n_head_kv * hd), rng);
  kv_store(k.r, ksrc.data(), fill_pos.data(), n_fill);
  kv_store(vq.r, vsrc.data(), fill_pos.data(), n_fill);
  std::vector<float> vdeq;
  for (int64_t j = 0; j < n_fill; ++j) {
    const auto row = vq.row(j);
    vdeq.insert(vdeq.end(), row.begin(), row.end());
  }
  kv_store(vf.r, vdeq.data(), fill_pos.data(), n_fill);
  const std::vector<int32_t> pos = {0, 7, 150, 299};
  const auto q = test::random_floats(size_t(pos.size()) * n_head * hd, rng, 0.5f);
  const AttnParams p{n_head, n_head_kv, hd, hd, 0.125f};
  for (int threads : {1, 2}) {
    set_threads(threads);
    for (Isa isa : supported_isas()) {
      force_isa(isa);
      std::vector<float> a(size_t(pos.size()) * n_head * hd), b(a.size());
      attention(q.data(), pos.data(), int64_t(pos.size()), k.r, vq.r, p, a.data());
      attention(q.data(), pos.data(), int64_t(pos.size()), k.r, vf.r, p, b.data());
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
          << "isa " << isa_name(isa) << " threads " << threads;
    }
  }
  set_threads(0);
}

TEST_F(AttentionTest, RejectsBadShapes) {
  Region k(GgmlType::F32, 48, 4, 3), v(GgmlType::F32, 48, 4, 3);
  std::vector<float> q(48), out(48);
  const int32_t pos = 0;
  AttnParams p{3, 2, 16, 16, 1.0f};
  EXPECT_THROW(attention(q.data(), &pos, 1, k.r, v.r, p, out.data()), Error);  // 3 / 2 heads
  AttnParams p1{3, 1, 48, 48, 1.0f};
  EXPECT_THROW(attention(q.data(), &pos, 1, k.r, v.r, p1, out.data()), Error);  // caches of 3 heads
  KvRegion q8 = k.r;
  q8.type = GgmlType::Q8_0;
  AttnParams p2{3, 3, 16, 16, 1.0f};
  EXPECT_THROW(attention(q.data(), &pos, 1, q8, v.r, p2, out.data()), Error);  // Q8_0, hd 16
  EXPECT_THROW(make_kv_region(GgmlType::Q8_0, k.mem.data(), 48, 4, 3), Error);
  EXPECT_THROW(make_kv_region(GgmlType::F32, k.mem.data(), 48, 4, 5), Error);
}

// Head-major: head h's rows lie together, n_ctx rows of width / n_heads elements each.
TEST(KvStore, ConvertsAndWritesOnlyTheGivenRowsOfEachHead) {
  std::mt19937 rng(2);
  const int64_t width = 64, n_heads = 2, hw = 32, n_ctx = 5;
  auto src = test::random_floats(size_t(2 * width), rng);
  const int32_t pos[2] = {3, 1};
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0}) {
    Region r(t, width, n_ctx, n_heads);
    ASSERT_EQ(r.r.row_bytes, row_size(t, hw));
    ASSERT_EQ(r.mem.size(), size_t(n_heads * n_ctx) * r.r.row_bytes);
    kv_store(r.r, src.data(), pos, 2);
    for (int64_t h = 0; h < n_heads; ++h) {
      const uint8_t* head = r.mem.data() + size_t(h * n_ctx) * r.r.row_bytes;
      for (int64_t row : {0, 2, 4})
        for (size_t b = 0; b < r.r.row_bytes; ++b) ASSERT_EQ(head[row * r.r.row_bytes + b], 0);
      std::vector<uint8_t> expect(r.r.row_bytes);
      for (int tt = 0; tt < 2; ++tt) {
        const float* s = src.data() + tt * width + h * hw;
        if (t == GgmlType::F32) std::memcpy(expect.data(), s, r.r.row_bytes);
        if (t == GgmlType::F16)
          for (int64_t i = 0; i < hw; ++i) ((uint16_t*)expect.data())[i] = fp32_to_fp16(s[i]);
        if (t == GgmlType::Q8_0) quantize_act_q8_0(s, (quant::block_q8_0*)expect.data(), hw);
        EXPECT_EQ(0, std::memcmp(expect.data(), head + pos[tt] * r.r.row_bytes, r.r.row_bytes))
            << type_name(t) << " head " << h << " row " << pos[tt];
      }
    }
  }
}

// The context shift: rows after n_keep + n_discard move down, keys rotated by -n_discard, so a
// key roped at position p + n_discard reads as the same key roped at p (plain and YaRN rope,
// whose magnitude must not be applied twice); values move as they are; the kept rows and the
// other head stay untouched. Every cache type and the blocked F16 key layout.
TEST(KvShift, KeysReadAsRopedAtTheirNewPositions) {
  std::mt19937 rng(7);
  const int64_t n_heads = 2, hw = 64, width = n_heads * hw, n_ctx = 40;
  const int64_t keep = 3, discard = 7, n_past = 30;
  RopeParams plain;
  plain.style = RopeStyle::NeoX;
  plain.n_rot = hw;
  plain.freq_base = 1e6f;
  RopeParams yarn = plain;
  yarn.style = RopeStyle::Normal;
  yarn.n_rot = 32;  // the rest of the head passes through
  yarn.freq_scale = 0.25f;
  yarn.ext_factor = 1.0f;
  yarn.n_ctx_orig = 16;
  const auto raw_k = test::random_floats(size_t(n_past * width), rng);
  const auto raw_v = test::random_floats(size_t(n_past * width), rng);
  std::vector<int32_t> at(static_cast<size_t>(n_past));
  for (int64_t i = 0; i < n_past; ++i) at[size_t(i)] = int32_t(i);
  struct Layout {
    GgmlType type;
    bool blocked;
    float tol;  // of a key value (|x| < ~4), against rounding the expected key the same way
  };
  for (const RopeParams& rp : {plain, yarn}) {
    for (const Layout& l : {Layout{GgmlType::F32, false, 1e-5f}, Layout{GgmlType::F16, false, 4e-3f},
                            Layout{GgmlType::F16, true, 4e-3f}, Layout{GgmlType::Q8_0, false, 0.08f}}) {
      SCOPED_TRACE(fmt::format("{}{} {}", type_name(l.type), l.blocked ? " blocked" : "",
                               rp.ext_factor != 0 ? "YaRN" : "plain"));
      std::vector<uint8_t> kmem(kv_region_bytes(l.type, width, n_ctx, n_heads, l.blocked)),
          vmem(kv_region_bytes(l.type, width, n_ctx, n_heads));
      KvRegion k = make_kv_region(l.type, kmem.data(), width, n_ctx, n_heads, l.blocked);
      KvRegion v = make_kv_region(l.type, vmem.data(), width, n_ctx, n_heads);
      std::vector<float> roped(raw_k);
      rope(roped.data(), at.data(), n_past, n_heads, hw, rp);
      kv_store(k, roped.data(), at.data(), n_past);
      kv_store(v, raw_v.data(), at.data(), n_past);
      const std::vector<uint8_t> k_before = kmem, v_before = vmem;

      kv_shift(k, v, keep, discard, n_past, rp);

      // Expected keys: the raw ones roped at their new positions.
      std::vector<int32_t> new_pos(at);
      for (int64_t i = keep + discard; i < n_past; ++i) new_pos[size_t(i)] = int32_t(i - discard);
      std::vector<float> want(raw_k);
      rope(want.data(), new_pos.data(), n_past, n_heads, hw, rp);
      float worst = 0;
      for (int64_t h = 0; h < n_heads; ++h) {
        for (int64_t p = keep; p < n_past - discard; ++p) {
          const float* w = want.data() + (p + discard) * width + h * hw;
          std::vector<float> got(static_cast<size_t>(hw));
          if (l.blocked)
            for (int64_t i = 0; i < hw; ++i) got[size_t(i)] = fp16_to_fp32(kv_key_lane(k, h, p)[i * kKeyBlock]);
          else
            quant::dequantize_row(l.type, kv_row(k, h, p), got.data(), hw);
          for (int64_t i = 0; i < hw; ++i) worst = std::max(worst, std::fabs(got[size_t(i)] - w[i]));
          // Values: the bytes of row p + discard, as stored.
          ASSERT_EQ(0, std::memcmp(kv_row(v, h, p), v_before.data() + size_t(h) * v.head_bytes +
                                                        size_t(p + discard) * v.row_bytes, v.row_bytes));
        }
        // The kept rows: untouched bytes.
        if (!l.blocked) {
          for (int64_t p = 0; p < keep; ++p) {
            ASSERT_EQ(0, std::memcmp(kv_row(k, h, p), k_before.data() + size_t(h) * k.head_bytes + size_t(p) * k.row_bytes,
                                     k.row_bytes));
          }
        }
      }
      EXPECT_LT(worst, l.tol);
    }
  }
}

// kv_get_row gives a row in the type's plain layout whatever the region's (blocked F16 keys
// gathered), and kv_set_row puts it back: a saved state moves between layouts.
TEST(KvRows, PlainRowsFromEveryLayout) {
  std::mt19937 rng(9);
  const int64_t n_heads = 2, hw = 32, width = n_heads * hw, n_ctx = 21;
  const auto src = test::random_floats(size_t(n_ctx * width), rng);
  std::vector<int32_t> at(static_cast<size_t>(n_ctx));
  for (int64_t i = 0; i < n_ctx; ++i) at[size_t(i)] = int32_t(i);
  for (bool blocked : {false, true}) {
    std::vector<uint8_t> a(kv_region_bytes(GgmlType::F16, width, n_ctx, n_heads, blocked));
    std::vector<uint8_t> b(kv_region_bytes(GgmlType::F16, width, n_ctx, n_heads, !blocked));
    KvRegion ra = make_kv_region(GgmlType::F16, a.data(), width, n_ctx, n_heads, blocked);
    KvRegion rb = make_kv_region(GgmlType::F16, b.data(), width, n_ctx, n_heads, !blocked);
    kv_store(ra, src.data(), at.data(), n_ctx);
    std::vector<uint8_t> row(ra.row_bytes), back(ra.row_bytes);
    for (int64_t h = 0; h < n_heads; ++h)
      for (int64_t p = 0; p < n_ctx; ++p) {
        kv_get_row(ra, h, p, row.data());
        for (int64_t i = 0; i < hw; ++i) {
          uint16_t v;
          std::memcpy(&v, row.data() + 2 * i, 2);
          ASSERT_EQ(v, fp32_to_fp16(src[size_t(p * width + h * hw + i)])) << blocked << " " << h << " " << p;
        }
        kv_set_row(rb, h, p, row.data());  // into the other layout
        kv_get_row(rb, h, p, back.data());
        ASSERT_EQ(row, back);
      }
  }
}

TEST(KvShift, RefusesRowsOutsideTheCache) {
  std::vector<uint8_t> kmem(kv_region_bytes(GgmlType::F32, 32, 8)), vmem(kmem.size());
  KvRegion k = make_kv_region(GgmlType::F32, kmem.data(), 32, 8);
  KvRegion v = make_kv_region(GgmlType::F32, vmem.data(), 32, 8);
  RopeParams rp;
  rp.n_rot = 32;
  EXPECT_THROW(kv_shift(k, v, 0, 0, 4, rp), Error);   // nothing to discard
  EXPECT_THROW(kv_shift(k, v, 2, 3, 4, rp), Error);   // more than there is
  EXPECT_THROW(kv_shift(k, v, 0, 1, 9, rp), Error);   // past the cache
  EXPECT_THROW(kv_shift(k, v, -1, 1, 4, rp), Error);
}

}  // namespace
}  // namespace minfer::cpu

#include "backend/cpu/kernels_dot.h"

namespace minfer::cpu {
namespace {

// Every ISA's softmax (the SIMD ones use a polynomial exp) against double precision: within a
// few float ulps of each probability, over lengths that exercise vector bodies and tails.
TEST(Softmax, EveryPathMatchesDoublePrecision) {
  std::mt19937 rng(4);
  for (Isa isa : supported_isas()) {
    const SoftmaxFn f = softmax_fn(isa);
    for (int64_t n : {1, 7, 8, 33, 1000}) {
      auto s = test::random_floats(size_t(n), rng, 20.0f);
      const auto s0 = s;
      f(n, s.data(), 0.7f);
      // The scaled scores and their differences to the max are f32 (as in ggml): emulate that,
      // then exp and normalize in double.
      float mx = -INFINITY;
      for (float v : s0) mx = std::max(mx, v * 0.7f);
      double sum = 0;
      for (float v : s0) sum += std::exp(double(v * 0.7f - mx));
      for (int64_t j = 0; j < n; ++j) {
        const double e = std::exp(double(s0[j] * 0.7f - mx)) / sum;
        ASSERT_NEAR(s[j], e, 1e-6 * e + 1e-37) << "isa " << isa_name(isa) << " n " << n << " j " << j;
      }
    }
  }
}

// Every ISA's weighted row sums (attention's V accumulation on the dot path) against double
// precision over the rows as dequantize_row gives them: weight rows 1-11 (the passes of 8, 4, 2
// and 1 rows, and of 3), head sizes with and without a tail past 32 columns; and a Q8_0 V sums
// exactly as F32 rows holding its dequantized values, on each path.
TEST(Vsum, EveryPathMatchesDoublePrecision) {
  std::mt19937 rng(5);
  for (Isa isa : supported_isas()) {
    const VsumFn f = vsum_fn(isa);
    for (GgmlType vt : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0})
      for (int64_t d : {32, 64, 80, 128}) {
        if (vt == GgmlType::Q8_0 && d % 32 != 0) continue;
        for (int64_t n : {1, 9, 70})
          for (int64_t G : {1, 2, 3, 5, 7, 8, 11}) {
            const size_t vs = row_size(vt, d);
            std::vector<uint8_t> v(vs * size_t(n));
            std::vector<float> vf(size_t(n * d));  // the rows as the kernels read them
            for (int64_t j = 0; j < n; ++j) {
              const auto x = test::random_floats(size_t(d), rng, 3.0f);
              uint8_t* row = v.data() + size_t(j) * vs;
              if (vt == GgmlType::F32) std::memcpy(row, x.data(), vs);
              if (vt == GgmlType::F16)
                for (int64_t i = 0; i < d; ++i) reinterpret_cast<uint16_t*>(row)[i] = fp32_to_fp16(x[size_t(i)]);
              if (vt == GgmlType::Q8_0) quantize_act_q8_0(x.data(), reinterpret_cast<quant::block_q8_0*>(row), d);
              quant::dequantize_row(vt, row, vf.data() + j * d, d);
            }
            auto w = test::random_floats(size_t(G * n), rng);
            for (float& a : w) a = std::fabs(a);  // softmax weights are >= 0
            std::vector<float> out(size_t(G * d), NAN);
            f(n, G, w.data(), v.data(), vs, vt, d, out.data());
            for (int64_t g = 0; g < G; ++g)
              for (int64_t i = 0; i < d; ++i) {
                double e = 0, mag = 0;
                for (int64_t j = 0; j < n; ++j) {
                  e += double(w[size_t(g * n + j)]) * vf[size_t(j * d + i)];
                  mag += std::fabs(double(w[size_t(g * n + j)]) * vf[size_t(j * d + i)]);
                }
                ASSERT_NEAR(out[size_t(g * d + i)], e, 1e-6 * mag + 1e-30)
                    << isa_name(isa) << " " << type_name(vt) << " d " << d << " n " << n << " G " << G << " g " << g
                    << " i " << i;
              }
            if (vt == GgmlType::Q8_0) {
              std::vector<float> out32(out.size(), NAN);
              f(n, G, w.data(), reinterpret_cast<const uint8_t*>(vf.data()), size_t(d) * sizeof(float), GgmlType::F32,
                d, out32.data());
              ASSERT_EQ(0, std::memcmp(out.data(), out32.data(), out.size() * sizeof(float)))
                  << isa_name(isa) << " d " << d << " n " << n << " G " << G;
            }
          }
      }
  }
}

}  // namespace
}  // namespace minfer::cpu
