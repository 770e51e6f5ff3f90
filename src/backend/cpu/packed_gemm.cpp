#include "backend/cpu/packed_gemm.h"

#include <cmath>
#include <cstring>

#include "backend/cpu/act_quant.h"
#include "backend/cpu/repack.h"
#include "common/fp16.h"
#include "quant/blocks.h"

namespace minfer::cpu {
namespace {

// A row of Q8_0 blocks (Q8_1 when s is given: d, s, quants) into one token's tiles.
void sums_scalar(int offset, const uint8_t* row, int64_t nb, int64_t tile, uint8_t* tq, float* d,
                 int32_t* c, float* s = nullptr) {
  const size_t bb = s ? 36 : 34, qo = s ? 4 : 2;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + bb * size_t(b);
    uint16_t h;
    std::memcpy(&h, blk, 2);
    d[tile * b] = fp16_to_fp32(h);
    if (s) {
      std::memcpy(&h, blk + 2, 2);
      s[tile * b] = fp16_to_fp32(h);
    }
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) sum += int8_t(blk[qo + j]);
    c[tile * b] = -offset * sum;
    std::memcpy(tq + 32 * tile * b, blk + qo, 32);
  }
}

// Quant k (0..31) of row r (0..15) of block `q` in the group layout.
inline int quant(GgmlType t, const uint8_t* q, int r, int k) {
  if (t == GgmlType::Q8_0) return q[64 * (k / 4) + 4 * r + k % 4];
  if (t == GgmlType::Q1_0) {  // bit 4 r + k % 4 of chunk k / 4's mask, as 2 bit
    const int bit = 4 * r + k % 4;
    return 2 * ((q[8 * (k / 4) + bit / 8] >> (bit % 8)) & 1);
  }
  if (t == GgmlType::Q2_0) return (q[64 * (k / 16) + 4 * r + k % 4] >> (2 * ((k % 16) / 4))) & 3;
  const uint8_t v = q[64 * ((k % 16) / 4) + 4 * r + k % 4];
  const int u = k < 16 ? (v & 0x0F) : (v >> 4);
  if (t == GgmlType::IQ4_NL) return quant::kvalues_iq4nl[u] + 128;
  if (t == GgmlType::MXFP4 || t == GgmlType::NVFP4) return quant::kvalues_fp4[u] + 12;
  if (t != GgmlType::Q5_0 && t != GgmlType::Q5_1) return u;
  const int bit = 4 * r + k % 4;
  return u | (((q[256 + 8 * (k / 4) + bit / 8] >> (bit % 8)) & 1) << 4);
}

