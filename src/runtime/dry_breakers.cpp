// make_dry_breakers (sampler_dry.h): apart from the penalty itself, which needs no tokenizer.
#include <algorithm>

#include "runtime/sampler_dry.h"
#include "tokenizer/tokenizer.h"

namespace minfer::runtime {

std::vector<std::string> default_dry_breakers() { return {"\n", ":", "\"", "*"}; }

DryBreakers make_dry_breakers(const tok::Tokenizer& tok, const std::vector<std::string>& breakers) {
  constexpr size_t kMaxTail = 40;
  DryBreakers out;
  for (const std::string& b : breakers) {
    if (b.empty()) continue;
    for (int32_t id = 0; id < int32_t(tok.n_vocab()); ++id) {
      const std::string text = tok.token_to_piece(id, true);
      if (text.find(b) != std::string::npos) {
        out.by_head.emplace(id, std::vector<int32_t>{});
        continue;
      }
      // Every place the text's end could start the breaker: the tokens of the breaker's rest
      // must follow this one.
      for (size_t at = text.find(b[0]); at != std::string::npos; at = text.find(b[0], at + 1)) {
        const size_t n = text.size() - at;  // < b.size(): the whole breaker is not in the text
        if (text.compare(at, n, b, 0, n) != 0) continue;
        std::vector<int32_t> tail = tok.encode(b.substr(n), false, false);
        if (tail.size() > kMaxTail) tail.resize(kMaxTail);
        auto [lo, hi] = out.by_head.equal_range(id);
        if (std::none_of(lo, hi, [&](const auto& e) { return e.second == tail; })) out.by_head.emplace(id, std::move(tail));
      }
    }
  }
  return out;
}

}  // namespace minfer::runtime
