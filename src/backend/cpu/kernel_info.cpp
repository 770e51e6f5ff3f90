#include "backend/cpu/kernel_info.h"

#include "backend/cpu/kernels_dot.h"

namespace minfer::cpu {

// Mirrors dot_tile()'s fallback order (kernels_dot.cpp).
Isa matmul_isa(GgmlType wtype, Isa isa) {
  if (isa >= Isa::Avx512 && dot_tile_avx512(wtype)) return Isa::Avx512;
  if (isa >= Isa::Avx2 && dot_tile_avx2(wtype)) return Isa::Avx2;
  return Isa::Scalar;
}

bool weights_repacked_at_load(GgmlType) { return false; }

}  // namespace minfer::cpu
