// The GBNF parser: llama.cpp's syntax (literals with escapes, classes, groups, repetitions,
// comments, multi-line groups) and one clear error, with its place, for each kind of bad input.
#include <gtest/gtest.h>

#include "common/error.h"
#include "grammar/gbnf.h"

namespace minfer::grammar {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_gbnf(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(Gbnf, ParsesLlamaCppSyntax) {
  // grammars/README.md's constructs, chess.gbnf's layout (a group over several lines, comments).
  const Grammar g = parse_gbnf(R"(# a comment line
root ::= (
    # inside a group: newlines and comments are space
    "1. " move " " move "\n"
    ([1-9] [0-9]? ". " move " " move "\n")+
)
move ::= (pawn | castle) [+#]?   # trailing comment
pawn ::= [a-h] [1-8]
castle ::= "O-O" ("-O")?
x-2 ::= "\x41\u00e9\U0001F600\t\r\n\\\"\[\]\-" [^\x00-\x1F] . "a"{2} "b"{1,} "c"{0,3} "d"*
)");
  EXPECT_EQ(g.rules[g.root].name, "root");
  ASSERT_GE(g.rules.size(), 5u);
}

TEST(Gbnf, EscapesAndRangesBecomeCodePoints) {
  const Grammar g = parse_gbnf(R"(root ::= "\x41\u00e9\U0001F600" [a-c\-x])");
  const Sequence& seq = g.rules[g.root].alternatives.at(0);
  ASSERT_EQ(seq.size(), 4u);
  EXPECT_TRUE(g.sets[seq[0].index].contains(0x41));
  EXPECT_TRUE(g.sets[seq[1].index].contains(0xE9));
  EXPECT_TRUE(g.sets[seq[2].index].contains(0x1F600));
  const CharSet& cls = g.sets[seq[3].index];
  for (uint32_t c : {'a', 'b', 'c', '-', 'x'}) EXPECT_TRUE(cls.contains(c)) << char(c);
  for (uint32_t c : {'d', 'w', 'y', '\\'}) EXPECT_FALSE(cls.contains(c)) << char(c);
}

TEST(Gbnf, CharSetIntersectsRanges) {
  const CharSet pos{false, {{'a', 'c'}, {'e', 'f'}}};
  EXPECT_TRUE(pos.intersects('c', 'd'));
  EXPECT_FALSE(pos.intersects('d', 'd'));
  EXPECT_FALSE(pos.intersects('g', 'z'));
  const CharSet neg{true, {{'a', 'c'}, {'e', 'f'}}};  // everything but a-c, e-f
  EXPECT_FALSE(neg.intersects('a', 'c'));
  EXPECT_TRUE(neg.intersects('a', 'd'));  // d
  EXPECT_FALSE(neg.intersects('e', 'f'));
  EXPECT_FALSE(neg.intersects('b', 'b'));
  EXPECT_TRUE(neg.intersects('f', 'g'));  // g
  EXPECT_TRUE(neg.intersects(0, 0));
  const CharSet any{true, {}};
  EXPECT_TRUE(any.contains(0x10FFFF));
}

TEST(Gbnf, ErrorsNameTheProblemAndWhereItIs) {
  struct Case {
    std::string text, needle;
  };
  const Case cases[] = {
      {"root ::= \"a\"\nfoo", "expecting ::= at line 2, column 4"},
      {"root ::= \"a\"\n  | \"b\"", "expecting a rule name at line 2, column 3"},  // top-level | needs a group
      {"root ::= undefined-rule", "undefined rule 'undefined-rule' at line 1, column 10"},
      {"item ::= \"a\"", "no 'root' rule"},
      {"", "no 'root' rule"},
      {"root ::= root \"a\" | \"b\"", "rule 'root' is left-recursive"},
      {"root ::= opt root \"x\" | \"y\"\nopt ::= \"z\"?", "rule 'root' is left-recursive"},  // through a nullable rule
      {"root ::= (\"a\" | \"\")* \"b\"\n", "left-recursive"},                                 // a repetition of a nullable group
      {"root ::= \"\\q\"", "unknown escape at line 1, column 11"},
      {"root ::= \"\\x4\"", "expecting 2 hex digits"},
      {"root ::= \"abc", "unexpected end of input in a string"},
      {"root ::= [a-", "unexpected end of input"},
      {"root ::= (\"a\"", "expecting ')'"},
      {"root ::= <think>", "token matches (<...>) are not supported"},
      {"root ::= !<[12]>", "token matches (<...>) are not supported"},
      {"root ::= \"a\"{2001}", "a repetition count above 2000"},
      {"root ::= \"a\"{1,2001}", "a repetition count above 2000"},
      {"root ::= \"a\"{3,2}", "maximum is below its minimum"},
      {"root ::= \"a\"{x}", "expecting an integer"},
      {"root ::= \"a\"{2", "expecting '}'"},
      {"root ::= * \"a\"", "expecting an item before the repetition"},
      {"root ::= \"a\" ;", "expecting newline or end at line 1, column 14"},
      {"root ::= \"\xff\"", "invalid UTF-8"},
      {std::string("root ::= ") + std::string(300, '(') + "\"a\"" + std::string(300, ')'), "nested deeper than 256"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.needle), std::string::npos) << c.text << "\n -> " << e;
    EXPECT_EQ(e.rfind("grammar: ", 0), 0u) << e;
  }
}

TEST(Gbnf, RepetitionsThatWouldExplodeAreRefused) {
  // A repetition copies its item: 60 x 2000 copies of a 10-character literal are refused
  // before they are built. A group is one rule, so nesting does not multiply.
  std::string text = "root ::=";
  for (int i = 0; i < 60; ++i) text += " \"abcdefghij\"{2000}";
  EXPECT_NE(error_of(text).find("too large"), std::string::npos);
  EXPECT_NO_THROW(parse_gbnf("root ::= (((\"ab\"{1000}){1000}){1000})"));
}

}  // namespace
}  // namespace minfer::grammar
