// The CPU backend's kernels: plain functions over raw buffers, one per graph op. The graph
// executor (src/backend/cpu/backend.*) maps nodes to these; kernels know nothing of graphs.
//
// Layout conventions (those of the graph IR):
//   activations are token-major: x[t * d + i] for token t < nt, feature i < d;
//   a weight matrix is row-major [rows = out][cols = in] in its GGUF type.
// Numerics mirror ggml's CPU backend, so that results match llama.cpp: before a matmul the
// activations are rounded to the weight type's "vec_dot type" (Q8_0 for Q4_0/Q5_0/Q8_0/
// IQ4_NL, Q8_1 for Q4_1/Q5_1, Q8_K for the K-quants, F16 for F16, BF16 for BF16, none for
// F32), then integer/float dot products are scaled per block exactly as ggml does.
//
// Threading: kernels split their work into chunks run by the thread pool (threadpool.h;
// set_threads(n) = n threads, the caller included); each output element is computed by one
// chunk in a fixed way, so results do not depend on the thread count or on scheduling.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace minfer::cpu {

// n threads in all (n <= 0: back to the default, the CPUs this process may run on).
// Error when called from inside a parallel_for chunk.
void set_threads(int n);
int threads();

struct WeightView {
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;
  int64_t rows = 0;       // output features
  int64_t cols = 0;       // input features (row length)
  size_t row_bytes = 0;   // row_size(type, cols)
  // The same matrix in the x16 layout of repack.h (64-byte aligned), or nullptr. matmul uses
  // it when the active ISA has a packed kernel for the type, `data` otherwise.
  const uint8_t* packed = nullptr;
};

// y[t][r] = dot(W[r], x[t]) (+ bias[r] when bias != nullptr), for t < nt, r < rows.
// x is [nt][cols], y is [nt][rows].
// same_x: the caller's promise that x still holds what it held when this thread's previous
// matmul or matmul_multi read it (consecutive matmuls of one input: a prompt's q, k and v, its
// gate and up). The activations that call quantized are then reused where their format fits
// this weight (the same vec_dot type and, for the packed _0 kernels, the same offset).
void matmul(const WeightView& w, const float* x, int64_t nt, float* y, const float* bias,
            bool same_x = false);

// Several matrices with the same row length times the same activations: job j writes
// jobs[j].y as matmul(jobs[j].w, x, nt, jobs[j].y, jobs[j].bias) would, bit for bit. When
// they share a packed kernel the activations are quantized once and all the work runs in one
// parallel_for (fewer barriers in a decode step); otherwise they run one after the other.
struct MatmulJob {
  WeightView w;
  const float* bias = nullptr;
  float* y = nullptr;
};
constexpr int kMaxJobs = 4;
void matmul_multi(const MatmulJob* jobs, int n, const float* x, int64_t nt, bool same_x = false);

// y[t][r] = silu(dot(gate[r], x[t])) * dot(up[r], x[t]): the two matmuls and swiglu, bit for
// bit, without writing the two products out (a prompt's FFN: each work item multiplies the
// same rows of both and combines them while they are in cache).
void matmul_swiglu(const WeightView& gate, const WeightView& up, const float* x, int64_t nt, float* y);

// out[i] = dequantized row ids[i] of w (the embedding lookup). Ids are checked by the caller.
void get_rows(const WeightView& w, const int32_t* ids, int64_t n, float* out);

// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight, per row of d (weight may be nullptr).
void rms_norm(const float* x, const float* weight, int64_t nt, int64_t d, float eps, float* out);

enum class RopeStyle : uint8_t { Normal = 0, NeoX = 2 };  // ggml's mode values

struct RopeParams {
  RopeStyle style = RopeStyle::Normal;
  int64_t n_rot = 0;             // rotated dims per head (<= head_dim); the rest pass through
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;       // 1 / linear scaling factor
  const float* freq_factors = nullptr;  // optional [n_rot/2] divisors (Llama 3 rope_freqs)
  // YaRN, as ggml_rope_ext takes it: ext_factor 0 is plain scaling; otherwise each pair's angle
  // mixes the scaled and unscaled ones by a ramp over the dimensions between the correction
  // dims of beta_fast and beta_slow rotations in n_ctx_orig positions. cos and sin are
  // multiplied by attn_factor (and, with YaRN, by 1 + 0.1 ln(1 / freq_scale)).
  float ext_factor = 0.0f;
  float attn_factor = 1.0f;
  float beta_fast = 32.0f, beta_slow = 1.0f;
  int64_t n_ctx_orig = 0;
};

