// The instruction set of a region of a file (one ISA's kernels, compiled beside the baseline
// code and chosen at run time): GCC's target pragma, or Clang's attribute region, which Clang
// takes instead of it. Clang builds also keep floating-point contraction off (CMakeLists.txt),
// as the regions' `#pragma GCC optimize("fp-contract=off")` does for GCC, so that only explicit
// FMA intrinsics fuse and the kernels round as the scalar ones.
#pragma once

// The instruction sets of the kernel files. A function that needs more (AMX tiles, BF16 dot
// products) names its file's set plus its own: Clang's target attribute replaces the region's
// instead of adding to it, as GCC's does.
#define MINFER_ISA_AVX2 "avx2,fma,f16c"
#define MINFER_ISA_AVXVNNI MINFER_ISA_AVX2 ",avxvnni"
#define MINFER_ISA_AVX512 MINFER_ISA_AVX2 ",avx512f,avx512bw,avx512vl"
#define MINFER_ISA_AVX512VNNI MINFER_ISA_AVX512 ",avx512vnni"

#define MINFER_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define MINFER_ISA_BEGIN(isa) MINFER_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define MINFER_ISA_END() MINFER_PRAGMA(clang attribute pop)
#else
#define MINFER_ISA_BEGIN(isa) MINFER_PRAGMA(GCC push_options) MINFER_PRAGMA(GCC target(isa))
#define MINFER_ISA_END() MINFER_PRAGMA(GCC pop_options)
#endif

// A loop of prefetches that must stay a loop. Clang unrolls a packed K-quant super-block's 37
// line prefetches into one burst, and the one-token rows then streamed from memory at 25-32
// GB/s against the 33-36 of GCC's rolled loop (GemvPackedCold Q4_K/Q6_K 6144 x 1024, one core,
// Zen 5); rolled, Clang's build streams as fast as GCC's. (GCC takes the pragma as well.)
#define MINFER_ROLLED_LOOP MINFER_PRAGMA(GCC unroll 1)
