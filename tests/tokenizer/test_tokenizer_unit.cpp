// Behaviour that needs no test data: the byte-level vocabulary, pieces, streaming decode,
// bad ids, the text -> id map, merges through a text that is not a token.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "common/error.h"
#include "tokenizer/text_map.h"
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

TEST(TextMap, DuplicatesMapToTheLastIdAndChainDown) {
  auto name = [](int i) {
    std::string s = "t";
    s += std::to_string(i);
    return s;
  };
  std::vector<std::string> texts = {"a", "b", "a", "c", "a", ""};
  for (int i = 0; i < 5000; ++i) texts.push_back(name(i));  // (probe chains)
  auto text = [&](size_t i) { return std::string_view(texts[i]); };
  minfer::tok::detail::TextMap m;
  EXPECT_EQ(m.find("a", text), -1);  // empty: nothing
  m.build(texts.size(), text);
  EXPECT_EQ(m.find("a", text), 4);
  EXPECT_EQ(m.before(4), 2);
  EXPECT_EQ(m.before(2), 0);
  EXPECT_EQ(m.before(0), -1);
  EXPECT_EQ(m.find("b", text), 1);
  EXPECT_EQ(m.before(1), -1);
  EXPECT_EQ(m.find("", text), 5);
  EXPECT_EQ(m.find("ab", text), -1);
  EXPECT_EQ(m.find("t", text), -1);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(m.find(name(i), text), 6 + i);
}

// A repeated end-of-turn text: every id of it ends generation, the lowest is EOT (llama.cpp
// detects EOT by text and takes the lowest id).
TEST(ByteLevel, RepeatedSpecialTextsAllEndGeneration) {
  auto tok = Tokenizer::byte_level({"<|eos|>", "<|im_end|>", "x", "<|im_end|>"});
  EXPECT_EQ(tok->eot(), 257);
  EXPECT_TRUE(tok->is_eog(257));
  EXPECT_TRUE(tok->is_eog(259));
  EXPECT_FALSE(tok->is_eog(258));
  EXPECT_EQ(tok->eog_ids(), (std::vector<int32_t>{256, 257, 259}));
  EXPECT_EQ(tok->find_token("<|im_end|>"), 259);  // the last id, as llama.cpp's token_to_id
}

// "a b" makes "ab", which is not a token; "ab c" then makes the token "abc". The second merge
// has a side that is no token, so it is found by text, not by token ids.
TEST(Bpe, MergesThroughATextThatIsNotAToken) {
  const auto dir = std::filesystem::temp_directory_path() / ("minfer-bpe-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "tokenizer.json";
  std::ofstream(path) << R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "abc": 3, "d": 4, "x\u20acy": 5},
      "merges": ["a b", "ab c", "c d"]}, "pre_tokenizer": {"type": "ByteLevel"}})";
  auto tok = Tokenizer::from_hf(path.string());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(tok->encode("abc", false, false), (std::vector<int32_t>{3}));
  EXPECT_EQ(tok->encode("ab", false, false), (std::vector<int32_t>{0, 1}));  // bytes of a non-token
  EXPECT_EQ(tok->encode("abcd", false, false), (std::vector<int32_t>{3, 4}));  // rank order: "ab c" first
  // A code point that stands for no byte: llama.cpp's marker with its UTF-8 bytes and the text.
  EXPECT_EQ(tok->token_to_piece(5), "x[UNK_BYTE_0xe282acx\xE2\x82\xACy]y");
}

}  // namespace
