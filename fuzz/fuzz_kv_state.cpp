// libFuzzer entry point for the saved-state reader (run --prompt-cache, the server's slot
// restore): any input must either parse against a fixed model/cache geometry or throw
// minfer::Error. With MINFER_FUZZ_SEED_DIR set, LLVMFuzzerInitialize first writes a valid state
// there (scripts/fuzz.sh seeds the corpus with it: the checksum is beyond a mutator's reach).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/kv_state_format.h"

namespace {

using minfer::runtime::KvStateExpect;

KvStateExpect expect() {
  KvStateExpect e;
  e.type = 1;  // F16
  e.fingerprint = 0x1234;
  e.n_ctx = 16;
  e.n_vocab = 100;
  e.layers = {{64, 64, 2, 64, 64}, {64, 32, 2, 64, 32}};
  return e;
}

// A valid state of 5 tokens for expect(), written as kv_state.cpp writes one.
std::vector<uint8_t> valid_state() {
  const KvStateExpect e = expect();
  std::vector<uint8_t> b;
  auto put = [&](const void* p, size_t n) { b.insert(b.end(), (const uint8_t*)p, (const uint8_t*)p + n); };
  put(minfer::runtime::kKvStateMagic, 8);
  put(&minfer::runtime::kKvStateVersion, 4);
  put(&e.type, 4);
  put(&e.fingerprint, 8);
  const uint32_t n_layer = uint32_t(e.layers.size());
  put(&n_layer, 4);
  const int64_t n = 5;
  put(&n, 8);
  for (int32_t t : {1, 2, 3, 50, 99}) put(&t, 4);
  for (const auto& l : e.layers) {
    put(&l, sizeof l);
    b.resize(b.size() + size_t(l.n_heads * n) * (l.k_row + l.v_row), 0x3c);
  }
  minfer::runtime::StateHasher h;
  h.add(b.data(), b.size());
  const uint64_t sum = h.value();
  put(&sum, 8);
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("MINFER_FUZZ_SEED_DIR")) {
    const std::vector<uint8_t> s = valid_state();
    (void)minfer::runtime::parse_kv_state(s, expect(), "seed");  // throws (and fails) when out of step
    std::ofstream(std::string(dir) + "/valid.state", std::ios::binary).write((const char*)s.data(), std::streamsize(s.size()));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const KvStateExpect e = expect();
  try {
    const auto v = minfer::runtime::parse_kv_state({data, size}, e, "fuzz.state");
    volatile size_t sink = v.rows_at + v.tokens.size();
    (void)sink;
  } catch (const minfer::Error&) {
  }
  return 0;
}
