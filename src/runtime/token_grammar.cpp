#include "runtime/token_grammar.h"

#include "common/error.h"
#include "tokenizer/tokenizer.h"

namespace minfer::runtime {

TokenGrammar::TokenGrammar(std::string_view gbnf, const tok::Tokenizer& tok)
    : m_(std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(gbnf))) {
  const int32_t n = tok.n_vocab();
  pieces_.resize(size_t(n));
  eog_.resize(size_t(n));
  for (int32_t id = 0; id < n; ++id) {
    pieces_[size_t(id)] = tok.token_to_piece(id, true);
    eog_[size_t(id)] = tok.is_eog(id);
  }
}

bool TokenGrammar::allows(int32_t id) const {
  if (id < 0 || size_t(id) >= pieces_.size()) return false;
  if (eog_[size_t(id)]) return m_.complete();
  return m_.allows(pieces_[size_t(id)]);
}

void TokenGrammar::accept(int32_t id) {
  if (!allows(id)) fail("grammar: token {} does not fit the grammar here", id);
  if (!eog_[size_t(id)]) m_.accept(pieces_[size_t(id)]);
}

}  // namespace minfer::runtime
