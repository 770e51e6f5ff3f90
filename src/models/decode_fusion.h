// Which fusion class a layer gets (design 05 §2.6). Decided at build time from GraphParams,
// the layer's tensors and the fused kernels the backend has, never from data:
//   FusedQKV          nt == 1, fuse_qkv, q/k/v biases, q/k/v of one type   (qwen2)
//   QkvBiasRopeStore  as above but q/k/v of mixed types
//   FusedQkvNorm      nt == 1, fuse_qkv, per-head q/k norms                 (qwen3)
//   FusedFFN          any nt, fuse_ffn, gate/up of one type, nf <= 16384
// FusedFFN departs from the design's decode-only rule: the CPU kernel (cpu::matmul_swiglu)
// combines gate and up inside each work item, so a prompt's two [nt, nf] products never reach
// memory (qwen2.5-0.5b pp512 +8-11 %).
#pragma once
#include <string>

#include "graph/params.h"
#include "models/hparams.h"
#include "models/tensors.h"

namespace minfer::models {

// What the backend that will run the layer can do (sched::Backend::has_fused).
struct FusedKernels {
  bool qkv = false;
  bool qkv_bias_rope_store = false;
  bool qkv_norm = false;
  bool ffn = false;
};

enum class QkvClass { Unfused, FusedQKV, QkvBiasRopeStore, FusedQkvNorm };

QkvClass qkv_class(const HParams& hp, const TensorTable& t, int layer,
                   const graph::GraphParams& p, const FusedKernels& k);
bool fuse_ffn(const HParams& hp, const TensorTable& t, int layer, const graph::GraphParams& p,
              const FusedKernels& k);

// The design measured the single wide gate+up product slower above this width (7B, nf 18944).
constexpr int64_t kMaxFusedFfnWidth = 16384;

}  // namespace minfer::models
