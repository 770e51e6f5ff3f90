#include "backend/cpu/kernel_info.h"

#include <cstdlib>
#include <string_view>

#include "backend/cpu/kernels_dot.h"
#include "backend/cpu/packed_gemm.h"

namespace minfer::cpu {

namespace {
bool repack_enabled() {
  const char* off = std::getenv("MINFER_NO_REPACK");
  return !(off && *off && std::string_view(off) != "0");
}
}  // namespace

// Mirrors matmul()'s choice: packed kernels first, then dot_tile()'s fallback order.
Isa matmul_isa(GgmlType wtype, Isa isa) {
  if (repack_enabled())
    if (const Isa p = packed_gemm_isa(wtype, isa); p != Isa::Scalar) return p;
  if (isa >= Isa::Amx && dot_tile_avx512(wtype) && dot_tile_avx512_uses_amx(wtype)) return Isa::Amx;
  if (isa >= Isa::Avx512 && dot_tile_avx512(wtype)) return Isa::Avx512;
  if (isa >= Isa::Avx2 && dot_tile_avx2(wtype)) return Isa::Avx2;
  return Isa::Scalar;
}

std::string matmul_path_name(GgmlType wtype) {
  const GgmlType held = weights_converted_at_load(wtype);
  const Isa isa = matmul_isa(held);
  std::string name = isa_name(isa);
  if (isa >= Isa::Avx512 && dot_tile_avx512_uses_bf16(held)) name += "+bf16";
  if (held != wtype) name += " as " + std::string(type_name(held));
  return name;
}

bool weights_repacked_at_load(GgmlType wtype) {
  return repack_enabled() && packed_gemm(wtype, active_isa()) != nullptr;
}

GgmlType weights_converted_at_load(GgmlType wtype) {
  if (wtype == GgmlType::TQ1_0 && repack_enabled() && matmul_isa(GgmlType::TQ2_0) != Isa::Scalar)
    return GgmlType::TQ2_0;
  return wtype;
}

}  // namespace minfer::cpu
