// matmul and get_rows: the weight-reading kernels. Activations are converted to the weight
// type's vec_dot type once per call; then row chunks of W are spread over the threads, each
// chunk multiplied with every activation row (a weight panel is read once per token block).
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "backend/cpu/act_quant.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_dot.h"
#include "backend/cpu/packed_gemm.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/scratch.h"
#include "backend/cpu/threadpool.h"
#include "common/error.h"
#include "quant/quant.h"

namespace minfer::cpu {
namespace {

// Rows per work item of a prompt on GGUF rows: small enough to balance 2+ threads on 896-row
// matrices, large enough that the per-item overhead vanishes.
constexpr int64_t kRowChunk = 32;
// Tokens per pass over a weight panel: their activations stay in L2 while the panel is reused.
constexpr int64_t kTokenBlock = 128;
static_assert(kTokenBlock % kActTile == 0);
// Below this many multiply-adds a matmul runs on the calling thread: waking the team would
// cost more than it saves (tiny models' decode steps).
constexpr int64_t kParallelMacs = int64_t(1) << 16;

// Work items are groups of 16 rows. Decode streams weights: each new item restarts a stream
// (the hardware prefetchers ramp up again, the software prefetch runs past its end into rows
// another thread reads), so items are as long as balancing allows: guided self-scheduling, each
// item 1/threads of the groups still unassigned, at least kDecodeGroups, the last items small
// so that the threads finish together (qwen2.5-0.5b tg64 on 2 threads, median t/s against 4
// even items a thread per matrix: Q8_0 46.6 -> 48.0, Q4_0 69.6 -> 71.1, Q4_K_M 57.1 -> 58.0; a
// vocabulary-sized GEMV had gone 24 -> 28 GB/s from 32-row items to 4 a thread).
// Prefill reuses each panel over up to kTokenBlock tokens; its items too start their weight
// streams cold, so they hold about kPrefillItemBytes of weights where there are groups enough
// for kPrefillChunksPerThread items a thread, in pairs of groups (AMX takes them in pairs), at
// least kPrefillGroups (2-group items: a 128-token Q4_0 GEMM with cold weights, 9728 x 896 on
// 2 threads, 690-720 GOP/s; these, with the next group's prefetch of the decoded kernels:
// 750-800).
constexpr int64_t kDecodeGroups = 4;
constexpr int64_t kPrefillGroups = 2;
constexpr int64_t kPrefillChunksPerThread = 4;
constexpr int64_t kPrefillItemBytes = 64 << 10;

// Groups per prefill work item (the rule above), for all_groups groups of group_bytes each.
int64_t prefill_groups_per_item(int64_t all_groups, int64_t group_bytes) {
  const int64_t by_bytes = (kPrefillItemBytes + group_bytes - 1) / group_bytes;
  const int64_t by_count = all_groups / (kPrefillChunksPerThread * threads());
  return std::max(kPrefillGroups, std::min(by_bytes, by_count) & ~int64_t(1));  // even: AMX pairs
}

// The AVX-512 prompt tiles over Q8_K activations in the GGUF layout (the lattice i-quants, the
// ternary types; any K-quant without a packed copy) derive each call's per-token block sums
// (q8k_sums) from all of its tokens before their 16-row panels: their items, as the float
// panels', are about rows / (2 x threads) rows.
bool q8k_sums_tile(GgmlType act_type, Isa isa, int64_t nt) {
  return act_type == GgmlType::Q8_K && isa >= Isa::Avx512 && nt >= 4;
}

// The rows of w past its last whole group (no packed copy), by the GGUF-layout tile kernel on
// the quantized activations xq (rows of xs bytes): y[t * ldy + i] for row r0 + i.
void tail_rows(const WeightView& w, const uint8_t* xq, size_t xs, int64_t nt, float* y, int64_t ldy) {
  const int64_t r0 = w.rows / kPackRows * kPackRows;
  dot_tile(w.type, active_isa())(w.type, w.cols, w.data + size_t(r0) * w.row_bytes, w.row_bytes, w.rows - r0, xq,
                                 xs, nt, y, ldy);
}

// One work item of matmul_packed: groups [g0, g0 + ng) of job `job` for tokens from t0 (a
// kTokenBlock of them, or the rest).
struct WorkItem {
  int job;
  int64_t g0, ng, t0;
};

// The item sizes of a decode step over n groups (the guided self-scheduling above): each
// 1/threads of the groups still unassigned, at least kDecodeGroups.
template <class Emit>
void decode_split(int64_t n, Emit emit) {
  const int64_t t = threads();
  for (int64_t left = n; left > 0;) {
    const int64_t size = std::min(left, std::max(kDecodeGroups, (left + t - 1) / t));
    emit(n - left, size);
    left -= size;
  }
}

// The items of a decode step (one token): the jobs' groups taken as one sequence, cut where
// a job ends.
void decode_items(const MatmulJob* jobs, int n_jobs, int64_t all_groups, std::vector<WorkItem>& items) {
  items.clear();
  int j = 0;
  int64_t g = 0;  // next group of job j
  decode_split(all_groups, [&](int64_t, int64_t size) {
    while (size > 0) {
      const int64_t groups = jobs[j].w.rows / kPackRows, take = std::min(size, groups - g);
      if (take > 0) items.push_back({j, g, take, 0});
      size -= take;
      g += take;
      if (g == groups) ++j, g = 0;
    }
  });
}

// The items of a prompt: per job, per run of `per` groups, per token block.
void prefill_items(const MatmulJob* jobs, int n_jobs, int64_t per, int64_t nt, std::vector<WorkItem>& items) {
  items.clear();
  for (int j = 0; j < n_jobs; ++j) {
    const int64_t groups = jobs[j].w.rows / kPackRows;
    for (int64_t g0 = 0; g0 < groups; g0 += per)
      for (int64_t t0 = 0; t0 < nt; t0 += kTokenBlock) items.push_back({j, g0, std::min(per, groups - g0), t0});
  }
}

// What this thread's activation scratch holds: the quantization of which x, in which format,
// in which buffers (a larger request may move them). A call whose caller promises an unchanged
// x (same_x) skips quantizing when the scratch already holds what it needs.
struct ActKey {
  const float* x = nullptr;
  int64_t nt = 0, cols = 0;
  GgmlType at = GgmlType::F32;
  int sums = -1;      // the _0 tiles' offset (their c), kKQuantSums, or -1 for plain rows
  bool rows = false;  // the rows of `at` are in xq (the _0 tiles may leave them out)
  const uint8_t* xq = nullptr;
  const void* aux = nullptr;  // the tiles or the K-quant sums
  const int16_t* wide = nullptr;  // the tiles widened (PackedAct::tw), or none
  const float* mins = nullptr;    // the _1 types' block sums (PackedAct::s), or none
  const int32_t* halves = nullptr;  // the split types' second-half corrections (PackedAct::ch), or none
};
constexpr int kKQuantSums = -2;
thread_local ActKey t_act;

// Whether the scratch holds `want` (with its rows where want has them); if not, `want` is what
// the caller is about to write there.
bool act_ready(const ActKey& want, bool same_x) {
  const ActKey& h = t_act;
  const bool ok = same_x && h.x == want.x && h.nt == want.nt && h.cols == want.cols &&
                  h.at == want.at && h.sums == want.sums && (h.rows || !want.rows) &&
                  h.xq == want.xq && h.aux == want.aux && h.wide == want.wide && h.mins == want.mins &&
                  h.halves == want.halves;
  if (!ok) t_act = want;
  return ok;
}

// Several packed matrices of one row length and activation format times the same activations:
// quantized once, and all their work items in one parallel_for (one wake-up and one barrier for
// the three projections of a decode step's attention).
// f: the jobs' kernels (packed_together). swiglu: jobs are gate and up, and jobs[0].y gets
// swiglu of the two (matmul_swiglu).
void matmul_packed(const MatmulJob* jobs, int n_jobs, const PackedGemmFn* f, const float* x, int64_t nt,
                   bool same_x, bool swiglu = false) {
  const WeightView& w0 = jobs[0].w;
  const GgmlType at = packed_act_type(w0.type);
  const bool sums = at != GgmlType::Q8_K;  // activation tiles (the K-quant kernels read Q8_K's own d and bsums)
  const int64_t cols = w0.cols, nb = cols / packed_block_cols(w0.type);
  const size_t xs = row_size(at, cols);
  uint8_t* xq = thread_scratch(ScratchSlot::MatmulActivations, xs * size_t(nt));
  const int64_t tile = act_tile(nt);
  const size_t n_act = sums ? size_t(act_tokens_padded(nt) * nb) : 0;
  uint8_t* tq = sums ? thread_scratch(ScratchSlot::MatmulActTiles, 32 * n_act) : nullptr;
  float* xd = sums ? thread_scratch_array<float>(ScratchSlot::MatmulActScales, n_act) : nullptr;
  int32_t* xc = sums ? thread_scratch_array<int32_t>(ScratchSlot::MatmulActSums, n_act) : nullptr;
  // (the K-quant types' widened rows: 8 blocks of 32 a super-block, in tiles as the _0 types')
  const size_t n_wide = size_t(act_tokens_padded(nt) * (cols / 32));
  int16_t* tw = packed_wide_act(w0.type, active_isa(), nt)
                    ? thread_scratch_array<int16_t>(ScratchSlot::MatmulActWide, 32 * n_wide)
                    : nullptr;
  float* xm = packed_has_mins(w0.type) ? thread_scratch_array<float>(ScratchSlot::MatmulActMins, n_act) : nullptr;
  int32_t* xh = packed_split_halves(w0.type) ? thread_scratch_array<int32_t>(ScratchSlot::MatmulActHalves, n_act)
                                             : nullptr;
  Q8KSums* ks = sums ? nullptr : thread_scratch_array<Q8KSums>(ScratchSlot::MatmulActScales, size_t(nt * nb));
  int64_t rows = 0, all_groups = 0;  // (each job's rows past its last group are not in a group)
  for (int j = 0; j < n_jobs; ++j) rows += jobs[j].w.rows, all_groups += jobs[j].w.rows / kPackRows;
  const bool par = rows * cols * nt >= kParallelMacs;
  // The _0 types' Q8_0 rows are read only by the GGUF-layout kernel of rows past the last group.
  bool tails = false;
  for (int j = 0; j < n_jobs; ++j) tails = tails || jobs[j].w.rows % kPackRows != 0;
  auto quantize = [&](int64_t t, int) {
    uint8_t* row = xq + size_t(t) * xs;
    if (sums) {
      packed_act_quantize(w0.type, x + t * cols, nb, t, tile, row, tails, tq, xd, xc, tw, xm, xh);
    } else {
      packed_act_quantize_k(x + t * cols, nb, row, ks + t * nb);
      if (tw) widen_q8k_row(row, nb, t, tile, tw);
    }
  };
  // One work item per activation tile: its tokens share cache lines (of tq, d and c; the
  // K-quants' Q8_K rows, their sums and widened rows are no whole lines either: one token an
  // item, the threads taking turns, had both cores writing the lines between two tokens:
  // Gemm128Packed_Q4_K 1024 x 1024 on 2 threads 482 -> 501 GOP/s, q8_K_avx512 12.9 -> 5.2 % of
  // its time).
  auto quantize_item = [&](int64_t i, int) {
    for (int64_t t = i * tile; t < std::min(nt, (i + 1) * tile); ++t) quantize(t, 0);
  };
  const int64_t n_items = (nt + tile - 1) / tile;
  const ActKey want{x, nt, cols, at, sums ? packed_offset(w0.type) : kKQuantSums, !sums || tails, xq,
                    sums ? static_cast<const void*>(tq) : ks, tw, xm, xh};
  if (!act_ready(want, same_x)) {
    if (par && n_items > 1)
      parallel_for(n_items, quantize_item);
    else
      for (int64_t t = 0; t < nt; ++t) quantize(t, 0);
  }

  thread_local std::vector<WorkItem> t_items;
  const std::vector<WorkItem>& items = t_items;  // (the workers read the caller's)
  // SwiGLU: the items are the gate's, each taking the same rows of the up; a prompt's items are
  // sized as for the two matrices apart, ~kPrefillItemBytes of each (measured against ~that
  // much of both together: qwen2.5-0.5b Q8_0 pp512 862 / 836 t/s median, Q4_0 905 / 894).
  const int item_jobs = swiglu ? 1 : n_jobs;
  if (nt == 1)
    decode_items(jobs, item_jobs, swiglu ? jobs[0].w.rows / kPackRows : all_groups, t_items);
  else
    prefill_items(jobs, item_jobs, prefill_groups_per_item(all_groups, int64_t(packed_group_bytes(w0.type, cols))),
                  nt, t_items);
  const SwigluFn swiglu_rows = swiglu_fn(active_isa());
  auto work = [&](int64_t c, int) {
    const WorkItem& it = items[size_t(c)];
    const MatmulJob& job = jobs[it.job];
    const int64_t ldy = job.w.rows, g0 = it.g0, ng = it.ng;
    const int64_t t0 = it.t0, ntb = std::min(kTokenBlock, nt - t0);
    // t0 starts a tile (kTokenBlock is a multiple of kActTile).
    const size_t a0 = act_index(t0, 0, nb, tile);
    PackedAct xa = sums ? PackedAct{nullptr, 0, nullptr, tq + 32 * a0, xd + a0, xc + a0, tile,
                                    tw ? tw + 32 * a0 : nullptr, xm ? xm + a0 : nullptr,
                                    xh ? xh + a0 : nullptr}
                        : PackedAct{xq + size_t(t0) * xs, xs, ks + t0 * nb};
    if (!sums && tw) xa.tw = tw + 32 * act_index(t0, 0, cols / 32, tile);
    float* yc = job.y + t0 * ldy + g0 * kPackRows;
    const size_t gb = packed_group_bytes(job.w.type, cols);
    if (swiglu) {
      const int64_t nr = ng * kPackRows;
      float* gt = thread_scratch_array<float>(ScratchSlot::SwigluGate, size_t(ntb * nr));
      float* up = thread_scratch_array<float>(ScratchSlot::SwigluUp, size_t(ntb * nr));
      f[0](job.w.type, job.w.packed + size_t(g0) * gb, ng, nb, xa, ntb, gt, nr);
      const WeightView& wu = jobs[1].w;
      f[1](wu.type, wu.packed + size_t(g0) * packed_group_bytes(wu.type, cols), ng, nb, xa, ntb, up, nr);
      for (int64_t t = 0; t < ntb; ++t) swiglu_rows(gt + t * nr, up + t * nr, yc + t * ldy, nr);
      return;
    }
    f[it.job](job.w.type, job.w.packed + size_t(g0) * gb, ng, nb, xa, ntb, yc, ldy);
    if (job.bias)
      for (int64_t t = 0; t < ntb; ++t)
        for (int64_t r = 0; r < ng * kPackRows; ++r) yc[t * ldy + r] += job.bias[g0 * kPackRows + r];
  };
  const int64_t n_work = int64_t(items.size());
  if (par)
    parallel_for(n_work, work);
  else
    for (int64_t c = 0; c < n_work; ++c) work(c, 0);
  // Rows past the last whole group (a vocabulary of 151669 rows) have no packed copy: the
  // GGUF-layout tile kernel takes them, on the same activations (the types' vec_dot types).
  if (swiglu) {
    const WeightView& wg = jobs[0].w;
    const WeightView& wu = jobs[1].w;
    const int64_t r0 = wg.rows / kPackRows * kPackRows, tail = wg.rows - r0;
    if (tail == 0) return;
    float* gt = thread_scratch_array<float>(ScratchSlot::SwigluGate, size_t(nt * tail));
    float* up = thread_scratch_array<float>(ScratchSlot::SwigluUp, size_t(nt * tail));
    tail_rows(wg, xq, xs, nt, gt, tail);
    tail_rows(wu, xq, xs, nt, up, tail);
    for (int64_t t = 0; t < nt; ++t) swiglu_rows(gt + t * tail, up + t * tail, jobs[0].y + t * wg.rows + r0, tail);
    return;
  }
  for (int j = 0; j < n_jobs; ++j) {
    const WeightView& w = jobs[j].w;
    const int64_t r0 = w.rows / kPackRows * kPackRows, tail = w.rows - r0;
    if (tail == 0) continue;
    float* y = jobs[j].y;
    tail_rows(w, xq, xs, nt, y + r0, w.rows);
    if (jobs[j].bias)
      for (int64_t t = 0; t < nt; ++t)
        for (int64_t r = r0; r < w.rows; ++r) y[t * w.rows + r] += jobs[j].bias[r];
  }
}

// Whether the jobs can run as one matmul_packed: all packed with a kernel (into f), one row
// length, and one activation format: one type, or K-quants only (Q8_K rows whatever the type;
// the _0 types' offset corrections differ per type).
bool packed_together(const MatmulJob* jobs, int n, PackedGemmFn* f) {
  const WeightView& w0 = jobs[0].w;
  for (int j = 0; j < n; ++j) {
    const WeightView& w = jobs[j].w;
    if (!w.packed || !packable(w.type, w.rows, w.cols) || w.cols != w0.cols) return false;
    if (w.type != w0.type && !(packed_kquant(w.type) && packed_kquant(w0.type))) return false;
    if (!(f[j] = packed_gemm(w.type, active_isa()))) return false;
  }
  return true;
}

}  // namespace

void matmul(const WeightView& w, const float* x, int64_t nt, float* y, const float* bias, bool same_x) {
  if (nt <= 0 || w.rows <= 0) return;
  const MatmulJob job{w, bias, y};
  PackedGemmFn f;
  if (packed_together(&job, 1, &f)) {
    matmul_packed(&job, 1, &f, x, nt, same_x);
    return;
  }
  const GgmlType vdt = vec_dot_type(w.type);
  const int64_t bs = type_traits(vdt).block_size;
  if (w.cols % bs != 0 || w.cols % type_traits(w.type).block_size != 0)
    fail("matmul: row length {} is not a multiple of the {} block size", w.cols,
         type_name(w.type));
  const size_t xs = row_size(vdt, w.cols);
  uint8_t* xq = thread_scratch(ScratchSlot::MatmulActivations, xs * size_t(nt));
  const bool par = w.rows * w.cols * nt >= kParallelMacs;

  auto quantize = [&](int64_t t, int) {
    quantize_act(vdt, x + t * w.cols, xq + size_t(t) * xs, w.cols);
  };
  if (!act_ready(ActKey{x, nt, w.cols, vdt, -1, true, xq, nullptr}, same_x)) {
    if (par && nt > 1)
      parallel_for(nt, quantize);
    else
      for (int64_t t = 0; t < nt; ++t) quantize(t, 0);
  }

  const DotTileFn tile = dot_tile(w.type, active_isa());
  // F16/BF16 prompts widen their activations once per call (float_panel_tokens): items of about
  // rows / (2 x threads) rows instead of kRowChunk, where widening took a third of the time.
  const bool per_call_setup = (nt >= float_panel_tokens(w.type, active_isa()) && float_panel_tile(w.type, active_isa())) ||
                              q8k_sums_tile(vdt, active_isa(), nt);
  const int64_t row_chunk = per_call_setup ? std::max(kRowChunk, w.rows / (2 * threads()) / 16 * 16) : kRowChunk;
  // Decode: the packed path's items (decode_items), in groups of 16 GGUF rows. Against items
  // of kRowChunk rows, each thread's stream no longer restarts every 64 KiB nor claims 48
  // items a matrix: qwen3-0.6b F16 tg32, 2 threads, 24.6-27.5 -> 31.3-38.1 t/s.
  thread_local std::vector<std::pair<int64_t, int64_t>> t_rows;  // (first row, rows)
  const std::vector<std::pair<int64_t, int64_t>>& rows = t_rows;  // (the workers read the caller's)
  t_rows.clear();
  if (nt == 1)
    decode_split((w.rows + kPackRows - 1) / kPackRows, [&](int64_t g0, int64_t ng) {
      t_rows.emplace_back(g0 * kPackRows, std::min(ng * kPackRows, w.rows - g0 * kPackRows));
    });
  else
    for (int64_t r0 = 0; r0 < w.rows; r0 += row_chunk) t_rows.emplace_back(r0, std::min(row_chunk, w.rows - r0));
  const int64_t n_chunks = int64_t(rows.size());
  const int64_t n_tblk = (nt + kTokenBlock - 1) / kTokenBlock;
  auto work = [&](int64_t c, int) {
    const int64_t rc = c / n_tblk, tb = c % n_tblk;
    const int64_t r0 = rows[size_t(rc)].first, nr = rows[size_t(rc)].second;
    const int64_t t0 = tb * kTokenBlock, ntb = std::min(kTokenBlock, nt - t0);
    float* yc = y + t0 * w.rows + r0;
    tile(w.type, w.cols, w.data + size_t(r0) * w.row_bytes, w.row_bytes, nr,
         xq + size_t(t0) * xs, xs, ntb, yc, w.rows);
    if (bias)
      for (int64_t t = 0; t < ntb; ++t)
        for (int64_t r = 0; r < nr; ++r) yc[t * w.rows + r] += bias[r0 + r];
  };
  if (par)
    parallel_for(n_chunks * n_tblk, work);
  else
    for (int64_t c = 0; c < n_chunks * n_tblk; ++c) work(c, 0);
}

void matmul_multi(const MatmulJob* jobs, int n, const float* x, int64_t nt, bool same_x) {
  if (n < 1 || n > kMaxJobs) fail("matmul_multi: {} matrices (1 to {})", n, kMaxJobs);
  PackedGemmFn f[kMaxJobs];
  if (nt > 0 && packed_together(jobs, n, f)) {
    matmul_packed(jobs, n, f, x, nt, same_x);
    return;
  }
  for (int j = 0; j < n; ++j) matmul(jobs[j].w, x, nt, jobs[j].y, jobs[j].bias, same_x || j > 0);
}

void matmul_swiglu(const WeightView& gate, const WeightView& up, const float* x, int64_t nt, float* y) {
  if (gate.rows != up.rows || gate.cols != up.cols)
    fail("matmul_swiglu: gate {} x {} and up {} x {} differ", gate.rows, gate.cols, up.rows, up.cols);
  if (nt <= 0 || gate.rows <= 0) return;
  const MatmulJob jobs[2] = {{gate, nullptr, y}, {up, nullptr, nullptr}};
  PackedGemmFn f[2];
  if (packed_together(jobs, 2, f)) {
    matmul_packed(jobs, 2, f, x, nt, false, true);
    return;
  }
  thread_local std::vector<float> g, u;
  g.resize(size_t(nt * gate.rows));
  u.resize(size_t(nt * gate.rows));
  matmul(gate, x, nt, g.data(), nullptr);
  matmul(up, x, nt, u.data(), nullptr, true);
  swiglu(g.data(), u.data(), y, nt * gate.rows);
}

void get_rows(const WeightView& w, const int32_t* ids, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = w.data + size_t(ids[i]) * w.row_bytes;
    if (w.type == GgmlType::F32)
      std::memcpy(out + i * w.cols, row, size_t(w.cols) * sizeof(float));
    else
      quant::dequantize_row(w.type, row, out + i * w.cols, w.cols);
  }
}

}  // namespace minfer::cpu
