// Where a text stands in a grammar: the set of parse stacks (a pushdown automaton run over code
// points, as llama.cpp's grammar sampler), plus a UTF-8 sequence left incomplete by the last
// bytes. Text arrives as byte strings (tokens' pieces), which may split a character.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/gbnf.h"

namespace minfer::grammar {

class Matcher {
 public:
  // At the start of `root`.
  explicit Matcher(std::shared_ptr<const Grammar> g);

  // Whether the bytes can continue the text: every complete character is matched, and a
  // trailing incomplete UTF-8 sequence can still complete to a character the grammar takes
  // next. Empty bytes, a NUL byte and invalid UTF-8 (overlong forms, surrogates, beyond
  // U+10FFFF) are never allowed.
  bool allows(std::string_view bytes) const;
  // Appends the bytes (Error when !allows(bytes)).
  void accept(std::string_view bytes);
  // The text so far is a whole sentence of the grammar (it may also continue).
  bool complete() const;
  // Some character can follow.
  bool can_continue() const;

  // A frame: the next symbol of an alternative of a rule.
  struct Pos {
    uint32_t rule, alt, idx;
    auto operator<=>(const Pos&) const = default;
  };
  using Stack = std::vector<Pos>;  // innermost frame last; its next symbol is a character set

 private:
  struct Partial {  // an incomplete UTF-8 sequence: its bits so far, the bytes still due, and
    uint32_t value = 0;  // the least code point its length may encode (shorter forms are invalid)
    int remaining = 0;
    uint32_t min = 0;
  };
  // Runs the bytes from (stacks, partial); false as soon as nothing can match. out/pout (when
  // not null) get the result.
  bool run(std::string_view bytes, std::vector<Stack>* out, Partial* pout) const;
  void step(const std::vector<Stack>& in, uint32_t cp, std::vector<Stack>& out) const;
  // frames: the step's work so far (Error past a bound).
  void expand(Stack s, std::vector<Stack>& out, size_t& frames) const;
  const CharSet& top_set(const Stack& s) const;

  std::shared_ptr<const Grammar> g_;
  std::vector<Stack> stacks_;
  Partial partial_;
};

}  // namespace minfer::grammar
