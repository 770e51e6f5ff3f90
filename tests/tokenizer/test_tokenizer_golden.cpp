// llama.cpp's tokenization of the golden prompts (../shared/golden/models/*.json):
// add_special = the model's add_bos, parse_special = true.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "common/test_data.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vectors.h"

using minfer::test::shared_path;

namespace {

const minfer::tok::Tokenizer& tokenizer_for(const std::string& model) {
  static std::map<std::string, std::pair<std::unique_ptr<minfer::gguf::File>,
                                         std::unique_ptr<minfer::tok::Tokenizer>>>
      cache;
  auto& e = cache[model];
  if (!e.second) {
    e.first = minfer::gguf::File::open(shared_path("models/" + model));
    e.second = minfer::tok::Tokenizer::from_gguf(*e.first);
  }
  return *e.second;
}

TEST(Golden, PromptIdsMatchLlamaCpp) {
  MINFER_REQUIRE_SHARED();
  int checked = 0;
  for (const auto& ent : std::filesystem::directory_iterator(shared_path("golden/models"))) {
    if (ent.path().extension() != ".json") continue;
    const auto j = nlohmann::json::parse(minfer::test::read_file(ent.path().string()));
    const auto& tok = tokenizer_for(j["model"].get<std::string>());
    std::vector<nlohmann::json> cases;
    if (j.contains("cases")) {
      for (const auto& c : j["cases"]) cases.push_back(c);
    } else {
      cases.push_back(j);
    }
    for (const auto& c : cases) {
      const std::string text = c["prompt_text"].get<std::string>();
      const auto expected = c["prompt_ids"].get<std::vector<int32_t>>();
      EXPECT_EQ(tok.encode(text, tok.add_bos(), /*parse_special=*/true), expected)
          << ent.path().filename().string() << ": '" << text << "'";
      if (j.contains("add_bos")) {
        EXPECT_EQ(tok.add_bos(), j["add_bos"].get<bool>());
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 15);
}

TEST(Golden, GreedyTextIsDetokenizedLikeLlamaCpp) {
  MINFER_REQUIRE_SHARED();
  // greedy.text is llama_detokenize(ids, remove_special=false, unparse_special=true).
  for (const auto& ent : std::filesystem::directory_iterator(shared_path("golden/models"))) {
    if (ent.path().extension() != ".json") continue;
    const auto j = nlohmann::json::parse(minfer::test::read_file(ent.path().string()));
    const auto& tok = tokenizer_for(j["model"].get<std::string>());
    std::vector<nlohmann::json> cases;
    if (j.contains("cases")) {
      for (const auto& c : j["cases"]) cases.push_back(c);
    } else {
      cases.push_back(j);
    }
    for (const auto& c : cases) {
      const auto ids = c["greedy"]["ids"].get<std::vector<int32_t>>();
      EXPECT_EQ(tok.detokenize(ids, false, true), c["greedy"]["text"].get<std::string>())
          << ent.path().filename().string();
    }
  }
}

TEST(Golden, QwenEndOfGenerationTokens) {
  MINFER_REQUIRE_SHARED();
  const auto& tok = tokenizer_for("tiny-qwen2-q8_0.gguf");
  EXPECT_EQ(tok.eos(), 151645);  // <|im_end|>
  EXPECT_EQ(tok.bos(), 151643);
  EXPECT_FALSE(tok.add_bos());
  EXPECT_TRUE(tok.is_eog(151645));
  EXPECT_TRUE(tok.is_eog(151643));   // <|endoftext|>
  EXPECT_FALSE(tok.is_eog(151644));  // <|im_start|>
  EXPECT_FALSE(tok.is_eog(9707));
  // "</s>" is a plain token of Qwen's vocabulary that llama.cpp v0.4.0 makes an end of
  // generation and a special text (its oracle: "a</s>b" -> 64, 128247, 65; not parsed:
  // 64, 522, 82, 51407).
  EXPECT_TRUE(tok.is_eog(128247));
  EXPECT_EQ(tok.encode("a</s>b", false, true), (std::vector<int32_t>{64, 128247, 65}));
  EXPECT_EQ(tok.encode("a</s>b", false, false), (std::vector<int32_t>{64, 522, 82, 51407}));
  ASSERT_TRUE(tok.chat_template().has_value());
  EXPECT_NE(tok.chat_template()->find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(tok.encode("Hello, world! 你好", false, true),
            (std::vector<int32_t>{9707, 11, 1879, 0, 220, 108386}));
}

TEST(Golden, StoriesSpmSpecials) {
  MINFER_REQUIRE_SHARED();
  const auto& tok = tokenizer_for("stories260K.gguf");
  EXPECT_EQ(tok.model(), "llama");
  EXPECT_EQ(tok.n_vocab(), 512);
  EXPECT_EQ(tok.bos(), 1);
  EXPECT_EQ(tok.eos(), 2);
  EXPECT_TRUE(tok.add_bos());
  EXPECT_EQ(tok.eog_ids(), std::vector<int32_t>{2});
  // Empty text: nothing, not even the space prefix; with add_special only BOS.
  EXPECT_TRUE(tok.encode("", false, true).empty());
  EXPECT_EQ(tok.encode("", true, true), std::vector<int32_t>{1});
}

}  // namespace
