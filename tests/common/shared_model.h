// A model of ../shared/models, loaded once per test process and kept (the tests of one binary
// share it: loading and repacking is most of a small test's time).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "common/test_data.h"
#include "runtime/model.h"

namespace minfer::test {

inline const runtime::Model& shared_model(const std::string& name) {
  static std::map<std::string, std::unique_ptr<runtime::Model>> cache;
  auto& m = cache[name];
  if (!m) m = runtime::Model::load(shared_path("models/" + name));
  return *m;
}

}  // namespace minfer::test