// Row r's scale from a group's scale line sc (F16, or BF16: packed_bf16_scales).
inline float row_scale(GgmlType t, const uint8_t* sc, int r) {
  uint16_t h;
  std::memcpy(&h, sc + 2 * r, 2);
  if (!packed_bf16_scales(t)) return fp16_to_fp32(h);
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// A packed NVFP4 scale code's value (repack.h: its F32 bits shifted, times 2^119).
inline float ue4m3_scale(uint8_t code) {
  const uint32_t bits = uint32_t(code) << 20;
  float f;
  std::memcpy(&f, &bits, 4);
  return f * kUe4m3Bias;
}

// Quant k (0..255) of row r in the K-quant super-block o (repack.h), unsigned (Q3_K: q + 4,
// IQ4_XS, IQ3_S, IQ3_XXS: its value + 128).
inline int kquant(GgmlType t, const uint8_t* o, int r, int k) {
  const int j = k / 32, e = k % 32, c = (e % 16) / 4, lane = 4 * r + e % 4;
  const bool hi = e >= 16;
  if (t == GgmlType::Q2_K) return (o[packed_kq_quants(t, j, hi) + lane] >> (2 * c)) & 3;
  if (t == GgmlType::Q3_K)
    return ((o[packed_kq_quants(t, j, hi) + lane] >> (2 * c)) & 3) |
           (((o[packed_kq_extra(t, j) + lane] >> (4 * hi + c)) & 1) << 2);
  const uint8_t v = o[packed_kq_quants(t, j, c) + lane];
  int q = hi ? v >> 4 : v & 0x0F;
  if (packed_iq4_layout(t)) return packed_iq4_values(t).v[q] + 128;
  if (t == GgmlType::Q5_K) q |= ((o[packed_kq_extra(t, j) + 16 * c + 8 * hi + lane / 8] >> (lane % 8)) & 1) << 4;
  if (t == GgmlType::Q6_K)
    q |= ((o[packed_kq_extra(t, j) + 64 * (c / 2) + lane] >> (4 * (c % 2) + 2 * hi)) & 3) << 4;
  return q;
}

// The K-quants over Q8_K activations: per super-block the exact integer sums, then the float
// steps of the GGUF-layout kernels (kernels_dot.cpp), in their order.
void packed_kq_scalar(GgmlType wtype, const uint8_t* wp, int64_t n_groups, int64_t nsb,
                      const PackedAct& x, int64_t nt, float* y, int64_t ldy) {
  const size_t kb = packed_kq_block_bytes(wtype), gb = packed_group_bytes(wtype, nsb * 256);
  // Q6_K and Q3_K: int8 scales of 16 columns, unsigned quants q + 32 and q + 4.
  const bool q6 = wtype == GgmlType::Q6_K || wtype == GgmlType::Q3_K;
  const int offset = wtype == GgmlType::Q3_K ? 4 : 32;
  for (int64_t g = 0; g < n_groups; ++g)
    for (int64_t t = 0; t < nt; ++t)
      for (int r = 0; r < kPackRows; ++r) {
        float acc = 0.0f;
        for (int64_t b = 0; b < nsb; ++b) {
          const uint8_t* o = wp + size_t(g) * gb + size_t(b) * kb;
          const auto* xb = reinterpret_cast<const quant::block_q8_K*>(x.q + size_t(t) * x.stride) + b;
          const float xd = xb->d;
          const int8_t* xq = xb->qs;
          const int16_t* bsum = xb->bsums;
          const uint8_t* par = o + packed_kq_scales(wtype);
          uint16_t hd;
          std::memcpy(&hd, par + kKqD + 2 * r, 2);
          if (wtype == GgmlType::Q2_K) {
            int isum = 0, summs = 0;
            for (int s = 0; s < 16; ++s) {
              int part = 0;
              for (int k = 16 * s; k < 16 * s + 16; ++k) part += kquant(wtype, o, r, k) * xq[k];
              const uint8_t sm = par[32 * (s / 2) + 2 * r + s % 2];
              isum += (sm & 0x0F) * part;
              summs += (sm >> 4) * bsum[s];
            }
            uint16_t hm;
            std::memcpy(&hm, par + kKqDmin + 2 * r, 2);
            acc += (fp16_to_fp32(hd) * xd) * float(isum) - (fp16_to_fp32(hm) * xd) * float(summs);
          } else if (packed_iq4_layout(wtype)) {  // dot_iq4_xs's, dot_lattice's sums: values + 128, less 128 x sum(x)
            int isum = 0;
            for (int j = 0; j < 8; ++j) {
              int part = -128 * (bsum[2 * j] + bsum[2 * j + 1]);
              for (int k = 32 * j; k < 32 * j + 32; ++k) part += kquant(wtype, o, r, k) * xq[k];
              isum += int8_t(par[16 * j + r]) * part;
            }
            acc += (fp16_to_fp32(hd) * packed_iq4_final(wtype) * xd) * float(isum);
          } else if (q6) {
            int isum = 0;
            for (int s = 0; s < 16; ++s) {
              int part = -offset * bsum[s];
              for (int k = 16 * s; k < 16 * s + 16; ++k) part += kquant(wtype, o, r, k) * xq[k];
              isum += int8_t(par[16 * s + r]) * part;
            }
            acc += (fp16_to_fp32(hd) * xd) * float(isum);
          } else {
            int isum = 0, summs = 0;
            for (int j = 0; j < 8; ++j) {
              int part = 0;
              for (int k = 32 * j; k < 32 * j + 32; ++k) part += kquant(wtype, o, r, k) * xq[k];
              isum += par[16 * j + r] * part;
              summs += par[kKqMins + 32 * (j / 2) + 2 * r + j % 2] * (bsum[2 * j] + bsum[2 * j + 1]);
            }
            uint16_t hm;
            std::memcpy(&hm, par + kKqDmin + 2 * r, 2);
            acc += (fp16_to_fp32(hd) * xd) * float(isum) - (fp16_to_fp32(hm) * xd) * float(summs);
          }
        }
        y[t * ldy + 16 * g + r] = acc;
      }
}

}  // namespace

