#include "server/infill.h"

#include <algorithm>

#include "common/error.h"
#include "tokenizer/tokenizer.h"

namespace minfer::server {

std::vector<int32_t> infill_tokens(const tok::Tokenizer& tok, const InfillInput& in, int64_t n_ctx,
                                   int64_t n_predict, int64_t n_batch) {
  const tok::Tokenizer::FimTokens fim = tok.fim();
  if (fim.pre < 0 || fim.suf < 0 || fim.mid < 0)
    fail("this model has no fill-in-the-middle tokens (FIM_PRE, FIM_SUF, FIM_MID): /infill needs a code model");
  // Text as text: markers inside the code are not read as special tokens.
  auto text = [&](const std::string& s) { return tok.encode(s, false, false); };
  auto append = [](std::vector<int32_t>& to, const std::vector<int32_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
  };

  std::vector<int32_t> extra;
  if (fim.rep >= 0) {
    extra.push_back(fim.rep);
    append(extra, text("myproject\n"));
  }
  for (const InfillInput::Chunk& c : in.extra) {
    if (fim.sep >= 0) {
      extra.push_back(fim.sep);
      append(extra, text(c.filename + "\n"));
    } else {
      append(extra, text("\n\n--- snippet ---\n\n"));
    }
    append(extra, text(c.text));
  }
  if (fim.sep >= 0) {
    extra.push_back(fim.sep);
    append(extra, text("filename\n"));
  }

  std::vector<int32_t> prefix = text(in.prefix), suffix = text(in.suffix);
  const std::vector<int32_t> prompt = tok.encode(in.prompt, false, true);
  const int64_t n_prefix = std::min<int64_t>(int64_t(prefix.size()), 3 * (n_batch / 4));
  const int64_t n_suffix =
      std::min<int64_t>(int64_t(suffix.size()), std::max<int64_t>(0, n_batch / 4 - (2 + int64_t(prompt.size()))));
  const int64_t n_extra = std::min<int64_t>(std::max<int64_t>(0, n_ctx - n_batch - 2 * n_predict), int64_t(extra.size()));

  std::vector<int32_t> out(extra.end() - n_extra, extra.end());
  if (tok.add_bos() && tok.bos() >= 0) out.push_back(tok.bos());
  out.push_back(fim.pre);
  out.insert(out.end(), prefix.end() - n_prefix, prefix.end());  // the end of the prefix: the code nearest the cursor
  append(out, prompt);
  out.push_back(fim.suf);
  out.insert(out.end(), suffix.begin(), suffix.begin() + n_suffix);
  out.push_back(fim.mid);
  return out;
}

}  // namespace minfer::server
