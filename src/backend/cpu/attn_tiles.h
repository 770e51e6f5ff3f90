// The block attention kernel (kernels_ops.h, AttnBlockFn) for the AVX2 and the AVX-512
// translation units. Each includes <immintrin.h> and every other header first, switches the
// target ISA with `MINFER_ISA_BEGIN` (isa_target.h), defines `AttnVec` (its float vector and the few
// operations below that differ between the ISAs, see simd_ops_avx512.cpp) and includes this
// file. Internal linkage and no standard-library templates, as simd_tiles.h.
//
// A work item is a block of tokens x one KV head; up to AttnVec::kRows query rows (the group's
// heads, and the next tokens' when a group is smaller) share every key and value load. A prompt's
// block converts the keys it needs to f32 and transposes them once (W keys per vector, kt); a
// single tile (a decode step) reads the key rows. Keys the KV store keeps blocked (kernels.h:
// F16 on AVX-512, kv_keys_blocked) are already in kt's layout: a decode step scores them as they
// are (no transposes: score_direct spent 64 shuffles a 16 x 16 chunk, every step again) and a
// prompt's block only widens them (widen_keys). Scores take one of two summation orders, each
// the same for a decode step and a prompt (a token's output does not depend on its batch):
// - one FMA chain per score over the dimensions (AVX-512): from kt in prompts (score_block), from
//   16 x 16 chunks transposed in registers in decode (score_direct);
// - lane sums (AttnVec::kLaneSums, AVX2): lane l sums the dimensions l, l + 8, ... in order and
//   the lanes are added in a fixed tree (AttnVec::sum4): from the key rows in decode
//   (score_rows: an 8 x 8 transpose costs 24 shuffles, more than the FMAs a decode step's 2 query
//   rows of qwen3-0.6b spend on those keys), from kt with one chain per lane class in prompts
//   (score_block_lanes).
//
// AttnVec provides: F, Mask, W, kRows, kValueRows, value_chunks(g), score_blocks(g), kLaneSums,
// tail, zero, set1, load, store, storeu, store_part, fma, row<F16>, row_part, round_f16,
// transpose, softmax; with kLaneSums also add and sum4. The functions of one order take AttnVec
// as a template parameter V only so that the other order's are never instantiated.
#ifndef MINFER_ATTN_TILES_BODY
#define MINFER_ATTN_TILES_BODY

