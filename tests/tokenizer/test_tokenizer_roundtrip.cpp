// HF import -> GGUF keys -> GGUF import gives the same tokenizer, and the same ids as the
// vocabulary llama.cpp's converter wrote into tiny-qwen2-q8_0.gguf.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/test_data.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vectors.h"

using minfer::test::shared_path;

namespace {

std::vector<std::string> inputs() {
  auto cases = minfer::test::read_vocab_cases(shared_path("vocab/ggml-vocab-qwen2.gguf.inp"),
                                              shared_path("vocab/ggml-vocab-qwen2.gguf.out"));
  std::vector<std::string> xs;
  for (auto& c : cases) xs.push_back(c.text);
  xs.push_back("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  xs.push_back("Héllo wörld! Привет, мир. 你好，世界 🙂🚀");
  xs.push_back("<|endoftext|><|fim_prefix|>def f():<|fim_suffix|>  return 1<|fim_middle|>");
  return xs;
}

TEST(RoundTrip, Qwen3HfThroughGgufGivesIdenticalIds) {
  MINFER_REQUIRE_SHARED();
  auto hf = minfer::tok::Tokenizer::from_hf(shared_path("tokenizers/qwen3/tokenizer.json"));
  const auto tmp = std::filesystem::temp_directory_path() /
                   ("minfer_tok_roundtrip_" + std::to_string(::getpid()) + ".gguf");
  minfer::gguf::Writer w;
  w.set("general.architecture", minfer::gguf::Value::str("qwen3"));
  hf->write_gguf(w);
  w.write(tmp.string());
  auto f = minfer::gguf::File::open(tmp.string());
  auto back = minfer::tok::Tokenizer::from_gguf(*f);

  EXPECT_EQ(back->n_vocab(), hf->n_vocab());
  EXPECT_EQ(back->bos(), hf->bos());
  EXPECT_EQ(back->eos(), hf->eos());
  EXPECT_EQ(back->add_bos(), hf->add_bos());
  EXPECT_EQ(back->eog_ids(), hf->eog_ids());
  EXPECT_EQ(back->chat_template(), hf->chat_template());
  EXPECT_EQ(back->pre(), "qwen2");
  for (int32_t id = 0; id < hf->n_vocab(); ++id) {
    ASSERT_EQ(back->token_text(id), hf->token_text(id)) << id;
    ASSERT_EQ(back->token_type(id), hf->token_type(id)) << id;
  }
  for (const auto& s : inputs())
    for (bool special : {false, true})
      EXPECT_EQ(back->encode(s, false, special), hf->encode(s, false, special)) << s;
  std::filesystem::remove(tmp);
}

TEST(RoundTrip, Qwen3HfMatchesConvertedQwenGgufs) {
  MINFER_REQUIRE_SHARED();
  auto hf = minfer::tok::Tokenizer::from_hf(shared_path("tokenizers/qwen3/tokenizer.json"));
  EXPECT_EQ(hf->n_vocab(), 151669);
  EXPECT_FALSE(hf->add_bos());
  // tiny-qwen3 holds the Qwen3 vocabulary, tiny-qwen2 the Qwen2.5 one, which lacks the four
  // Qwen3 additions (<tool_response>, </tool_response>, <think>, </think>); both are padded
  // to 151936 with [PAD] entries.
  for (const char* model : {"tiny-qwen3-q4_0.gguf", "tiny-qwen2-q8_0.gguf"}) {
    const bool qwen3 = std::string(model).find("qwen3") != std::string::npos;
    const int32_t shared_ids = qwen3 ? 151669 : 151665;
    auto f = minfer::gguf::File::open(shared_path(std::string("models/") + model));
    auto gg = minfer::tok::Tokenizer::from_gguf(*f);
    ASSERT_EQ(gg->n_vocab(), 151936);
    for (int32_t id = 0; id < shared_ids; ++id) {
      ASSERT_EQ(gg->token_text(id), hf->token_text(id)) << model << " " << id;
      ASSERT_EQ(gg->token_type(id), hf->token_type(id)) << model << " " << id;
    }
    EXPECT_EQ(hf->eos(), gg->eos());
    for (const auto& s : inputs()) {
      if (!qwen3 && (s.find("think>") != std::string::npos || s.find("tool_resp") != std::string::npos))
        continue;
      for (bool special : {false, true})
        EXPECT_EQ(hf->encode(s, false, special), gg->encode(s, false, special)) << model << ": " << s;
    }
  }
}

TEST(RoundTrip, Llama3HfDefaults) {
  MINFER_REQUIRE_SHARED();
  auto tok = minfer::tok::Tokenizer::from_hf(shared_path("tokenizers/llama3/tokenizer.json"));
  EXPECT_EQ(tok->n_vocab(), 128256);
  EXPECT_EQ(tok->bos(), 128000);
  EXPECT_EQ(tok->eos(), 128001);
  EXPECT_TRUE(tok->add_bos());  // llama.cpp's default for llama-bpe
  EXPECT_TRUE(tok->is_eog(128009));  // <|eot_id|>
  EXPECT_TRUE(tok->is_eog(128001));
  EXPECT_EQ(tok->encode("Hello", true, true), (std::vector<int32_t>{128000, 9906}));
  EXPECT_EQ(tok->encode("<|begin_of_text|>Hi", false, true), (std::vector<int32_t>{128000, 13347}));
}

}  // namespace
