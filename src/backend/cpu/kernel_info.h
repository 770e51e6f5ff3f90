// Which kernel path a weight type really takes, for tools that must not silently measure the
// wrong thing (minfer bench): dot_tile() falls back to a lower ISA, down to scalar, when the
// requested one has no kernel for a type, and nothing else reports that fallback.
#pragma once
#include <string>

#include "backend/cpu/cpu_features.h"
#include "quant/types.h"

namespace minfer::cpu {

// The ISA of the best kernel that matmul uses for weights of `wtype` when the active path is
// `isa` (Amx: prefill on AMX tiles, decode on AVX-512 VNNI, over repacked weights).
Isa matmul_isa(GgmlType wtype, Isa isa);
inline Isa matmul_isa(GgmlType wtype) { return matmul_isa(wtype, active_isa()); }

// matmul_isa(wtype)'s name, as minfer bench reports the path: with "+bf16" where BF16 prompts
// run on vdpbf16ps (avx512_bf16(); without it the same level widens them to F32 FMAs).
std::string matmul_path_name(GgmlType wtype);

// Whether a model loaded now repacks matmul weights of this type (repack.h) for the active
// ISA: Q8_0 and Q4_0 on AVX-512 VNNI and AMX, unless MINFER_NO_REPACK is set (to measure or
// debug the GGUF-layout kernels). Matrices of at least 16 rows are packed, whole groups of 16.
bool weights_repacked_at_load(GgmlType wtype);

// The type a model loaded now holds matmul weights of `wtype` in (convert_weight), or wtype
// itself: TQ1_0 as TQ2_0 (the same values, exactly) wherever the SIMD kernels run. TQ1_0's trits
// cost its one-token rows more than their bytes save (qwen3-0.6b, AVX-512, 2 threads: TQ1_0 tg32
// 76 t/s, TQ2_0 122); the copy is 22 % larger than the file's tensors.
GgmlType weights_converted_at_load(GgmlType wtype);

}  // namespace minfer::cpu
