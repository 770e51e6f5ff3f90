// A context's saved state (what llama.cpp's session and slot files hold, in minfer's own format):
// the tokens the KV cache holds and their rows of every layer's K and V, in the cache type's plain
// row layout (cpu::kv_get_row), so a file loads whatever layout this CPU keeps keys in.
// The file's layout: kv_state_format.h.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/kv_state_format.h"

namespace minfer::sched {
class KvStore;
}

namespace minfer::runtime {

class Model;

// What identifies the model a state belongs to: its architecture, shapes, tensor names and types,
// and the first bytes of its embedding and final norm (two fine-tunes of one model differ there).
uint64_t model_fingerprint(const Model& m);

// Writes `tokens` and their rows (positions 0..tokens.size()) to `path` (through path.tmp, renamed
// into place: an error leaves nothing half-written). Returns the bytes written.
size_t write_kv_state(const std::string& path, const Model& m, sched::KvStore& kv,
                      std::span<const int32_t> tokens);

// Reads a state written for the same model and cache type into `kv` (whose n_ctx may differ from
// the writer's, but must hold the tokens) and returns its tokens. Error naming the file and what
// is wrong (not a state file, another model, another cache type, too many tokens for n_ctx,
// truncated or damaged) before anything in `kv` changes.
std::vector<int32_t> read_kv_state(const std::string& path, const Model& m, sched::KvStore& kv,
                                   int64_t n_ctx, size_t* bytes_read = nullptr);

}  // namespace minfer::runtime