namespace minfer::cpu {
namespace {

using AF = AttnVec::F;
constexpr int kW = AttnVec::W;

// r[c] lane l = K[W b + l][i0 + c] (f32) for keys < n (zero beyond), dims < hd.
inline void key_chunk(const uint8_t* kbase, size_t kstride, bool f16, int64_t n, int64_t hd,
                      int64_t b, int64_t i0, AF* r) {
  const bool full = hd - i0 >= kW;
  for (int l = 0; l < kW; ++l) {
    const int64_t j = kW * b + l;
    const uint8_t* row = kbase + size_t(j) * kstride;
    r[l] = j >= n  ? AttnVec::zero()
           : !full ? AttnVec::row_part(row, f16, i0, AttnVec::tail(hd - i0))
           : f16   ? AttnVec::row<true>(row, i0)
                   : AttnVec::row<false>(row, i0);
  }
  AttnVec::transpose(r);
}

// kt[b][i][l] = K[W b + l][i] (f32) for keys < n (zero beyond), dims < hd.
inline void transpose_keys(const uint8_t* kbase, size_t kstride, bool f16, int64_t n, int64_t hd, float* kt) {
  const int64_t nb = (n + kW - 1) / kW;
  for (int64_t b = 0; b < nb; ++b) {
    float* out = kt + b * hd * kW;
    for (int64_t i0 = 0; i0 < hd; i0 += kW) {
      AF r[kW];
      key_chunk(kbase, kstride, f16, n, hd, b, i0, r);
      // A whole chunk stores straight from the registers: with a run-time count GCC spilled
      // the 16 vectors and copied them with rep movsq (30 % of this function's time).
      if (hd - i0 >= kW) {
#pragma GCC unroll 16
        for (int c = 0; c < kW; ++c) AttnVec::store(out + (i0 + c) * kW, r[c]);
      } else {
        for (int64_t c = 0; c < hd - i0; ++c) AttnVec::store(out + (i0 + c) * kW, r[c]);
      }
    }
  }
}

// Dimension i of the W keys of key block b (W keys each): from keys transposed to f32 (kt,
// transpose_keys) or, KB, from a blocked F16 cache (kb: kKeyBlock keys a block, kernels.h).
template <bool KB>
inline AF key_lanes(const float* kt, const uint16_t* kb, int64_t hd, int64_t b, int64_t i) {
  if constexpr (KB) {
    constexpr int64_t per = kKeyBlock / kW;  // key blocks per cache block
    static_assert(per * kW == kKeyBlock, "W divides the cache's blocks");
    return AttnVec::template row<true>(
        reinterpret_cast<const uint8_t*>(kb + ((b / per) * hd + i) * kKeyBlock + (b % per) * kW), 0);
  } else {
    return AttnVec::load(kt + (b * hd + i) * kW);
  }
}

// The first n keys of a blocked F16 cache widened to f32 in kt's layout (transpose_keys'): the
// blocks are already [dimension][keys], so this is conversions only.
inline void widen_keys(const uint16_t* kb, int64_t n, int64_t hd, float* kt) {
  const int64_t nb = (n + kW - 1) / kW;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t i = 0; i < hd; ++i) AttnVec::store(kt + (b * hd + i) * kW, key_lanes<true>(nullptr, kb, hd, b, i));
}

// Scores of G query rows (q + g * hd) against key blocks b0 .. b0 + B - 1 (key_lanes):
// s[g * ld + W * b + l], each an FMA chain over the dimensions in order. B = 2 shares every
// broadcast query element between two blocks (the loop is then FMA-bound, not load-bound).
template <int G, int B, bool KB>
inline void score_block(const float* q, int64_t hd, const float* kt, const uint16_t* kb, int64_t b0, float* s,
                        int64_t ld) {
  AF acc[G][B];
  for (int g = 0; g < G; ++g)
    for (int b = 0; b < B; ++b) acc[g][b] = AttnVec::zero();
  for (int64_t i = 0; i < hd; ++i) {
    AF kv[B];
    for (int b = 0; b < B; ++b) kv[b] = key_lanes<KB>(kt, kb, hd, b0 + b, i);
    for (int g = 0; g < G; ++g) {
      const AF qv = AttnVec::set1(q[g * hd + i]);
      for (int b = 0; b < B; ++b) acc[g][b] = AttnVec::fma(qv, kv[b], acc[g][b]);
    }
  }
  for (int g = 0; g < G; ++g)
    for (int b = 0; b < B; ++b) AttnVec::storeu(s + g * ld + kW * (b0 + b), acc[g][b]);
}

// outs[g][c + W * k + l] = sum over j < n of w[g * ld + j] * V[j][c + W * k + l] for k < C
// column chunks (the last one partial, `tail` columns, when kPartial), in key order (one FMA
// chain per lane). F16 and kPartial are template parameters: a run-time test or a masked load
// in the loop makes GCC keep the accumulators in memory.
template <int G, int C, bool F16, bool kPartial>
inline void vsum_block(const float* w, int64_t ld, int64_t n, const uint8_t* vbase, size_t vstride,
                       int64_t c, AttnVec::Mask tail, float* const* outs) {
  AF acc[G][C];
  for (int g = 0; g < G; ++g)
    for (int k = 0; k < C; ++k) acc[g][k] = AttnVec::zero();
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* row = vbase + size_t(j) * vstride;
    AF vv[C];
    for (int k = 0; k < C; ++k)
      vv[k] = kPartial && k == C - 1 ? AttnVec::row_part(row, F16, c + kW * k, tail)
                                     : AttnVec::row<F16>(row, c + kW * k);
    for (int g = 0; g < G; ++g) {
      const AF wv = AttnVec::set1(w[g * ld + j]);
      for (int k = 0; k < C; ++k) acc[g][k] = AttnVec::fma(wv, vv[k], acc[g][k]);
    }
  }
  for (int g = 0; g < G; ++g)
    for (int k = 0; k < C; ++k)
      if (kPartial && k == C - 1)
        AttnVec::store_part(outs[g] + c + kW * k, acc[g][k], tail);
      else
        AttnVec::storeu(outs[g] + c + kW * k, acc[g][k]);
}

