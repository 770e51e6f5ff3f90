#include "runtime/kv_state.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "backend/cpu/kernels.h"
#include "common/error.h"
#include "runtime/model.h"
#include "sched/alloc.h"

namespace minfer::runtime {
namespace {

constexpr char kMagic[8] = {'M', 'I', 'N', 'F', 'E', 'R', 'K', 'V'};
constexpr uint32_t kVersion = 1;

// A 64-bit hash of a byte stream, a word at a time (the whole state passes through it: FNV's
// byte loop would cost more than the disk). The same bytes give the same hash however they are
// split between add() calls.
struct Hasher {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  uint64_t pending = 0;  // bytes not yet a whole word, low first
  size_t n_pending = 0, total = 0;
  void add(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    total += n;
    size_t i = 0;
    for (; i < n && n_pending > 0; ++i) push(b[i]);
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, b + i, 8);
      mix(w);
    }
    for (; i < n; ++i) push(b[i]);
  }
  uint64_t value() const {
    Hasher c = *this;
    c.mix(c.pending);
    c.mix(c.total);
    return c.h;
  }
  void push(uint8_t byte) {
    pending |= uint64_t(byte) << (8 * n_pending);
    if (++n_pending == 8) {
      mix(pending);
      pending = 0;
      n_pending = 0;
    }
  }
  void mix(uint64_t w) {
    h ^= w + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
  }
  template <class T>
  void add_value(const T& v) { add(&v, sizeof v); }
  void add_string(const std::string& s) { add_value(uint64_t(s.size())); add(s.data(), s.size()); }
};

struct LayerGeometry {
  int64_t k_width, v_width, n_heads;
  uint64_t k_row, v_row;
};

LayerGeometry geometry(const sched::KvPair& p) {
  return {p.k.width, p.v.width, p.k.n_heads, p.k.row_bytes, p.v.row_bytes};
}

// Writes to a FILE, hashing what it writes.
struct Out {
  std::FILE* f;
  Hasher hash;
  size_t bytes = 0;
  bool ok = true;
  void put(const void* p, size_t n) {
    hash.add(p, n);
    ok = ok && std::fwrite(p, 1, n, f) == n;
    bytes += n;
  }
  template <class T>
  void value(const T& v) { put(&v, sizeof v); }
};

// Reads from the file's bytes in memory; running past the end is an error naming the file.
struct In {
  const std::string& path;
  const std::vector<uint8_t>& b;
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

uint64_t model_fingerprint(const Model& m) {
  Hasher h;
  const models::HParams& hp = m.hparams();
  h.add_string(m.arch());
  for (int64_t v : {hp.n_vocab, hp.n_embd, hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim, hp.head_dim_v})
    h.add_value(v);
  for (const models::TensorRef& t : m.tensors().all()) {
    h.add_string(t.name);
    h.add_value(uint32_t(t.type));
    for (int64_t n : t.ne) h.add_value(n);
  }
  for (const char* name : {"token_embd.weight", "output_norm.weight"})
    if (const models::TensorRef* t = m.tensors().find(name); t && t->data) {
      const int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
      h.add(t->data, std::min<size_t>(4096, row_size(t->type, t->ne[0]) * size_t(n / t->ne[0])));
    }
  return h.value();
}

size_t write_kv_state(const std::string& path, const Model& m, sched::KvStore& kv,
                      std::span<const int32_t> tokens) {
  const uint32_t n_layer = uint32_t(m.hparams().n_layer);
  const std::string tmp = path + ".tmp";
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(tmp.c_str(), "wb"), &std::fclose);
  if (!f) fail("{}: cannot write the state file: {}", path, std::strerror(errno));
  Out out{f.get(), {}};
  out.put(kMagic, sizeof kMagic);
  out.value(kVersion);
  out.value(uint32_t(kv.type()));
  out.value(model_fingerprint(m));
  out.value(n_layer);
  out.value(int64_t(tokens.size()));
  out.put(tokens.data(), tokens.size_bytes());
  std::vector<uint8_t> row;
  for (uint32_t il = 0; il < n_layer; ++il) {
    const sched::KvPair p = kv.layer(int(il));
    const LayerGeometry g = geometry(p);
    out.value(g);
    for (const cpu::KvRegion* r : {&p.k, &p.v}) {
      row.resize(r->row_bytes);
      for (int64_t h = 0; h < r->n_heads; ++h)
        for (size_t pos = 0; pos < tokens.size(); ++pos) {
          cpu::kv_get_row(*r, h, int64_t(pos), row.data());
          out.put(row.data(), row.size());
        }
    }
  }
  const uint64_t sum = out.hash.value();
  out.value(sum);
  const bool closed = std::fclose(f.release()) == 0;
  if (!out.ok || !closed) {
    std::filesystem::remove(tmp);
    fail("{}: cannot write the state file (disk full?)", path);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    fail("{}: cannot write the state file: {}", path, ec.message());
  }
  return out.bytes;
}

