// A loaded model: the GGUF file (its read-only mapping; the matmul weights staged at load onto
// huge pages, see ModelWeights), the tokenizer, the hyperparameters, and the weight store the
// graph executor resolves names in.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/cpu/repack.h"
#include "gguf/gguf.h"
#include "models/hparams.h"
#include "models/tensors.h"
#include "sched/backend.h"

namespace minfer::gguf {
class File;
}
namespace minfer::tok {
class Tokenizer;
}

namespace minfer::runtime {

struct LoadOptions {
  bool verbose = false;                    // a summary line (and one per staged tensor) on stderr
  bool repack = true;                      // stage the matmul weights at load (ModelWeights)
  bool use_mmap = true;                    // false: the file is read into memory (--no-mmap)
  // llama.cpp's --override-kv (gguf::parse_kv_override), applied before anything reads the
  // metadata; keys starting with "{arch}." name the model's architecture prefix (the CLI's rope
  // flags: "{arch}.rope.freq_base").
  std::vector<gguf::KV> kv_overrides;
  double memory_bytes = -1;                // memory the staged copy must fit in; < 0: the machine's
  std::function<void(double)> progress;   // 0..1
};

// Name -> WeightRef over a TensorTable (the GGUF mapping). With `repack`, every matmul weight is
// staged at construction into one buffer on huge pages: a repacked copy (WeightRef::packed) where
// the active CPU kernels have a packed layout for its type, else a copy of its GGUF rows
// (WeightRef::data then points there); the embedding stays in the mapping unless it is also the
// output matrix.
class ModelWeights final : public sched::WeightStore {
 public:
  // `release` (may be empty) is told each GGUF range that only its copy is read from afterwards
  // (wholly staged, not a packed embedding), right after it is staged. Nothing is staged when the
  // copy would take more than 80 % of memory_bytes (0: unknown, no limit).
  using ReleaseFn = std::function<void(const uint8_t*, size_t)>;
  explicit ModelWeights(const models::TensorTable& t, bool repack = false, bool verbose = false,
                        const ReleaseFn& release = {}, double memory_bytes = 0);
  const sched::WeightRef* find(const std::string& name) const override;
  size_t n_packed() const { return n_packed_; }
  size_t packed_bytes() const { return packed_bytes_; }
  size_t n_copied() const { return n_copied_; }
  size_t copied_bytes() const { return copied_bytes_; }
  // mlock() of the staged copy; 0 or errno.
  int lock() const;

 private:
  std::unordered_map<std::string, sched::WeightRef> refs_;
  cpu::AlignedBuffer staged_;  // the packed and the copied weights, 64-byte aligned each
  size_t staged_bytes_ = 0;
  size_t packed_bytes_ = 0, n_packed_ = 0;
  size_t copied_bytes_ = 0, n_copied_ = 0;
};

class Model {
 public:
  // Errors name the file: not a GGUF, unsupported architecture, missing/ill-shaped tensor.
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& opts = {});
  ~Model();

  const gguf::File& file() const { return *file_; }
  const tok::Tokenizer& tokenizer() const { return *tok_; }
  const models::HParams& hparams() const { return hp_; }
  const models::TensorTable& tensors() const { return tensors_; }
  const ModelWeights& weights() const { return *weights_; }
  std::string arch() const { return models::arch_name(hp_.arch); }
  int64_t n_vocab() const { return hp_.n_vocab; }
  int64_t n_ctx_train() const { return hp_.n_ctx_train; }
  // llama.cpp's --mlock: the weights kept in RAM, not swapped out (the staged copy and what is
  // still read from the mapping). "" or why the system refused (errno's text).
  std::string lock_in_memory() const;

 private:
  Model() = default;
  std::unique_ptr<gguf::File> file_;
  std::unique_ptr<tok::Tokenizer> tok_;
  models::HParams hp_;
  models::TensorTable tensors_;
  std::unique_ptr<ModelWeights> weights_;
};

}  // namespace minfer::runtime
