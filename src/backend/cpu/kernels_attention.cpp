// Causal attention over a persistent KV cache, and the cache writes. Scores follow ggml's
// matmul numerics for the K type (Q rounded to F16 for an F16 cache, quantized to Q8_0 for a
// Q8_0 cache); softmax in F32 with max subtraction and a double sum (ggml_vec_soft_max_f32);
// V is accumulated in F32.
//
// Two paths. With AVX2 or AVX-512 and an F32/F16 cache, attn_block (attn_tiles.h) takes blocks
// of up to 64 tokens x one KV head: the keys the block needs are converted to f32 once, and up
// to 8 query rows (the group's heads, and the next tokens' when a group is smaller) share every
// key and value load. Otherwise (scalar, Q8_0 cache) one item is a few tokens x one KV head on
// the dot-product tiles of kernels_dot.h. F16 keys may be kept blocked (kernels.h, kv_keys_blocked):
// the block path reads them as they are; the dot path gathers a head's rows first.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/act_quant.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_dot.h"
#include "backend/cpu/kernels_ops.h"
#include "backend/cpu/threadpool.h"
#include "common/error.h"
#include "common/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace minfer::cpu {
namespace {

void check_region(const KvRegion& r, int64_t n_head_kv, int64_t head_dim, const char* what) {
  if (r.type != GgmlType::F32 && r.type != GgmlType::F16 && r.type != GgmlType::Q8_0)
    fail("attention: {} cache type {} is not supported", what, type_name(r.type));
  if (r.type == GgmlType::Q8_0 && head_dim % quant::QK8_0 != 0)
    fail("attention: head size {} is not a multiple of 32, which a Q8_0 {} cache needs",
         head_dim, what);
  if (r.n_heads != n_head_kv || r.width != n_head_kv * head_dim)
    fail("attention: the {} cache holds {} heads in rows of {}, the attention wants {} of {}", what,
         r.n_heads, r.width, n_head_kv, head_dim);
}

}  // namespace

namespace {

// Head h's row at pos from hw floats, converted to the region's type (h16: hw scratch values).
void write_row(KvRegion& dst, int64_t h, int64_t pos, const float* s, int64_t hw, ToF16Fn to_f16,
               uint16_t* h16) {
  if (dst.blocked) {  // (F16) each dimension of the key to its block's row, lane pos % kKeyBlock
    to_f16(s, h16, hw);
    uint16_t* key = kv_key_lane(dst, h, pos);
    for (int64_t i = 0; i < hw; ++i) key[i * kKeyBlock] = h16[i];
    return;
  }
  uint8_t* row = kv_row(dst, h, pos);
  switch (dst.type) {
    case GgmlType::F32: std::memcpy(row, s, size_t(hw) * sizeof(float)); break;
    case GgmlType::F16: to_f16(s, reinterpret_cast<uint16_t*>(row), hw); break;
    default:
      // ggml's set_rows into a Q8_0 cache uses the CPU's from_float, the same as
      // activations (blocks of 32 never straddle heads: head sizes are multiples of 32).
      quantize_act_q8_0(s, reinterpret_cast<quant::block_q8_0*>(row), hw);
      break;
  }
}

// Head h's row at pos as hw floats.
void read_row(const KvRegion& src, int64_t h, int64_t pos, float* out, int64_t hw) {
  if (src.blocked) {
    const uint16_t* key = kv_key_lane(src, h, pos);
    for (int64_t i = 0; i < hw; ++i) out[i] = fp16_to_fp32(key[i * kKeyBlock]);
    return;
  }
  quant::dequantize_row(src.type, kv_row(src, h, pos), out, hw);
}

void check_cache_type(const KvRegion& r, const char* what) {
  if (r.type != GgmlType::F32 && r.type != GgmlType::F16 && r.type != GgmlType::Q8_0)
    fail("{}: cache type {} is not supported", what, type_name(r.type));
}

}  // namespace

void kv_store(KvRegion& dst, const float* src, const int32_t* pos, int64_t nt) {
  check_cache_type(dst, "kv_store");
  const ToF16Fn to_f16 = ops_kernels(active_isa()).to_f16;
  const int64_t hw = dst.width / dst.n_heads;
  // Head outer, tokens inner: a prompt's rows of one head are consecutive positions, one
  // sequential stream of writes per head (token-outer jumped between the heads' regions on
  // every row: qwen3-0.6b's 608-token prompt spent 1.3 ms a layer here).
  auto head = [&](int64_t h, int) {
    thread_local std::vector<uint16_t> h16;
    h16.resize(size_t(hw));
    for (int64_t t = 0; t < nt; ++t) write_row(dst, h, pos[t], src + t * dst.width + h * hw, hw, to_f16, h16.data());
  };
  if (nt * dst.width >= (int64_t(1) << 16) && dst.n_heads > 1)
    parallel_for(dst.n_heads, head);
  else
    for (int64_t h = 0; h < dst.n_heads; ++h) head(h, 0);
}

