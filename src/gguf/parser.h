// Parses and validates one GGUF image (one file, or one part of a split model) held in
// memory. Internal to the gguf module; File builds on it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace minfer::gguf {

inline constexpr uint64_t kDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT
inline constexpr uint32_t kMaxDims = 4;            // GGML_MAX_DIMS
inline constexpr size_t kMaxNameLength = 64;       // GGML_MAX_NAME, including the NUL

struct ParsedImage {
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t header_end = 0;   // first byte after the tensor infos
  uint64_t data_offset = 0;  // header_end rounded up to the alignment
  std::vector<KV> kv;
  std::vector<TensorInfo> tensors;  // data pointers set, split = 0
};

// Throws minfer::Error("<name>: <what>") on anything malformed; never reads outside
// [data, data + size).
ParsedImage parse_image(const uint8_t* data, size_t size, const std::string& name);

}  // namespace minfer::gguf
