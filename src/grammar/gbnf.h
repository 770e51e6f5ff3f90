// GBNF grammars (llama.cpp's `--grammar` format: grammars/README.md there) parsed into rules of
// code-point sets and rule references. Repetitions (* + ? {m,n}) and groups become generated
// rules, so that a rule is only alternatives of symbol sequences; the empty sequence is allowed.
// Token matches (`<[id]>`, `<text>`) are not part of this subset: they are refused by name.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace minfer::grammar {

// A set of code points: inclusive ranges, or everything but them (negated; `.` is the negation
// of no range).
struct CharSet {
  bool negated = false;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;

  bool contains(uint32_t cp) const;
  // Whether some code point in [lo, hi] is in the set (a partial UTF-8 sequence can still
  // complete to a member).
  bool intersects(uint32_t lo, uint32_t hi) const;
};

struct Symbol {
  enum class Kind : uint8_t { Chars, Rule } kind;
  uint32_t index;  // into Grammar::sets or Grammar::rules
};

using Sequence = std::vector<Symbol>;

struct Rule {
  std::string name;                // the grammar's own name, or name_N for a generated rule
  std::vector<Sequence> alternatives;
};

struct Grammar {
  std::vector<Rule> rules;
  std::vector<CharSet> sets;
  uint32_t root = 0;
};

// Parses GBNF text. Errors (minfer::Error) name the problem and its line and column:
// "grammar: expecting ::= at line 2, column 6", undefined rules, a missing `root`, left
// recursion (which a top-down matcher cannot follow), repetition counts above 2000 (as llama.cpp).
Grammar parse_gbnf(std::string_view text);

}  // namespace minfer::grammar
