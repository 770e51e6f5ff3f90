// Byte-level BPE on one raw-text fragment, as llama.cpp's llm_tokenizer_bpe_session: split
// with the pre-tokenizer regexes, map each word's bytes to GPT-2's code points, then merge
// adjacent symbols lowest rank first (ties: leftmost) until no ranked pair is left.
#include <queue>
#include <unordered_map>

#include "tokenizer/impl.h"
#include "tokenizer/symbol_merge.h"
#include "tokenizer/unicode.h"

namespace minfer::tok {

namespace {

struct Symbol {
  int prev, next;
  uint32_t off, n;  // byte range in the word
  int32_t id;       // token of that text, -1 when it is not one
};

struct Bigram {
  int left, right;
  int32_t rank;
  uint32_t size;
  int32_t merged;  // token id of the merged text, -1 when not a token
};

struct BigramOrder {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);
  }
};

}  // namespace

void Tokenizer::Impl::tokenize_bpe(std::string_view raw, std::vector<int32_t>& out) const {
  const std::string text = detail::sanitize_utf8(raw);
  const std::vector<size_t> lens = pretok->split(text);

  std::string word;
  std::vector<Symbol> symbols;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  std::string key;

  auto add_bigram = [&](int left, int right) {
    if (left == -1 || right == -1) return;
    const Symbol& l = symbols[left];
    const Symbol& r = symbols[right];
    if (l.id >= 0 && r.id >= 0) {
      // Every merge whose sides are both tokens is in bpe_pairs, so a miss is final.
      const auto* e = bpe_pairs.find(l.id, r.id);
      if (e) queue.push(Bigram{left, right, e->rank, l.n + r.n, e->merged});
      return;
    }
    key = merge_key(std::string_view(word).substr(l.off, l.n),
                    std::string_view(word).substr(r.off, r.n));
    auto it = bpe_ranks.find(key);
    if (it == bpe_ranks.end()) return;
    queue.push(Bigram{left, right, it->second, l.n + r.n,
                      text_to_token(std::string_view(word).substr(l.off, l.n + r.n))});
  };

  // Words repeat a lot in real text; their ids are a pure function of the word.
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> seen;  // raw word -> out range
  const size_t out_base = out.size();
  size_t base = 0;
  for (size_t len : lens) {
    const std::string_view raw_word = std::string_view(text).substr(base, len);
    base += len;
    if (raw_word.empty()) continue;
    if (auto it = seen.find(raw_word); it != seen.end()) {
      const auto [from, n] = it->second;
      for (size_t k = 0; k < n; ++k) out.push_back(out[out_base + from + k]);
      continue;
    }
    const size_t first = out.size();
    word.clear();
    for (char c : raw_word) word += detail::byte_to_unicode(uint8_t(c));

    symbols.clear();
    if (ignore_merges && text_to_token(word) >= 0) {
      symbols.push_back(Symbol{-1, -1, 0, uint32_t(word.size()), text_to_token(word)});
    } else {
      // Each character of the encoded word stands for one byte of the raw word.
      uint32_t off = 0;
      const int n_sym = int(raw_word.size());
      for (int k = 0; k < n_sym; ++k) {
        const uint8_t b = uint8_t(raw_word[k]);
        const uint32_t n = uint32_t(detail::byte_to_unicode(b).size());
        symbols.push_back(Symbol{k - 1, k + 1 == n_sym ? -1 : k + 1, off, n, byte_token[b]});
        off += n;
      }
      detail::merge_symbols(symbols, queue, add_bigram,
                            [](Symbol& l, const Bigram& b) { l.id = b.merged; });
    }

    for (const Symbol& s : symbols) {
      if (s.n == 0) continue;
      const std::string_view piece = std::string_view(word).substr(s.off, s.n);
      if (s.id >= 0) {
        out.push_back(s.id);
        continue;
      }
      // llama.cpp's fallback: each byte of the symbol's text on its own, when it is a token.
      for (char c : piece) {
        const int32_t bid = text_to_token(std::string_view(&c, 1));
        if (bid >= 0) out.push_back(bid);
      }
    }
    seen.emplace(raw_word, std::make_pair(first - out_base, out.size() - first));
  }
}

}  // namespace minfer::tok
