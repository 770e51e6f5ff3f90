// Behaviour that needs no test data: the byte-level vocabulary, pieces, streaming decode,
// bad ids, the text -> id map, merges through a text that is not a token.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "common/error.h"
#include "gguf/gguf.h"
#include "tokenizer/pretokenizer.h"
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

TEST(StreamDecoder, KeepsTheTextOfTheControlTokensAskedFor) {
  // A tool call's marker is a control token in Llama 3's vocabulary: the reply keeps it only
  // when asked, the other control tokens stay silent.
  auto tok = Tokenizer::byte_level({"<|python_tag|>", "<|eot_id|>"});
  const int32_t tag = *tok->find_token("<|python_tag|>"), eot = *tok->find_token("<|eot_id|>");
  minfer::tok::StreamDecoder plain(*tok, false);
  EXPECT_EQ(plain.push(tag), "");
  minfer::tok::StreamDecoder keeping(*tok, false, {tag});
  EXPECT_EQ(keeping.push(tag), "<|python_tag|>");
  EXPECT_EQ(keeping.push(eot), "");
  EXPECT_EQ(keeping.push('{'), "{");
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


// A byte-level BPE vocabulary written as a GGUF file and read back: the 256 byte tokens, then
// `extra` (type 1 NORMAL, or 3 CONTROL for the texts in `control`), pre-type `pre`.
std::unique_ptr<Tokenizer> bpe_vocab(const std::vector<std::string>& extra, const std::vector<std::string>& control,
                                     const std::string& pre) {
  auto bytes = Tokenizer::byte_level({});
  std::vector<std::string> texts;
  std::vector<minfer::gguf::Value> types;
  for (int32_t i = 0; i < 256; ++i) {
    texts.push_back(bytes->token_text(i));
    types.push_back(minfer::gguf::Value::i32(1));
  }
  for (const auto& t : extra) {
    texts.push_back(t);
    const bool ctl = std::find(control.begin(), control.end(), t) != control.end();
    types.push_back(minfer::gguf::Value::i32(ctl ? 3 : 1));
  }
  minfer::gguf::Writer w;
  w.set("tokenizer.ggml.model", minfer::gguf::Value::str("gpt2"));
  w.set("tokenizer.ggml.pre", minfer::gguf::Value::str(pre));
  w.set("tokenizer.ggml.tokens", minfer::gguf::Value::string_array(texts));
  w.set("tokenizer.ggml.token_type", minfer::gguf::Value::array(minfer::gguf::ValueType::I32, types));
  w.set("tokenizer.ggml.merges", minfer::gguf::Value::string_array({}));
  const auto path = std::filesystem::temp_directory_path() / ("minfer-vocab-" + std::to_string(::getpid()) + ".gguf");
  w.write(path.string());
  auto f = minfer::gguf::File::open(path.string());
  auto tok = Tokenizer::from_gguf(*f);
  std::filesystem::remove(path);
  return tok;
}

// llama.cpp v0.4.0 takes "</s>" for an end of generation by its text, in any vocabulary, and makes
// it CONTROL: Qwen's plain token 128247 "</s>" is then one special token in a prompt and ends
// generation (checked against the oracle on tiny-qwen2-q8_0.gguf: "a</s>b" -> a, 128247, b).
TEST(SpecialTokens, EndOfTurnTextsBecomeControlAndEndGeneration) {
  auto tok = bpe_vocab({"</s>", "[EOS]", "<turn|>", "hello"}, {}, "qwen2");
  const int32_t s = 256, eos = 257, turn = 258, hello = 259;
  EXPECT_TRUE(tok->is_eog(s));
  EXPECT_TRUE(tok->is_eog(eos));
  EXPECT_TRUE(tok->is_eog(turn));
  EXPECT_FALSE(tok->is_eog(hello));
  EXPECT_EQ(tok->token_type(s), minfer::tok::TokenType::Control);
  EXPECT_EQ(tok->encode("a</s>b", false, true), (std::vector<int32_t>{'a', s, 'b'}));
  EXPECT_EQ(tok->encode("a</s>b", false, false), (std::vector<int32_t>{'a', '<', '/', 's', '>', 'b'}));
  EXPECT_EQ(tok->token_to_piece(s, false), "");  // a control token renders only when asked
  EXPECT_EQ(tok->token_to_piece(s, true), "</s>");
}

// Gemma 4's vocabulary (it has <|tool_response>) keeps "</s>" as text; with <|calls|> and
// <|flush|> (solar-open), as with <|return|> and <|call|> (gpt-oss), <|end|> does not end
// generation and is USER_DEFINED.
TEST(SpecialTokens, VocabularyWorkaroundsOfLlamaCpp) {
  auto gemma = bpe_vocab({"</s>", "<|tool_response>"}, {}, "gpt-2");
  EXPECT_FALSE(gemma->is_eog(256));
  EXPECT_TRUE(gemma->is_eog(257));
  EXPECT_EQ(gemma->token_type(256), minfer::tok::TokenType::Normal);
  EXPECT_EQ(gemma->encode("a</s>", false, true), (std::vector<int32_t>{'a', '<', '/', 's', '>'}));

  auto solar = bpe_vocab({"<|end|>", "<|calls|>", "<|flush|>"}, {"<|end|>", "<|calls|>", "<|flush|>"}, "solar-open");
  EXPECT_FALSE(solar->is_eog(256));
  EXPECT_TRUE(solar->is_eog(257));
  EXPECT_TRUE(solar->is_eog(258));
  EXPECT_EQ(solar->token_type(256), minfer::tok::TokenType::UserDefined);

  auto plain = bpe_vocab({"<|end|>", "<|calls|>"}, {"<|end|>", "<|calls|>"}, "qwen2");  // no <|flush|>
  EXPECT_TRUE(plain->is_eog(256));
}

// The pre-types llama.cpp v0.4.0 added over the ones minfer had, as it maps them (each checked
// against the oracle: 50 random texts of mixed scripts, marks, digits, whitespace and special
// texts through tiny-qwen2-q8_0.gguf with its tokenizer.ggml.pre rewritten).
TEST(PreTypes, NewNamesMapAsInLlamaCpp) {
  using minfer::tok::detail::pre_type_info;
  EXPECT_EQ(pre_type_info("f2llmv2").regexes, pre_type_info("qwen2").regexes);
  EXPECT_EQ(pre_type_info("jina-v5-nano").regexes, pre_type_info("llama3").regexes);
  EXPECT_TRUE(pre_type_info("jina-v5-nano").add_bos);
  EXPECT_EQ(pre_type_info("modern-bert").regexes, pre_type_info("gpt-2").regexes);
  EXPECT_EQ(pre_type_info("kanana2").regexes, pre_type_info("gpt-4o").regexes);
  EXPECT_EQ(pre_type_info("talkie").regexes, pre_type_info("gpt-4o").regexes);
  EXPECT_EQ(pre_type_info("mellum2").regexes, pre_type_info("starcoder").regexes);
  EXPECT_TRUE(pre_type_info("mellum2").clean_spaces);
  EXPECT_EQ(pre_type_info("solar-open").regexes, pre_type_info("qwen2").regexes);
  EXPECT_EQ(pre_type_info("hunyuan-dense").regexes, pre_type_info("deepseek-v3").regexes);
  EXPECT_EQ(pre_type_info("joyai-llm").regexes, pre_type_info("deepseek-v3").regexes);
  for (const char* p : {"hunyuan-dense", "joyai-llm", "solar-open", "qwen35", "laguna", "granite-embed-multi-97m"})
    EXPECT_FALSE(pre_type_info(p).clean_spaces) << p;
  EXPECT_TRUE(pre_type_info("granite-embed-multi-97m").ignore_merges);
  for (const char* p : {"qwen35", "jais-2", "exaone-moe", "laguna", "granite-embed-multi-97m", "", "default"})
    EXPECT_TRUE(pre_type_info(p).known) << p;
  // Combining marks join the letters before them in qwen35; qwen2 puts them with the punctuation.
  const std::string text = "e\xCC\x81!";  // e, U+0301, !
  using minfer::tok::detail::PreTokenizer;
  EXPECT_EQ(PreTokenizer(pre_type_info("qwen35").regexes).split(text), (std::vector<size_t>{3, 1}));
  EXPECT_EQ(PreTokenizer(pre_type_info("qwen2").regexes).split(text), (std::vector<size_t>{1, 3}));
}

// A pre-type llama.cpp does not know, or one minfer does not split as llama.cpp does, is refused
// when the tokenizer loads (llama.cpp: "unknown pre-tokenizer type"), not tokenized another way.
TEST(PreTypes, UnknownOrUnsupportedNamesAreRefused) {
  for (const char* p : {"no-such-pre", "gemma4", "kimi-k2", "superbpe"}) {
    EXPECT_FALSE(minfer::tok::detail::pre_type_info(p).known) << p;
    try {
      bpe_vocab({}, {}, p);
      ADD_FAILURE() << p << " was accepted";
    } catch (const minfer::Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("pre-tokenizer type '") + p + "'"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