// Prefetches bytes [from, to) of a K or V head's rows, clipped at end, one line at a time, into
// L1 or L2.
inline void prefetch_rows(const uint8_t* base, size_t from, size_t to, size_t end, bool l1) {
  for (size_t o = from; o < (to < end ? to : end); o += 64)
    if (l1)
      _mm_prefetch((const char*)(base + o), _MM_HINT_T0);
    else
      _mm_prefetch((const char*)(base + o), _MM_HINT_T1);
}

// score_block's scores straight from the K rows: each W x W chunk transposed in registers and
// used at once, in the same FMA order. For a work item of one tile (a decode step), where a
// transposed copy would be written and read back once: at long contexts that copy (1 MiB a KV
// head at 2K tokens) went through L3.
// A decode step finds its K and V rows in memory (the weights streamed since evicted them), so
// each key block fetches the K rows kAhead blocks on into L1 and its own V rows into L2 for the
// weighted sum that follows: after a 608-token prompt, a layer's attention qwen2.5-0.5b 40 ->
// 29 us, qwen3-0.6b 169 -> 155 (AVX-512; rows in cache: qwen3's 512 keys 104 -> 111 us on one
// thread).
template <int G>
inline void score_direct(const float* q, int64_t hd, const uint8_t* kbase, size_t kstride, bool f16,
                         int64_t n, float* s, int64_t ld, const uint8_t* vbase, size_t vstride) {
  constexpr int64_t kAhead = 2;
  const size_t kblock = kW * kstride, vblock = kW * vstride, kend = size_t(n) * kstride,
               vend = size_t(n) * vstride;
  prefetch_rows(kbase, 0, kAhead * kblock, kend, true);
  for (int64_t b = 0; b < (n + kW - 1) / kW; ++b) {
    prefetch_rows(kbase, size_t(b + kAhead) * kblock, size_t(b + kAhead + 1) * kblock, kend, true);
    prefetch_rows(vbase, size_t(b) * vblock, size_t(b + 1) * vblock, vend, false);
    AF acc[G];
    for (int g = 0; g < G; ++g) acc[g] = AttnVec::zero();
    for (int64_t i0 = 0; i0 < hd; i0 += kW) {
      AF r[kW];
      key_chunk(kbase, kstride, f16, n, hd, b, i0, r);
      if (hd - i0 >= kW) {
#pragma GCC unroll 16
        for (int c = 0; c < kW; ++c)
          for (int g = 0; g < G; ++g) acc[g] = AttnVec::fma(AttnVec::set1(q[g * hd + i0 + c]), r[c], acc[g]);
      } else {
        for (int64_t c = 0; c < hd - i0; ++c)
          for (int g = 0; g < G; ++g) acc[g] = AttnVec::fma(AttnVec::set1(q[g * hd + i0 + c]), r[c], acc[g]);
      }
    }
    for (int g = 0; g < G; ++g) AttnVec::storeu(s + g * ld + kW * b, acc[g]);
  }
}

// Scores of NR query rows (q + r * hd) against keys j0 .. j0 + 3 (rows kr[l]) in the key-row
// form: s[r * ld + j0 + l].
template <int NR, class V = AttnVec>
inline void score_rows4(const float* q, int64_t hd, const uint8_t* const* kr, bool f16, float* s,
                        int64_t ld, int64_t j0) {
  typename V::F acc[NR][4];
  for (int r = 0; r < NR; ++r)
    for (int l = 0; l < 4; ++l) acc[r][l] = V::zero();
  int64_t i = 0;
  for (; i + kW <= hd; i += kW) {
    typename V::F qv[NR];
    for (int r = 0; r < NR; ++r) qv[r] = V::template row<false>(reinterpret_cast<const uint8_t*>(q + r * hd), i);
    for (int l = 0; l < 4; ++l) {
      const typename V::F kv = f16 ? V::template row<true>(kr[l], i) : V::template row<false>(kr[l], i);
      for (int r = 0; r < NR; ++r) acc[r][l] = V::fma(qv[r], kv, acc[r][l]);
    }
  }
  if (i < hd) {  // the last dims: zero in both operands past hd
    const typename V::Mask m = V::tail(hd - i);
    typename V::F kv[4];
    for (int l = 0; l < 4; ++l) kv[l] = V::row_part(kr[l], f16, i, m);
    for (int r = 0; r < NR; ++r) {
      const typename V::F qv = V::row_part(reinterpret_cast<const uint8_t*>(q + r * hd), false, i, m);
      for (int l = 0; l < 4; ++l) acc[r][l] = V::fma(qv, kv[l], acc[r][l]);
    }
  }
  for (int r = 0; r < NR; ++r) V::sum4(acc[r], s + r * ld + j0);
}

