// A grammar applied to a vocabulary: which tokens may come next, as llama.cpp's grammar
// sampler decides it. A token's text is its piece with control tokens rendered (so a grammar
// can ask for "<|im_end|>" as text); end-of-generation tokens are allowed exactly where the text
// so far is complete in the grammar; tokens whose piece is empty never are.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/matcher.h"

namespace minfer::tok {
class Tokenizer;
}

namespace minfer::runtime {

class TokenGrammar {
 public:
  // At the start of the grammar; `tok` must outlive this. `triggers` makes it lazy (llama.cpp's
  // grammar triggers, which its server uses for tool_choice auto): every token is allowed until
  // one of these texts appears in the generated text, and from its first byte on the text must
  // follow the grammar (a token that would start it wrongly is not allowed).
  TokenGrammar(std::shared_ptr<const grammar::Grammar> rules, const tok::Tokenizer& tok,
               std::vector<std::string> triggers = {});

  bool allows(int32_t id) const;
  // Appends the token's text (end-of-generation tokens: nothing). Error when !allows(id).
  void accept(int32_t id);
  // Only end-of-generation can follow: the text is complete and no character can extend it.
  bool finished() const { return active_ && m_.complete() && !m_.can_continue(); }
  bool active() const { return active_; }

 private:
  size_t trigger_at(std::string_view text) const;  // the earliest trigger's start, or npos

  grammar::Matcher m_;
  const tok::Tokenizer& tok_;
  std::vector<std::string> triggers_;
  bool active_ = true;
  std::string pending_;  // lazy: the end of the text so far that a trigger may still begin in
};

}  // namespace minfer::runtime