void kv_get_row(const KvRegion& r, int64_t h, int64_t pos, uint8_t* out) {
  if (!r.blocked) {
    std::memcpy(out, kv_row(r, h, pos), r.row_bytes);
    return;
  }
  const uint16_t* key = kv_key_lane(r, h, pos);
  for (size_t i = 0; i < r.row_bytes / 2; ++i) std::memcpy(out + 2 * i, key + i * kKeyBlock, 2);
}

void kv_set_row(KvRegion& r, int64_t h, int64_t pos, const uint8_t* in) {
  if (!r.blocked) {
    std::memcpy(kv_row(r, h, pos), in, r.row_bytes);
    return;
  }
  uint16_t* key = kv_key_lane(r, h, pos);
  for (size_t i = 0; i < r.row_bytes / 2; ++i) std::memcpy(key + i * kKeyBlock, in + 2 * i, 2);
}

void kv_shift(KvRegion& k, KvRegion& v, int64_t n_keep, int64_t n_discard, int64_t n_past,
              const RopeParams& rope_params) {
  check_cache_type(k, "kv_shift");
  check_cache_type(v, "kv_shift");
  if (n_keep < 0 || n_discard < 1 || n_keep + n_discard > n_past || n_past > k.n_ctx ||
      k.n_ctx != v.n_ctx || k.n_heads != v.n_heads)
    fail("kv_shift: cannot discard {} rows after {} of {} in a cache of {}", n_discard, n_keep,
         n_past, k.n_ctx);
  const ToF16Fn to_f16 = ops_kernels(active_isa()).to_f16;
  const int64_t hk = k.width / k.n_heads, hv = v.width / v.n_heads;
  // A pure rotation: rope's magnitude (attn_factor, YaRN's mscale) was applied when the key was
  // stored and must not be applied again.
  RopeParams rp = rope_params;
  rp.attn_factor = rp.ext_factor != 0.0f ? 1.0f / (1.0f + 0.1f * std::log(1.0f / rp.freq_scale)) : 1.0f;
  const int32_t delta = int32_t(-n_discard);
  // Rows move down in increasing order: a row is read before anything is written over it.
  auto head = [&](int64_t h, int) {
    thread_local std::vector<float> row;
    thread_local std::vector<uint16_t> h16;
    row.resize(size_t(std::max(hk, hv)));
    h16.resize(row.size());
    for (int64_t p = n_keep + n_discard; p < n_past; ++p) {
      read_row(k, h, p, row.data(), hk);
      rope(row.data(), &delta, 1, 1, hk, rp);
      write_row(k, h, p - n_discard, row.data(), hk, to_f16, h16.data());
      if (v.blocked) {
        read_row(v, h, p, row.data(), hv);
        write_row(v, h, p - n_discard, row.data(), hv, to_f16, h16.data());
      } else {
        std::memcpy(kv_row(v, h, p - n_discard), kv_row(v, h, p), v.row_bytes);
      }
    }
  };
  if (k.n_heads > 1 && (n_past - n_keep - n_discard) * k.width >= (int64_t(1) << 14))
    parallel_for(k.n_heads, head);
  else
    for (int64_t h = 0; h < k.n_heads; ++h) head(h, 0);
}

