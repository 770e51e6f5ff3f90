// The weights of a model by name: type, GGUF-order shape and a pointer into the file's
// read-only mapping (zero copy). A table may also hold descriptors without data (synthetic
// models for graph tests: the builder needs only names, types and shapes).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "quant/types.h"

namespace minfer::gguf {
class File;
}

namespace minfer::models {

struct TensorRef {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::array<int64_t, 4> ne{1, 1, 1, 1};  // ne[0] = row length (input features)
  const uint8_t* data = nullptr;          // nullptr for a descriptor-only table
};

class TensorTable {
 public:
  explicit TensorTable(std::string source = "model") : source_(std::move(source)) {}
  static TensorTable from_gguf(const gguf::File& f);

  void add(TensorRef t);  // replaces a tensor of the same name
  const TensorRef* find(std::string_view name) const;
  const TensorRef& get(std::string_view name) const;  // Error "<source>: missing tensor <name>"
  bool has(std::string_view name) const { return find(name) != nullptr; }
  size_t size() const { return tensors_.size(); }
  const std::vector<TensorRef>& all() const { return tensors_; }  // in insertion order
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::vector<TensorRef> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace minfer::models
