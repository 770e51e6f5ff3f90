// Dot-product kernels between weight rows (in their GGUF type) and activation rows already
// converted to the weight type's vec_dot type (act_quant.h). Internal to the CPU backend:
// matmul and attention are built on these.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/cpu/cpu_features.h"
#include "quant/types.h"

namespace minfer::cpu {

// One weight row · one activation row of n elements, scalar and written like ggml's generic
// vec_dot_<type>_<vec_dot_type>: integer sums per block exact, block scales applied in float.
float vec_dot_scalar(GgmlType wtype, int64_t n, const void* w, const void* x);

// A tile of dot products: y[t * ldy + r] = dot(W row r, activation row t) for r < nr, t < nt,
// where W row r starts at w + r * w_stride and activation row t at x + t * x_stride.
using DotTileFn = void (*)(GgmlType wtype, int64_t n, const uint8_t* w, size_t w_stride,
                           int64_t nr, const uint8_t* x, size_t x_stride, int64_t nt, float* y,
                           int64_t ldy);

// The tile kernel for `wtype` on `isa`, falling back to slower paths (down to scalar) when
// that ISA has none for the type. Never nullptr for a type vec_dot_type() accepts.
DotTileFn dot_tile(GgmlType wtype, Isa isa);

// From this many tokens the F16/BF16 tiles widen their activations and their 16-row (AVX2: 2 x 8)
// weight panels once per call (simd_avx512.cpp, simd_avx2.cpp: fpanel_gemm). The AVX-512 one's
// callers give it many rows a call; AVX2 keeps the usual items (ISA=avx2 qwen3-0.6b F16 pp128,
// 2 threads, with the tiles that widened as they went: 171.5 t/s with the usual items, 157.0
// with the large ones).
constexpr int64_t kFloatPanelTokens = 8;
// AVX-512 F16 streams its rows up to 12 tokens: widening the panel costs more than it saves
// below that (Zen 5, qwen3-0.6b F16, 2 threads, ms a pass of 8 / 12 tokens: 69.5 / 77.6 -> 51.1 /
// 65.3); BF16 (vdpbf16ps) and the AVX2 rows measured slower there at 12 and keep 8.
constexpr int64_t float_panel_tokens(GgmlType t, Isa isa) {
  return t == GgmlType::F16 && isa >= Isa::Avx512 ? 13 : kFloatPanelTokens;
}
constexpr bool float_panel_tile(GgmlType t, Isa isa) {
  return (t == GgmlType::F16 || t == GgmlType::BF16) && isa >= Isa::Avx512;
}

// Weighted sums of rows (the attention's V accumulation), for G weight vectors at once:
// out[g * d + i] = sum over j < n of w[g * n + j] * V[j][i], V row j at v + j * vs, in F32, F16
// or Q8_0 (d x q, as dequantize_row; d a multiple of 32); summed in j order.
using VsumFn = void (*)(int64_t n, int64_t G, const float* w, const uint8_t* v, size_t vs,
                        GgmlType vt, int64_t d, float* out);
VsumFn vsum_fn(Isa isa);

// In place: s = softmax(s * scale) as ggml_soft_max does it (max subtracted, sum in double,
// then multiplied by the f32 reciprocal). The SIMD version evaluates exp with a polynomial
// (within 2 ulp of expf), as ggml's own SIMD softmax does.
using SoftmaxFn = void (*)(int64_t n, float* s, float scale);
SoftmaxFn softmax_fn(Isa isa);

// out = silu(gate) * up (up == nullptr: silu(gate)), silu(x) = x / (1 + exp(-x)). The SIMD
// version's exp is the polynomial one (within ~2 ulp of expf).
using SwigluFn = void (*)(const float* gate, const float* up, float* out, int64_t n);
SwigluFn swiglu_fn(Isa isa);

// Per-ISA tables (simd_*.cpp); nullptr where the ISA has no kernel for the type.
DotTileFn dot_tile_scalar(GgmlType wtype);
DotTileFn dot_tile_avx2(GgmlType wtype);
DotTileFn dot_tile_avx512(GgmlType wtype);
// Whether dot_tile_avx512's kernel for wtype runs prefill on AMX tiles when the active ISA is
// Amx (the K-quant GEMMs choose that inside; kernel_info reports it).
bool dot_tile_avx512_uses_amx(GgmlType wtype);
// Whether it runs prompts on vdpbf16ps (BF16 with avx512_bf16(); kernel_info reports it).
bool dot_tile_avx512_uses_bf16(GgmlType wtype);
VsumFn vsum_avx2();
SoftmaxFn softmax_avx2();
SwigluFn swiglu_avx2();
VsumFn vsum_avx512();        // simd_avx512.cpp
SoftmaxFn softmax_avx512();  // simd_ops_avx512.cpp
SwigluFn swiglu_avx512();

}  // namespace minfer::cpu
