// The packed kernels for CPUs with AVX2 (maddubs + madd): see packed_256.h.
#include "backend/cpu/packed_gemm.h"

#if defined(__x86_64__)
#include "backend/cpu/isa_target.h"
MINFER_ISA_BEGIN(MINFER_ISA_AVX2)
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#define MINFER_PACKED_VNNI 0
#include "backend/cpu/packed_256.h"

namespace minfer::cpu {
PackedGemmFn packed_gemm_avx2(GgmlType t) { return packed_gemm_256(t); }
}  // namespace minfer::cpu

MINFER_ISA_END()

#else  // not x86-64

namespace minfer::cpu {
PackedGemmFn packed_gemm_avx2(GgmlType) { return nullptr; }
}  // namespace minfer::cpu

#endif
