#include "runtime/kv_state_format.h"

#include "common/error.h"
#include "quant/types.h"

namespace minfer::runtime {

void StateHasher::add(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  total_ += n;
  size_t i = 0;
  for (; i < n && n_pending_ > 0; ++i) push(b[i]);
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, b + i, 8);
    mix(w);
  }
  for (; i < n; ++i) push(b[i]);
}

uint64_t StateHasher::value() const {
  StateHasher c = *this;
  c.mix(c.pending_);
  c.mix(c.total_);
  return c.h_;
}

void StateHasher::push(uint8_t byte) {
  pending_ |= uint64_t(byte) << (8 * n_pending_);
  if (++n_pending_ == 8) {
    mix(pending_);
    pending_ = 0;
    n_pending_ = 0;
  }
}

void StateHasher::mix(uint64_t w) {
  h_ ^= w + 0x9E3779B97F4A7C15ull + (h_ << 6) + (h_ >> 2);
  h_ *= 0xFF51AFD7ED558CCDull;
  h_ ^= h_ >> 33;
}

namespace {

// Reads from the file's bytes in memory; running past the end is an error naming the file.
struct In {
  const std::string& path;
  std::span<const uint8_t> b;
  size_t at = 0;
  const uint8_t* take(size_t n) {
    if (n > b.size() - at) fail("{}: the state file is truncated", path);
    const uint8_t* p = b.data() + at;
    at += n;
    return p;
  }
  template <class T>
  T value() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
};

}  // namespace

KvStateView parse_kv_state(std::span<const uint8_t> bytes, const KvStateExpect& e, const std::string& path) {
  In in{path, bytes};
  if (std::memcmp(in.take(sizeof kKvStateMagic), kKvStateMagic, sizeof kKvStateMagic) != 0)
    fail("{}: not a minfer state file", path);
  if (const auto v = in.value<uint32_t>(); v != kKvStateVersion)
    fail("{}: state file version {}, this minfer reads version {}", path, v, kKvStateVersion);
  const auto type = in.value<uint32_t>();
  if (type != e.type)
    fail("{}: the state was saved with KV cache type {}, this context uses {} (--kv-type)", path,
         type_traits(type) ? type_name(GgmlType(type)) : std::string_view("?"), type_name(GgmlType(e.type)));
  if (in.value<uint64_t>() != e.fingerprint) fail("{}: the state was saved with another model", path);
  if (in.value<uint32_t>() != e.layers.size()) fail("{}: the state has another number of layers", path);
  const auto n = in.value<int64_t>();
  if (n < 0 || n > e.n_ctx)
    fail("{}: the state holds {} tokens, more than this context's {} (-c)", path, n, e.n_ctx);
  KvStateView view;
  view.tokens.resize(size_t(n));
  std::memcpy(view.tokens.data(), in.take(size_t(n) * 4), size_t(n) * 4);
  for (int32_t t : view.tokens)
    if (t < 0 || t >= e.n_vocab) fail("{}: token {} is not in this model's vocabulary", path, t);
  view.rows_at = in.at;
  for (size_t il = 0; il < e.layers.size(); ++il) {
    const auto g = in.value<KvStateExpect::Layer>();
    if (std::memcmp(&g, &e.layers[il], sizeof g) != 0) fail("{}: layer {} of the state has another shape", path, il);
    in.take(size_t(g.n_heads) * size_t(n) * (g.k_row + g.v_row));
  }
  StateHasher h;
  h.add(bytes.data(), in.at);
  if (in.value<uint64_t>() != h.value()) fail("{}: the state file is damaged (its checksum does not match)", path);
  if (in.at != bytes.size()) fail("{}: {} bytes after the end of the state", path, bytes.size() - in.at);
  return view;
}

}  // namespace minfer::runtime
