// Which kernel path a weight type really takes, for tools that must not silently measure the
// wrong thing (minfer bench): dot_tile() falls back to a lower ISA, down to scalar, when the
// requested one has no kernel for a type, and nothing else reports that fallback.
#pragma once
#include "backend/cpu/cpu_features.h"
#include "quant/types.h"

namespace minfer::cpu {

// The ISA of the kernel that matmul uses for weights of `wtype` when the active path is `isa`.
Isa matmul_isa(GgmlType wtype, Isa isa);
inline Isa matmul_isa(GgmlType wtype) { return matmul_isa(wtype, active_isa()); }

// Whether weights are repacked into another layout when the model is loaded. The kernels
// repack Q8_0-activation types into 16-row panels on the fly inside prefill GEMMs only; no
// load-time repacking exists yet, so this is false until the kernels gain it.
bool weights_repacked_at_load(GgmlType wtype);

}  // namespace minfer::cpu
