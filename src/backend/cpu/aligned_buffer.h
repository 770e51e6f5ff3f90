// Large buffers the kernels stream every step (repacked weights, KV regions): 64-byte aligned,
// and from 2 MiB up 2 MiB aligned and advised onto huge pages.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace minfer::cpu {

struct AlignedFree {
  void operator()(uint8_t* p) const;
};
using AlignedBuffer = std::unique_ptr<uint8_t[], AlignedFree>;

// `what` names the buffer in the error when memory runs out.
AlignedBuffer aligned_buffer(size_t bytes, const char* what = "repacked weights");

}  // namespace minfer::cpu
