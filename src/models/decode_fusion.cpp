#include "models/decode_fusion.h"

namespace minfer::models {
namespace {

std::string blk(int layer, const char* rest) { return "blk." + std::to_string(layer) + "." + rest; }

}  // namespace

QkvClass qkv_class(const HParams& hp, const TensorTable& t, int layer,
                   const graph::GraphParams& p, const FusedKernels& k) {
  if (p.n_tokens != 1 || !p.cparams.fuse_qkv) return QkvClass::Unfused;
  if (hp.qk_norm) return k.qkv_norm ? QkvClass::FusedQkvNorm : QkvClass::Unfused;
  if (!hp.qkv_bias) return QkvClass::Unfused;
  const GgmlType tq = t.get(blk(layer, "attn_q.weight")).type;
  const bool same = t.get(blk(layer, "attn_k.weight")).type == tq &&
                    t.get(blk(layer, "attn_v.weight")).type == tq;
  if (same && k.qkv) return QkvClass::FusedQKV;
  if (k.qkv_bias_rope_store) return QkvClass::QkvBiasRopeStore;
  return QkvClass::Unfused;
}

bool fuse_ffn(const HParams& hp, const TensorTable& t, int layer, const graph::GraphParams& p,
              const FusedKernels& k) {
  return p.cparams.fuse_ffn && k.ffn && hp.n_ff <= kMaxFusedFfnWidth &&
         t.get(blk(layer, "ffn_gate.weight")).type == t.get(blk(layer, "ffn_up.weight")).type;
}

}  // namespace minfer::models
