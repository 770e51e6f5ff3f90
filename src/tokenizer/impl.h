// Tokenizer::Impl: the loaded vocabulary with llama.cpp's derived state (attributes,
// special-token cache, end-of-generation set, piece cache) and the two tokenizer algorithms.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/pair_map.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/spec.h"
#include "tokenizer/text_map.h"
#include "tokenizer/tokenizer.h"

namespace minfer::tok {

// llama_token_attr bits.
enum Attr : uint32_t {
  ATTR_UNDEFINED = 0,
  ATTR_UNKNOWN = 1 << 0,
  ATTR_UNUSED = 1 << 1,
  ATTR_NORMAL = 1 << 2,
  ATTR_CONTROL = 1 << 3,
  ATTR_USER_DEFINED = 1 << 4,
  ATTR_BYTE = 1 << 5,
  ATTR_NORMALIZED = 1 << 6,
  ATTR_LSTRIP = 1 << 7,
  ATTR_RSTRIP = 1 << 8,
  ATTR_SINGLE_WORD = 1 << 9,
};

struct Tokenizer::Impl {
  enum class Kind { Spm, Bpe } kind = Kind::Bpe;
  detail::Spec spec;  // what write_gguf writes back

  struct Token {
    std::string text;
    float score = 0.0f;
    TokenType type = TokenType::Normal;
    uint32_t attr = ATTR_NORMAL;
  };
  std::vector<Token> tokens;
  detail::TextMap text_ids;  // over tokens[].text
  // BPE merges by token ids where both sides are tokens (nearly all), and by
  // merge_key(left, right) the rest: a pair with a side that is not a token can only match
  // those, so tokenize_bpe looks the string map up only for such pairs.
  detail::PairMap bpe_pairs;
  std::unordered_map<std::string, int32_t> bpe_ranks;
  int32_t byte_token[256];  // BPE: id of the GPT-2 code point standing for each byte, or -1
  std::unique_ptr<detail::PreTokenizer> pretok;

  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, sep = -1, pad = -1, mask = -1;
  int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
  bool add_bos = false, add_eos = false, add_space_prefix = false;
  bool ignore_merges = false, clean_spaces = false;
  std::vector<int32_t> eog;             // ascending
  std::vector<uint8_t> is_eog;          // per id
  std::vector<int32_t> special_cache;   // CONTROL/USER_DEFINED/UNKNOWN ids, longest text first
  std::vector<std::string> pieces;      // token_to_piece(id, render_special = true)
  std::string pre_canonical;

  static std::string merge_key(std::string_view left, std::string_view right);
  // The id of a token text (the last one when the vocabulary repeats it), or -1.
  int32_t text_to_token(std::string_view text) const;
  // Every id of a token text, from the last down.
  template <class F>
  void for_each_id_of(std::string_view text, F f) const {
    for (int32_t id = text_to_token(text); id >= 0; id = text_ids.before(id)) f(id);
  }
  void check_id(int32_t id) const;

  // One raw-text fragment (no special tokens inside) to ids.
  void tokenize_bpe(std::string_view text, std::vector<int32_t>& out) const;
  void tokenize_spm(std::string_view text, std::vector<int32_t>& out) const;
  std::string compute_piece(int32_t id) const;
};

// Applies llama.cpp's llama_vocab::load rules to a Spec.
std::unique_ptr<Tokenizer::Impl> build_impl(detail::Spec spec);

}  // namespace minfer::tok
