// Behaviour that needs no test data: the byte-level vocabulary, pieces, streaming decode,
// bad ids.
#include <gtest/gtest.h>

#include "common/error.h"
#include "tokenizer/tokenizer.h"

using minfer::tok::Tokenizer;

namespace {

TEST(ByteLevel, EveryByteIsItsOwnToken) {
  auto tok = Tokenizer::byte_level({"<|eos|>", "<|user|>"});
  EXPECT_EQ(tok->n_vocab(), 258);
  EXPECT_EQ(tok->model(), "gpt2");
  EXPECT_EQ(tok->pre(), "default");
  EXPECT_EQ(tok->eos(), 256);
  EXPECT_TRUE(tok->is_eog(256));
  EXPECT_FALSE(tok->is_eog(257));
  EXPECT_FALSE(tok->add_bos());
  // " A" is two byte tokens (no merges); GPT-2 maps space to U+0120.
  EXPECT_EQ(tok->encode(" A", false, false), (std::vector<int32_t>{32, 65}));
  EXPECT_EQ(tok->token_text(32), "\xC4\xA0");
  EXPECT_EQ(tok->token_to_piece(32), " ");
  // Specials parse only with parse_special.
  EXPECT_EQ(tok->encode("a<|user|>b", false, true), (std::vector<int32_t>{97, 257, 98}));
  EXPECT_EQ(tok->encode("<|user|>", false, false).size(), 8u);
  const std::string all = [] {
    std::string s;
    for (int b = 0; b < 256; ++b) s.push_back(char(b));
    return s;
  }();
  // Invalid UTF-8 is replaced by U+FFFD (as llama.cpp does), valid text round-trips.
  const std::string valid = "héllo wörld 🙂\n\t";
  EXPECT_EQ(tok->decode(tok->encode(valid, false, false)), valid);
  for (int32_t id : tok->encode(all, false, false)) EXPECT_LT(id, 256);
}

TEST(ByteLevel, PiecesAndSpecialRendering) {
  auto tok = Tokenizer::byte_level({"<|eos|>"});
  EXPECT_EQ(tok->token_to_piece(256), "<|eos|>");
  EXPECT_EQ(tok->token_to_piece(256, false), "");
  const std::vector<int32_t> ids = {72, 105, 256};
  EXPECT_EQ(tok->decode(ids), "Hi<|eos|>");
  EXPECT_EQ(tok->decode(ids, true), "Hi");
  // clean_spaces ("default" pre-type): " ," -> ","
  EXPECT_EQ(tok->decode(tok->encode("a , b", false, false)), "a, b");
}

TEST(ByteLevel, OutOfRangeIdsThrow) {
  auto tok = Tokenizer::byte_level({});
  EXPECT_THROW(tok->token_to_piece(-1), minfer::Error);
  EXPECT_THROW(tok->token_to_piece(256), minfer::Error);
  EXPECT_THROW(tok->token_text(1000), minfer::Error);
  const std::vector<int32_t> bad = {1, 2, 999};
  EXPECT_THROW(tok->decode(bad), minfer::Error);
  EXPECT_FALSE(tok->is_eog(-5));
  EXPECT_FALSE(tok->find_token("nope").has_value());
  EXPECT_EQ(tok->find_token("a"), 97);
}

TEST(StreamDecoder, NeverSplitsACharacter) {
  auto tok = Tokenizer::byte_level({"<|eos|>"});
  const std::string text = "a€🙂b";  // 1 + 3 + 4 + 1 bytes, one byte token each
  minfer::tok::StreamDecoder sd(*tok);
  std::vector<std::string> outs;
  for (int32_t id : tok->encode(text, false, false)) outs.push_back(sd.push(id));
  outs.push_back(sd.flush());
  const std::vector<std::string> expected = {"a", "", "", "€", "", "", "", "🙂", "b", ""};
  EXPECT_EQ(outs, expected);
}

TEST(StreamDecoder, FlushReturnsAnIncompleteTail) {
  auto tok = Tokenizer::byte_level({});
  minfer::tok::StreamDecoder sd(*tok);
  EXPECT_EQ(sd.push(0xE2), "");
  EXPECT_EQ(sd.push(0x82), "");
  EXPECT_EQ(sd.flush(), "\xE2\x82");
  // A stray continuation byte is not held back.
  EXPECT_EQ(sd.push(0x82), "\x82");
}

}  // namespace
