// Reading ../shared/golden/models/*.json and comparing an engine's log-probabilities with
// them as golden/models/README.md prescribes ("How to compare an engine").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minfer::test {

struct GoldenTop {
  int32_t id;
  double logprob;
};

struct GoldenFile {
  std::string path, model, weight_type;
  std::vector<int32_t> prompt_ids, greedy_ids;
  std::vector<std::vector<GoldenTop>> positions;  // [pos][20]
};

GoldenFile read_golden(const std::string& path);
std::vector<std::string> golden_files();  // every golden model file except greedy64

struct Tolerance {
  double max_abs;      // |Δlogprob| over each position's golden top-20
  double margin;       // top-1 must agree where the golden margin exceeds this
  double mean;         // mean |Δlogprob| over all (position, id) pairs; < 0 = not checked
};
Tolerance tolerance_for(const std::string& weight_type);

struct Comparison {
  double max_abs = 0, mean_abs = 0;
  int top1_disagreements = 0;   // where the golden margin > tolerance margin
  int intruders = 0;            // ids outside the golden top-20 above top[19] + tol
  std::string worst;            // description of the largest difference
};
// logprobs: [n_positions][n_vocab] from the engine.
Comparison compare(const GoldenFile& g, const std::vector<std::vector<double>>& logprobs,
                   const Tolerance& tol);

}  // namespace minfer::test