void q8k_sums(const uint8_t* row, int64_t nsb, Q8KSums* out) {
  for (int64_t b = 0; b < nsb; ++b) {
    const auto* x = reinterpret_cast<const quant::block_q8_K*>(row) + b;
    Q8KSums& s = out[b];
    s.d = x->d;
    for (int j = 0; j < 16; ++j) {
      s.bsum[j] = x->bsums[j];
      s.q6c[j] = -32 * s.bsum[j];
      s.off128_16[j] = -128 * s.bsum[j];
    }
    int32_t pair[8];
    for (int j = 0; j < 8; ++j) {
      pair[j] = s.bsum[2 * j] + s.bsum[2 * j + 1];
      s.pairf[j] = float(pair[j]);
      s.off128_32[j] = -128 * pair[j];
    }
    for (int q = 0; q < 4; ++q)
      s.pair16[q] = int32_t((uint32_t(pair[2 * q]) & 0xFFFFu) | (uint32_t(pair[2 * q + 1]) << 16));
    for (int j = 0; j < 8; ++j)
      s.bsum16[j] = int32_t((uint32_t(s.bsum[2 * j]) & 0xFFFFu) | (uint32_t(s.bsum[2 * j + 1]) << 16));
  }
}

void packed_act_quantize_k(const float* x, int64_t nsb, uint8_t* row, Q8KSums* out) {
  auto* y = reinterpret_cast<quant::block_q8_K*>(row);
  if (active_isa() >= Isa::Avx512)
    if (const Q8KSumsFn f = quantize_q8_K_avx512()) return f(x, nsb, y, out);
  quantize_act_q8_K(x, y, nsb * quant::QK_K);
  q8k_sums(row, nsb, out);
}

void widen_q8k_row(const uint8_t* row, int64_t nsb, int64_t t, int64_t tile, int16_t* tw) {
  const int64_t nb = 8 * nsb;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* qs = reinterpret_cast<const quant::block_q8_K*>(row)[b / 8].qs + 32 * (b % 8);
    int16_t* out = tw + 32 * act_index(t, b, nb, tile);
    for (int e = 0; e < 32; ++e) out[e] = qs[e];
  }
}

GgmlType packed_act_type(GgmlType wtype) {
  return packed_kquant(wtype) ? GgmlType::Q8_K : packed_has_mins(wtype) ? GgmlType::Q8_1 : GgmlType::Q8_0;
}

void packed_act_quantize(GgmlType wtype, const float* x, int64_t nb, int64_t t, int64_t tile, uint8_t* row,
                         bool keep_row, uint8_t* tq, float* d, int32_t* c, int16_t* tw, float* s, int32_t* ch) {
  const size_t i = act_index(t, 0, nb, tile);
  const Q8TilesFn f = active_isa() >= Isa::Avx512 ? quantize_q8_0_avx512() : nullptr;
  if (packed_has_mins(wtype)) {
    // Q8_1 rows (their s is F16(d x sum) with d before its own F16 rounding), then the tiles.
    quantize_act_q8_1(x, reinterpret_cast<quant::block_q8_1*>(row), nb * 32);
    sums_scalar(packed_offset(wtype), row, nb, tile, tq + 32 * i, d + i, c + i, s + i);
  } else if (f) {
    f(x, nb, keep_row ? reinterpret_cast<quant::block_q8_0*>(row) : nullptr, packed_offset(wtype), tile,
      tq + 32 * i, d + i, c + i);
  } else {
    quantize_act_q8_0(x, reinterpret_cast<quant::block_q8_0*>(row), nb * 32);
    sums_scalar(packed_offset(wtype), row, nb, tile, tq + 32 * i, d + i, c + i);
  }
  if (ch)  // the split types: c's correction parted between the block's halves
    for (int64_t b = 0; b < nb; ++b) {
      const size_t k = i + size_t(b * tile);
      int32_t sum = 0;
      for (int e = 16; e < 32; ++e) sum += int8_t(tq[32 * k + size_t(e)]);
      ch[k] = -packed_offset(wtype) * sum;
      c[k] -= ch[k];
    }
  if (tw)
    for (int64_t b = 0; b < nb; ++b) {
      const size_t k = 32 * (i + size_t(b * tile));
      for (size_t e = 0; e < 32; ++e) tw[k + e] = int8_t(tq[k + e]);
    }
}

