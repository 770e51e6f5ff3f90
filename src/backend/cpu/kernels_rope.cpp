// Rotary position embedding with ggml_rope_ext's arithmetic: the angle of pair i is built by
// repeated multiplication theta *= base^(-2/n_rot) from theta = pos (not pow per pair), as
// ggml's rope cache does, so the angles match bit for bit.
//
// The cos/sin table depends only on the positions and the rope parameters, which every layer
// (and Q and K) share: it is kept per calling thread and rebuilt only when they change, so a
// forward pass computes it once. The rotation itself is vectorized (kernels_ops.h) without FMA
// contraction, so results are bit-identical to the scalar formula.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_ops.h"
#include "backend/cpu/threadpool.h"

namespace minfer::cpu {

// Table layout per token (width = n_rot floats each): NeoX: cos_t[i], sin_t[i] for pair i <
// n_rot/2. Normal: cos_t[2i] = cos_t[2i+1] = cos(i), sin_t[2i] = -sin(i), sin_t[2i+1] = sin(i).
void rope_rows_scalar(const float* x, float* y, int64_t n_rows, int64_t head_dim, int64_t n_rot,
                      RopeStyle style, const float* ct, const float* st) {
  const int64_t half = n_rot / 2;
  for (int64_t h = 0; h < n_rows; ++h) {
    const float* v = x + h * head_dim;
    float* o = y + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const bool neox = style == RopeStyle::NeoX;
      const int64_t a = neox ? i : 2 * i;
      const int64_t b = neox ? i + half : 2 * i + 1;
      const float c = neox ? ct[i] : ct[2 * i], s = neox ? st[i] : st[2 * i + 1];
      const float x0 = v[a], x1 = v[b];
      o[a] = x0 * c - x1 * s;
      o[b] = x0 * s + x1 * c;
    }
    if (o != v)
      for (int64_t i = 2 * half; i < head_dim; ++i) o[i] = v[i];
  }
}

namespace {

struct RopeTable {
  RopeParams params;           // freq_factors points into `factors`
  std::vector<float> factors;  // copy of freq_factors (empty: none)
  std::vector<int32_t> pos;
  std::vector<float> cos_t, sin_t;  // [token][n_rot]
  bool valid = false;