// G query rows against keys 0 .. n - 1 of rows kbase + j * kstride, in the key-row form; the
// scores of a last block's keys past n are of a repeated key (never read). The rows kRowsAhead
// on are fetched into L1 as they go (a decode step's keys come from memory): qwen3-0.6b Q8_0
// decode after 2048 tokens, ISA=avx2, 2 threads, AMD Zen 5, median step with / without
// (alternating step by step): 29.9 / 31.5 ms, 29.1 / 30.6 (32 rows ahead: as 16).
constexpr int64_t kRowsAhead = 16;
template <int G>
inline void score_rows(const float* q, int64_t hd, const uint8_t* kbase, size_t kstride, bool f16,
                       int64_t n, float* s, int64_t ld) {
  const size_t end = size_t(n) * kstride;
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    prefetch_rows(kbase, size_t(j0 + kRowsAhead) * kstride, size_t(j0 + kRowsAhead + 4) * kstride, end, true);
    const uint8_t* kr[4];
    for (int l = 0; l < 4; ++l) kr[l] = kbase + size_t(j0 + l < n ? j0 + l : n - 1) * kstride;
    int g = 0;
    for (; g + 2 <= G; g += 2) score_rows4<2>(q + g * hd, hd, kr, f16, s + g * ld, ld, j0);
    if (g < G) score_rows4<1>(q + g * hd, hd, kr, f16, s + g * ld, ld, j0);
  }
}

// score_rows' scores from transposed keys (kt, W = 8 keys a vector), bit for bit: lane class c
// of score_rows4's accumulators sums dimensions c, c + 8, ... in order; here each class is its
// own FMA chain across B key blocks and G rows, and the classes are added as sum4's vhaddps tree
// adds the lanes: ((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7)). A prompt's tiles then do
// no horizontal sums, as the AVX-512 score_block, while a decode step keeps the key rows (no
// transpose for a single tile's 2 query rows).
template <int G, int B, bool KB, class V = AttnVec>
inline void score_block_lanes(const float* q, int64_t hd, const float* kt, const uint16_t* kb, int64_t b0,
                              float* s, int64_t ld) {
  static_assert(V::W == 8, "the tree is sum4's, over 8 lanes");
  alignas(32) float part[8][G][B][8];
  for (int c = 0; c < 8; ++c) {
    typename V::F acc[G][B];
    for (int g = 0; g < G; ++g)
      for (int b = 0; b < B; ++b) acc[g][b] = V::zero();
    for (int64_t i = c; i < hd; i += 8) {
      typename V::F kv[B];
      for (int b = 0; b < B; ++b) kv[b] = key_lanes<KB>(kt, kb, hd, b0 + b, i);
      for (int g = 0; g < G; ++g) {
        const typename V::F qv = V::set1(q[g * hd + i]);
        for (int b = 0; b < B; ++b) acc[g][b] = V::fma(qv, kv[b], acc[g][b]);
      }
    }
    for (int g = 0; g < G; ++g)
      for (int b = 0; b < B; ++b) V::store(part[c][g][b], acc[g][b]);
  }
  for (int g = 0; g < G; ++g)
    for (int b = 0; b < B; ++b) {
      typename V::F p[8];
      for (int c = 0; c < 8; ++c) p[c] = V::load(part[c][g][b]);
      const typename V::F lo = V::add(V::add(p[0], p[1]), V::add(p[2], p[3]));
      const typename V::F hi = V::add(V::add(p[4], p[5]), V::add(p[6], p[7]));
      V::storeu(s + g * ld + kW * (b0 + b), V::add(lo, hi));
    }
}