// AVX2 without VNNI runs Q8_0 and IQ4_NL prompts in int16 (packed_256.h, q8_wide_gemm) from 32 tokens: the
// weight panel's widening, once per group and call, is shared by fewer tokens below (ISA=avx2,
// qwen2.5-0.5b Q8_0 on one thread, sign form / int16: pp16 144 / 132 t/s, pp32 160 / 167).
constexpr int64_t kWideActTokens = 32;
bool packed_wide_act(GgmlType wtype, Isa isa, int64_t nt) {
  return (wtype == GgmlType::Q8_0 || wtype == GgmlType::IQ4_NL || wtype == GgmlType::IQ4_XS) && isa == Isa::Avx2 &&
         nt >= kWideActTokens &&
         packed_gemm_isa(wtype, isa) == Isa::Avx2;
}

void packed_gemm_scalar(GgmlType wtype, const uint8_t* wp, int64_t n_groups, int64_t nb,
                        const PackedAct& x, int64_t nt, float* y, int64_t ldy) {
  if (packed_kquant(wtype)) {
    packed_kq_scalar(wtype, wp, n_groups, nb, x, nt, y, ldy);
    return;
  }
  const size_t qb = packed_quant_bytes(wtype), hb = packed_head_bytes(wtype);
  const size_t gb = packed_group_bytes(wtype, nb * 32);
  const bool mins = packed_has_mins(wtype), split = packed_split_halves(wtype);
  for (int64_t g = 0; g < n_groups; ++g) {
    const uint8_t* grp = wp + size_t(g) * gb;
    for (int64_t t = 0; t < nt; ++t) {
      for (int r = 0; r < kPackRows; ++r) {
        float acc = 0.0f;
        for (int64_t b = 0; b < nb; ++b) {
          const uint8_t* q = grp + packed_quants_at(qb, b, hb);
          const size_t i = act_index(t, b, nb, x.tile);
          const int8_t* xq = reinterpret_cast<const int8_t*>(x.tq + 32 * i);
          const uint8_t* sc = grp + packed_scales_at(qb, b, hb);
          if (split) {  // columns 0-15, then 16-31, each with its own scale and correction
            for (int h = 0; h < 2; ++h) {
              int32_t s = h ? x.ch[i] : x.c[i];
              for (int k = 16 * h; k < 16 * h + 16; ++k) s += quant(wtype, q, r, k) * xq[k];
              acc = std::fma(float(s), ue4m3_scale(sc[16 * h + r]) * x.d[i], acc);
            }
            continue;
          }
          int32_t s = x.c[i];
          for (int k = 0; k < 32; ++k) s += quant(wtype, q, r, k) * xq[k];
          acc = std::fma(float(s), row_scale(wtype, sc, r) * x.d[i], acc);
          if (mins) {  // + m x s: the block's min times its activations' sum
            uint16_t h;
            std::memcpy(&h, sc + 64 + 2 * r, 2);
            acc = std::fma(fp16_to_fp32(h), x.s[i], acc);
          }
        }
        y[t * ldy + 16 * g + r] = acc;
      }
    }
  }
}

namespace {

PackedGemmFn kernel_of(GgmlType wtype, Isa level) {
  switch (level) {
    case Isa::Amx: return packed_gemm_amx(wtype);
    case Isa::Avx512: return packed_gemm_avx512(wtype);
    case Isa::AvxVnni: return packed_gemm_avxvnni(wtype);
    case Isa::Avx2: return packed_gemm_avx2(wtype);
    case Isa::Scalar: break;
  }
  return nullptr;
}

}  // namespace

Isa packed_gemm_isa(GgmlType wtype, Isa isa) {
  // Fastest first; AvxVnni only at its own level: Avx512 does not imply AVX-VNNI (cpu_features.h).
  for (Isa level : {Isa::Amx, Isa::Avx512, Isa::AvxVnni, Isa::Avx2}) {
    if (level == Isa::AvxVnni ? isa != level : isa < level) continue;
    if (kernel_of(wtype, level)) return level;
  }
  return Isa::Scalar;
}

PackedGemmFn packed_gemm(GgmlType wtype, Isa isa) { return kernel_of(wtype, packed_gemm_isa(wtype, isa)); }

}  // namespace minfer::cpu