  bool matches(const int32_t* p, int64_t nt, const RopeParams& rp) const {
    const RopeParams& q = params;
    if (!valid || rp.style != q.style || rp.n_rot != q.n_rot || rp.freq_base != q.freq_base ||
        rp.freq_scale != q.freq_scale || rp.ext_factor != q.ext_factor || rp.attn_factor != q.attn_factor ||
        rp.beta_fast != q.beta_fast || rp.beta_slow != q.beta_slow || rp.n_ctx_orig != q.n_ctx_orig ||
        int64_t(pos.size()) != nt)
      return false;
    if ((rp.freq_factors != nullptr) != !factors.empty()) return false;
    if (rp.freq_factors &&
        std::memcmp(rp.freq_factors, factors.data(), factors.size() * sizeof(float)) != 0)
      return false;
    return std::memcmp(p, pos.data(), size_t(nt) * sizeof(int32_t)) == 0;
  }
};

// ggml_rope_yarn_corr_dims: the first and last dimension pair of the YaRN ramp, from the
// dimension whose wavelength makes beta_fast rotations in n_ctx_orig positions to the one that
// makes beta_slow (float arithmetic as ggml's).
void yarn_corr_dims(const RopeParams& p, float dims[2]) {
  auto corr_dim = [&](float n_rot) {
    return float(p.n_rot) * std::log(float(p.n_ctx_orig) / (n_rot * 2 * float(M_PI))) / (2 * std::log(p.freq_base));
  };
  const float start = std::floor(corr_dim(p.beta_fast));
  const float end = std::ceil(corr_dim(p.beta_slow));
  dims[0] = std::max(0.0f, start);
  dims[1] = std::min(float(p.n_rot - 1), end);
}

// ggml's rope_yarn for pair i (dimension i0 = 2i): the angle and the cos/sin magnitude.
void yarn_angle(const RopeParams& p, const float corr[2], int64_t i, float theta_extrap, float& theta,
                float& mscale) {
  const float theta_interp = p.freq_scale * theta_extrap;
  theta = theta_interp;
  mscale = p.attn_factor;
  if (p.ext_factor != 0.0f) {
    const float y = (float(i) - corr[0]) / std::max(0.001f, corr[1] - corr[0]);
    const float ramp_mix = (1 - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
    theta = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
    mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
  }
}

void fill_token(const RopeParams& p, float theta_scale, const float corr[2], int32_t pos, float* ct, float* st) {
  const int64_t half = p.n_rot / 2;
  float theta = float(pos);
  for (int64_t i = 0; i < half; ++i) {
    const float ff = p.freq_factors ? p.freq_factors[i] : 1.0f;
    float th = 0.0f, mscale = 1.0f;
    yarn_angle(p, corr, i, theta / ff, th, mscale);
    const float c = std::cos(th) * mscale, s = std::sin(th) * mscale;
    if (p.style == RopeStyle::NeoX) {
      ct[i] = c;
      st[i] = s;
    } else {
      ct[2 * i] = ct[2 * i + 1] = c;
      st[2 * i] = -s;
      st[2 * i + 1] = s;
    }
    theta *= theta_scale;
  }
}

const RopeTable& table_for(const int32_t* pos, int64_t nt, const RopeParams& p) {
  thread_local RopeTable t;
  if (t.matches(pos, nt, p)) return t;
  t.params = p;
  t.factors.assign(p.freq_factors, p.freq_factors ? p.freq_factors + p.n_rot / 2 : nullptr);
  t.params.freq_factors = t.factors.empty() ? nullptr : t.factors.data();
  t.valid = true;
  t.pos.assign(pos, pos + nt);
  const int64_t w = p.n_rot;
  t.cos_t.resize(size_t(nt * w));
  t.sin_t.resize(size_t(nt * w));
  const float theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot));
  float corr[2];
  yarn_corr_dims(p, corr);
  float* ct = t.cos_t.data();
  float* st = t.sin_t.data();
  auto fill = [&](int64_t t0, int64_t t1) {
    for (int64_t i = t0; i < t1; ++i) fill_token(p, theta_scale, corr, pos[i], ct + i * w, st + i * w);
  };
  constexpr int64_t kTokens = 16;  // a chunk: ~16 x n_rot cos/sin evaluations
  if (nt * w >= 2048 && !in_parallel()) {
    parallel_for((nt + kTokens - 1) / kTokens, [&](int64_t c, int) {
      fill(c * kTokens, std::min(nt, (c + 1) * kTokens));
    });
  } else {
    fill(0, nt);
  }
  return t;
}

}  // namespace

void rope_to(const float* x, float* y, const int32_t* pos, int64_t nt, int64_t n_head,
             int64_t head_dim, const RopeParams& p) {
  if (nt <= 0) return;
  if (p.n_rot <= 0) {
    if (y != x) std::memcpy(y, x, sizeof(float) * size_t(nt * n_head * head_dim));
    return;
  }
  const RopeTable& t = table_for(pos, nt, p);
  const RopeRowsFn f = ops_kernels(active_isa()).rope;
  const int64_t w = p.n_rot, per_token = n_head * head_dim;
  auto tokens = [&](int64_t t0, int64_t t1) {
    for (int64_t i = t0; i < t1; ++i)
      f(x + i * per_token, y + i * per_token, n_head, head_dim, p.n_rot, p.style,
        t.cos_t.data() + i * w, t.sin_t.data() + i * w);
  };
  // Chunks of whole tokens, ~8K elements each; below 256K elements (~20 us of work) the call
  // stays on the calling thread: waking a sleeping worker would cost more.
  const int64_t chunk = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, per_token));
  const int64_t n_chunks = (nt + chunk - 1) / chunk;
  if (nt * per_token >= (int64_t(1) << 18) && n_chunks > 1)
    parallel_for(n_chunks, [&](int64_t c, int) { tokens(c * chunk, std::min(nt, (c + 1) * chunk)); });
  else
    tokens(0, nt);
}

void rope(float* x, const int32_t* pos, int64_t nt, int64_t n_head, int64_t head_dim,
          const RopeParams& p) {
  rope_to(x, x, pos, nt, n_head, head_dim, p);
}

}  // namespace minfer::cpu
