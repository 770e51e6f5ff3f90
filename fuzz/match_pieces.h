// The fuzzers' use of a grammar: text cut at each \x01 into pieces, each allowed then accepted
// or refused, as generation feeds tokens' pieces.
#pragma once
#include <string_view>

#include "grammar/matcher.h"

inline void match_pieces(minfer::grammar::Matcher& m, std::string_view text) {
  while (!text.empty()) {
    const size_t cut = text.find('\x01');
    const std::string_view piece = text.substr(0, cut);
    if (m.allows(piece)) m.accept(piece);
    (void)m.complete();
    (void)m.can_continue();
    if (cut == std::string_view::npos) break;
    text.remove_prefix(cut + 1);
  }
}
