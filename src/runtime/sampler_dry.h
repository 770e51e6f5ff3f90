// DRY ("Don't Repeat Yourself", p-e-w's sampler, llama.cpp's --dry-*): a token that would make
// the end of the text repeat an earlier stretch of at least `allowed_length` tokens loses
// multiplier * base^(length - allowed_length) of its logit, length being the longest such
// repeat it would extend. Sequence breakers (texts such as "\n" or ":") end what counts as a
// repeat: a stretch never reaches back past the latest breaker, and a token that is a breaker on
// its own is never penalized.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/sampler.h"

namespace minfer::tok {
class Tokenizer;
}

namespace minfer::runtime {

// The breakers as tokens, llama.cpp's way: a token whose text contains a breaker is one by itself
// (empty tail); a token whose text ends with the start of a breaker is one when the tokens of the
// rest of the breaker follow it (the tail, at most 40 tokens).
struct DryBreakers {
  std::unordered_multimap<int32_t, std::vector<int32_t>> by_head;
};
DryBreakers make_dry_breakers(const tok::Tokenizer& tok, const std::vector<std::string>& breakers);  // dry_breakers.cpp

// llama.cpp's defaults: newline, colon, double quote, asterisk.
std::vector<std::string> default_dry_breakers();

// The penalty over `history` (the last tokens of the text, oldest first: the caller cuts the
// window) on the candidates; nothing when multiplier is 0, base < 1 or history is no longer than
// allowed_length.
void apply_dry(std::vector<Candidate>& c, std::span<const int32_t> history, float multiplier, float base,
               int32_t allowed_length, const DryBreakers& breakers);

}  // namespace minfer::runtime
