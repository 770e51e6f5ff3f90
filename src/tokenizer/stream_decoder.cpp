// StreamDecoder: token pieces in, text out, holding back an incomplete UTF-8 sequence.
#include <algorithm>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace minfer::tok {

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool render_special, std::vector<int32_t> keep)
    : tok_(&tok), render_special_(render_special), keep_(std::move(keep)) {}

size_t incomplete_utf8_tail(std::string_view s) {
  // A trailing lead byte whose sequence is not complete yet; anything else (complete
  // characters, stray continuation bytes) counts as done.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const uint8_t c = uint8_t(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    return c >= 0xC0 && detail::utf8_len(c) > back ? back : 0;
  }
  return 0;
}

std::string StreamDecoder::push(int32_t id) {
  pending_ += tok_->token_to_piece(id, render_special_ || std::find(keep_.begin(), keep_.end(), id) != keep_.end());
  // Hold back a character that is not complete yet.
  const size_t n = pending_.size();
  const size_t keep = incomplete_utf8_tail(pending_);
  std::string out = pending_.substr(0, n - keep);
  pending_.erase(0, n - keep);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace minfer::tok
