// Tokenizers that reproduce llama.cpp's llama-vocab.cpp token for token: byte-level BPE
// ("gpt2" with its per-model pre-tokenizer regexes) and SentencePiece ("llama", score-ranked
// merges with byte fallback). Special tokens are split out of the text first, the way
// llama.cpp's tokenizer_st_partition does (longest token text first).
//
//   auto tok = tok::Tokenizer::from_gguf(*file);
//   auto ids = tok->encode("Hello", /*add_special=*/tok->add_bos(), /*parse_special=*/true);
//   std::string text = tok->decode(ids);
//
// A Tokenizer is immutable after loading: all const methods may be called from several
// threads at once.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace minfer::gguf {
class File;
class Writer;
}  // namespace minfer::gguf

namespace minfer::tok {

// The values of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6
};

class Tokenizer {
 public:
  // Reads the tokenizer.* keys (and general.name, which llama.cpp consults for Phi-3).
  // Throws minfer::Error naming the file when the keys are missing or inconsistent.
  static std::unique_ptr<Tokenizer> from_gguf(const gguf::File& f);
  // HF tokenizer.json (+ tokenizer_config.json and config.json in the same folder when
  // present: special tokens, add_bos/add_eos, chat_template, vocab_size), converted the way
  // llama.cpp's convert_hf_to_gguf.py does. Byte-level BPE tokenizers only.
  static std::unique_ptr<Tokenizer> from_hf(const std::string& tokenizer_json_path);
  // A 256-token byte-level vocabulary (model "gpt2", pre "default", no merges; token i is
  // byte i) plus the given special tokens (CONTROL, ids 256...). The first special, when
  // there is one, is BOS and EOS (the GPT-2 convention); add_bos is false.
  static std::unique_ptr<Tokenizer> byte_level(const std::vector<std::string>& specials);
  ~Tokenizer();

  // Writes the tokenizer.* keys (+ tokenizer.chat_template) that from_gguf reads back.
  void write_gguf(gguf::Writer& w) const;

  // llama_tokenize: add_special prepends BOS / appends EOS as the vocabulary says;
  // parse_special turns CONTROL/UNKNOWN token texts in `text` into their ids (USER_DEFINED
  // tokens are always split out). Any bytes are accepted (invalid UTF-8 included).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // The bytes of one token (may be part of a UTF-8 character). CONTROL/UNKNOWN tokens give
  // "" unless render_special. Error for an id outside [0, n_vocab).
  std::string token_to_piece(int32_t id, bool render_special = true) const;
  // token_to_piece(id, true) without the copy (the tokenizer keeps every piece).
  const std::string& token_piece(int32_t id) const;
  // llama_detokenize(ids, remove_special, unparse_special = !remove_special): with
  // remove_special a leading BOS / trailing EOS is dropped and control tokens are not shown.
  std::string decode(std::span<const int32_t> ids, bool remove_special = false) const;
  // llama_detokenize with both of its flags.
  std::string detokenize(std::span<const int32_t> ids, bool remove_special,
                         bool unparse_special) const;

  int32_t n_vocab() const;
  int32_t bos() const;  // -1 when none
  int32_t eos() const;
  int32_t eot() const;
  int32_t unk() const;
  int32_t pad() const;
  // Fill-in-the-middle tokens (tokenizer.ggml.fim_*_token_id, or found by their texts); -1 when
  // none.
  struct FimTokens {
    int32_t pre = -1, suf = -1, mid = -1, pad = -1, rep = -1, sep = -1;
  };
  FimTokens fim() const;
  bool add_bos() const;
  bool add_eos() const;
  bool add_space_prefix() const;
  bool is_eog(int32_t id) const;  // end of generation
  const std::vector<int32_t>& eog_ids() const;  // ascending
  bool is_control(int32_t id) const;            // CONTROL or UNKNOWN: not text
  const std::string& token_text(int32_t id) const;
  TokenType token_type(int32_t id) const;
  float token_score(int32_t id) const;
  std::optional<int32_t> find_token(std::string_view text) const;
  const std::optional<std::string>& chat_template() const;
  const std::string& model() const;  // "llama" or "gpt2"
  const std::string& pre() const;    // tokenizer.ggml.pre as stored ("" when absent)

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Streaming detokenizer: never emits half a UTF-8 character; the held-back bytes come out
// with the next piece that completes them, or from flush().
// How many bytes at the end of s begin a UTF-8 character that is not complete yet (0-3).
size_t incomplete_utf8_tail(std::string_view s);

class StreamDecoder {
 public:
  // `keep`: control tokens whose text comes out even without render_special (the markers of
  // a tool call, which llama-server keeps as its "preserved tokens").
  explicit StreamDecoder(const Tokenizer& tok, bool render_special = true, std::vector<int32_t> keep = {});
  std::string push(int32_t id);
  std::string flush();

 private:
  const Tokenizer* tok_;
  bool render_special_;
  std::vector<int32_t> keep_;
  std::string pending_;
};

}  // namespace minfer::tok
