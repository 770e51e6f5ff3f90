// A scalar reference backend for the scheduler tests: plain loops over F32 data, written
// from the op definitions (not from the CPU kernels), plus a map-backed WeightStore. One
// class serves as the "CPU" (everything) and as a partial accelerator (a subset of ops,
// holding some weights), so that split execution can be compared with single-backend runs.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "sched/backend.h"

namespace minfer::test {

class MapWeights final : public sched::WeightStore {
 public:
  explicit MapWeights(std::map<std::string, std::vector<float>> w) : data_(std::move(w)) {
    for (auto& [name, v] : data_) {
      sched::WeightRef r;
      r.type = GgmlType::F32;
      r.data = reinterpret_cast<const uint8_t*>(v.data());
      r.ne = {int64_t(v.size()), 1, 1, 1};
      r.nbytes = v.size() * sizeof(float);
      refs_[name] = r;
    }
  }
  const sched::WeightRef* find(const std::string& name) const override {
    auto it = refs_.find(name);
    return it == refs_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, std::vector<float>> data_;
  std::map<std::string, sched::WeightRef> refs_;
};

// Element e (of the whole row, heads in order) at position pos of an F32 KV region, in its
// head-major layout (cpu::KvRegion).
inline float& kv_at(const cpu::KvRegion& r, int64_t pos, int64_t e) {
  const int64_t hw = r.width / r.n_heads;
  return reinterpret_cast<float*>(cpu::kv_row(r, e / hw, pos))[e % hw];
}

class RefBackend final : public sched::Backend {
 public:
  using Filter = std::function<bool(const graph::CNode&)>;

  explicit RefBackend(std::string name, Filter supports = {}, std::set<std::string> held = {},
                      bool swiglu = true)
      : name_(std::move(name)), filter_(std::move(supports)), held_(std::move(held)),
        swiglu_(swiglu) {}

  const std::string& name() const override { return name_; }
  bool supports(const graph::CNode& n) const override { return !filter_ || filter_(n); }
  bool has_fused(sched::FusedKind k) const override {
    return swiglu_ && k == sched::FusedKind::SwiGLU;
  }
  bool holds_weight(const std::string& w) const override { return held_.count(w) > 0; }

  // Every source pointer the backend read, to check that cross-backend sources were copied.
  std::vector<const void*> reads;
  std::vector<graph::NodeId> computed;
  std::vector<size_t> runs_at;  // how many nodes this backend had computed at each begin_run
  void begin_run() override { runs_at.push_back(computed.size()); }

