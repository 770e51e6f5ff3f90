// Splits text into words with a list of regexes applied in sequence, as llama.cpp's
// unicode_regex_split does: each regex splits every piece the previous one produced, and the
// text between matches is kept as pieces of its own. PCRE2 (JIT, UTF + UCP) does the matching.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace minfer::tok::detail {

// The regexes llama.cpp (v0.4.0) uses for a tokenizer.ggml.pre value, plus the flags that value
// implies. An absent or empty name is "default" (llama.cpp warns that quality degrades); a name
// llama.cpp does not know, or one whose splitting minfer does not reproduce, is not `known`.
struct PreTypeInfo {
  bool known = true;
  std::string canonical;              // the llama.cpp pre-type this name maps to
  std::vector<std::string> regexes;
  bool ignore_merges = false;
  bool add_bos = false;               // llama.cpp's default for this pre-type
  bool clean_spaces = true;
  bool no_bos = false;                // llama.cpp clears the BOS id (chatglm-bpe)
};
PreTypeInfo pre_type_info(const std::string& pre);

class PreTokenizer {
 public:
  explicit PreTokenizer(const std::vector<std::string>& regexes);
  ~PreTokenizer();
  // `text` must be valid UTF-8. Returns the byte lengths of the consecutive pieces.
  std::vector<size_t> split(std::string_view text) const;

 private:
  struct Compiled;
  std::vector<std::shared_ptr<Compiled>> res_;
};

}  // namespace minfer::tok::detail
