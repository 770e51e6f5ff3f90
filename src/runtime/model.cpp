#include "runtime/model.h"

#include <cstdio>

#include "common/error.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace minfer::runtime {

ModelWeights::ModelWeights(const models::TensorTable& t) {
  for (const models::TensorRef& r : t.all()) {
    sched::WeightRef w;
    w.type = r.type;
    w.data = r.data;
    w.ne = r.ne;
    w.nbytes = row_size(r.type, r.ne[0]) * size_t(r.ne[1] * r.ne[2] * r.ne[3]);
    refs_.emplace(r.name, w);
  }
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
  m->weights_ = std::make_unique<ModelWeights>(m->tensors_);
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
