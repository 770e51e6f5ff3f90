#include "grammar/gbnf.h"

#include <algorithm>
#include <map>

#include "common/error.h"

namespace minfer::grammar {

bool CharSet::contains(uint32_t cp) const { return intersects(cp, cp); }

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const auto& [a, b] : ranges)
      if (a <= hi && lo <= b) return true;
    return false;
  }
  // Some point of [lo, hi] outside every range: walk lo up past the ranges that cover it.
  for (bool moved = true; moved && lo <= hi;) {
    moved = false;
    for (const auto& [a, b] : ranges)
      if (a <= lo && lo <= b) {
        if (b >= hi) return false;
        lo = b + 1;
        moved = true;
      }
  }
  return lo <= hi;
}

namespace {

// Bounds as llama.cpp's: a repetition count above this is refused; so is a grammar whose
// repetitions expand it past kMaxSymbols symbols in all.
constexpr uint64_t kMaxRepetition = 2000;
constexpr size_t kMaxSymbols = size_t(1) << 20;
constexpr int kMaxNesting = 256;  // parentheses within parentheses (the parser recurses on them)

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Grammar parse() {
    space(true);
    while (!end()) {
      const size_t name_at = pos_;
      const std::string name = parse_name();
      space(false);
      if (s_.substr(pos_, 3) != "::=") error("expecting ::=");
      pos_ += 3;
      space(true);
      const uint32_t id = rule_id(name);
      defined_[id] = name_at + 1;
      g_.rules[id].alternatives = alternates(name, false);
      if (peek() == '\r') pos_ += peek(1) == '\n' ? 2 : 1;
      else if (peek() == '\n') ++pos_;
      else if (!end()) error("expecting newline or end");
      space(true);
    }
    for (const auto& [name, id] : ids_)
      if (!defined_.count(id)) error_at(used_.at(id), fmt::format("undefined rule '{}'", name));
    const auto root = ids_.find("root");
    if (root == ids_.end()) fail("grammar: no 'root' rule (the grammar's start)");
    g_.root = root->second;
    check_left_recursion();
    return std::move(g_);
  }

 private:
  bool end() const { return pos_ >= s_.size(); }
  char peek(size_t k = 0) const { return pos_ + k < s_.size() ? s_[pos_ + k] : '\0'; }

