// `minfer quantize`: rewrites a GGUF model with its weights in another format, choosing each
// tensor's type with llama-quantize's rules (tools/quantize_rules.h) and quantizing with
// ggml's reference quantizers (quant/quant.h), so the result matches llama-quantize's.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "quant/types.h"

namespace minfer::tools {

struct QuantizeReport {
  uint64_t bytes_in = 0;   // tensor data of the input
  uint64_t bytes_out = 0;  // tensor data of the output
  uint64_t file_bytes_in = 0;
  uint64_t file_bytes_out = 0;
  int n_tensors = 0;
  int n_converted = 0;  // tensors whose type changed
  int n_fallback = 0;   // tensors whose rows did not fit the mix's type (llama's n_fallback)
  std::vector<std::pair<std::string, GgmlType>> types;  // output tensors, in file order
};

struct Imatrix;
struct TypeOverrides;

// Called after each tensor is written: (tensors done, total, name of the last one).
using ProgressFn = std::function<void(int done, int total, const std::string& name)>;

// ftype_name: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K_S, Q3_K_M, Q3_K_L,
// Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, IQ4_NL, IQ4_XS (case-insensitive). n_threads <= 0: all
// cores. With an importance matrix (imatrix.h) each converted tensor found in it is quantized
// with its weights, as llama-quantize --imatrix does (an entry whose size is not the tensor's
// row length x experts is an Error, except for token_embd, which then goes without), and the
// output records the imatrix in llama-quantize's quantize.imatrix.* keys. `overrides`:
// llama-quantize's --pure / --output-tensor-type / --token-embedding-type (quantize_rules.h). Throws minfer::Error
// naming the file/tensor on any failure; `out` is only replaced when everything succeeded.
QuantizeReport quantize_model(const std::string& in, const std::string& out,
                              const std::string& ftype_name, int n_threads,
                              const ProgressFn& progress = {}, const Imatrix* imatrix = nullptr,
                              const TypeOverrides* overrides = nullptr);

}  // namespace minfer::tools
