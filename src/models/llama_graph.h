// The forward pass of the llama family (llama, qwen2, qwen3) written through the graph
// builder, per the design's census (05-graph-build.md §2.5): inputs token_ids, positions,
// [tail_ids when n_out < nt], embedding, then per layer
//   rms_norm, matmul q/k/v, [qwen3: qk_norm q, qk_norm k], rope q, rope k, kv_store, kv_load,
//   attn, matmul o, add, rms_norm, matmul gate, matmul up, silu, mul, matmul down, add
// (the last layer narrows to the tail rows with two get_rows after matmul o), then the final
// rms_norm and the lm_head matmul (token_embd.weight when the output is tied).
// Decode graphs (nt == 1) use the fused classes of decode_fusion.h where allowed.
#pragma once
#include "graph/ir.h"
#include "graph/params.h"
#include "models/decode_fusion.h"
#include "models/hparams.h"
#include "models/tensors.h"

namespace minfer::models {

// The KV regions of layer `layer` as the graph declares them (widths, context, heads): the
// runtime creates every layer's regions from this when a context is made.
graph::KvMeta kv_meta(const HParams& hp, int64_t n_ctx, int layer);

// Pure: reads only names, types and shapes of `t` (a descriptor-only table works).
graph::ComputeGraph build_llama_graph(const HParams& hp, const TensorTable& t,
                                      const graph::GraphParams& p,
                                      const FusedKernels& fused = {});

// The context shift (llama.cpp's K-shift graph): input kv_shift = I32 {n_keep, n_discard,
// n_past}, then one KvShift node per layer. Pure like build_llama_graph; its topology depends on
// the model and cparams only, so one graph serves every shift of a context.
graph::ComputeGraph build_kv_shift_graph(const HParams& hp, const TensorTable& t,
                                         const graph::CParams& cp);

}  // namespace minfer::models
