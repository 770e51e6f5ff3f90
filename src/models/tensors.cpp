#include "models/tensors.h"

#include "common/error.h"
#include "gguf/gguf.h"

namespace minfer::models {

TensorTable TensorTable::from_gguf(const gguf::File& f) {
  TensorTable t(f.path());
  for (const gguf::TensorInfo& ti : f.tensors()) t.add({ti.name, ti.type, ti.ne, ti.data});
  return t;
}

void TensorTable::add(TensorRef t) {
  auto it = index_.find(t.name);
  if (it != index_.end()) {
    tensors_[it->second] = std::move(t);
    return;
  }
  index_.emplace(t.name, tensors_.size());
  tensors_.push_back(std::move(t));
}

const TensorRef* TensorTable::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorRef& TensorTable::get(std::string_view name) const {
  const TensorRef* t = find(name);
  if (t == nullptr) fail("{}: missing tensor {}", source_, name);
  return *t;
}

}  // namespace minfer::models
