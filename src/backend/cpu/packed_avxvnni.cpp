// The packed kernels for CPUs with AVX2 and AVX-VNNI (256-bit vpdpbusd): see packed_256.h.
#include "backend/cpu/packed_gemm.h"

#if defined(__x86_64__)
#include "backend/cpu/isa_target.h"
MINFER_ISA_BEGIN(MINFER_ISA_AVXVNNI)
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#define MINFER_PACKED_VNNI 1
#include "backend/cpu/packed_256.h"

namespace minfer::cpu {
PackedGemmFn packed_gemm_avxvnni(GgmlType t) { return packed_gemm_256(t); }
}  // namespace minfer::cpu

MINFER_ISA_END()

#else  // not x86-64

namespace minfer::cpu {
PackedGemmFn packed_gemm_avxvnni(GgmlType) { return nullptr; }
}  // namespace minfer::cpu

#endif
