// A loaded model: the GGUF file (weights stay in its read-only mapping, zero copy), the
// tokenizer, the hyperparameters, and the weight store the graph executor resolves names in.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/cpu/repack.h"
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
  bool verbose = false;                    // a summary line (and one per repacked tensor) on stderr
  bool repack = true;                      // repacked copies of the matmul weights (repack.h)
  std::function<void(double)> progress;   // 0..1
};

// Name -> WeightRef over a TensorTable (the GGUF mapping). With `repack`, every matmul weight
// the active CPU kernels have a packed layout for gets a repacked copy at construction
// (WeightRef::packed); the embedding stays unpacked unless it is also the output matrix.
class ModelWeights final : public sched::WeightStore {
 public:
  // `release` (may be empty) is told each GGUF range that only its packed copy is read from
  // afterwards (wholly packed, not the embedding), right after it is packed.
  using ReleaseFn = std::function<void(const uint8_t*, size_t)>;
  explicit ModelWeights(const models::TensorTable& t, bool repack = false, bool verbose = false,
                        const ReleaseFn& release = {});
  const sched::WeightRef* find(const std::string& name) const override;
  size_t n_packed() const { return n_packed_; }
  size_t packed_bytes() const { return packed_bytes_; }

 private:
  std::unordered_map<std::string, sched::WeightRef> refs_;
  cpu::AlignedBuffer packed_;  // every packed copy, 64-byte aligned each
  size_t packed_bytes_ = 0;
  size_t n_packed_ = 0;
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

 private:
  Model() = default;
  std::unique_ptr<gguf::File> file_;
  std::unique_ptr<tok::Tokenizer> tok_;
  models::HParams hp_;
  models::TensorTable tensors_;
  std::unique_ptr<ModelWeights> weights_;
};

}  // namespace minfer::runtime
