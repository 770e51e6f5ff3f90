#include "grammar/matcher.h"

#include <algorithm>
#include <unordered_set>

#include "common/error.h"

namespace minfer::grammar {

namespace {

// A bound on a step's work: the frames of the stacks it builds. An ambiguous grammar multiplies
// the parses with each character and nesting deepens them with the text; a character costs time
// in proportion to these frames, so the bound caps it (well under a millisecond) whatever the
// grammar and text.
constexpr size_t kMaxFrames = 1 << 16;

uint64_t hash_of(const Matcher::Stack& s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
  for (const Matcher::Pos& p : s) {
    h = (h ^ p.rule) * 0x100000001B3ull;
    h = (h ^ p.alt) * 0x100000001B3ull;
    h = (h ^ p.idx) * 0x100000001B3ull;
  }
  return h;
}

struct StackHash {
  size_t operator()(const Matcher::Stack& s) const { return hash_of(s); }
};

// Drops repeated stacks. Stacks often share a deep common bottom (the nesting so far), so they
// are ordered by hash rather than compared frame by frame.
void dedup(std::vector<Matcher::Stack>& v) {
  std::vector<std::pair<uint64_t, size_t>> keys(v.size());
  for (size_t i = 0; i < v.size(); ++i) keys[i] = {hash_of(v[i]), i};
  std::sort(keys.begin(), keys.end());
  std::vector<Matcher::Stack> out;
  out.reserve(v.size());
  for (size_t i = 0; i < keys.size();) {
    const size_t first = out.size();
    for (const uint64_t h = keys[i].first; i < keys.size() && keys[i].first == h; ++i) {
      Matcher::Stack& s = v[keys[i].second];
      if (std::find(out.begin() + first, out.end(), s) == out.end()) out.push_back(std::move(s));
    }
  }
  v = std::move(out);
}

// Counts frames against kMaxFrames.
void spend(size_t& frames, size_t n) {
  frames += n;
  if (frames > kMaxFrames)
    fail("grammar: more than {} parse frames for one character (an ambiguous or too deeply nested grammar)", kMaxFrames);
}

// The bytes a UTF-8 sequence has after its first, from that first byte: 0 for ASCII, -1 for a
// byte that cannot start one.
int tail_bytes(unsigned char c) {
  if (c < 0x80) return 0;
  if ((c & 0xE0) == 0xC0) return 1;
  if ((c & 0xF0) == 0xE0) return 2;
  if ((c & 0xF8) == 0xF0) return 3;
  return -1;
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
  const Rule& root = g_->rules.at(g_->root);
  size_t frames = 0;
  for (uint32_t a = 0; a < root.alternatives.size(); ++a) expand(Stack{{g_->root, a, 0}}, stacks_, frames);
  dedup(stacks_);
}

const CharSet& Matcher::top_set(const Stack& s) const {
  const Pos& p = s.back();
  return g_->sets[g_->rules[p.rule].alternatives[p.alt][p.idx].index];
}

// Moves s forward to where its next symbol is a character set (each rule reference splits it
// by the rule's alternatives); an empty stack means the grammar's root is complete. The parser
// refuses left recursion, so this ends.
void Matcher::expand(Stack s, std::vector<Stack>& out, size_t& frames) const {
  std::vector<Stack> work{std::move(s)};
  // Alternatives that end where others do (optional parts, empty alternatives) lead to the same
  // stacks: each is followed once, or a sequence of n such parts would make 2^n of them.
  std::unordered_set<Stack, StackHash> seen;
  while (!work.empty()) {
    Stack cur = std::move(work.back());
    work.pop_back();
    for (;;) {
      if (cur.empty()) {
        out.push_back(std::move(cur));
        break;
      }
      Pos& top = cur.back();
      const Sequence& seq = g_->rules[top.rule].alternatives[top.alt];
      if (top.idx == seq.size()) {
        cur.pop_back();
        continue;
      }
      const Symbol sym = seq[top.idx];
      if (sym.kind == Symbol::Kind::Chars) {
        out.push_back(std::move(cur));
        break;
      }
      // The caller's frame resumes after the reference; a finished frame is dropped now, so
      // that right recursion (repetitions) does not grow the stack.
      if (++top.idx == seq.size()) cur.pop_back();
      const Rule& r = g_->rules[sym.index];
      for (uint32_t a = 0; a < r.alternatives.size(); ++a) {
        spend(frames, cur.size() + 1);
        Stack next = cur;
        next.push_back({sym.index, a, 0});
        if (seen.insert(next).second) work.push_back(std::move(next));
      }
      break;
    }
  }
}

void Matcher::step(const std::vector<Stack>& in, uint32_t cp, std::vector<Stack>& out) const {
  out.clear();
  size_t frames = 0;
  for (const Stack& s : in) {
    if (s.empty() || !top_set(s).contains(cp)) continue;
    spend(frames, s.size());
    Stack next = s;
    ++next.back().idx;
    expand(std::move(next), out, frames);
  }
  dedup(out);
}

bool Matcher::run(std::string_view bytes, std::vector<Stack>* out, Partial* pout) const {
  if (bytes.empty()) return false;
  Partial p = partial_;
  std::vector<Stack> a, b;
  std::vector<Stack>* mine = nullptr;  // the stacks after the last character, once there is one
  const std::vector<Stack>* cur = &stacks_;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == 0) return false;
    uint32_t cp;
    if (p.remaining > 0) {
      if ((c & 0xC0) != 0x80) return false;
      p.value = (p.value << 6) | (c & 0x3F);
      if (--p.remaining > 0) continue;
      cp = p.value;
      if (cp < p.min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    } else {
      const int n = tail_bytes(c);
      if (n < 0) return false;
      if (n > 0) {
        p.value = c & (0x3F >> n);
        p.remaining = n;
        p.min = n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000;
        continue;
      }
      cp = c;
    }
    // A first quick look spares the copies for the usual case of a token that does not fit.
    if (cur == &stacks_ &&
        std::none_of(cur->begin(), cur->end(), [&](const Stack& s) { return !s.empty() && top_set(s).contains(cp); }))
      return false;
    std::vector<Stack>& next = mine == &a ? b : a;
    step(*cur, cp, next);
    if (next.empty()) return false;
    cur = mine = &next;
  }
  if (p.remaining > 0) {  // the code points the sequence can still complete to
    const int bits = 6 * p.remaining;
    const uint32_t lo = std::max(p.value << bits, p.min), hi = std::min((p.value << bits) | ((1u << bits) - 1), 0x10FFFFu);
    if (lo > hi) return false;
    if (std::none_of(cur->begin(), cur->end(), [&](const Stack& s) { return !s.empty() && top_set(s).intersects(lo, hi); }))
      return false;
  }
  if (out) *out = mine ? std::move(*mine) : stacks_;
  if (pout) *pout = p;
  return true;
}

bool Matcher::allows(std::string_view bytes) const { return run(bytes, nullptr, nullptr); }

void Matcher::accept(std::string_view bytes) {
  std::vector<Stack> next;
  Partial p;
  if (!run(bytes, &next, &p)) fail("grammar: the text does not fit the grammar here");
  stacks_ = std::move(next);
  partial_ = p;
}

bool Matcher::complete() const {
  return partial_.remaining == 0 && std::any_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

bool Matcher::can_continue() const {
  return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return !s.empty(); });
}

}  // namespace minfer::grammar