// The keys of a tile: transposed in kt (transpose_keys), blocked in the cache (kb), or, when
// both are null, read from their rows (score_direct, score_rows).
struct TileKeys {
  const float* kt;
  const uint16_t* kb;
  const uint8_t* kbase;
  size_t kstride;
  bool f16;
};

// Scores of G query rows against B transposed key blocks from block b, in the ISA's order.
template <int G, int B, bool KB, class V = AttnVec>
inline void score_kt(const float* q, int64_t hd, const TileKeys& k, float* s, int64_t ld, int64_t b) {
  if constexpr (V::kLaneSums)
    score_block_lanes<G, B, KB>(q, hd, k.kt, k.kb, b, s, ld);
  else
    score_block<G, B, KB>(q, hd, k.kt, k.kb, b, s, ld);
}

// Scores of G query rows against the first nkb transposed key blocks.
// Blocked keys (KB: a decode step's, read from memory) fetch the blocks kKeyBlocksAhead on into
// L1 as they go, as score_direct fetches its rows: the hardware prefetchers alone left the
// stream waiting. qwen3-0.6b Q8_0 decode after 2048 tokens, 2 threads, AMD Zen 5, median step
// with / without (alternating step by step): 19.8 / 21.1 ms, 22.9 / 25.2, 32.8 / 33.6, 30.8 /
// 31.4; qwen2.5-0.5b Q4_0 13.5 / 13.8, 12.9 / 13.1.
constexpr int64_t kKeyBlocksAhead = 4;
template <int G, bool KB, class V = AttnVec>
inline void score_kt_all(const float* q, int64_t hd, const TileKeys& k, float* s, int64_t ld, int64_t nkb) {
  constexpr int B = V::score_blocks(G);
  int64_t b = 0;
  const size_t block_bytes = size_t(hd) * kW * sizeof(uint16_t), end = size_t(nkb) * block_bytes;
  const auto* kb = reinterpret_cast<const uint8_t*>(k.kb);
  if constexpr (B > 1)
    for (; b + B <= nkb; b += B) {
      if constexpr (KB)
        prefetch_rows(kb, size_t(b + kKeyBlocksAhead) * block_bytes, size_t(b + kKeyBlocksAhead + B) * block_bytes, end,
                      true);
      score_kt<G, B, KB>(q, hd, k, s, ld, b);
    }
  for (; b < nkb; ++b) score_kt<G, 1, KB>(q, hd, k, s, ld, b);
}

// Scores of G query rows against the first n_all keys, in the ISA's order.
template <int G, class V = AttnVec>
inline void score_tile(const float* q, int64_t hd, const TileKeys& k, float* s, int64_t ld, int64_t n_all,
                       const uint8_t* vbase, size_t vstride) {
  if (k.kb) {
    score_kt_all<G, true>(q, hd, k, s, ld, (n_all + kW - 1) / kW);
  } else if (k.kt) {
    score_kt_all<G, false>(q, hd, k, s, ld, (n_all + kW - 1) / kW);
  } else if constexpr (V::kLaneSums) {
    score_rows<G>(q, hd, k.kbase, k.kstride, k.f16, n_all, s, ld);
  } else {
    score_direct<G>(q, hd, k.kbase, k.kstride, k.f16, n_all, s, ld, vbase, vstride);
  }
}

