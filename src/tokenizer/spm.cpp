// SentencePiece BPE on one raw-text fragment, as llama.cpp's llm_tokenizer_spm_session:
// start from UTF-8 characters, repeatedly merge the adjacent pair whose concatenation is the
// highest-scoring vocabulary token (ties: leftmost), then emit each symbol as its token or,
// failing that, as <0xNN> byte tokens.
#include <queue>

#include "tokenizer/impl.h"
#include "tokenizer/symbol_merge.h"
#include "tokenizer/unicode.h"

namespace minfer::tok {

namespace {

struct Symbol {
  int prev, next;
  uint32_t off, n;
};

struct Bigram {
  int left, right;
  float score;
  uint32_t size;
};

struct BigramOrder {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  }
};

}  // namespace

void Tokenizer::Impl::tokenize_spm(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  {
    uint32_t off = 0;
    int index = 0;
    while (off < text.size()) {
      const uint32_t n = uint32_t(std::min(text.size() - off, detail::utf8_len(uint8_t(text[off]))));
      const bool last = off + n == text.size();
      symbols.push_back(Symbol{index - 1, last ? -1 : index + 1, off, n});
      off += n;
      ++index;
    }
  }
  if (symbols.empty()) return;

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto add_bigram = [&](int left, int right) {
    if (left == -1 || right == -1) return;
    const uint32_t size = symbols[left].n + symbols[right].n;
    const int32_t id = text_to_token(text.substr(symbols[left].off, size));
    if (id < 0) return;
    queue.push(Bigram{left, right, tokens[id].score, size});
  };
  detail::merge_symbols(symbols, queue, add_bigram, [](Symbol&, const Bigram&) {});

  static const char* hex = "0123456789ABCDEF";
  for (int i = 0; i != -1; i = symbols[i].next) {
    const Symbol& s = symbols[i];
    const std::string_view piece = text.substr(s.off, s.n);
    const int32_t id = text_to_token(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // Merged symbols are always tokens, so this is a single character outside the
    // vocabulary: byte fallback (llama.cpp's byte_to_token: <0xNN>, else the byte itself).
    for (char c : piece) {
      const uint8_t b = uint8_t(c);
      const char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
      int32_t bid = text_to_token(std::string_view(name, 6));
      if (bid < 0) bid = text_to_token(std::string_view(&c, 1));
      if (bid < 0) bid = unk;  // llama.cpp would abort here
      if (bid >= 0) out.push_back(bid);
    }
  }
}

}  // namespace minfer::tok
