// Rotary position embedding with ggml_rope_ext's arithmetic: the angle of pair i is built by
// repeated multiplication theta *= base^(-2/n_rot) from theta = pos (not pow per pair), as
// ggml's rope cache does, so the angles match bit for bit.
#include <cmath>
#include <vector>

#include "backend/cpu/kernels.h"

namespace minfer::cpu {

void rope(float* x, const int32_t* pos, int64_t nt, int64_t n_head, int64_t head_dim,
          const RopeParams& p) {
  const int64_t n_rot = p.n_rot;
  const int64_t half = n_rot / 2;
  const float theta_scale = std::pow(p.freq_base, -2.0f / float(n_rot));
  thread_local std::vector<float> cs;  // cos, sin per pair
  cs.resize(size_t(2 * half));
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

}  // namespace minfer::cpu
