#include "runtime/cpu_backend.h"

#include <cstring>
#include <utility>
#include <variant>

#include "backend/cpu/backend.h"
#include "backend/cpu/kernels.h"
#include "common/error.h"

namespace minfer::runtime {
namespace {

using graph::CNode;
using sched::TensorMap;

template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

int64_t rows_of(const CNode& n) { return n.shape[1] * n.shape[2] * n.shape[3]; }

cpu::WeightView view(TensorMap& tm, const std::string& name) {
  const sched::WeightRef& w = tm.weight(name);
  cpu::WeightView v = cpu::make_weight_view(name, w.type, w.data, w.ne);
  v.packed = w.packed;
  return v;
}

// Biases, norm weights and rope frequency factors are F32 vectors (check_tensors made sure).
const float* vec_or_null(TensorMap& tm, const std::string& name, int64_t n) {
  if (name.empty()) return nullptr;
  const sched::WeightRef& w = tm.weight(name);
  if (w.type != GgmlType::F32 || w.ne[0] * w.ne[1] * w.ne[2] * w.ne[3] != n) {
    fail("tensor {}: expected {} F32 values", name, n);
  }
  return reinterpret_cast<const float*>(w.data);
}

cpu::RopeParams rope_params(TensorMap& tm, graph::RopeStyle style, int64_t n_rot, float base,
                            float scale, const std::string& factors, const graph::RopeYarn& yarn) {
  cpu::RopeParams rp;
  rp.style = style == graph::RopeStyle::NeoX ? cpu::RopeStyle::NeoX : cpu::RopeStyle::Normal;
  rp.n_rot = n_rot;
  rp.freq_base = base;
  rp.freq_scale = scale;
  rp.freq_factors = vec_or_null(tm, factors, n_rot / 2);
  rp.ext_factor = yarn.ext_factor;
  rp.attn_factor = yarn.attn_factor;
  rp.beta_fast = yarn.beta_fast;
  rp.beta_slow = yarn.beta_slow;
  rp.n_ctx_orig = yarn.n_ctx_orig;
  return rp;
}

void check_ids(const int32_t* ids, int64_t n, int64_t limit, const CNode& node) {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= limit) {
      fail("node {} ({}): row id {} out of range [0, {})", node.id, node.name, ids[i], limit);
    }
  }
}

cpu::AttnParams attn_params(const graph::AttnMeta& m) {
  return {m.n_head, m.n_head_kv, m.head_dim, m.head_dim_v, m.scale};
}

// The QKV epilogue shared by the fused classes: q, k, v hold the projections (biases already
// applied); per-head norms (qwen3) and rope run in place, then K/V go to the layer's cache.
void qkv_epilogue(TensorMap& tm, const graph::FusedQkvMeta& m, const int32_t* pos, int64_t nt,
                  float* q, float* k, const float* v) {
  if (!m.q_norm.empty()) {
    cpu::rms_norm(q, vec_or_null(tm, m.q_norm, m.head_dim), nt * m.n_head, m.head_dim, m.norm_eps, q);
    cpu::rms_norm(k, vec_or_null(tm, m.k_norm, m.head_dim), nt * m.n_head_kv, m.head_dim,
                  m.norm_eps, k);
  }
  const cpu::RopeParams rp =
      rope_params(tm, m.rope_style, m.n_rot, m.freq_base, m.freq_scale, m.freq_factors, m.yarn);
  cpu::rope(q, pos, nt, m.n_head, m.head_dim, rp);
  cpu::rope(k, pos, nt, m.n_head_kv, m.head_dim, rp);
  sched::KvPair kv = tm.kv(m.layer);
  cpu::kv_store(kv.k, k, pos, nt);
  cpu::kv_store(kv.v, v, pos, nt);
}

void add_bias(float* x, const float* b, int64_t nt, int64_t d) {
  if (b == nullptr) return;
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t i = 0; i < d; ++i) x[t * d + i] += b[i];
}

}  // namespace

bool CpuBackend::supports(const graph::CNode& node) const { return true; }