std::vector<int32_t> read_kv_state(const std::string& path, const Model& m, sched::KvStore& kv,
                                   int64_t n_ctx, size_t* bytes_read) {
  const uint32_t n_layer = uint32_t(m.hparams().n_layer);
  // The largest state this context could hold: a bigger file is not one of ours.
  size_t limit = 64 + size_t(n_ctx) * 4 + 8;
  for (uint32_t il = 0; il < n_layer; ++il) {
    const LayerGeometry g = geometry(kv.layer(int(il)));
    limit += sizeof(LayerGeometry) + size_t(g.n_heads) * size_t(n_ctx) * (g.k_row + g.v_row);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail("{}: cannot read the state file: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail("{}: not a state file (not a regular file)", path);
  if (size_t(st.st_size) > limit)
    fail("{}: {} bytes, more than a state of this model and context can be ({}): another model, "
         "cache type or a larger context", path, size_t(st.st_size), limit);
  std::vector<uint8_t> bytes(size_t(st.st_size));
  {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f || std::fread(bytes.data(), 1, bytes.size(), f.get()) != bytes.size())
      fail("{}: cannot read the state file", path);
  }
  In in{path, bytes};
  if (std::memcmp(in.take(sizeof kMagic), kMagic, sizeof kMagic) != 0)
    fail("{}: not a minfer state file", path);
  if (const auto v = in.value<uint32_t>(); v != kVersion)
    fail("{}: state file version {}, this minfer reads version {}", path, v, kVersion);
  const auto type = in.value<uint32_t>();
  if (type != uint32_t(kv.type()))
    fail("{}: the state was saved with KV cache type {}, this context uses {} (--kv-type)", path,
         type_name(GgmlType(type)), type_name(kv.type()));
  if (in.value<uint64_t>() != model_fingerprint(m)) fail("{}: the state was saved with another model", path);
  if (in.value<uint32_t>() != n_layer) fail("{}: the state has another number of layers", path);
  const auto n = in.value<int64_t>();
  if (n < 0 || n > n_ctx)
    fail("{}: the state holds {} tokens, more than this context's {} (-c)", path, n, n_ctx);
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  std::memcpy(tokens.data(), in.take(size_t(n) * 4), size_t(n) * 4);
  for (int32_t t : tokens)
    if (t < 0 || t >= m.n_vocab()) fail("{}: token {} is not in this model's vocabulary", path, t);
  // Every layer's rows are checked for place before any is copied: a bad file changes nothing.
  const size_t rows_at = in.at;
  for (uint32_t il = 0; il < n_layer; ++il) {
    const LayerGeometry want = geometry(kv.layer(int(il)));
    const auto g = in.value<LayerGeometry>();
    if (std::memcmp(&g, &want, sizeof g) != 0) fail("{}: layer {} of the state has another shape", path, il);
    in.take(size_t(g.n_heads) * size_t(n) * (g.k_row + g.v_row));
  }
  Hasher h;
  h.add(bytes.data(), in.at);
  if (in.value<uint64_t>() != h.value()) fail("{}: the state file is damaged (its checksum does not match)", path);
  if (in.at != bytes.size()) fail("{}: {} bytes after the end of the state", path, bytes.size() - in.at);
  in.at = rows_at;
  for (uint32_t il = 0; il < n_layer; ++il) {
    sched::KvPair p = kv.layer(int(il));
    in.value<LayerGeometry>();
    for (cpu::KvRegion* r : {&p.k, &p.v})
      for (int64_t hd = 0; hd < r->n_heads; ++hd)
        for (int64_t pos = 0; pos < n; ++pos) cpu::kv_set_row(*r, hd, pos, in.take(r->row_bytes));
  }
  if (bytes_read) *bytes_read = bytes.size();
  return tokens;
}

}  // namespace minfer::runtime
