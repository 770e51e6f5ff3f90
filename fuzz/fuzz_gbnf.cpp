// libFuzzer entry point for the GBNF grammars: any text before the first NUL byte must parse or
// throw minfer::Error; a grammar that parses then takes the bytes after it, cut at each \x01,
// as pieces (allowed, then accepted, or refused), with no crash, hang or unbounded growth.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "common/error.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "match_pieces.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  try {
    auto g = std::make_shared<const minfer::grammar::Grammar>(minfer::grammar::parse_gbnf(in.substr(0, nul)));
    if (nul == std::string_view::npos) return 0;
    minfer::grammar::Matcher m(g);
    match_pieces(m, in.substr(nul + 1));
  } catch (const minfer::Error&) {
  }
  return 0;
}
