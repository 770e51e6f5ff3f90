// The matcher against an independent reference: for grammars that are regular, whether a whole
// string is a sentence of the grammar must be what std::regex says of the same language, for
// every string over the grammar's alphabet up to a length; every prefix of a sentence must be
// allowed, fed at once or byte by byte. Then UTF-8 split across pieces, and the invalid forms.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <regex>

#include "common/error.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace minfer::grammar {
namespace {

Matcher make(const std::string& g) { return Matcher(std::make_shared<const Grammar>(parse_gbnf(g))); }

bool sentence(const std::string& g, const std::string& text) {
  Matcher m = make(g);
  if (text.empty()) return m.complete();
  if (!m.allows(text)) return false;
  m.accept(text);
  return m.complete();
}

struct Regular {
  const char* gbnf;
  const char* regex;
  const char* alphabet;
};

const Regular kRegular[] = {
    {"root ::= [a-c]{2,3} \"x\"*", "[a-c]{2,3}x*", "abdx"},
    {"root ::= (\"ab\" | \"a\" [b-d]+)? \".\"", "(ab|a[b-d]+)?\\.", "abde."},
    {"root ::= item (\",\" item)*\nitem ::= [0-9]+ | \"-\" [0-9]+", "(\\d+|-\\d+)(,(\\d+|-\\d+))*", "09,-"},
    {"root ::= [^a-c]* \"c\"", "[^a-c]*c", "abcdx"},
    {"root ::= \"a\"{0,3} \"b\"{2} (\"c\" | \"\")", "a{0,3}b{2}c?", "abc"},
    {"root ::= ( \"x\" | \"y\" \"z\"? )+", "(x|yz?)+", "xyz"},
    {"root ::= . . \"q\"?", "[^]{2}q?", "aq\n"},
    {"root ::= w (\" \" w){1,}\nw ::= [a-z]+", "[a-z]+( [a-z]+)+", "ab "},
};

TEST(Matcher, RegularGrammarsAcceptWhatTheRegexAccepts) {
  for (const Regular& r : kRegular) {
    const std::regex re(r.regex, std::regex::ECMAScript);
    const std::string alpha = r.alphabet;
    size_t accepted = 0;
    // Every string over the alphabet up to length 6.
    std::vector<std::string> level{""};
    for (int len = 0; len <= 6; ++len) {
      std::vector<std::string> next;
      for (const std::string& s : level) {
        const bool want = std::regex_match(s, re);
        ASSERT_EQ(sentence(r.gbnf, s), want) << r.gbnf << "\non '" << s << "'";
        if (want) {
          ++accepted;
          Matcher m = make(r.gbnf);  // byte by byte: each prefix allowed
          for (char c : s) {
            ASSERT_TRUE(m.allows(std::string(1, c))) << r.gbnf << " '" << s << "'";
            m.accept(std::string(1, c));
          }
          EXPECT_TRUE(m.complete());
        }
        if (len < 6)
          for (char c : alpha) next.push_back(s + c);
      }
      level = std::move(next);
    }
    EXPECT_GT(accepted, 0u) << r.gbnf;
  }
}

TEST(Matcher, RejectedPrefixesHaveNoSentence) {
  // allows(p) false => no string with prefix p is a sentence (checked up to length 6).
  for (const Regular& r : kRegular) {
    const std::regex re(r.regex, std::regex::ECMAScript);
    std::mt19937 rng(7);
    const std::string alpha = r.alphabet;
    for (int i = 0; i < 300; ++i) {
      std::string p;
      for (int n = int(rng() % 4); n >= 0; --n) p += alpha[rng() % alpha.size()];
      if (make(r.gbnf).allows(p)) continue;
      std::vector<std::string> level{p};
      for (int len = 0; len <= 3; ++len) {
        std::vector<std::string> next;
        for (const std::string& s : level) {
          ASSERT_FALSE(std::regex_match(s, re)) << r.gbnf << ": '" << p << "' refused but '" << s << "' matches";
          for (char c : alpha) next.push_back(s + c);
        }
        level = std::move(next);
      }
    }
  }
}

TEST(Matcher, CompleteAndCanContinue) {
  Matcher m = make("root ::= \"ab\" \"c\"?");
  EXPECT_FALSE(m.complete());
  EXPECT_TRUE(m.can_continue());
  m.accept("ab");
  EXPECT_TRUE(m.complete());
  EXPECT_TRUE(m.can_continue());
  m.accept("c");
  EXPECT_TRUE(m.complete());
  EXPECT_FALSE(m.can_continue());
  EXPECT_FALSE(m.allows("c"));
  EXPECT_THROW(m.accept("c"), Error);
  // A character still open is not a complete text, though the grammar could end before it.
  Matcher u = make("root ::= \"a\" \"\xC3\xA9\"?");
  u.accept("a");
  EXPECT_TRUE(u.complete());
  u.accept("\xC3");
  EXPECT_FALSE(u.complete());
  u.accept("\xA9");
  EXPECT_TRUE(u.complete());
}

TEST(Matcher, Utf8SplitAcrossPieces) {
  // é is C3 A9; α..ω is CE B1 .. CF 89.
  Matcher m = make("root ::= \"\xC3\xA9\"+ [\xCE\xB1-\xCF\x89]");
  EXPECT_TRUE(m.allows("\xC3"));
  EXPECT_FALSE(m.allows("\xC4"));  // no character of the grammar starts so
  m.accept("\xC3");
  EXPECT_FALSE(m.complete());      // a character is still open
  EXPECT_FALSE(m.allows("\xC3"));  // a lead byte where a continuation is due
  m.accept("\xA9\xC3");
  m.accept("\xA9");
  EXPECT_TRUE(m.allows("\xCE"));
  EXPECT_TRUE(m.allows("\xCF"));
  EXPECT_FALSE(m.allows("\xD0"));
  EXPECT_FALSE(m.allows("\xCE\xB0"));  // U+03B0, just below alpha
  EXPECT_TRUE(m.allows("\xCF\x89"));
  m.accept("\xCE\xB1");
  EXPECT_TRUE(m.complete());
}

TEST(Matcher, InvalidUtf8AndNulNeverMatch) {
  Matcher brace = make("root ::= \"{\" .*");
  EXPECT_TRUE(brace.allows("{"));
  EXPECT_FALSE(brace.allows("\xC1\xBB"));          // overlong '{'
  EXPECT_FALSE(brace.allows("\xE0\x81\xBB"));      // overlong
  EXPECT_FALSE(brace.allows("\xF0\x80\x81\xBB"));  // overlong
  EXPECT_FALSE(brace.allows("\xF0\x80"));          // can only end overlong
  brace.accept("{");
  EXPECT_TRUE(brace.allows("\xF0\x9F\x98\x80"));  // U+1F600
  EXPECT_TRUE(brace.allows("\xF0\x9F"));
  EXPECT_FALSE(brace.allows("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(brace.allows("\xF4\x90\x80\x80"));  // beyond U+10FFFF
  EXPECT_FALSE(brace.allows("\xA9"));              // a continuation byte first
  EXPECT_FALSE(brace.allows("\xFF"));
  EXPECT_FALSE(brace.allows(std::string("a\0b", 3)));
  EXPECT_FALSE(brace.allows(""));
}

TEST(Matcher, AmbiguousAndNestedGrammarsStayBounded) {
  // 40 optional parts in a row: followed once each, not 2^40 times.
  std::string g = "root ::=";
  for (int i = 0; i < 40; ++i) g += " a";
  g += " \"z\"\na ::= \"\" | \"\" | \"x\"?";
  Matcher m = make(g);
  EXPECT_TRUE(m.allows("xxxz"));
  EXPECT_TRUE(m.allows("z"));
  // Balanced parentheses nest without bound in the text.
  Matcher p = make("root ::= \"(\" root \")\" | \"\"");
  const std::string deep = std::string(500, '(') + std::string(500, ')');
  ASSERT_TRUE(p.allows(deep));
  p.accept(deep);
  EXPECT_TRUE(p.complete());
  EXPECT_FALSE(p.allows(")"));
  // Ambiguity under deep nesting: each "a" doubles the parses (a "b" owed or not), each of them
  // as deep as the nesting. A character's work is bounded by the frames of all its parses, not
  // by their count: 2^12 parses 1000 deep are refused with an error, long before 2^14.
  Matcher q = make("root ::= \"(\" root \")\" | t\nt ::= \"a\" t \"b\" | \"a\" t | \"\"");
  const std::string nest(1000, '(');
  EXPECT_TRUE(q.allows(nest + "aaa"));
  EXPECT_THROW(q.allows(nest + std::string(12, 'a')), Error);
  EXPECT_TRUE(q.allows(nest + "ab)"));
  // Nesting alone stays allowed deeper.
  EXPECT_TRUE(make("root ::= \"(\" root \")\" | \"\"").allows(std::string(3000, '(')));
}

}  // namespace
}  // namespace minfer::grammar
