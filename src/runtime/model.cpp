#include "runtime/model.h"

#include <cstdio>

#include "backend/cpu/backend.h"
#include "backend/cpu/kernel_info.h"
#include "common/error.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace minfer::runtime {

ModelWeights::ModelWeights(const models::TensorTable& t, bool repack, bool verbose,
                           const ReleaseFn& release) {
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
  // One buffer for every packed copy: it lies on huge pages (aligned_buffer), which per-tensor
  // buffers of 1-3 MiB would mostly miss.
  struct Job {
    const models::TensorRef* ref;
    cpu::WeightView view;
    size_t offset, bytes;
  };
  std::vector<Job> jobs;
  for (const models::TensorRef& r : t.all()) {
    if (r.name == "token_embd.weight" && !tied) continue;
    if (r.ne[2] != 1 || r.ne[3] != 1 || !cpu::packable(r.type, r.ne[1], r.ne[0]) ||
        !cpu::weights_repacked_at_load(r.type))
      continue;
    const cpu::WeightView v = cpu::make_weight_view(r.name, r.type, r.data, r.ne);
    const size_t bytes = cpu::packed_bytes(r.type, v.rows, v.cols);
    jobs.push_back({&r, v, packed_bytes_, bytes});
    packed_bytes_ += (bytes + 63) / 64 * 64;
  }
  if (jobs.empty()) return;
  packed_ = cpu::aligned_buffer(packed_bytes_);
  for (const Job& j : jobs) {
    const models::TensorRef& r = *j.ref;
    cpu::pack_weight(j.view, packed_.get() + j.offset);
    refs_[r.name].packed = packed_.get() + j.offset;
    // The packed copy serves every later read: the mapped pages can go at once, which keeps
    // the peak footprint near one copy (a fallback to the GGUF-layout kernels maps them again).
    if (release && r.name != "token_embd.weight" && j.view.rows % cpu::kPackRows == 0)
      release(r.data, j.view.row_bytes * size_t(j.view.rows));
    if (verbose)
      std::fprintf(stderr, "repacked %s: %s %lld x %lld -> x16 rows (%.1f MiB)\n", r.name.c_str(),
                   std::string(type_name(r.type)).c_str(), (long long)j.view.rows,
                   (long long)j.view.cols, double(j.bytes) / 1048576.0);
  }
  n_packed_ = jobs.size();
}

const sched::WeightRef* ModelWeights::find(const std::string& name) const {
  auto it = refs_.find(name);
  return it == refs_.end() ? nullptr : &it->second;
}

Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& opts) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = gguf::File::open(path);
  if (opts.progress) opts.progress(0.3);
  m->tensors_ = models::TensorTable::from_gguf(*m->file_);
  m->hp_ = models::hparams_from_gguf(*m->file_, m->tensors_);
  const gguf::File& file = *m->file_;
  m->weights_ = std::make_unique<ModelWeights>(
      m->tensors_, opts.repack, opts.verbose,
      [&file](const uint8_t* p, size_t n) { file.release(p, n); });
  if (opts.progress) opts.progress(0.6);
  m->tok_ = tok::Tokenizer::from_gguf(*m->file_);
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
