// DRY's sequence breakers as tokens (make_dry_breakers) over a real vocabulary: every token whose
// text holds a breaker is one on its own; a token whose text ends with the start of a breaker is
// one when the tokens of the breaker's rest follow; no other token is listed.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/test_data.h"
#include "runtime/model.h"
#include "runtime/sampler_dry.h"
#include "tokenizer/tokenizer.h"

using namespace minfer;

TEST(DryBreakers, TokensThatHoldOrStartABreaker) {
  MINFER_REQUIRE_SHARED();
  auto m = runtime::Model::load(test::shared_path("models/stories260K.gguf"));
  const tok::Tokenizer& tok = m->tokenizer();
  const std::vector<std::string> breakers{"\n", "ed."};
  const runtime::DryBreakers b = runtime::make_dry_breakers(tok, breakers);
  size_t alone = 0, with_tail = 0;
  for (int32_t id = 0; id < int32_t(tok.n_vocab()); ++id) {
    const std::string text = tok.token_to_piece(id, true);
    const bool holds = text.find("\n") != std::string::npos || text.find("ed.") != std::string::npos;
    auto [lo, hi] = b.by_head.equal_range(id);
    bool has_alone = false;
    for (auto it = lo; it != hi; ++it) {
      if (it->second.empty()) {
        has_alone = true;
        continue;
      }
      // A tail: the text ends with the start of "ed." and the tail is the rest's tokens.
      bool ok = false;
      for (size_t n = 1; n < 3 && !ok; ++n)
        ok = text.size() >= n && text.compare(text.size() - n, n, "ed.", 0, n) == 0 &&
             it->second == tok.encode(std::string("ed.").substr(n), false, false);
      EXPECT_TRUE(ok) << id << " '" << text << "'";
      ++with_tail;
    }
    EXPECT_EQ(has_alone, holds) << id << " '" << text << "'";
    alone += has_alone;
    if (!holds && lo == hi) {
      EXPECT_FALSE(text.ends_with("e") || text.ends_with("ed")) << id << " '" << text << "'";
    }
  }
  EXPECT_GE(alone, 1u);       // the newline byte token at least
  EXPECT_GE(with_tail, 10u);  // the words ending in "e" or "ed"
}
