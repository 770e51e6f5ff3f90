#include "sched/backend.h"

#include "common/error.h"

namespace minfer::sched {

WeightStore::~WeightStore() = default;
TensorMap::~TensorMap() = default;
Backend::~Backend() = default;

const WeightRef& WeightStore::get(const std::string& name) const {
  const WeightRef* w = find(name);
  if (w == nullptr) fail("weight '{}' is not loaded", name);
  return *w;
}

}  // namespace minfer::sched
