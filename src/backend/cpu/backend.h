// Glue between GGUF tensors / KV memory and the kernels of kernels.h: it turns a tensor's
// (type, ne, data) into a WeightView and sizes KV regions, validating what kernels assume.
// The graph-facing CPU Backend (node -> kernel dispatch) is runtime/cpu_backend.h.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "backend/cpu/kernels.h"
#include "quant/types.h"

namespace minfer::cpu {

// A 2-D weight in GGUF order (ne[0] = row length = input features, ne[1] = rows = outputs).
// Error naming `name` when the type cannot be computed with or the shape is not a matrix
// whose rows are whole blocks.
WeightView make_weight_view(std::string_view name, GgmlType type, const uint8_t* data,
                            const std::array<int64_t, 4>& ne);

// Types a KV region may use (F32, F16, Q8_0).
bool kv_type_supported(GgmlType t);

// Bytes of one region of n_ctx positions of `width` elements in n_heads heads; Error when the
// type is not supported, width is not n_heads equal heads or a head not whole blocks.
// blocked: the key layout of kernels.h's KvRegion (F16 only; n_ctx rounded up to whole blocks).
size_t kv_region_bytes(GgmlType type, int64_t width, int64_t n_ctx, int64_t n_heads = 1, bool blocked = false);

// Whether keys of `type` are best kept blocked on this CPU (F16 with AVX-512, whose attention
// then reads them without transposing; every path reads either layout, with the same results).
// One layer, qwen3-0.6b, 2048 positions, a decode step on two threads of AMD Zen 4: 269-282 ->
// 121-125 us; on AVX2 the lane-order kernels measured slower from blocks than from rows.
bool kv_keys_blocked(GgmlType type);

// A region view (head-major, kernels.h) over caller-owned memory of kv_region_bytes(...) bytes.
KvRegion make_kv_region(GgmlType type, uint8_t* data, int64_t width, int64_t n_ctx, int64_t n_heads = 1,
                        bool blocked = false);

}  // namespace minfer::cpu
