// libFuzzer entry point for the GGUF reader: any input must either open or throw
// minfer::Error. Anything else (a crash, a sanitizer report, another exception escaping)
// is a bug that libFuzzer reports.
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "gguf/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minfer::gguf;
  std::unique_ptr<File> f;
  try {
    f = File::from_memory(data, size, "fuzz.gguf");
  } catch (const minfer::Error&) {
    return 0;
  }
  // What a loader does next: walk the metadata through the typed getters and touch every
  // tensor's first and last byte (out-of-range pointers show up under ASan).
  for (const KV& kv : f->metadata()) {
    try {
      (void)f->get_string(kv.key);
    } catch (const minfer::Error&) {
    }
    try {
      (void)f->get_int_array(kv.key);
    } catch (const minfer::Error&) {
    }
    try {
      (void)f->get_string_array(kv.key);
    } catch (const minfer::Error&) {
    }
  }
  volatile uint8_t sink = 0;
  for (const TensorInfo& t : f->tensors()) {
    if (f->find_tensor(t.name) != &t) __builtin_trap();
    if (t.nbytes) sink = sink ^ t.data[0] ^ t.data[t.nbytes - 1];
  }
  (void)sink;
  return 0;
}
