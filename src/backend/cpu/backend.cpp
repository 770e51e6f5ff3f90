#include "backend/cpu/backend.h"

#include "backend/cpu/cpu_features.h"
#include "common/error.h"

namespace minfer::cpu {

WeightView make_weight_view(std::string_view name, GgmlType type, const uint8_t* data,
                            const std::array<int64_t, 4>& ne) {
  const TypeTraits& tr = type_traits(type);
  if (!tr.has_dequant) {
    fail("tensor {}: type {} is not supported for computation", name, tr.name);
  }
  if (ne[2] != 1 || ne[3] != 1) {
    fail("tensor {}: expected a 2-D matrix, got shape [{}, {}, {}, {}]", name, ne[0], ne[1], ne[2],
         ne[3]);
  }
  if (ne[0] <= 0 || ne[1] <= 0 || ne[0] % tr.block_size != 0) {
    fail("tensor {}: row length {} is not a positive multiple of the {} block size {}", name,
         ne[0], tr.name, tr.block_size);
  }
  if (data == nullptr) fail("tensor {}: no data", name);
  WeightView w;
  w.type = type;
  w.data = data;
  w.rows = ne[1];
  w.cols = ne[0];
  w.row_bytes = row_size(type, ne[0]);
  return w;
}

bool kv_type_supported(GgmlType t) {
  return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::Q8_0;
}

namespace {
int64_t region_positions(int64_t n_ctx, bool blocked) {
  return blocked ? (n_ctx + kKeyBlock - 1) / kKeyBlock * kKeyBlock : n_ctx;
}
}  // namespace

size_t kv_region_bytes(GgmlType type, int64_t width, int64_t n_ctx, int64_t n_heads, bool blocked) {
  if (!kv_type_supported(type)) {
    fail("KV cache type {} is not supported (use f32, f16 or q8_0)", type_name(type));
  }
  if (n_heads <= 0 || width <= 0 || width % n_heads != 0)
    fail("KV cache: a row of {} elements cannot hold {} heads", width, n_heads);
  const int64_t bs = type_traits(type).block_size, head = width / n_heads;
  if (head % bs != 0) {
    fail("KV cache type {} needs heads of a multiple of {} elements, got {}", type_name(type), bs,
         head);
  }
  if (n_ctx <= 0) fail("KV cache: context size must be positive, got {}", n_ctx);
  if (blocked && type != GgmlType::F16) fail("KV cache: only an F16 region can be blocked, not {}", type_name(type));
  return row_size(type, head) * size_t(n_heads) * size_t(region_positions(n_ctx, blocked));
}

bool kv_keys_blocked(GgmlType type) { return type == GgmlType::F16 && active_isa() >= Isa::Avx512; }

KvRegion make_kv_region(GgmlType type, uint8_t* data, int64_t width, int64_t n_ctx, int64_t n_heads,
                        bool blocked) {
  (void)kv_region_bytes(type, width, n_ctx, n_heads, blocked);  // validates type, width and heads
  KvRegion r;
  r.type = type;
  r.data = data;
  r.width = width;
  r.n_ctx = n_ctx;
  r.n_heads = n_heads;
  r.row_bytes = row_size(type, width / n_heads);
  r.head_bytes = r.row_bytes * size_t(region_positions(n_ctx, blocked));
  r.blocked = blocked;
  return r;
}

}  // namespace minfer::cpu