  void compute(const graph::CNode& n, sched::TensorMap& t) override {
    if (!supports(n)) fail("{} asked to run unsupported node {}", name_, n.name);
    computed.push_back(n.id);
    using namespace graph;
    const int64_t nt = n.shape[1];
    const int64_t d = n.shape[0];
    auto src = [&](size_t i) {
      const float* p = t.f32(n.src[i]);
      reads.push_back(p);
      return p;
    };
    auto srci = [&](size_t i) {
      const int32_t* p = t.i32(n.src[i]);
      reads.push_back(p);
      return p;
    };
    auto w = [&](const std::string& name) {
      return reinterpret_cast<const float*>(t.weight(name).data);
    };
    float* out = nullptr;
    if (!std::holds_alternative<OpKvStore>(n.op)) out = t.f32(n.id);
    const int64_t count = n.n_elements();

    if (std::holds_alternative<OpAdd>(n.op) || std::holds_alternative<OpMul>(n.op) ||
        std::holds_alternative<OpSwiGLU>(n.op)) {
      const float* a = src(0);
      const float* b = src(1);
      for (int64_t i = 0; i < count; ++i) {
        if (std::holds_alternative<OpAdd>(n.op)) out[i] = a[i] + b[i];
        else if (std::holds_alternative<OpMul>(n.op)) out[i] = a[i] * b[i];
        else out[i] = a[i] / (1.0f + std::exp(-a[i])) * b[i];
      }
    } else if (std::holds_alternative<OpSilu>(n.op)) {
      const float* a = src(0);
      for (int64_t i = 0; i < count; ++i) out[i] = a[i] / (1.0f + std::exp(-a[i]));
    } else if (std::holds_alternative<OpEmbedding>(n.op)) {
      const int32_t* ids = srci(0);
      const float* e = w(std::get<EmbedMeta>(n.meta).weight);
      for (int64_t r = 0; r < nt; ++r)
        for (int64_t i = 0; i < d; ++i) out[r * d + i] = e[ids[r] * d + i];
    } else if (std::holds_alternative<OpGetRows>(n.op)) {
      const float* x = src(0);
      const int32_t* ids = srci(1);
      for (int64_t r = 0; r < nt; ++r)
        for (int64_t i = 0; i < d; ++i) out[r * d + i] = x[ids[r] * d + i];
    } else if (const auto* rn = std::get_if<OpRmsNorm>(&n.op)) {
      const float* x = src(0);
      const std::string& wn = std::get<NormMeta>(n.meta).weight;
      const float* g = wn.empty() ? nullptr : w(wn);
      for (int64_t r = 0; r < nt; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < d; ++i) ss += double(x[r * d + i]) * x[r * d + i];
        const float scale = 1.0f / std::sqrt(float(ss / double(d)) + rn->eps);
        for (int64_t i = 0; i < d; ++i) out[r * d + i] = x[r * d + i] * scale * (g ? g[i] : 1.0f);
      }
    } else if (std::holds_alternative<OpMatMul>(n.op)) {
      const auto& m = std::get<MatMulMeta>(n.meta);
      matmul(src(0), w(m.weight), m.bias.empty() ? nullptr : w(m.bias), m.in_dim, m.out_dim, nt,
             out);
    } else if (const auto* ro = std::get_if<OpRope>(&n.op)) {
      const auto& m = std::get<RopeMeta>(n.meta);
      const float* x = src(0);
      const int32_t* pos = srci(1);
      std::copy(x, x + count, out);
      for (int64_t r = 0; r < nt; ++r)
        for (int64_t h = 0; h < m.n_head; ++h)
          rope_head(out + r * d + h * m.head_dim, pos[r], m.n_rot, m.freq_base,
                    ro->style == RopeStyle::NeoX);
    } else if (std::holds_alternative<OpKvStore>(n.op)) {
      const auto& m = std::get<KvMeta>(n.meta);
      const float* k = src(0);
      const float* v = src(1);
      const int32_t* pos = srci(2);
      sched::KvPair kv = t.kv(m.layer);
      for (int64_t r = 0; r < t.node(n.src[0]).shape[1]; ++r) {
        for (int64_t e = 0; e < m.k_width; ++e) kv_at(kv.k, pos[r], e) = k[r * m.k_width + e];
        for (int64_t e = 0; e < m.v_width; ++e) kv_at(kv.v, pos[r], e) = v[r * m.v_width + e];
      }
    } else if (std::holds_alternative<OpAttn>(n.op)) {
      const auto& m = std::get<AttnMeta>(n.meta);
      const float* q = src(0);
      const int32_t* pos = srci(2);
      sched::KvPair kv = t.kv(m.layer);
      const int64_t qw = t.node(n.src[0]).shape[0];
      const int64_t group = m.n_head / m.n_head_kv;
      for (int64_t r = 0; r < nt; ++r)
        for (int64_t h = 0; h < m.n_head; ++h) {
          const float* qh = q + r * qw + h * m.head_dim;
          const int64_t kh = h / group;
          std::vector<float> s(size_t(pos[r]) + 1);
          float mx = -INFINITY;
          for (int64_t j = 0; j <= pos[r]; ++j) {
            float acc = 0;
            for (int64_t i = 0; i < m.head_dim; ++i)
              acc += qh[i] * kv_at(kv.k, j, kh * m.head_dim + i);
            s[size_t(j)] = acc * m.scale;
            mx = std::max(mx, s[size_t(j)]);
          }
          float sum = 0;
          for (float& x : s) sum += (x = std::exp(x - mx));
          float* o = out + r * d + h * m.head_dim_v;
          for (int64_t i = 0; i < m.head_dim_v; ++i) {
            float acc = 0;
            for (int64_t j = 0; j <= pos[r]; ++j)
              acc += s[size_t(j)] * kv_at(kv.v, j, kh * m.head_dim_v + i);
            o[i] = acc / sum;
          }
        }
    } else if (std::holds_alternative<OpFusedQKV>(n.op) ||
               std::holds_alternative<OpQkvBiasRopeStore>(n.op)) {
      // q/k/v (+ biases) -> rope q, k -> store k, v at pos -> output q.
      const auto& m = std::get<FusedQkvMeta>(n.meta);
      const bool fused = std::holds_alternative<OpFusedQKV>(n.op);
      const int64_t qw = m.n_head * m.head_dim, kw = m.n_head_kv * m.head_dim,
                    vw = m.n_head_kv * m.head_dim_v;
      std::vector<float> k(size_t(kw * nt)), v(size_t(vw * nt));
      const int32_t* pos = srci(fused ? 1 : 3);
      if (fused) {
        const float* x = src(0);
        auto bias = [&](const std::string& b) { return b.empty() ? nullptr : w(b); };
        matmul(x, w(m.wq), bias(m.bq), m.in_dim, qw, nt, out);
        matmul(x, w(m.wk), bias(m.bk), m.in_dim, kw, nt, k.data());
        matmul(x, w(m.wv), bias(m.bv), m.in_dim, vw, nt, v.data());
      } else {
        auto with_bias = [&](const float* in, const std::string& b, int64_t width, float* dst) {
          for (int64_t r = 0; r < nt; ++r)
            for (int64_t i = 0; i < width; ++i)
              dst[r * width + i] = in[r * width + i] + (b.empty() ? 0.0f : w(b)[i]);
        };
        with_bias(src(0), m.bq, qw, out);
        with_bias(src(1), m.bk, kw, k.data());
        with_bias(src(2), m.bv, vw, v.data());
      }
      const bool neox = m.rope_style == RopeStyle::NeoX;
      sched::KvPair kv = t.kv(m.layer);
      for (int64_t r = 0; r < nt; ++r) {
        for (int64_t h = 0; h < m.n_head; ++h)
          rope_head(out + r * qw + h * m.head_dim, pos[r], m.n_rot, m.freq_base, neox);
        for (int64_t h = 0; h < m.n_head_kv; ++h)
          rope_head(k.data() + r * kw + h * m.head_dim, pos[r], m.n_rot, m.freq_base, neox);
        for (int64_t e = 0; e < kw; ++e) kv_at(kv.k, pos[r], e) = k[size_t(r * kw + e)];
        for (int64_t e = 0; e < vw; ++e) kv_at(kv.v, pos[r], e) = v[size_t(r * vw + e)];
      }
    } else if (std::holds_alternative<OpFusedFFN>(n.op)) {
      const auto& m = std::get<FusedFfnMeta>(n.meta);
      const float* x = src(0);
      std::vector<float> gate(size_t(m.nf * nt)), up(size_t(m.nf * nt));
      matmul(x, w(m.gate), nullptr, m.in_dim, m.nf, nt, gate.data());
      matmul(x, w(m.up), nullptr, m.in_dim, m.nf, nt, up.data());
      for (int64_t i = 0; i < count; ++i)
        out[i] = gate[size_t(i)] / (1.0f + std::exp(-gate[size_t(i)])) * up[size_t(i)];
    } else {
      fail("{}: no reference for {}", name_, graph::op_name(n.op));
    }
  }

 private:
  static void matmul(const float* x, const float* W, const float* bias, int64_t in, int64_t outd,
                     int64_t nt, float* y) {
    for (int64_t r = 0; r < nt; ++r)
      for (int64_t o = 0; o < outd; ++o) {
        float acc = 0;
        for (int64_t i = 0; i < in; ++i) acc += W[o * in + i] * x[r * in + i];
        y[r * outd + o] = acc + (bias ? bias[o] : 0.0f);
      }
  }
  static void rope_head(float* x, int32_t pos, int64_t n_rot, float base, bool neox) {
    for (int64_t i = 0; i < n_rot / 2; ++i) {
      const float theta = float(pos) * std::pow(base, -2.0f * float(i) / float(n_rot));
      const float c = std::cos(theta), s = std::sin(theta);
      const int64_t a = neox ? i : 2 * i, b = neox ? i + n_rot / 2 : 2 * i + 1;
      const float x0 = x[a], x1 = x[b];
      x[a] = x0 * c - x1 * s;
      x[b] = x0 * s + x1 * c;
    }
  }

  std::string name_;
  Filter filter_;
  std::set<std::string> held_;
  bool swiglu_;
};

}  // namespace minfer::test
