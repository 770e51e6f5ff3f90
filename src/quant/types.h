// ggml tensor types: ids, block geometry and names, exactly as ggml numbers them in GGUF.
// The table knows every id ggml has assigned (so any GGUF file can be sized and inspected);
// `has_dequant`/`has_quant` say which ones minfer can compute with.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace minfer {

enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3,
  Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41, Q2_0 = 42,
};

struct TypeTraits {
  std::string_view name;   // ggml's name, e.g. "q4_K" is written "Q4_K" here (gguf-dump style)
  int64_t block_size;      // elements per block
  size_t type_size;        // bytes per block
  bool quantized;
  bool has_dequant;        // minfer can dequantize it (filled in by the quant module's table)
  bool has_quant;          // minfer can quantize to it
};

// nullptr for an id ggml never assigned (or removed): the GGUF reader rejects such ids.
const TypeTraits* type_traits(uint32_t id);
const TypeTraits& type_traits(GgmlType t);
std::string_view type_name(GgmlType t);
std::optional<GgmlType> type_from_name(std::string_view name);  // case-insensitive

// Bytes of a row of n elements; n must be a multiple of the block size (checked by callers).
inline size_t row_size(GgmlType t, int64_t n) {
  const TypeTraits& tr = type_traits(t);
  return size_t(n / tr.block_size) * tr.type_size;
}

}  // namespace minfer
