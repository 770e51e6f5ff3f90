// llama.cpp's own tokenizer vectors (test-tokenizer-0) for the vocabulary GGUFs: 46 strings
// each, tokenized with add_special = false, parse_special = false.
#include <gtest/gtest.h>

#include "common/test_data.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vectors.h"

using minfer::test::check_vectors;
using minfer::test::shared_path;

namespace {

class GgufVocab : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufVocab, MatchesLlamaCppVectors) {
  MINFER_REQUIRE_SHARED();
  const std::string stem = std::string("ggml-vocab-") + GetParam() + ".gguf";
  auto f = minfer::gguf::File::open(shared_path("vocab/" + stem));
  auto tok = minfer::tok::Tokenizer::from_gguf(*f);
  check_vectors(*tok, stem);
}

INSTANTIATE_TEST_SUITE_P(AllVocabs, GgufVocab,
                         ::testing::Values("gpt-2", "llama-spm", "phi-3", "deepseek-coder",
                                           "deepseek-llm", "falcon", "starcoder"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
