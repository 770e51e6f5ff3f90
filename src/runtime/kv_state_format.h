// The layout of a saved context state (kv_state.h) and its checking reader, apart from the
// runtime so that a fuzz target can take it alone.
//
// File: "MINFERKV", u32 version (1), u32 cache type (ggml id), u64 model fingerprint, u32 layers,
// i64 tokens, i32 token ids; per layer i64 k_width, v_width, heads, u64 K and V row bytes, then
// K's rows head by head, V's likewise; u64 checksum of all before it. Little-endian.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace minfer::runtime {

inline constexpr char kKvStateMagic[8] = {'M', 'I', 'N', 'F', 'E', 'R', 'K', 'V'};
inline constexpr uint32_t kKvStateVersion = 1;

// A 64-bit hash of a byte stream, a word at a time (the whole state passes through it: FNV's
// byte loop would cost more than the disk). The same bytes give the same hash however they are
// split between add() calls.
class StateHasher {
 public:
  void add(const void* p, size_t n);
  uint64_t value() const;
  template <class T>
  void add_value(const T& v) { add(&v, sizeof v); }
  void add_string(const std::string& s) { add_value(uint64_t(s.size())); add(s.data(), s.size()); }

 private:
  void push(uint8_t byte);
  void mix(uint64_t w);
  uint64_t h_ = 0x9E3779B97F4A7C15ull;
  uint64_t pending_ = 0;  // bytes not yet a whole word, low first
  size_t n_pending_ = 0, total_ = 0;
};

// What a state file must match: the reader's model and cache.
struct KvStateExpect {
  uint32_t type = 0;          // ggml type id of the cache
  uint64_t fingerprint = 0;   // model_fingerprint()
  int64_t n_ctx = 0;          // the most tokens it may hold
  int64_t n_vocab = 0;
  struct Layer {
    int64_t k_width, v_width, n_heads;
    uint64_t k_row, v_row;  // bytes of one head's row
  };
  std::vector<Layer> layers;
};

// A state file checked whole against `e` (its bytes in memory): its tokens and where its first
// layer's rows begin (each layer: its geometry, K's rows head by head, V's). Pure; Error naming
// `name` for anything that does not fit (the fuzz target's entry point).
struct KvStateView {
  std::vector<int32_t> tokens;
  size_t rows_at = 0;
};
KvStateView parse_kv_state(std::span<const uint8_t> bytes, const KvStateExpect& e, const std::string& name);

}  // namespace minfer::runtime
