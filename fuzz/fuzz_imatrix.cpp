// libFuzzer entry point for the importance-matrix reader (minfer quantize --imatrix): any
// input must either parse or throw minfer::Error.
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "tools/imatrix.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const minfer::tools::Imatrix m = minfer::tools::parse_imatrix(data, size, "fuzz.imatrix");
    float sum = 0.0f;  // touch every value (out-of-range reads show up under ASan)
    for (const auto& [name, w] : m.weights)
      for (float x : w) sum += x;
    volatile float sink = sum;
    (void)sink;
  } catch (const minfer::Error&) {
  }
  return 0;
}
