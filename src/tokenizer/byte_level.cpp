// The byte-level demo vocabulary: 256 byte tokens (GPT-2 code points) plus CONTROL specials.
#include "common/error.h"
#include "tokenizer/impl.h"
#include "tokenizer/unicode.h"

namespace minfer::tok {

std::unique_ptr<Tokenizer> Tokenizer::byte_level(const std::vector<std::string>& specials) {
  detail::Spec s;
  s.source = "byte-level vocabulary";
  s.model = "gpt2";
  s.pre = "default";
  for (int b = 0; b < 256; ++b) {
    s.tokens.push_back(detail::byte_to_unicode(uint8_t(b)));
    s.types.push_back(int32_t(TokenType::Normal));
  }
  for (const auto& sp : specials) {
    if (sp.empty()) fail("byte-level vocabulary: a special token is empty");
    s.tokens.push_back(sp);
    s.types.push_back(int32_t(TokenType::Control));
  }
  if (!specials.empty()) {
    s.bos = 256;
    s.eos = 256;
  }
  s.add_bos = false;
  s.add_eos = false;
  return std::unique_ptr<Tokenizer>(new Tokenizer(build_impl(std::move(s))));
}

}  // namespace minfer::tok
