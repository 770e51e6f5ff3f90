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

using LayerGeometry = KvStateExpect::Layer;

LayerGeometry geometry(const sched::KvPair& p) {
  return {p.k.width, p.v.width, p.k.n_heads, p.k.row_bytes, p.v.row_bytes};
}

// Writes to a FILE, hashing what it writes.
struct Out {
  std::FILE* f;
  StateHasher hash;
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

}  // namespace

uint64_t model_fingerprint(const Model& m) {
  StateHasher h;
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
  out.put(kKvStateMagic, sizeof kKvStateMagic);
  out.value(kKvStateVersion);
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
  KvStateExpect e;
  e.type = uint32_t(kv.type());
  e.fingerprint = model_fingerprint(m);
  e.n_ctx = n_ctx;
  e.n_vocab = m.n_vocab();
  // The largest state this context could hold: a bigger file is not one of ours.
  size_t limit = 64 + size_t(n_ctx) * 4 + 8;
  for (int il = 0; il < int(m.hparams().n_layer); ++il) {
    e.layers.push_back(geometry(kv.layer(il)));
    const LayerGeometry& g = e.layers.back();
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
  // Checked whole before any row is copied: a bad file changes nothing.
  KvStateView view = parse_kv_state(bytes, e, path);
  const uint8_t* at = bytes.data() + view.rows_at;
  const int64_t n = int64_t(view.tokens.size());
  for (size_t il = 0; il < e.layers.size(); ++il) {
    sched::KvPair p = kv.layer(int(il));
    at += sizeof(LayerGeometry);
    for (cpu::KvRegion* r : {&p.k, &p.v})
      for (int64_t hd = 0; hd < r->n_heads; ++hd)
        for (int64_t pos = 0; pos < n; ++pos, at += r->row_bytes) cpu::kv_set_row(*r, hd, pos, at);
  }
  if (bytes_read) *bytes_read = bytes.size();
  return std::move(view.tokens);
}

}  // namespace minfer::runtime