void CpuBackend::compute(const graph::CNode& node, sched::TensorMap& tm) {
  const graph::NodeId prev_matmul_src = std::exchange(prev_matmul_src_, -1);
  const int64_t n = node.n_elements();
  const int64_t nt = rows_of(node);
  auto src_f32 = [&](size_t i) { return tm.f32(node.src.at(i)); };
  auto src_i32 = [&](size_t i) { return tm.i32(node.src.at(i)); };
  auto out = [&] { return tm.f32(node.id); };
  // FusedQKV and FusedQkvNorm: the three projections of one input, then the shared epilogue.
  auto fused_qkv = [&] {
    const auto& m = std::get<graph::FusedQkvMeta>(node.meta);
    const float* x = src_f32(0);
    scratch_k_.resize(size_t(nt * m.n_head_kv * m.head_dim));
    scratch_v_.resize(size_t(nt * m.n_head_kv * m.head_dim_v));
    float* q = out();
    cpu::MatmulJob jobs[3] = {{view(tm, m.wq), nullptr, q},
                              {view(tm, m.wk), nullptr, scratch_k_.data()},
                              {view(tm, m.wv), nullptr, scratch_v_.data()}};
    jobs[0].bias = vec_or_null(tm, m.bq, jobs[0].w.rows);
    jobs[1].bias = vec_or_null(tm, m.bk, jobs[1].w.rows);
    jobs[2].bias = vec_or_null(tm, m.bv, jobs[2].w.rows);
    cpu::matmul_multi(jobs, 3, x, nt);
    qkv_epilogue(tm, m, src_i32(1), nt, q, scratch_k_.data(), scratch_v_.data());
  };

  std::visit(
      Overload{
          [&](const graph::OpInput&) {},
          [&](const graph::OpKvLoad&) {},  // a view: attention reads the regions directly
          [&](const graph::OpAdd&) { cpu::add(src_f32(0), src_f32(1), out(), n); },
          [&](const graph::OpMul&) { cpu::mul(src_f32(0), src_f32(1), out(), n); },
          [&](const graph::OpSilu&) { cpu::silu(src_f32(0), out(), n); },
          [&](const graph::OpSwiGLU&) { cpu::swiglu(src_f32(0), src_f32(1), out(), n); },
          [&](const graph::OpRmsNorm& op) {
            const auto& m = std::get<graph::NormMeta>(node.meta);
            const int64_t d = node.shape[0];
            cpu::rms_norm(src_f32(0), vec_or_null(tm, m.weight, d), nt, d, op.eps, out());
          },
          [&](const graph::OpQkNorm& op) {
            const auto& m = std::get<graph::NormMeta>(node.meta);
            cpu::rms_norm(src_f32(0), vec_or_null(tm, m.weight, op.hd), nt * op.nh, op.hd, op.eps,
                          out());
          },
          [&](const graph::OpMatMul&) {
            const auto& m = std::get<graph::MatMulMeta>(node.meta);
            const cpu::WeightView w = view(tm, m.weight);
            cpu::matmul(w, src_f32(0), nt, out(), vec_or_null(tm, m.bias, w.rows),
                        prev_matmul_src == node.src[0]);
            prev_matmul_src_ = node.src[0];
          },
          [&](const graph::OpEmbedding&) {
            const auto& m = std::get<graph::EmbedMeta>(node.meta);
            const cpu::WeightView w = view(tm, m.weight);
            const int32_t* ids = src_i32(0);
            check_ids(ids, nt, w.rows, node);
            cpu::get_rows(w, ids, nt, out());
          },
          [&](const graph::OpGetRows&) {
            const int64_t d = node.shape[0];
            const graph::CNode& src = tm.node(node.src[0]);
            if (src.shape[0] != d) fail("node {} ({}): rows of {} from rows of {}", node.id, node.name, d, src.shape[0]);
            const int64_t x_rows = rows_of(src);
            const int32_t* ids = src_i32(1);
            check_ids(ids, nt, x_rows, node);
            const float* xs = src_f32(0);
            float* y = out();
            for (int64_t i = 0; i < nt; ++i)
              std::memcpy(y + i * d, xs + int64_t(ids[i]) * d, sizeof(float) * size_t(d));
          },
          [&](const graph::OpRope& op) {
            const auto& m = std::get<graph::RopeMeta>(node.meta);
            // Out of place when the allocator did not alias y to x: no separate copy pass.
            cpu::rope_to(src_f32(0), out(), src_i32(1), nt, m.n_head, m.head_dim,
                         rope_params(tm, op.style, m.n_rot, m.freq_base, m.freq_scale, m.freq_factors, m.yarn));
          },
          [&](const graph::OpKvStore& op) {
            const auto& m = std::get<graph::KvMeta>(node.meta);
            // The node's own shape is the region's; the batch size comes from K.
            const int64_t ntk = rows_of(tm.node(node.src[0]));
            sched::KvPair kv = tm.kv(op.layer);
            if (kv.k.width != m.k_width || kv.v.width != m.v_width ||
                tm.node(node.src[0]).shape[0] != m.k_width || tm.node(node.src[1]).shape[0] != m.v_width) {
              fail("node {} ({}): K/V widths do not match the layer's cache", node.id, node.name);
            }
            const int32_t* pos = src_i32(2);
            cpu::kv_store(kv.k, src_f32(0), pos, ntk);
            cpu::kv_store(kv.v, src_f32(1), pos, ntk);
          },
          [&](const graph::OpAttn& op) {
            const auto& m = std::get<graph::AttnMeta>(node.meta);
            sched::KvPair kv = tm.kv(m.layer);
            cpu::attention(src_f32(0), src_i32(2), nt, kv.k, kv.v, attn_params(m), out());
          },
          [&](const graph::OpFusedQKV&) { fused_qkv(); },
          [&](const graph::OpFusedQkvNorm&) { fused_qkv(); },  // the epilogue applies the norms
          [&](const graph::OpQkvBiasRopeStore&) {
            const auto& m = std::get<graph::FusedQkvMeta>(node.meta);
            const int64_t dq = m.n_head * m.head_dim, dk = m.n_head_kv * m.head_dim,
                          dv = m.n_head_kv * m.head_dim_v;
            float* q = out();
            if (q != src_f32(0)) std::memcpy(q, src_f32(0), sizeof(float) * size_t(nt * dq));
            scratch_k_.assign(src_f32(1), src_f32(1) + nt * dk);
            scratch_v_.assign(src_f32(2), src_f32(2) + nt * dv);
            add_bias(q, vec_or_null(tm, m.bq, dq), nt, dq);
            add_bias(scratch_k_.data(), vec_or_null(tm, m.bk, dk), nt, dk);
            add_bias(scratch_v_.data(), vec_or_null(tm, m.bv, dv), nt, dv);
            qkv_epilogue(tm, m, src_i32(3), nt, q, scratch_k_.data(), scratch_v_.data());
          },
          [&](const graph::OpKvShift& op) {
            const auto& m = std::get<graph::KvShiftMeta>(node.meta);
            sched::KvPair kv = tm.kv(op.layer);
            if (kv.k.width != m.kv.k_width || kv.v.width != m.kv.v_width || kv.k.n_ctx != m.kv.n_ctx)
              fail("node {} ({}): the shift does not match the layer's cache", node.id, node.name);
            const int32_t* a = src_i32(0);  // n_keep, n_discard, n_past
            const graph::RopeMeta& r = m.rope;
            cpu::kv_shift(kv.k, kv.v, a[0], a[1], a[2],
                          rope_params(tm, op.style, r.n_rot, r.freq_base, r.freq_scale, r.freq_factors, r.yarn));
          },
          [&](const graph::OpFusedFFN&) {
            const auto& m = std::get<graph::FusedFfnMeta>(node.meta);
            cpu::matmul_swiglu(view(tm, m.gate), view(tm, m.up), src_f32(0), nt, out());
          },
      },
      node.op);
}

}  // namespace minfer::runtime
