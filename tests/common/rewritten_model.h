// A model of ../shared copied to a temporary GGUF file with some metadata changed: for tests of
// how the loader reads keys that no shared file carries (rope scaling, broken vocabularies, ...).
#pragma once
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/test_data.h"
#include "gguf/gguf.h"

namespace minfer::test {

// The copy lives as long as this object; `edit` sets or removes keys of the copied metadata.
class RewrittenModel {
 public:
  RewrittenModel(const std::string& shared_model, const std::function<void(gguf::Writer&)>& edit) {
    static std::atomic<int> serial{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("minfer-rewritten-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + ".gguf"))
                .string();
    auto f = gguf::File::open(shared_path("models/" + shared_model));
    gguf::Writer w(f->alignment());
    w.copy_metadata(*f);
    edit(w);
    for (const gguf::TensorInfo& t : f->tensors())
      w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims), t.data);
    w.write(path_);
  }
  ~RewrittenModel() { std::filesystem::remove(path_); }
  RewrittenModel(const RewrittenModel&) = delete;
  RewrittenModel& operator=(const RewrittenModel&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace minfer::test
