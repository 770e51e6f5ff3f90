// Runtime CPU dispatch: which instruction-set path the kernels take. One binary runs on any
// x86-64 (or other) CPU; fast paths are compiled per ISA with target attributes and chosen
// here at run time. Tests and benchmarks force a path to compare it with the scalar one.
#pragma once
#include <cstdint>

namespace minfer::cpu {

enum class Isa : uint8_t {
  Scalar = 0,  // plain C++, the reference every other path is tested against
  Avx2 = 1,    // AVX2 + FMA + F16C
  Avx512 = 2,  // AVX-512 F/BW/VL + VNNI (on top of Avx2)
  Amx = 3,     // AMX-INT8 tiles for prefill matmuls (on top of Avx512), when the OS allows them
};

const char* isa_name(Isa isa);

// The best path this CPU (and OS) supports.
Isa detected_isa();

// The path kernels use now: detected_isa(), capped by the environment variable
// MINFER_ISA=scalar|avx2|avx512|amx when set, unless force_isa() chose another.
Isa active_isa();

// Makes the kernels use `isa`; Error when the CPU cannot run it. Not thread-safe with
// running kernels: call between kernel calls.
void force_isa(Isa isa);

// Back to the default (detected_isa(), capped by MINFER_ISA).
void reset_isa();

}  // namespace minfer::cpu
