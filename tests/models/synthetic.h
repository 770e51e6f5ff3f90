// A descriptor-only qwen2.5-0.5b (24 layers, n_embd 896, 14/2 heads of 64, n_ff 4864, vocab
// 151936, q/k/v biases, tied output): enough for the graph builder, which needs no weights.
#pragma once
#include <string>

#include "models/hparams.h"
#include "models/tensors.h"

namespace minfer::test {

inline models::HParams qwen25_05b_hparams() {
  models::HParams hp;
  hp.arch = models::Arch::Qwen2;
  hp.n_vocab = 151936;
  hp.n_ctx_train = 32768;
  hp.n_embd = 896;
  hp.n_layer = 24;
  hp.n_ff = 4864;
  hp.n_head = 14;
  hp.n_head_kv = 2;
  hp.head_dim = hp.head_dim_v = hp.n_rot = 64;
  hp.rope_freq_base = 1e6f;
  hp.rms_eps = 1e-6f;
  hp.neox_rope = true;
  hp.tied_output = true;
  hp.qkv_bias = true;
  return hp;
}

inline models::TensorTable qwen25_05b_tensors(GgmlType wt = GgmlType::Q8_0) {
  const models::HParams hp = qwen25_05b_hparams();
  models::TensorTable t("qwen2.5-0.5b (synthetic)");
  auto add = [&](const std::string& n, GgmlType ty, int64_t a, int64_t b) {
    t.add({n, ty, {a, b, 1, 1}, nullptr});
  };
  add("token_embd.weight", wt, hp.n_embd, hp.n_vocab);
  add("output_norm.weight", GgmlType::F32, hp.n_embd, 1);
  for (int i = 0; i < hp.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    add(b + "attn_norm.weight", GgmlType::F32, hp.n_embd, 1);
    add(b + "attn_q.weight", wt, hp.n_embd, hp.n_embd_q());
    add(b + "attn_k.weight", wt, hp.n_embd, hp.n_embd_k());
    add(b + "attn_v.weight", wt, hp.n_embd, hp.n_embd_v());
    add(b + "attn_q.bias", GgmlType::F32, hp.n_embd_q(), 1);
    add(b + "attn_k.bias", GgmlType::F32, hp.n_embd_k(), 1);
    add(b + "attn_v.bias", GgmlType::F32, hp.n_embd_v(), 1);
    add(b + "attn_output.weight", wt, hp.n_embd_attn_out(), hp.n_embd);
    add(b + "ffn_norm.weight", GgmlType::F32, hp.n_embd, 1);
    add(b + "ffn_gate.weight", wt, hp.n_embd, hp.n_ff);
    add(b + "ffn_up.weight", wt, hp.n_embd, hp.n_ff);
    add(b + "ffn_down.weight", wt, hp.n_ff, hp.n_embd);
  }
  return t;
}

}  // namespace minfer::test
