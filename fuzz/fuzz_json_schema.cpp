// libFuzzer entry point for JSON schemas -> GBNF: any text before the first NUL byte must convert
// (to a grammar the GBNF parser takes) or throw minfer::Error; a schema that converts then takes
// the bytes after it, cut at each \x01, as pieces of text to match, with no crash or hang.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "common/error.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "match_pieces.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  try {
    minfer::grammar::SchemaGrammar s = minfer::grammar::json_schema_text_to_gbnf(in.substr(0, nul));
    if (nul == std::string_view::npos) return 0;
    minfer::grammar::Matcher m(std::make_shared<const minfer::grammar::Grammar>(std::move(s.grammar)));
    match_pieces(m, in.substr(nul + 1));
  } catch (const minfer::Error&) {
  }
  return 0;
}
