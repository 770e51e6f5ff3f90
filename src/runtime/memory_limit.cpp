#include "runtime/memory_limit.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/error.h"

namespace minfer::runtime {

double usable_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  double mem = pages > 0 && page > 0 ? double(pages) * double(page) : 0;
  for (const char* f : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(f);
    std::string v;
    if (!(in >> v) || v == "max") continue;
    char* end = nullptr;
    const double lim = std::strtod(v.c_str(), &end);
    if (end && *end == '\0' && lim > 0 && (mem == 0 || lim < mem)) mem = lim;
  }
  return mem;
}

uint64_t kv_cache_bytes(const models::HParams& hp, int64_t n_ctx, GgmlType kv_type) {
  const auto& tt = type_traits(kv_type);
  return uint64_t(n_ctx) * uint64_t(hp.n_layer) * uint64_t(hp.n_embd_k() + hp.n_embd_v()) *
         uint64_t(tt.type_size) / uint64_t(tt.block_size);
}

void check_kv_fits(uint64_t kv_bytes, int64_t n_ctx, double mem_bytes) {
  if (mem_bytes <= 0 || double(kv_bytes) <= mem_bytes) return;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  fail("the KV cache for {} tokens needs {:.1f} GiB, more than the {:.1f} GiB of memory this "
       "process may use: use a smaller context (-c) or a smaller KV type (--kv-type q8_0)",
       n_ctx, double(kv_bytes) / gib, mem_bytes / gib);
}

}  // namespace minfer::runtime
