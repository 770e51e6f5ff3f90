// libFuzzer entry point for the KL-divergence base reader (minfer perplexity --kl-divergence):
// any file must either read (its rows until the end) or throw minfer::Error. The input goes
// through a temporary file, as the reader streams from one.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/error.h"
#include "runtime/kl_divergence.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/minfer-fuzz-kld-" + std::to_string(::getpid());
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    minfer::runtime::KldBaseReader r(path, 16);
    double sum = 0;
    for (int i = 0; i < 64; ++i)
      for (double x : r.next()) sum += x;
    volatile double sink = sum;
    (void)sink;
  } catch (const minfer::Error&) {
  }
  return 0;
}
