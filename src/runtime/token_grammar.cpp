#include "runtime/token_grammar.h"

#include <algorithm>

#include "common/error.h"
#include "tokenizer/tokenizer.h"

namespace minfer::runtime {

TokenGrammar::TokenGrammar(std::shared_ptr<const grammar::Grammar> rules, const tok::Tokenizer& tok,
                           std::vector<std::string> triggers)
    : m_(std::move(rules)), tok_(tok), triggers_(std::move(triggers)), active_(triggers_.empty()) {}

size_t TokenGrammar::trigger_at(std::string_view text) const {
  size_t at = std::string_view::npos;
  for (const std::string& t : triggers_) at = std::min(at, text.find(t));
  return at;
}

bool TokenGrammar::allows(int32_t id) const {
  if (id < 0 || id >= tok_.n_vocab()) return false;
  if (!active_) {
    if (tok_.is_eog(id)) return true;
    const std::string text = pending_ + std::string(tok_.token_piece(id));
    const size_t at = trigger_at(text);
    return at == std::string::npos || m_.allows(std::string_view(text).substr(at));
  }
  if (tok_.is_eog(id)) return m_.complete();
  return m_.allows(tok_.token_piece(id));
}

void TokenGrammar::accept(int32_t id) {
  if (id < 0 || id >= tok_.n_vocab() || (tok_.is_eog(id) && active_ && !m_.complete()))
    fail("grammar: token {} does not fit the grammar here", id);
  if (tok_.is_eog(id)) return;
  if (active_) {
    m_.accept(tok_.token_piece(id));  // (Error when it does not fit)
    return;
  }
  pending_ += tok_.token_piece(id);
  if (const size_t at = trigger_at(pending_); at != std::string::npos) {
    active_ = true;
    m_.accept(std::string_view(pending_).substr(at));
    pending_.clear();
    return;
  }
  // Only a trigger's first bytes can still matter.
  size_t longest = 0;
  for (const std::string& t : triggers_) longest = std::max(longest, t.size());
  if (pending_.size() >= longest) pending_.erase(0, pending_.size() - (longest - 1));
}

}  // namespace minfer::runtime
