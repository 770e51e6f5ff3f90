// File's private state, shared by the files that implement File (file.cpp, split.cpp).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/mapped_file.h"
#include "gguf/parser.h"

namespace minfer::gguf {

struct File::Impl {
  std::string path;
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;
  uint32_t n_splits = 1;
  std::vector<std::unique_ptr<MappedFile>> maps;  // one per part; empty for from_memory
  bool use_mmap = true;                           // the parts mapped, or read into memory
  std::vector<KV> kv;
  std::vector<TensorInfo> tensors;
  // Views into kv/tensors, which never change after construction.
  std::unordered_map<std::string_view, size_t> kv_index;
  std::unordered_map<std::string_view, size_t> tensor_index;

  void build_indexes();
};

// Adds the other parts of a split model whose first part is already in `impl`.
void open_split_parts(File::Impl& impl);

}  // namespace minfer::gguf
