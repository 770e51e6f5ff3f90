#include "backend/cpu/packed_gemm.h"

#include <cmath>
#include <cstring>

#include "backend/cpu/repack.h"
#include "common/fp16.h"

namespace minfer::cpu {
namespace {

void sums_scalar(int offset, const uint8_t* row, int64_t nb, float* d, int32_t* c) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + 34 * b;
    uint16_t h;
    std::memcpy(&h, blk, 2);
    d[b] = fp16_to_fp32(h);
    int32_t s = 0;
    for (int j = 0; j < 32; ++j) s += int8_t(blk[2 + j]);
    c[b] = -offset * s;
  }
}

// Quant k (0..31) of row r (0..15) of block `q` in the group layout.
inline int quant(GgmlType t, const uint8_t* q, int r, int k) {
  if (t == GgmlType::Q8_0) return q[64 * (k / 4) + 4 * r + k % 4];
  const uint8_t v = q[64 * ((k % 16) / 4) + 4 * r + k % 4];
  const int u = k < 16 ? (v & 0x0F) : (v >> 4);
  if (t != GgmlType::Q5_0) return u;
  const int bit = 4 * r + k % 4;
  return u | (((q[256 + 8 * (k / 4) + bit / 8] >> (bit % 8)) & 1) << 4);
}

}  // namespace

void packed_act_sums(GgmlType wtype, const uint8_t* row, int64_t nb, float* d, int32_t* c) {
  const PackedSumsFn f = active_isa() >= Isa::Avx512 ? packed_sums_avx512() : nullptr;
  (f ? f : sums_scalar)(packed_offset(wtype), row, nb, d, c);
}

void packed_gemm_scalar(GgmlType wtype, const uint8_t* wp, int64_t n_groups, int64_t nb,
                        const PackedAct& x, int64_t nt, float* y, int64_t ldy) {
  const size_t qb = packed_quant_bytes(wtype), gb = packed_group_bytes(wtype, nb * 32);
  for (int64_t g = 0; g < n_groups; ++g) {
    const uint8_t* grp = wp + size_t(g) * gb;
    for (int64_t t = 0; t < nt; ++t) {
      const uint8_t* xr = x.q + size_t(t) * x.stride;
      for (int r = 0; r < kPackRows; ++r) {
        float acc = 0.0f;
        for (int64_t b = 0; b < nb; ++b) {
          const uint8_t* q = grp + size_t(b) * qb;
          const int8_t* xq = reinterpret_cast<const int8_t*>(xr + 34 * b + 2);
          int32_t s = x.c[t * nb + b];
          for (int k = 0; k < 32; ++k) s += quant(wtype, q, r, k) * xq[k];
          uint16_t h;
          std::memcpy(&h, grp + size_t(nb) * qb + 32 * b + 2 * r, 2);
          acc = std::fma(float(s), fp16_to_fp32(h) * x.d[t * nb + b], acc);
        }
        y[t * ldy + 16 * g + r] = acc;
      }
    }
  }
}

PackedGemmFn packed_gemm(GgmlType wtype, Isa isa) {
  if (isa >= Isa::Amx) return packed_gemm_amx(wtype);
  if (isa >= Isa::Avx512) return packed_gemm_avx512(wtype);
  return nullptr;
}

}  // namespace minfer::cpu
