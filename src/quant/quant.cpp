// Dispatch from GgmlType to the reference (de)quantizers, plus the checks that turn bad
// input into minfer::Error instead of the infinities ggml would silently write.
#include "quant/quant.h"

#include <cmath>
#include <cstddef>
#include <cstring>

#include "common/error.h"
#include "common/fp16.h"
#include "quant/reference.h"

namespace minfer::quant {
namespace {

using QuantFn = void (*)(const float*, void*, int64_t, const float*);
using DequantFn = void (*)(const void*, float*, int64_t);

void quant_f32(const float* x, void* y, int64_t n, const float*) {
  std::memcpy(y, x, size_t(n) * sizeof(float));
}
void quant_f16(const float* x, void* y, int64_t n, const float*) {
  uint16_t* out = static_cast<uint16_t*>(y);
  for (int64_t i = 0; i < n; ++i) out[i] = fp32_to_fp16(x[i]);
}
void quant_bf16(const float* x, void* y, int64_t n, const float*) {
  uint16_t* out = static_cast<uint16_t*>(y);
  for (int64_t i = 0; i < n; ++i) out[i] = fp32_to_bf16(x[i]);
}
void dequant_f32(const void* x, float* y, int64_t n) {
  std::memcpy(y, x, size_t(n) * sizeof(float));
}
void dequant_f16(const void* x, float* y, int64_t n) {
  const uint16_t* in = static_cast<const uint16_t*>(x);
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(in[i]);
}
void dequant_bf16(const void* x, float* y, int64_t n) {
  const uint16_t* in = static_cast<const uint16_t*>(x);
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(in[i]);
}

// Adapters from the typed reference functions to the untyped table.
template <typename B, void (*F)(const float*, B*, int64_t, const float*)>
void quant_qw(const float* x, void* y, int64_t n, const float* qw) {
  F(x, static_cast<B*>(y), n, qw);
}
template <typename B, void (*F)(const float*, B*, int64_t)>
void quant_noqw(const float* x, void* y, int64_t n, const float*) {
  F(x, static_cast<B*>(y), n);
}
template <typename B, void (*F)(const B*, float*, int64_t)>
void dequant(const void* x, float* y, int64_t n) {
  F(static_cast<const B*>(x), y, n);
}

struct Codec {
  GgmlType type;
  QuantFn quantize;
  DequantFn dequantize;
  // Byte offsets, within one block, of the f16 fields that must stay finite (-1: none).
  int f16_fields[2];
  // Largest |x| the format can represent (65504 x largest sub-scale x largest quant); 0: no
  // limit beyond the f16 fields' check. Past it ggml's K-quant searches overflow x^2 into
  // NaN scales and silently write zero blocks, so it is checked on input.
  float max_abs;
};

constexpr Codec kCodecs[] = {
    {GgmlType::F32, quant_f32, dequant_f32, {-1, -1}, 0},
    {GgmlType::F16, quant_f16, dequant_f16, {-1, -1}, 0},
    {GgmlType::BF16, quant_bf16, dequant_bf16, {-1, -1}, 0},
    {GgmlType::Q4_0,
     quant_qw<block_q4_0, ref::quantize_q4_0>,
     dequant<block_q4_0, ref::dequantize_q4_0>,
     {0, -1},
     0},
    {GgmlType::Q4_1,
     quant_qw<block_q4_1, ref::quantize_q4_1>,
     dequant<block_q4_1, ref::dequantize_q4_1>,
     {0, 2},
     0},
    {GgmlType::Q5_0,
     quant_qw<block_q5_0, ref::quantize_q5_0>,
     dequant<block_q5_0, ref::dequantize_q5_0>,
     {0, -1},
     0},
    {GgmlType::Q5_1,
     quant_qw<block_q5_1, ref::quantize_q5_1>,
     dequant<block_q5_1, ref::dequantize_q5_1>,
     {0, 2},
     0},
    {GgmlType::Q8_0,
     quant_noqw<block_q8_0, ref::quantize_q8_0>,
     dequant<block_q8_0, ref::dequantize_q8_0>,
     {0, -1},
     0},
    {GgmlType::Q8_1,
     quant_noqw<block_q8_1, ref::quantize_q8_1>,
     dequant<block_q8_1, ref::dequantize_q8_1>,
     {0, 2},
     0},
    {GgmlType::Q2_K,
     quant_qw<block_q2_K, ref::quantize_q2_K>,
     dequant<block_q2_K, ref::dequantize_q2_K>,
     {80, 82},
     65504.0f * 15 * 3},
    {GgmlType::Q3_K,
     quant_qw<block_q3_K, ref::quantize_q3_K>,
     dequant<block_q3_K, ref::dequantize_q3_K>,
     {108, -1},
     65504.0f * 32 * 4},
    {GgmlType::Q4_K,
     quant_qw<block_q4_K, ref::quantize_q4_K>,
     dequant<block_q4_K, ref::dequantize_q4_K>,
     {0, 2},
     65504.0f * 63 * 15},
    {GgmlType::Q5_K,
     quant_qw<block_q5_K, ref::quantize_q5_K>,
     dequant<block_q5_K, ref::dequantize_q5_K>,
     {0, 2},
     65504.0f * 63 * 31},
    {GgmlType::Q6_K,
     quant_qw<block_q6_K, ref::quantize_q6_K>,
     dequant<block_q6_K, ref::dequantize_q6_K>,
     {208, -1},
     65504.0f * 128 * 32},
    {GgmlType::Q8_K,
     quant_noqw<block_q8_K, ref::quantize_q8_K>,
     dequant<block_q8_K, ref::dequantize_q8_K>,
     {-1, -1},
     0},
    {GgmlType::IQ4_NL,
     quant_qw<block_iq4_nl, ref::quantize_iq4_nl>,
     dequant<block_iq4_nl, ref::dequantize_iq4_nl>,
     {0, -1},
     65504.0f * 127},
    {GgmlType::IQ4_XS,
     quant_qw<block_iq4_xs, ref::quantize_iq4_xs>,
     dequant<block_iq4_xs, ref::dequantize_iq4_xs>,
     {0, -1},
     65504.0f * 32 * 127},
    {GgmlType::Q1_0, quant_noqw<block_q1_0, ref::quantize_q1_0>, dequant<block_q1_0, ref::dequantize_q1_0>, {0, -1}, 0},
    {GgmlType::Q2_0, quant_noqw<block_q2_0, ref::quantize_q2_0>, dequant<block_q2_0, ref::dequantize_q2_0>, {0, -1}, 0},
    {GgmlType::MXFP4, quant_noqw<block_mxfp4, ref::quantize_mxfp4>, dequant<block_mxfp4, ref::dequantize_mxfp4>, {-1, -1}, 0},
    {GgmlType::NVFP4, quant_noqw<block_nvfp4, ref::quantize_nvfp4>, dequant<block_nvfp4, ref::dequantize_nvfp4>, {-1, -1}, 0},
    {GgmlType::TQ1_0, quant_noqw<block_tq1_0, ref::quantize_tq1_0>, dequant<block_tq1_0, ref::dequantize_tq1_0>, {52, -1}, 0},
    {GgmlType::TQ2_0, quant_noqw<block_tq2_0, ref::quantize_tq2_0>, dequant<block_tq2_0, ref::dequantize_tq2_0>, {64, -1}, 0},
    // d x (2 scale + 1) x grid value: at most 65504 x 31 x 15 (IQ3_XXS: x 15.5 x 31, the same).
    {GgmlType::IQ3_XXS,
     quant_qw<block_iq3_xxs, ref::quantize_iq3_xxs>,
     dequant<block_iq3_xxs, ref::dequantize_iq3_xxs>,
     {0, -1},
     65504.0f * 31 * 15},
    {GgmlType::IQ3_S,
     quant_qw<block_iq3_s, ref::quantize_iq3_s>,
     dequant<block_iq3_s, ref::dequantize_iq3_s>,
     {0, -1},
     65504.0f * 31 * 15},
    // d x (2 scale + 1) / 4 x grid value: at most 65504 x 31 x 43 / 4.
    {GgmlType::IQ2_S,
     quant_qw<block_iq2_s, ref::quantize_iq2_s>,
     dequant<block_iq2_s, ref::dequantize_iq2_s>,
     {0, -1},
     65504.0f * 31 * 43 / 4},
    // IQ2_XXS, IQ2_XS: d x (0.5 + scale) / 4 x grid value, at most 65504 x 15.5 x 43 / 4; their
    // quantizers need importance weights (an Error without).
    {GgmlType::IQ2_XXS,
     quant_qw<block_iq2_xxs, ref::quantize_iq2_xxs>,
     dequant<block_iq2_xxs, ref::dequantize_iq2_xxs>,
     {0, -1},
     65504.0f * 15.5f * 43 / 4},
    {GgmlType::IQ2_XS,
     quant_qw<block_iq2_xs, ref::quantize_iq2_xs>,
     dequant<block_iq2_xs, ref::dequantize_iq2_xs>,
     {0, -1},
     65504.0f * 15.5f * 43 / 4},
    // d x (2 scale + 1) x (|grid| + 1/8), at most 65504 x 15 x 1.125; needs importance weights.
    {GgmlType::IQ1_S,
     quant_qw<block_iq1_s, ref::quantize_iq1_s>,
     dequant<block_iq1_s, ref::dequantize_iq1_s>,
     {0, -1},
     65504.0f * 15 * 1.125f},
    // Dequantization only (quantize is nullptr): see block_iq2_xxs.
    // (its f16 d is spread over the scales' top nibbles, no field to check: the bound keeps it
    // finite)
    {GgmlType::IQ1_M,
     quant_qw<block_iq1_m, ref::quantize_iq1_m>,
     dequant<block_iq1_m, ref::dequantize_iq1_m>,
     {-1, -1},
     65504.0f * 15 * 1.125f},
};

static_assert(offsetof(block_q2_K, d) == 80 && offsetof(block_q2_K, dmin) == 82);
static_assert(offsetof(block_q3_K, d) == 108 && offsetof(block_q6_K, d) == 208);
static_assert(offsetof(block_q4_1, m) == 2 && offsetof(block_q8_1, s) == 2);
static_assert(offsetof(block_tq1_0, d) == 52 && offsetof(block_tq2_0, d) == 64);

const Codec* find_codec(GgmlType t) {
  for (const Codec& c : kCodecs)
    if (c.type == t) return &c;
  return nullptr;
}

const Codec& codec_or_fail(GgmlType t, const char* what, bool quantize) {
  const Codec* c = find_codec(t);
  if (!c || (quantize && !c->quantize)) fail("cannot {} type {}: not supported", what, type_name(t));
  return *c;
}

void check_length(GgmlType t, int64_t n) {
  const int64_t bs = type_traits(t).block_size;
  if (n < 0 || n % bs != 0)
    fail("{}: row length {} is not a multiple of the block size {}", type_name(t), n, bs);
}

inline bool f16_finite(uint16_t h) { return (h & 0x7c00u) != 0x7c00u; }

// After quantizing: every f16 scale (every element for F16, BF16) must be finite. A value too
// large for the format's scale overflows here; ggml would write inf and dequantize to inf/NaN.
void check_output(const Codec& c, const void* dst, int64_t n) {
  const TypeTraits& tr = type_traits(c.type);
  const uint8_t* p = static_cast<const uint8_t*>(dst);
  auto overflow = [&](int64_t block) {
    fail("quantize to {}: values in block {} (elements {}..{}) are too large for the format",
         type_name(c.type), block, block * tr.block_size, (block + 1) * tr.block_size - 1);
  };
  if (c.type == GgmlType::F16 || c.type == GgmlType::BF16) {
    const uint16_t exp_mask = c.type == GgmlType::F16 ? 0x7c00u : 0x7f80u;
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      if ((h & exp_mask) == exp_mask) overflow(i);
    }
    return;
  }
  for (int64_t b = 0; b < n / tr.block_size; ++b) {
    for (int off : c.f16_fields) {
      if (off < 0) continue;
      uint16_t h;
      std::memcpy(&h, p + b * tr.type_size + size_t(off), 2);
      if (!f16_finite(h)) overflow(b);
    }
  }
}

void check_input(const Codec& c, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(src[i]))
      fail("quantize to {}: element {} is {}", type_name(c.type), i, src[i]);
    if (c.max_abs > 0 && std::fabs(src[i]) > c.max_abs)
      fail("quantize to {}: element {} = {} is beyond the format's range (|x| <= {})",
           type_name(c.type), i, src[i], c.max_abs);
  }
}

}  // namespace