// outs[g] = the weights s[g * ld ..] times the first n V rows, for G rows: VC column chunks a
// pass over the V rows (AttnVec::value_chunks: as many as G * VC accumulators and VC value
// vectors leave registers for), then the rest in passes of P, the last one partial. Each lane's
// chain is the same in any chunking.
template <int G, bool VF16>
inline void vsum_rows(const float* s, int64_t ld, int64_t n, const uint8_t* vbase, size_t vstride,
                      int64_t hdv, float* const* outs) {
  constexpr int VC = AttnVec::value_chunks(G), P = VC >= 2 ? 2 : 1;
  const AttnVec::Mask all = AttnVec::tail(kW);
  int64_t c = 0;
  if constexpr (VC > P)
    for (; c + kW * VC <= hdv; c += kW * VC) vsum_block<G, VC, VF16, false>(s, ld, n, vbase, vstride, c, all, outs);
  for (; c + kW * P < hdv; c += kW * P) vsum_block<G, P, VF16, false>(s, ld, n, vbase, vstride, c, all, outs);
  const int64_t rest = hdv - c;  // 0 .. W * P columns
  if (P == 2 && rest == 2 * kW)
    vsum_block<G, P, VF16, false>(s, ld, n, vbase, vstride, c, all, outs);
  else if (P == 2 && rest > kW)
    vsum_block<G, P, VF16, true>(s, ld, n, vbase, vstride, c, AttnVec::tail(rest - kW), outs);
  else if (rest == kW)
    vsum_block<G, 1, VF16, false>(s, ld, n, vbase, vstride, c, all, outs);
  else if (rest > 0)
    vsum_block<G, 1, VF16, true>(s, ld, n, vbase, vstride, c, AttnVec::tail(rest), outs);
}

// G query rows (q rows, already rounded as the K type needs; row g attends to its first n[g]
// keys) against the first n_all = max n[g] keys: scores, softmax, weighted V sum into outs[g].
// A row's weights past its own n are zero, so its sums are exactly those over its n keys.
template <int G, bool VF16>
void heads_tile(const float* q, int64_t hd, const TileKeys& k, float* s, int64_t ld, const int64_t* n,
                int64_t n_all, float scale, const uint8_t* vbase, size_t vstride, int64_t hdv,
                float* const* outs) {
  score_tile<G>(q, hd, k, s, ld, n_all, vbase, vstride);
  for (int g = 0; g < G; ++g) {
    AttnVec::softmax(n[g], s + g * ld, scale);
    for (int64_t j = n[g]; j < n_all; ++j) s[g * ld + j] = 0.0f;
  }
  // The weighted V sums: in groups of up to AttnVec::kValueRows rows.
  constexpr int RV = G < AttnVec::kValueRows ? G : AttnVec::kValueRows;
  vsum_rows<RV, VF16>(s, ld, n_all, vbase, vstride, hdv, outs);
  if constexpr (G > RV) vsum_rows<G - RV, VF16>(s + RV * ld, ld, n_all, vbase, vstride, hdv, outs + RV);
}

using HeadsTileFn = void (*)(const float*, int64_t, const TileKeys&, float*, int64_t, const int64_t*,
                             int64_t, float, const uint8_t*, size_t, int64_t, float* const*);

// heads_tile for `rows` query rows, 1 <= rows <= AttnVec::kRows (only those are instantiated).
template <bool VF16>
HeadsTileFn heads_tile_fn(int64_t rows) {
  constexpr int R = AttnVec::kRows;
  static_assert(R >= 1 && R <= 8, "query rows per tile");
  switch (rows) {
    case 1: return &heads_tile<1, VF16>;
    case 2: if constexpr (R >= 2) return &heads_tile<2, VF16>; else break;
    case 3: if constexpr (R >= 3) return &heads_tile<3, VF16>; else break;
    case 4: if constexpr (R >= 4) return &heads_tile<4, VF16>; else break;
    case 5: if constexpr (R >= 5) return &heads_tile<5, VF16>; else break;
    case 6: if constexpr (R >= 6) return &heads_tile<6, VF16>; else break;
    case 7: if constexpr (R >= 7) return &heads_tile<7, VF16>; else break;
    case 8: if constexpr (R >= 8) return &heads_tile<8, VF16>; else break;
    default: break;
  }
  return nullptr;
}