  [[noreturn]] void error_at(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') ++line, col = 1;
      else ++col;
    }
    fail("grammar: {} at line {}, column {}", what, line, col);
  }
  [[noreturn]] void error(const std::string& what) const { error_at(pos_, what); }

  void space(bool newline_ok) {
    while (!end()) {
      const char c = peek();
      if (c == '#') {
        while (!end() && peek() != '\r' && peek() != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (is_word_char(peek())) ++pos_;
    if (pos_ == start) error("expecting a rule name");
    return std::string(s_.substr(start, pos_ - start));
  }

  uint64_t parse_int() {
    const size_t start = pos_;
    uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = std::min<uint64_t>(v * 10 + uint64_t(peek() - '0'), UINT64_C(1) << 40);
      ++pos_;
    }
    if (pos_ == start) error("expecting an integer");
    return v;
  }

  uint32_t rule_id(const std::string& name) {
    const auto [it, added] = ids_.emplace(name, uint32_t(g_.rules.size()));
    if (added) g_.rules.push_back(Rule{name, {}});
    return it->second;
  }

  uint32_t new_rule(const std::string& base) {
    g_.rules.push_back(Rule{fmt::format("{}_{}", base, g_.rules.size()), {}});
    defined_[uint32_t(g_.rules.size() - 1)] = pos_ + 1;
    return uint32_t(g_.rules.size() - 1);
  }

  uint32_t add_set(CharSet cs) {
    g_.sets.push_back(std::move(cs));
    return uint32_t(g_.sets.size() - 1);
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) error(fmt::format("expecting {} hex digits", digits));
      v = v * 16 + uint32_t(d);
      ++pos_;
    }
    if (v > 0x10FFFF) error("code point beyond U+10FFFF");
    return v;
  }

  // One character of a literal or a class: an escape or one UTF-8 encoded code point.
  uint32_t parse_char() {
    if (end()) error("unexpected end of input");
    const unsigned char c = static_cast<unsigned char>(peek());
    if (c == '\\') {
      const char e = peek(1);
      pos_ += 2;
      switch (e) {
        case 'x': return hex(2);
        case 'u': return hex(4);
        case 'U': return hex(8);
        case 't': return '\t';
        case 'r': return '\r';
        case 'n': return '\n';
        case '\\': case '"': case '[': case ']': case '-': return uint32_t(e);
        default: pos_ -= 2; error("unknown escape");
      }
    }
    const int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || pos_ + size_t(len) > s_.size()) error("invalid UTF-8");
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < len; ++i) {
      const unsigned char k = static_cast<unsigned char>(s_[pos_ + size_t(i)]);
      if ((k & 0xC0) != 0x80) error("invalid UTF-8");
      cp = (cp << 6) | (k & 0x3F);
    }
    pos_ += size_t(len);
    return cp;
  }

  std::vector<Sequence> alternates(const std::string& name, bool nested) {
    std::vector<Sequence> alts;
    alts.push_back(sequence(name, nested));
    while (peek() == '|') {
      ++pos_;
      space(true);
      alts.push_back(sequence(name, nested));
    }
    return alts;
  }

  // The symbols of the last item (from `last`) repeated min to max times (max UINT64_MAX: no
  // bound): min copies, then a chain of optional rules.
  void repeat(const std::string& name, Sequence& seq, size_t last, uint64_t min, uint64_t max) {
    if (last > seq.size()) error("expecting an item before the repetition");
    if (min > kMaxRepetition || (max != UINT64_MAX && max > kMaxRepetition))
      error(fmt::format("a repetition count above {}", kMaxRepetition));
    if (max < min) error("a repetition whose maximum is below its minimum");
    const Sequence unit(seq.begin() + std::ptrdiff_t(last), seq.end());
    seq.resize(last);
    symbols_ += unit.size() * (min + (max == UINT64_MAX ? 1 : max - min));
    if (symbols_ > kMaxSymbols) error("the repetitions make the grammar too large");
    if (unit.empty()) return;
    for (uint64_t i = 0; i < min; ++i) seq.insert(seq.end(), unit.begin(), unit.end());
    if (max == UINT64_MAX) {  // R ::= unit R | ""
      const uint32_t r = new_rule(name);
      Sequence more = unit;
      more.push_back({Symbol::Kind::Rule, r});
      g_.rules[r].alternatives = {std::move(more), {}};
      seq.push_back({Symbol::Kind::Rule, r});
      return;
    }
    uint32_t inner = 0;  // R_k ::= unit | "", R_i ::= unit R_i+1 | ""
    for (uint64_t i = 0; i < max - min; ++i) {
      const uint32_t r = new_rule(name);
      Sequence more = unit;
      if (i > 0) more.push_back({Symbol::Kind::Rule, inner});
      g_.rules[r].alternatives = {std::move(more), {}};
      inner = r;
    }
    if (max > min) seq.push_back({Symbol::Kind::Rule, inner});
  }

  Sequence sequence(const std::string& name, bool nested) {
    Sequence seq;
    size_t last = SIZE_MAX;  // where the last item's symbols start
    while (!end()) {
      const char c = peek();
      if (c == '"') {
        ++pos_;
        last = seq.size();
        while (peek() != '"') {
          if (end()) error("unexpected end of input in a string");
          const uint32_t cp = parse_char();
          seq.push_back({Symbol::Kind::Chars, add_set(CharSet{false, {{cp, cp}}})});
        }
        ++pos_;
        symbols_ += seq.size() - last;
      } else if (c == '[') {
        ++pos_;
        CharSet cs;
        if (peek() == '^') ++pos_, cs.negated = true;
        while (peek() != ']') {
          if (end()) error("unexpected end of input in a character class");
          const uint32_t lo = parse_char();
          uint32_t hi = lo;
          if (peek() == '-' && peek(1) != ']') {
            ++pos_;
            hi = parse_char();
          }
          cs.ranges.push_back({lo, hi});
        }
        ++pos_;
        last = seq.size();
        seq.push_back({Symbol::Kind::Chars, add_set(std::move(cs))});
        ++symbols_;
      } else if (c == '<' || c == '!') {
        error("token matches (<...>) are not supported by minfer's grammars");
      } else if (is_word_char(c)) {
        const size_t at = pos_;
        const uint32_t id = rule_id(parse_name());
        used_.emplace(id, at);
        last = seq.size();
        seq.push_back({Symbol::Kind::Rule, id});
        ++symbols_;
      } else if (c == '(') {
        if (++depth_ > kMaxNesting) error(fmt::format("groups nested deeper than {}", kMaxNesting));
        ++pos_;
        space(true);
        const uint32_t sub = new_rule(name);
        g_.rules[sub].alternatives = alternates(name, true);
        if (peek() != ')') error("expecting ')'");
        ++pos_;
        --depth_;
        last = seq.size();
        seq.push_back({Symbol::Kind::Rule, sub});
        ++symbols_;
      } else if (c == '.') {
        ++pos_;
        last = seq.size();
        seq.push_back({Symbol::Kind::Chars, add_set(CharSet{true, {}})});
        ++symbols_;
      } else if (c == '*' || c == '+' || c == '?') {
        ++pos_;
        repeat(name, seq, last, c == '+' ? 1 : 0, c == '?' ? 1 : UINT64_MAX);
      } else if (c == '{') {
        ++pos_;
        space(true);
        const uint64_t min = parse_int();
        space(true);
        uint64_t max = min;
        if (peek() == ',') {
          ++pos_;
          space(true);
          max = peek() >= '0' && peek() <= '9' ? parse_int() : UINT64_MAX;
          space(true);
        }
        if (peek() != '}') error("expecting '}'");
        ++pos_;
        repeat(name, seq, last, min, max);
      } else {
        break;
      }
      space(nested);
    }
    return seq;
  }

  // A rule that can reach itself without consuming a character would send a top-down matcher
  // round forever: refused, as llama.cpp does.
  void check_left_recursion() const {
    const size_t n = g_.rules.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (const Sequence& alt : g_.rules[r].alternatives)
          if (std::all_of(alt.begin(), alt.end(), [&](const Symbol& s) { return s.kind == Symbol::Kind::Rule && nullable[s.index]; })) {
            nullable[r] = changed = true;
            break;
          }
      }
    }
    std::vector<std::vector<uint32_t>> first(n);  // rules a rule may start with
    for (size_t r = 0; r < n; ++r)
      for (const Sequence& alt : g_.rules[r].alternatives)
        for (const Symbol& s : alt) {
          if (s.kind != Symbol::Kind::Rule) break;
          first[r].push_back(s.index);
          if (!nullable[s.index]) break;
        }
    std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> stack;
    for (uint32_t r0 = 0; r0 < n; ++r0) {
      if (state[r0]) continue;
      stack.push_back({r0, 0});
      state[r0] = 1;
      while (!stack.empty()) {
        auto& [r, i] = stack.back();
        if (i == first[r].size()) {
          state[r] = 2;
          stack.pop_back();
          continue;
        }
        const uint32_t next = first[r][i++];
        if (state[next] == 1) {
          // (a generated rule is named after the grammar's rule it came from: base_N)
          const std::string& name = g_.rules[next].name;
          fail("grammar: rule '{}' is left-recursive (it can reach itself before any character)",
               name.substr(0, name.find('_')));
        }
        if (state[next] == 0) {
          state[next] = 1;
          stack.push_back({next, 0});
        }
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  Grammar g_;
  std::map<std::string, uint32_t> ids_;
  std::map<uint32_t, size_t> defined_;  // rule -> where its definition starts (+1)
  std::map<uint32_t, size_t> used_;     // rule -> where it is first referenced
  size_t symbols_ = 0;
  int depth_ = 0;  // groups open
};

}  // namespace

Grammar parse_gbnf(std::string_view text) { return Parser(text).parse(); }

}  // namespace minfer::grammar