void attention(const float* q, const int32_t* pos, int64_t nt, const KvRegion& k,
               const KvRegion& v, const AttnParams& p, float* out) {
  if (nt <= 0) return;
  const int64_t hd = p.head_dim, hdv = p.head_dim_v;
  if (p.n_head <= 0 || p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0)
    fail("attention: {} query heads cannot share {} KV heads", p.n_head, p.n_head_kv);
  check_region(k, p.n_head_kv, hd, "K");
  check_region(v, p.n_head_kv, hdv, "V");
  const int64_t group = p.n_head / p.n_head_kv;
  const GgmlType qt = vec_dot_type(k.type);
  const size_t q_bytes = row_size(qt, hd);
  const Isa isa = active_isa();
  const DotTileFn dot = dot_tile(k.type, isa);
  const VsumFn vsum = vsum_fn(isa);
  const SoftmaxFn softmax = softmax_fn(isa);
  // Small problems (short contexts of tiny models) stay on the calling thread.
  const int64_t work = nt * p.n_head * (int64_t(pos[nt - 1]) + 1) * (hd + hdv);
  const bool par = work >= (int64_t(1) << 15);

  // One work item = a few consecutive tokens x one KV head: their query heads sharing that KV
  // head (GQA), up to kDotRows rows, take the V rows together, so each V row read (and, for
  // Q8_0, converted) feeds them all, and their keys stay in cache from one token's scores to
  // the next (one token an item read a V row once per later token, up to 512 times in a
  // 512-token prompt, for qwen3-0.6b's 2 heads a KV head; 4 tokens an item, a quarter of that).
  // Weights past a token's own keys are zero, so its sums are those over its keys alone.
  constexpr int64_t kDotRows = 8;
  const int64_t tb = std::max<int64_t>(1, kDotRows / group);
  const int64_t n_tblocks = (nt + tb - 1) / tb;
  auto item_fn = [&](int64_t item, int) {
    // Per-thread scratch kept across calls: a decode step allocates nothing.
    thread_local std::vector<float> scores, acc;
    thread_local std::vector<uint8_t> qbuf;
    // Later tokens attend to more keys: their items are handed out first.
    const int64_t t0 = (n_tblocks - 1 - item / p.n_head_kv) * tb, hk = item % p.n_head_kv;
    const int64_t t1 = std::min(nt, t0 + tb), rows = (t1 - t0) * group;
    int64_t n_all = 0;
    for (int64_t t = t0; t < t1; ++t) n_all = std::max(n_all, int64_t(pos[t]) + 1);
    acc.resize(size_t(rows * hdv));
    qbuf.resize(q_bytes * size_t(rows));
    for (int64_t t = t0; t < t1; ++t)
      for (int64_t g = 0; g < group; ++g)
        quantize_act(qt, q + (t * p.n_head + hk * group + g) * hd, qbuf.data() + ((t - t0) * group + g) * q_bytes, hd);
    scores.resize(size_t(rows * n_all));
    // K rows play the weight rows, the query rows the tokens: the dot kernels apply the cache
    // type's numerics. A blocked region's rows are gathered first.
    const uint8_t* krows = kv_row(k, hk, 0);
    size_t kstride = k.row_bytes;
    if (k.blocked) {
      thread_local std::vector<uint16_t> kr;
      kr.resize(size_t(n_all * hd));
      for (int64_t j = 0; j < n_all; ++j) {
        const uint16_t* key = kv_key_lane(k, hk, j);
        for (int64_t i = 0; i < hd; ++i) kr[size_t(j * hd + i)] = key[i * kKeyBlock];
      }
      krows = reinterpret_cast<const uint8_t*>(kr.data());
      kstride = size_t(hd) * sizeof(uint16_t);
    }
    // Each token's scores by the call a decode step makes for it (the dot kernels' paths for
    // more rows sum in another order): a token's output does not depend on its batch.
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = int64_t(pos[t]) + 1, r0 = (t - t0) * group;
      dot(k.type, hd, krows, kstride, n, qbuf.data() + r0 * q_bytes, q_bytes, group, scores.data() + r0 * n_all,
          n_all);
      for (int64_t g = 0; g < group; ++g) {
        float* s = scores.data() + (r0 + g) * n_all;
        softmax(n, s, p.scale);
        std::fill(s + n, s + n_all, 0.0f);
      }
    }
    // Q8_0 values are summed from their blocks (vsum takes d x q as dequantize_row gives it):
    // dequantizing a head's rows first wrote and read back 1 MiB of f32 at 2K positions.
    vsum(n_all, rows, scores.data(), kv_row(v, hk, 0), v.row_bytes, v.type, hdv, acc.data());
    for (int64_t r = 0; r < rows; ++r)
      std::copy(acc.begin() + r * hdv, acc.begin() + (r + 1) * hdv,
                out + ((t0 + r / group) * p.n_head + hk * group + r % group) * hdv);
  };
  const int64_t n_items = n_tblocks * p.n_head_kv;
  const AttnBlockFn block = ops_kernels(isa).attn_block;
  if (block && k.type != GgmlType::Q8_0 && v.type != GgmlType::Q8_0) {
    // One work item = a block of up to kTokens tokens x one KV head: the block's keys are
    // converted (and transposed) once, then each token's query heads are scored together.
    // Later blocks attend to more keys: they are handed out first. Longer blocks transpose each
    // key fewer times (a 512-token prompt, one qwen3-0.6b layer, one core of AMD Zen 4: 16 tokens
    // 14.0 ms, 32 13.4, 64 12.95); they shrink back to 16 while there would be fewer than 4 items
    // a thread.
    int64_t kTokens = 64;
    while (kTokens > 16 && (nt + kTokens - 1) / kTokens * p.n_head_kv < 4 * int64_t(threads()))
      kTokens /= 2;
    const int64_t n_blocks = (nt + kTokens - 1) / kTokens;
    auto block_fn = [&](int64_t item, int) {
      const int64_t b = n_blocks - 1 - item / p.n_head_kv, hk = item % p.n_head_kv;
      block(q, pos, b * kTokens, std::min(nt, (b + 1) * kTokens), hk, k, v, p, out);
    };
    // Threaded from 16K multiply-adds: in a decode step the workers are still spinning from
    // the matmul before, and the step's K/V rows come from memory (the weights streamed since
    // evicted them), so two threads read them in about half the time even at short contexts
    // (qwen3-0.6b tg64 +2-3 %; a tiny model's steps below it stay on the calling thread).
    const int64_t n_block_items = n_blocks * p.n_head_kv;
    if (work >= (int64_t(1) << 14) && n_block_items > 1)
      parallel_for(n_block_items, block_fn);
    else
      for (int64_t item = 0; item < n_block_items; ++item) block_fn(item, 0);
    return;
  }
  if (par)
    parallel_for(n_items, item_fn);
  else
    for (int64_t item = 0; item < n_items; ++item) item_fn(item, 0);
}

}  // namespace minfer::cpu
