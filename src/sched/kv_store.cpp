#include <cstring>

#include "backend/cpu/aligned_buffer.h"
#include "backend/cpu/backend.h"
#include "common/error.h"
#include "sched/alloc.h"

namespace minfer::sched {

struct KvStore::Layer {
  int64_t k_width = 0, v_width = 0, n_ctx = 0, n_heads = 1;
  size_t k_bytes = 0, v_bytes = 0;
  cpu::AlignedBuffer mem;  // K region then V region, one block (on huge pages from 2 MiB)
  KvPair pair;
};

KvStore::KvStore(GgmlType kv_type) : type_(kv_type) {
  if (kv_type != GgmlType::F32 && kv_type != GgmlType::F16 && kv_type != GgmlType::Q8_0)
    fail("KV cache type {} is not supported (use F32, F16 or Q8_0)", type_name(kv_type));
}

KvStore::~KvStore() = default;

void KvStore::ensure_layer(int layer, int64_t k_width, int64_t v_width, int64_t n_ctx,
                           int64_t n_heads) {
  if (layer < 0) fail("KV cache: negative layer {}", layer);
  if (k_width <= 0 || v_width <= 0 || n_ctx <= 0)
    fail("KV cache: layer {} with widths {}/{} and n_ctx {}", layer, k_width, v_width, n_ctx);
  if (size_t(layer) < layers_.size() && layers_[size_t(layer)]) {
    const Layer& l = *layers_[size_t(layer)];
    if (l.k_width != k_width || l.v_width != v_width || l.n_ctx != n_ctx || l.n_heads != n_heads)
      fail("KV cache: layer {} already holds {}x{}/{} rows of {} heads, the graph wants {}x{}/{} of {}",
           layer, l.n_ctx, l.k_width, l.v_width, l.n_heads, n_ctx, k_width, v_width, n_heads);
    return;
  }
  // Sizes and validates (heads of whole blocks of the type) before anything changes.
  // Keys in blocks of positions where the CPU's attention reads them so without transposing.
  const bool k_blocked = cpu::kv_keys_blocked(type_);
  const size_t k_bytes = cpu::kv_region_bytes(type_, k_width, n_ctx, n_heads, k_blocked);
  const size_t v_bytes = cpu::kv_region_bytes(type_, v_width, n_ctx, n_heads);
  if (size_t(layer) >= layers_.size()) layers_.resize(size_t(layer) + 1);
  auto l = std::make_unique<Layer>();
  l->k_width = k_width;
  l->v_width = v_width;
  l->n_ctx = n_ctx;
  l->n_heads = n_heads;
  l->k_bytes = (k_bytes + kBufferAlign - 1) / kBufferAlign * kBufferAlign;
  l->v_bytes = v_bytes;
  l->mem = cpu::aligned_buffer(l->k_bytes + l->v_bytes, "the KV cache");
  std::memset(l->mem.get(), 0, l->k_bytes + l->v_bytes);
  l->pair.k = cpu::make_kv_region(type_, l->mem.get(), k_width, n_ctx, n_heads, k_blocked);
  l->pair.v = cpu::make_kv_region(type_, l->mem.get() + l->k_bytes, v_width, n_ctx, n_heads);
  layers_[size_t(layer)] = std::move(l);
}

void KvStore::ensure(const graph::ComputeGraph& g) {
  for (const graph::CNode& n : g.nodes) {
    const auto* m = std::get_if<graph::KvMeta>(&n.meta);
    if (const auto* s = std::get_if<graph::KvShiftMeta>(&n.meta)) m = &s->kv;
    if (m) {
      ensure_layer(m->layer, m->k_width, m->v_width, m->n_ctx, m->n_head_kv);
    } else if (const auto* f = std::get_if<graph::FusedQkvMeta>(&n.meta)) {
      ensure_layer(f->layer, f->n_head_kv * f->head_dim, f->n_head_kv * f->head_dim_v, f->n_ctx,
                   f->n_head_kv);
    }
  }
}

bool KvStore::has_layer(int layer) const {
  return layer >= 0 && size_t(layer) < layers_.size() && layers_[size_t(layer)] != nullptr;
}

KvPair KvStore::layer(int layer) {
  if (!has_layer(layer)) fail("KV cache: layer {} has no regions", layer);
  return layers_[size_t(layer)]->pair;
}

size_t KvStore::bytes() const {
  size_t total = 0;
  for (const auto& l : layers_)
    if (l) total += l->k_bytes + l->v_bytes;
  return total;
}

void KvStore::clear() {
  for (const auto& l : layers_)
    if (l) std::memset(l->mem.get(), 0, l->k_bytes + l->v_bytes);
}

}  // namespace minfer::sched