// Rotates x [nt][n_head * head_dim] in place by the positions pos[nt], as ggml_rope_ext does.
void rope(float* x, const int32_t* pos, int64_t nt, int64_t n_head, int64_t head_dim,
          const RopeParams& p);
// The same from x into y (y may be x): dims >= n_rot are copied.
void rope_to(const float* x, float* y, const int32_t* pos, int64_t nt, int64_t n_head,
             int64_t head_dim, const RopeParams& p);

void silu(const float* x, float* out, int64_t n);
void swiglu(const float* gate, const float* up, float* out, int64_t n);  // silu(gate) * up
void add(const float* a, const float* b, float* out, int64_t n);
void mul(const float* a, const float* b, float* out, int64_t n);

// A persistent K or V region of one layer: per position, `width` elements of `type` (F32, F16
// or Q8_0), the rows of n_heads heads of width / n_heads elements each (a multiple of 32 for
// Q8_0). Head-major: head h's n_ctx rows are contiguous, at data + h * head_bytes, position p's
// at + p * row_bytes (make_kv_region, backend.h); a decode step's attention to one KV head then
// streams one block of memory instead of a slice of every position's row.
// A blocked region (F16 keys, make_kv_region's `blocked`) keeps each head's positions in blocks
// of kKeyBlock, a block as [dimension][kKeyBlock positions]: the attention kernels score a
// block's keys from it as they are, with no transpose (kv_key_block).
constexpr int64_t kKeyBlock = 16;
struct KvRegion {
  GgmlType type = GgmlType::F32;
  uint8_t* data = nullptr;
  int64_t width = 0;
  int64_t n_ctx = 0;
  int64_t n_heads = 1;
  size_t row_bytes = 0;   // one head's row: row_size(type, width / n_heads)
  size_t head_bytes = 0;  // n_ctx * row_bytes (blocked: n_ctx rounded up to whole blocks)
  bool blocked = false;
};

// Head h's row at position pos (not for a blocked region, whose positions are no rows; pos 0
// gives its head's first block).
inline uint8_t* kv_row(const KvRegion& r, int64_t h, int64_t pos) {
  return r.data + size_t(h) * r.head_bytes + size_t(pos) * r.row_bytes;
}
// A blocked region's block b of head h: element (position kKeyBlock b + l, dimension i) at
// [i * kKeyBlock + l].
inline uint16_t* kv_key_block(const KvRegion& r, int64_t h, int64_t b) {
  return reinterpret_cast<uint16_t*>(r.data + size_t(h) * r.head_bytes + size_t(b * kKeyBlock) * r.row_bytes);
}
// A blocked region's key at position pos of head h: dimension i at [i * kKeyBlock].
inline uint16_t* kv_key_lane(const KvRegion& r, int64_t h, int64_t pos) {
  return kv_key_block(r, h, pos / kKeyBlock) + pos % kKeyBlock;
}

// Writes rows src[t] (width floats, the heads in order) at position pos[t], converting to the
// region's type.
// Positions must be < n_ctx (checked by the caller, which reports the error).
void kv_store(KvRegion& dst, const float* src, const int32_t* pos, int64_t nt);

// Head h's row at pos in the type's plain row layout (row_size(type, width / n_heads) bytes),
// whatever the region's own (blocked keys gathered): what a saved state holds, so that it loads
// on a CPU that lays keys out otherwise. Positions < n_ctx (checked by the caller).
void kv_get_row(const KvRegion& r, int64_t h, int64_t pos, uint8_t* out);
void kv_set_row(KvRegion& r, int64_t h, int64_t pos, const uint8_t* in);

// The context shift of one layer (llama.cpp's seq_rm + seq_add): the rows at positions
// n_keep + n_discard .. n_past move n_discard positions down, the keys rotated by -n_discard (a
// pure rotation, rope_params' magnitude left out; through F32 for F16 and Q8_0 caches, as ggml's
// rope of a cache view does), the values as they are. Rows from n_past - n_discard on keep stale
// data, as after a truncation.
void kv_shift(KvRegion& k, KvRegion& v, int64_t n_keep, int64_t n_discard, int64_t n_past,
              const RopeParams& rope_params);

struct AttnParams {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;     // of Q and K
  int64_t head_dim_v = 0;   // of V
  float scale = 1.0f;       // usually 1/sqrt(head_dim)
};

// Causal attention for nt queries q [nt][n_head*head_dim]: query t attends to the cached
// rows 0..pos[t] of k and v. Output [nt][n_head*head_dim_v]. GQA: query head h reads KV head
// h / (n_head / n_head_kv).
void attention(const float* q, const int32_t* pos, int64_t nt, const KvRegion& k,
               const KvRegion& v, const AttnParams& p, float* out);

}  // namespace minfer::cpu
