// Runtime CPU dispatch: which instruction-set path the kernels take. One binary runs on any
// x86-64 (or other) CPU; fast paths are compiled per ISA with target attributes and chosen
// here at run time. Tests and benchmarks force a path to compare it with the scalar one.
#pragma once
#include <cstdint>
#include <vector>

namespace minfer::cpu {

// Ordered by speed, which is not always by inclusion: AvxVnni's 256-bit VEX vpdpbusd is on
// Alder Lake and later client CPUs, Sapphire Rapids and Zen 5, but not on Ice Lake, Cascade
// Lake or Zen 4, which have Avx512. A kernel table indexed "isa >= X" is right for every level
// but AvxVnni, whose kernels are chosen only for isa == AvxVnni (isa_supported() says which
// levels a CPU can run).
enum class Isa : uint8_t {
  Scalar = 0,   // plain C++, the reference every other path is tested against
  Avx2 = 1,     // AVX2 + FMA + F16C
  AvxVnni = 2,  // Avx2 + AVX-VNNI: the packed matmul kernels use 256-bit vpdpbusd
  Avx512 = 3,   // AVX-512 F/BW/VL + VNNI (on top of Avx2)
  Amx = 4,      // AMX-INT8 tiles for prefill matmuls (on top of Avx512), when the OS allows them
};
constexpr int kIsaCount = 5;

const char* isa_name(Isa isa);

// The best path this CPU (and OS) supports.
Isa detected_isa();

// Whether this CPU (and OS) can run the kernels of `isa`.
bool isa_supported(Isa isa);

// Every level this CPU runs, Scalar first (what tests and benchmarks iterate over).
std::vector<Isa> supported_isas();

// The path kernels use now: detected_isa(), capped by the environment variable
// MINFER_ISA=scalar|avx2|avxvnni|avx512|amx when set (to the best supported level at or below
// it), unless force_isa() chose another.
Isa active_isa();

// Makes the kernels use `isa`; Error when the CPU cannot run it. Not thread-safe with
// running kernels: call between kernel calls.
void force_isa(Isa isa);

// Back to the default (detected_isa(), capped by MINFER_ISA).
void reset_isa();

// AVX512_BF16 (vdpbf16ps) beside the Avx512 level: BF16 prompts take it where present (Zen 4 and
// later, Cooper Lake, Sapphire Rapids and later); not a level of its own.
bool avx512_bf16();

// The two weight streams of the AVX-512 decode kernels: the x16 layouts of 32-column blocks
// (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL) and of 256-column super-blocks (the K-quants, IQ4_XS).
enum class DecodeStream : uint8_t { Blocks, SuperBlocks };

// Whether the decode kernels (AVX-512; for the super-blocks also AVX2 and AVX-VNNI) fetch `s`
// ahead with software prefetch (packed_gemm.h's distances). On Intel they beat the hardware
// prefetchers alone (measured on Sapphire Rapids). On
// AMD Zen 4 the hardware prefetchers alone streamed every packed type as fast or faster (Q6_K and
// Q5_K 20-30 % faster on one core); on Zen 5 they still do for the blocks, but the super-blocks
// stream a third faster with the software prefetch (two threads, 6144 x 1024: Q4_K 39 -> 53
// GB/s, Q6_K 37 -> 55; Q8_0 58 -> 50 with it). AMD: super-blocks from family 1Ah (Zen 5) on.
bool decode_prefetch(DecodeStream s);

}  // namespace minfer::cpu
