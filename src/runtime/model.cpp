#include "runtime/model.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>

#include "backend/cpu/backend.h"
#include "backend/cpu/kernel_info.h"
#include "common/error.h"
#include "gguf/gguf.h"
#include "runtime/memory_limit.h"
#include "tokenizer/tokenizer.h"

namespace minfer::runtime {

ModelWeights::ModelWeights(const models::TensorTable& t, bool repack, bool verbose,
                           const ReleaseFn& release, double memory_bytes) {
  for (const models::TensorRef& r : t.all()) {
    sched::WeightRef w;
    w.type = r.type;
    w.data = r.data;
    w.ne = r.ne;
    w.nbytes = row_size(r.type, r.ne[0]) * size_t(r.ne[1] * r.ne[2] * r.ne[3]);
    refs_.emplace(r.name, w);
  }
  if (!repack) return;
  // The embedding is read row by row (get_rows) from the mapping; it is a matmul weight only
  // when the model ties its output matrix to it.
  const bool tied = refs_.find("output.weight") == refs_.end();
  // One buffer for every matmul weight, on huge pages (aligned_buffer; per-tensor buffers of
  // 1-3 MiB would mostly miss them): a packed copy where the active kernels have a layout for the
  // type, else the GGUF rows as they are. The mapping's 4 KiB pages cost a TLB miss each and stop
  // the hardware prefetchers at every page: qwen3-0.6b F16 tg32 from the mapping 28.8-32.7 t/s at
  // 2 threads, 12.7-13.5 at 1; from the copy 39.7-41.0 and 18.1-23.0 (AMD Zen 5, alternating).
  struct Job {
    const models::TensorRef* ref;
    cpu::WeightView view;
    size_t offset, bytes;
    bool pack;
    GgmlType held;  // the type the copy holds (weights_converted_at_load)
  };
  std::vector<Job> jobs;
  size_t total = 0;
  for (const models::TensorRef& r : t.all()) {
    if (r.name == "token_embd.weight" && !tied) continue;
    if (r.ne[1] <= 1 || r.ne[2] != 1 || r.ne[3] != 1) continue;  // (vectors: norms, biases)
    Job j{&r, {}, total, refs_[r.name].nbytes, false, cpu::weights_converted_at_load(r.type)};
    if (cpu::packable(r.type, r.ne[1], r.ne[0]) && cpu::weights_repacked_at_load(r.type)) {
      j.view = cpu::make_weight_view(r.name, r.type, r.data, r.ne);
      j.bytes = cpu::packed_bytes(r.type, j.view.rows, j.view.cols);
      j.pack = true;
    } else if (j.held != r.type) {
      j.view = cpu::make_weight_view(r.name, r.type, r.data, r.ne);
      j.bytes = row_size(j.held, r.ne[0]) * size_t(j.view.rows);
    }
    jobs.push_back(j);
    total += (j.bytes + 63) / 64 * 64;
  }
  if (jobs.empty()) return;
  // Staged, the weights live in anonymous memory: more than the machine has would end in the
  // OOM killer or swap, where the mapping can still be paged from the file.
  if (memory_bytes > 0 && double(total) > 0.8 * memory_bytes) {
    std::fprintf(stderr,
                 "minfer: the weights' load-time copy (%.1f GiB) would not fit in the %.1f GiB of "
                 "memory: reading them from the file mapping instead (slower)\n",
                 double(total) / 1073741824.0, memory_bytes / 1073741824.0);
    return;
  }
  staged_ = cpu::aligned_buffer(total, "the model's weights");
  staged_bytes_ = total;
  for (const Job& j : jobs) {
    const models::TensorRef& r = *j.ref;
    sched::WeightRef& w = refs_[r.name];
    uint8_t* dst = staged_.get() + j.offset;
    if (j.pack) {
      cpu::pack_weight(j.view, dst);
      w.packed = dst;
      packed_bytes_ += j.bytes;
      ++n_packed_;
    } else if (j.held != r.type) {
      cpu::convert_weight(j.view, j.held, dst);
      w.type = j.held;
      w.data = dst;
      w.nbytes = j.bytes;
      copied_bytes_ += j.bytes;
      ++n_copied_;
    } else {
      cpu::copy_weight(r.data, j.bytes, dst);
      w.data = dst;
      copied_bytes_ += j.bytes;
      ++n_copied_;
    }
    // The copy serves every later read: the mapped pages can go at once, which keeps the peak
    // footprint near one copy (a fallback to the GGUF-layout kernels maps them again). A packed
    // embedding's rows (get_rows) and the rows past a packed matrix's last group are read there.
    const bool whole = !j.pack || (r.name != "token_embd.weight" && j.view.rows % cpu::kPackRows == 0);
    if (release && whole) release(r.data, row_size(r.type, r.ne[0]) * size_t(r.ne[1] * r.ne[2] * r.ne[3]));
    if (verbose)
      std::fprintf(stderr, "%s %s: %s %lld x %lld -> %s (%.1f MiB)\n",
                   j.pack ? "repacked" : j.held != r.type ? "converted" : "copied", r.name.c_str(),
                   std::string(type_name(r.type)).c_str(), (long long)r.ne[1], (long long)r.ne[0],
                   j.pack ? "x16 rows" : j.held != r.type ? std::string(type_name(j.held)).c_str() : "huge pages",
                   double(j.bytes) / 1048576.0);
  }
}

int ModelWeights::lock() const {
  if (!staged_ || staged_bytes_ == 0) return 0;
  return ::mlock(staged_.get(), staged_bytes_) == 0 ? 0 : errno;
}

std::string Model::lock_in_memory() const {
  int e = weights_->lock();
  if (e == 0) e = file_->lock_kept();
  return e == 0 ? std::string() : std::string(std::strerror(e));
}

const sched::WeightRef* ModelWeights::find(const std::string& name) const {
  auto it = refs_.find(name);
  return it == refs_.end() ? nullptr : &it->second;
}

Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& opts) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = gguf::File::open(path, opts.use_mmap);
  for (gguf::KV kv : opts.kv_overrides) {
    if (kv.key.starts_with("{arch}.")) kv.key = m->file_->architecture() + kv.key.substr(6);
    m->file_->override_kv(kv);
  }
  if (opts.progress) opts.progress(0.3);
  m->tensors_ = models::TensorTable::from_gguf(*m->file_);
  m->hp_ = models::hparams_from_gguf(*m->file_, m->tensors_);
  const gguf::File& file = *m->file_;
  // The tokenizer is built on its own thread while the weights are staged: its build is a chain
  // of hash-table lookups (one core, ~0.1 s for a 152K vocabulary) that the staging's page faults
  // and copies leave room beside. Both only read the parsed file (the staging releases tensor
  // pages, never metadata); a failure of either is rethrown here, after both have finished.
  std::future<std::unique_ptr<tok::Tokenizer>> tok =
      std::async(std::launch::async, [&file] { return tok::Tokenizer::from_gguf(file); });
  m->weights_ = std::make_unique<ModelWeights>(
      m->tensors_, opts.repack, opts.verbose,
      [&file](const uint8_t* p, size_t n) { file.release(p, n); },
      opts.memory_bytes < 0 ? usable_memory_bytes() : opts.memory_bytes);
  if (opts.progress) opts.progress(0.6);
  m->tok_ = tok.get();
  if (m->tok_->n_vocab() != m->hp_.n_vocab) {
    // llama.cpp pads some vocabularies; the embedding must cover every token id.
    if (m->tok_->n_vocab() > m->hp_.n_vocab) {
      fail("{}: the tokenizer has {} tokens but token_embd.weight only {} rows", path,
           m->tok_->n_vocab(), m->hp_.n_vocab);
    }
  }
  if (opts.progress) opts.progress(1.0);
  if (opts.verbose) {
    const models::HParams& hp = m->hp_;
    std::fprintf(stderr,
                 "model: %s, arch %s, %lld layers, n_embd %lld, n_ff %lld, heads %lld/%lld, "
                 "head_dim %lld, vocab %lld, ctx_train %lld\n",
                 path.c_str(), models::arch_name(hp.arch), (long long)hp.n_layer,
                 (long long)hp.n_embd, (long long)hp.n_ff, (long long)hp.n_head,
                 (long long)hp.n_head_kv, (long long)hp.head_dim, (long long)hp.n_vocab,
                 (long long)hp.n_ctx_train);
  }
  return m;
}

}  // namespace minfer::runtime