bool can_dequantize(GgmlType t) { return find_codec(t) != nullptr; }
bool can_quantize(GgmlType t) {
  const Codec* c = find_codec(t);
  return c && c->quantize;
}

void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n) {
  const Codec& c = codec_or_fail(t, "dequantize", false);
  check_length(t, n);
  c.dequantize(src, dst, n);
}

size_t quantize_row(GgmlType t, const float* src, void* dst, int64_t n, const float* imatrix) {
  const Codec& c = codec_or_fail(t, "quantize to", true);
  check_length(t, n);
  // F32 keeps whatever it is given, as ggml does; everything else must start finite.
  if (t != GgmlType::F32) check_input(c, src, n);
  c.quantize(src, dst, n, imatrix);
  check_output(c, dst, n);
  return row_size(t, n);
}

size_t quantize_rows(GgmlType t, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                     const float* imatrix) {
  const size_t rs = row_size(t, n_per_row);
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int64_t r = 0; r < nrows; ++r)
    quantize_row(t, src + r * n_per_row, out + size_t(r) * rs, n_per_row, imatrix);
  return size_t(nrows) * rs;
}

void quantize_row_unchecked(GgmlType t, const float* src, void* dst, int64_t n,
                            const float* imatrix) {
  find_codec(t)->quantize(src, dst, n, imatrix);
}

void dequantize_row_unchecked(GgmlType t, const void* src, float* dst, int64_t n) {
  find_codec(t)->dequantize(src, dst, n);
}

}  // namespace minfer::quant
