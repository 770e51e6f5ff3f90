// Embeddings as llama.cpp computes them (llama-server --embeddings, llama-embedding): each
// token's hidden state after the final norm, pooled over the text (mean, first or last token,
// llama.cpp's pooling types), then scaled to unit Euclidean length (llama-server's default).
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace minfer::runtime {

class Context;

// llama.cpp's enum llama_pooling_type (the GGUF key {arch}.pooling_type holds its value).
enum class Pooling { None = 0, Mean = 1, Cls = 2, Last = 3, Rank = 4 };
Pooling pooling_from_name(std::string_view name);  // none, mean, cls, last, rank; Error else
const char* pooling_name(Pooling p);

// llama.cpp's embd_normalize (common_embd_normalize): -1 none, 0 scaled so that the largest
// magnitude is 32760 (an int16 range), 1 taxicab, 2 Euclidean (llama-server's and
// llama-embedding's default), p > 2 the p-norm. An all-zero vector stays zero.
std::vector<float> normalize_embedding(std::span<const double> v, int norm);

// The embedding of `tokens` with `ctx` (built with ContextParams::embeddings), run from an
// empty cache in batches of n_batch, normalized as `norm` says. Error for pooling none or rank
// (no one vector), for no tokens, or for more than the context holds.
std::vector<float> embed(Context& ctx, std::span<const int32_t> tokens, Pooling pooling, int64_t n_batch = 512,
                         int norm = 2);
// Pooling none: every token's hidden state, each normalized as `norm` says.
std::vector<std::vector<float>> embed_tokens(Context& ctx, std::span<const int32_t> tokens, int64_t n_batch = 512,
                                             int norm = 2);

}  // namespace minfer::runtime
