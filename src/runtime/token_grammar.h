// A grammar applied to a vocabulary: which tokens may come next, as llama.cpp's grammar
// sampler decides it. A token's text is its piece with control tokens rendered (so a grammar
// can ask for "<|im_end|>" as text); end-of-generation tokens are allowed exactly where the text
// so far is complete in the grammar; tokens whose piece is empty never are.
#pragma once
#include <cstdint>
#include <memory>

#include "grammar/matcher.h"

namespace minfer::tok {
class Tokenizer;
}

namespace minfer::runtime {

class TokenGrammar {
 public:
  // At the start of the grammar; `tok` must outlive this.
  TokenGrammar(std::shared_ptr<const grammar::Grammar> rules, const tok::Tokenizer& tok);

  bool allows(int32_t id) const;
  // Appends the token's text (end-of-generation tokens: nothing). Error when !allows(id).
  void accept(int32_t id);
  // Only end-of-generation can follow: the text is complete and no character can extend it.
  bool finished() const { return m_.complete() && !m_.can_continue(); }

 private:
  grammar::Matcher m_;
  const tok::Tokenizer& tok_;
};

}  // namespace minfer::runtime
