#include "runtime/token_grammar.h"

#include "common/error.h"
#include "tokenizer/tokenizer.h"

namespace minfer::runtime {

TokenGrammar::TokenGrammar(std::shared_ptr<const grammar::Grammar> rules, const tok::Tokenizer& tok)
    : m_(std::move(rules)), tok_(tok) {}

bool TokenGrammar::allows(int32_t id) const {
  if (id < 0 || id >= tok_.n_vocab()) return false;
  if (tok_.is_eog(id)) return m_.complete();
  return m_.allows(tok_.token_piece(id));
}

void TokenGrammar::accept(int32_t id) {
  if (id < 0 || id >= tok_.n_vocab() || (tok_.is_eog(id) && !m_.complete()))
    fail("grammar: token {} does not fit the grammar here", id);
  if (!tok_.is_eog(id)) m_.accept(tok_.token_piece(id));  // (Error when it does not fit)
}

}  // namespace minfer::runtime
