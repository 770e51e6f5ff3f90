// llama.cpp's Qwen2 and Llama-3 tokenizer vectors, with the vocabularies imported from HF
// tokenizer.json files (the vocabulary GGUFs are not in the test data).
#include <gtest/gtest.h>

#include "common/test_data.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vectors.h"

using minfer::test::check_vectors;
using minfer::test::shared_path;

namespace {

TEST(HfVocab, Qwen3TokenizerJsonMatchesQwen2Vectors) {
  MINFER_REQUIRE_SHARED();
  auto tok = minfer::tok::Tokenizer::from_hf(shared_path("tokenizers/qwen3/tokenizer.json"));
  EXPECT_EQ(tok->pre(), "qwen2");
  check_vectors(*tok, "ggml-vocab-qwen2.gguf");
}

TEST(HfVocab, Llama3TokenizerJsonMatchesLlamaBpeVectors) {
  MINFER_REQUIRE_SHARED();
  auto tok = minfer::tok::Tokenizer::from_hf(shared_path("tokenizers/llama3/tokenizer.json"));
  EXPECT_EQ(tok->pre(), "llama-bpe");
  check_vectors(*tok, "ggml-vocab-llama-bpe.gguf");
}

}  // namespace