// A tile takes one token's query heads of a KV head (GQA) and, when there are fewer than kRows
// of them, the same heads of the next tokens too, so every K and V load feeds up to kRows rows
// (qwen3-0.6b has 2 query heads per KV head: one token alone left the loops load-bound).
void attn_block_simd(const float* q, const int32_t* pos, int64_t t0, int64_t t1, int64_t hk,
                     const KvRegion& k, const KvRegion& v, const AttnParams& p, float* out) {
  constexpr int64_t kRows = AttnVec::kRows;
  const int64_t hd = p.head_dim, hdv = p.head_dim_v, G = p.n_head / p.n_head_kv;
  const bool kf16 = k.type == GgmlType::F16, vf16 = v.type == GgmlType::F16;
  int64_t n_max = 0;
  for (int64_t t = t0; t < t1; ++t) n_max = int64_t(pos[t]) + 1 > n_max ? int64_t(pos[t]) + 1 : n_max;
  const int64_t nkb_max = (n_max + kW - 1) / kW, ld = nkb_max * kW;
  float* s = thread_scratch_array<float>(ScratchSlot::AttnScores, size_t(kRows * ld));
  float* qr = thread_scratch_array<float>(ScratchSlot::AttnQueries, size_t(kRows * hd));
  const int64_t gn_max = G < kRows ? G : kRows;
  const int64_t tq_max = kRows / gn_max;  // tokens per tile
  // Several tiles share the keys transposed (or, blocked, widened) once; a single tile (a decode
  // step) reads them from their rows, or from their blocks.
  const bool one_tile = G <= kRows && t1 - t0 <= tq_max;
  TileKeys keys{nullptr, nullptr, kv_row(k, hk, 0), k.row_bytes, kf16};
  if (k.blocked && one_tile) {
    keys.kb = kv_key_block(k, hk, 0);
  } else if (k.blocked) {
    // Several tiles: the keys widened to f32 once (the tiles' loop then loads, where it would
    // convert per tile: the prompt's FMAs share the pipes with the conversions).
    float* kt = thread_scratch_array<float>(ScratchSlot::AttnKeys, size_t(nkb_max * hd * kW));
    widen_keys(kv_key_block(k, hk, 0), n_max, hd, kt);
    keys.kt = kt;
  } else if (!one_tile) {
    float* kt = thread_scratch_array<float>(ScratchSlot::AttnKeys, size_t(nkb_max * hd * kW));
    transpose_keys(keys.kbase, keys.kstride, kf16, n_max, hd, kt);
    keys.kt = kt;
  }
  const uint8_t* vbase = kv_row(v, hk, 0);
  for (int64_t ta = t0; ta < t1; ta += tq_max) {
    const int64_t tq = t1 - ta < tq_max ? t1 - ta : tq_max;
    // The next tile's queries (their heads of this KV head lie together in each token's row)
    // come from memory: fetched while this tile runs.
    for (int64_t t = ta + tq_max; t < t1 && t < ta + 2 * tq_max; ++t)
      prefetch_rows(reinterpret_cast<const uint8_t*>(q + (t * p.n_head + hk * G) * hd), 0,
                    size_t(G * hd) * sizeof(float), size_t(G * hd) * sizeof(float), true);
    for (int64_t g0 = 0; g0 < G; g0 += gn_max) {
      const int64_t gn = G - g0 < gn_max ? G - g0 : gn_max;
      int64_t n[kRows], n_all = 0;
      float* outs[kRows];
      for (int64_t tt = 0; tt < tq; ++tt)
        for (int64_t g = 0; g < gn; ++g) {
          const int64_t r = tt * gn + g, t = ta + tt, h = hk * G + g0 + g;
          n[r] = int64_t(pos[t]) + 1;
          n_all = n[r] > n_all ? n[r] : n_all;
          outs[r] = out + (t * p.n_head + h) * hdv;
          // The query as the dot product sees it: rounded to F16 for an F16 cache.
          const uint8_t* src = reinterpret_cast<const uint8_t*>(q + (t * p.n_head + h) * hd);
          for (int64_t i = 0; i < hd; i += kW) {
            const AttnVec::Mask m = AttnVec::tail(hd - i);
            AF x = AttnVec::row_part(src, false, i, m);
            if (kf16) x = AttnVec::round_f16(x);
            AttnVec::store_part(qr + r * hd + i, x, m);
          }
        }
      const HeadsTileFn tile = vf16 ? heads_tile_fn<true>(tq * gn) : heads_tile_fn<false>(tq * gn);
      tile(qr, hd, keys, s, ld, n, n_all, p.scale, vbase, v.row_bytes, hdv, outs);
    }
  }
}

}  // namespace
}  // namespace minfer::cpu

#endif  // MINFER_ATTN_TILES_BODY
