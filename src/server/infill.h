// llama-server's /infill prompt: fill-in-the-middle for code models (Qwen2.5-Coder, CodeLlama,
// StarCoder, ...). The layout and the budget are llama-server's (format_infill):
//   [FIM_REP]myproject\n ([FIM_SEP]{filename}\n{text})... [FIM_SEP]filename\n   extra context
//   [BOS] [FIM_PRE]{prefix}{prompt} [FIM_SUF]{suffix} [FIM_MID]
// Without FIM_REP/FIM_SEP tokens the extra chunks are joined by "\n\n--- snippet ---\n\n". The
// prefix keeps its last 3/4 of a batch of tokens, the suffix its first 1/4 (less the prompt and
// two markers), and the extra context what is left of the context after a batch and twice the
// reply. Pure: a tokenizer in, tokens out.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minfer::tok {
class Tokenizer;
}

namespace minfer::server {

struct InfillInput {
  std::string prefix, suffix, prompt;
  struct Chunk {
    std::string filename, text;
  };
  std::vector<Chunk> extra;  // other files' text, as context
};

// llama-server's default batch, which sizes the prefix and suffix it keeps.
inline constexpr int64_t kInfillBatch = 2048;

// Error when the vocabulary has no FIM_PRE, FIM_SUF or FIM_MID token.
std::vector<int32_t> infill_tokens(const tok::Tokenizer& tok, const InfillInput& in, int64_t n_ctx,
                                   int64_t n_predict, int64_t n_batch = kInfillBatch);

}  // namespace minfer::server
