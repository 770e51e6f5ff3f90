// How much memory this process may use, and the check that a KV cache fits in it: the cache is
// allocated and zeroed when a context is created, so one larger than the machine's memory would
// otherwise end in the kernel's OOM killer instead of an error message.
#pragma once
#include <cstdint>

#include "models/hparams.h"
#include "quant/types.h"

namespace minfer::runtime {

// Physical RAM, or less under a cgroup memory limit (containers); 0 when unknown.
double usable_memory_bytes();

// Bytes of a KV cache of n_ctx tokens in kv_type for every layer of hp (its K and V rows whole
// blocks of the type: Context checks that first).
uint64_t kv_cache_bytes(const models::HParams& hp, int64_t n_ctx, GgmlType kv_type);

// Error (naming the sizes and what to change) when a KV cache of kv_bytes for n_ctx tokens is
// larger than mem_bytes; mem_bytes 0 (unknown) checks nothing.
void check_kv_fits(uint64_t kv_bytes, int64_t n_ctx, double mem_bytes);

}  // namespace minfer::runtime
