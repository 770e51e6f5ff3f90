#include <array>
#include <string>

#include "common/error.h"
#include "models/hparams.h"
#include "models/tensors.h"

namespace minfer::models {
namespace {

struct Checker {
  const TensorTable& t;

  void expect(const std::string& name, std::array<int64_t, 2> ne, bool matrix) const {
    const TensorRef& r = t.get(name);
    if (r.ne[0] != ne[0] || r.ne[1] != ne[1] || r.ne[2] != 1 || r.ne[3] != 1) {
      fail("{}: tensor {}: shape [{}, {}, {}, {}] but [{}, {}] expected", t.source(), name, r.ne[0],
           r.ne[1], r.ne[2], r.ne[3], ne[0], ne[1]);
    }
    const TypeTraits& tr = type_traits(r.type);
    if (matrix) {
      if (!tr.has_dequant) fail("{}: tensor {}: type {} is not supported", t.source(), name, tr.name);
      if (ne[0] % tr.block_size != 0) {
        fail("{}: tensor {}: row length {} is not a multiple of the {} block size {}", t.source(),
             name, ne[0], tr.name, tr.block_size);
      }
    } else if (r.type != GgmlType::F32) {
      // Norm weights and biases are read as plain floats by the kernels, as ggml keeps them.
      fail("{}: tensor {}: type {} but F32 expected", t.source(), name, tr.name);
    }
  }
  void vec(const std::string& name, int64_t n) const { expect(name, {n, 1}, false); }
  void mat(const std::string& name, int64_t in, int64_t out) const { expect(name, {in, out}, true); }
};

}  // namespace

void check_tensors(const HParams& hp, const TensorTable& t) {
  const Checker c{t};
  c.mat("token_embd.weight", hp.n_embd, hp.n_vocab);
  c.vec("output_norm.weight", hp.n_embd);
  if (!hp.tied_output) c.mat("output.weight", hp.n_embd, hp.n_vocab);
  if (hp.rope_freqs) c.vec("rope_freqs.weight", hp.n_rot / 2);
  for (int64_t i = 0; i < hp.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    c.vec(b + "attn_norm.weight", hp.n_embd);
    c.mat(b + "attn_q.weight", hp.n_embd, hp.n_embd_q());
    c.mat(b + "attn_k.weight", hp.n_embd, hp.n_embd_k());
    c.mat(b + "attn_v.weight", hp.n_embd, hp.n_embd_v());
    c.mat(b + "attn_output.weight", hp.n_embd_attn_out(), hp.n_embd);
    if (hp.qkv_bias) {
      c.vec(b + "attn_q.bias", hp.n_embd_q());
      c.vec(b + "attn_k.bias", hp.n_embd_k());
      c.vec(b + "attn_v.bias", hp.n_embd_v());
    }
    if (hp.qk_norm) {
      c.vec(b + "attn_q_norm.weight", hp.head_dim);
      c.vec(b + "attn_k_norm.weight", hp.head_dim);
    }
    c.vec(b + "ffn_norm.weight", hp.n_embd);
    c.mat(b + "ffn_gate.weight", hp.n_embd, hp.n_ff);
    c.mat(b + "ffn_up.weight", hp.n_embd, hp.n_ff);
    c.mat(b + "ffn_down.weight", hp.n_ff, hp.n_embd);
  }
}

}  // namespace minfer::models
