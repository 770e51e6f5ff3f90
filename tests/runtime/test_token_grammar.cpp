// The grammar over a vocabulary's tokens, eager and lazy (llama.cpp's grammar triggers): a lazy
// grammar lets every token through until a trigger text appears, wherever the tokens split it,
// and holds the text to the grammar from the trigger's first byte on.
#include <gtest/gtest.h>

#include "common/error.h"
#include "grammar/gbnf.h"
#include "runtime/token_grammar.h"
#include "tokenizer/tokenizer.h"

using namespace minfer;

namespace {

std::shared_ptr<const grammar::Grammar> call_grammar() {
  return std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(R"(root ::= "<c>" [0-9]+ "</c>")"));
}

int32_t byte(char c) { return int32_t(uint8_t(c)); }

}  // namespace

TEST(TokenGrammar, LazyHoldsFromTheTriggerOn) {
  const auto tok = tok::Tokenizer::byte_level({"<|eos|>", "<c>", "<c>x"});
  const int32_t eos = *tok->find_token("<|eos|>"), open = *tok->find_token("<c>"), open_x = *tok->find_token("<c>x");
  runtime::TokenGrammar g(call_grammar(), *tok, {"<c>"});
  // Before the trigger: anything, the end of generation too; nothing is finished.
  for (char c : std::string("Hi, x < y")) {
    ASSERT_TRUE(g.allows(byte(c)));
    g.accept(byte(c));
  }
  EXPECT_FALSE(g.active());
  EXPECT_FALSE(g.finished());
  EXPECT_TRUE(g.allows(eos));
  // A token that would open the call with a wrong character is not allowed; the plain marker is.
  EXPECT_FALSE(g.allows(open_x));
  EXPECT_TRUE(g.allows(open));
  // The trigger split over byte tokens: free until its last byte, held from its first.
  for (char c : std::string("<c")) g.accept(byte(c));
  EXPECT_FALSE(g.active());
  EXPECT_TRUE(g.allows(byte('x')));  // "<cx" is no trigger
  g.accept(byte('>'));
  EXPECT_TRUE(g.active());
  EXPECT_FALSE(g.allows(byte('x')));
  EXPECT_FALSE(g.allows(eos));  // not complete
  for (char c : std::string("42</c")) g.accept(byte(c));
  EXPECT_FALSE(g.finished());
  g.accept(byte('>'));
  EXPECT_TRUE(g.finished());
  EXPECT_TRUE(g.allows(eos));
  EXPECT_FALSE(g.allows(byte('1')));
  EXPECT_THROW(g.accept(byte('1')), Error);
}

TEST(TokenGrammar, EagerHoldsFromTheStart) {
  const auto tok = tok::Tokenizer::byte_level({"<|eos|>"});
  runtime::TokenGrammar g(call_grammar(), *tok);
  EXPECT_TRUE(g.active());
  EXPECT_FALSE(g.allows(byte('H')));
  EXPECT_TRUE(g.allows(byte('<')));
  EXPECT_FALSE(g.allows(*tok->find_token("<|eos|>")));
}
