// llama-server's /infill prompt, spelled out token by token from its description: the extra
// files' context with Qwen2.5-Coder's repo-level markers, then the FIM prefix, suffix and
// middle; the prefix cut from its start and the suffix from its end to the batch's 3:1 budget;
// the extra context to what the context leaves; the snippet separator for vocabularies without
// repo markers; and a clear error for a vocabulary without FIM tokens.
#include <gtest/gtest.h>

#include "common/error.h"
#include "common/test_data.h"
#include "server/infill.h"
#include "tokenizer/tokenizer.h"

using namespace minfer;
using server::InfillInput;

namespace {

std::vector<int32_t> cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST(Infill, RepoLevelLayoutOfQwenCoder) {
  MINFER_REQUIRE_SHARED();
  const auto tok = tok::Tokenizer::from_hf(test::shared_path("tokenizers/qwen3/tokenizer.json"));
  const auto fim = tok->fim();
  ASSERT_EQ(tok->token_text(fim.pre), "<|fim_prefix|>");
  ASSERT_EQ(tok->token_text(fim.suf), "<|fim_suffix|>");
  ASSERT_EQ(tok->token_text(fim.mid), "<|fim_middle|>");
  ASSERT_EQ(tok->token_text(fim.rep), "<|repo_name|>");
  ASSERT_EQ(tok->token_text(fim.sep), "<|file_sep|>");
  auto enc = [&](const std::string& s) { return tok->encode(s, false, false); };

  InfillInput in;
  in.prefix = "def add(a, b):\n    ";
  in.suffix = "\n\nprint(add(1, 2))\n";
  in.prompt = "return";
  in.extra = {{"util.py", "x = 1\n"}, {"b.py", "<|fim_prefix|> is text here\n"}};
  const std::vector<int32_t> want =
      cat({{fim.rep}, enc("myproject\n"), {fim.sep}, enc("util.py\n"), enc("x = 1\n"), {fim.sep}, enc("b.py\n"),
           enc("<|fim_prefix|> is text here\n"), {fim.sep}, enc("filename\n"), {fim.pre}, enc(in.prefix),
           enc("return"), {fim.suf}, enc(in.suffix), {fim.mid}});
  EXPECT_EQ(server::infill_tokens(*tok, in, 8192, 64), want);

  // The context left after a batch and twice the reply holds only the end of the extra context.
  const size_t n_extra = want.size() - (enc(in.prefix).size() + enc("return").size() + enc(in.suffix).size() + 3);
  const auto cut = server::infill_tokens(*tok, in, server::kInfillBatch + 2 * 64 + 5, 64);
  EXPECT_EQ(cut, std::vector<int32_t>(want.begin() + int64_t(n_extra) - 5, want.end()));
  EXPECT_EQ(server::infill_tokens(*tok, in, 1024, 64).front(), fim.pre);
}

TEST(Infill, PrefixAndSuffixKeepTheCodeNearestTheCursor) {
  MINFER_REQUIRE_SHARED();
  const auto tok = tok::Tokenizer::from_hf(test::shared_path("tokenizers/qwen3/tokenizer.json"));
  const auto fim = tok->fim();
  InfillInput in;
  for (int i = 0; i < 800; ++i) in.prefix += "x" + std::to_string(i) + " = " + std::to_string(i) + "\n";
  for (int i = 0; i < 400; ++i) in.suffix += "y" + std::to_string(i) + " = " + std::to_string(i) + "\n";
  in.prompt = "z";
  const auto prefix = tok->encode(in.prefix, false, false), suffix = tok->encode(in.suffix, false, false);
  const auto prompt = tok->encode(in.prompt, false, false);
  ASSERT_GT(prefix.size(), 3u * 2048 / 4);
  ASSERT_GT(suffix.size(), 2048u / 4);
  const auto got = server::infill_tokens(*tok, in, 1024, 16);  // no room for extra context
  const size_t n_suffix = 2048 / 4 - 2 - prompt.size();
  const std::vector<int32_t> want =
      cat({{fim.pre}, std::vector<int32_t>(prefix.end() - 3 * 2048 / 4, prefix.end()), prompt, {fim.suf},
           std::vector<int32_t>(suffix.begin(), suffix.begin() + int64_t(n_suffix)), {fim.mid}});
  EXPECT_EQ(got, want);
}

TEST(Infill, SnippetSeparatorWithoutRepoMarkersAndErrorWithoutFim) {
  // A vocabulary with the three FIM markers only (StarCoder's spelling).
  const auto tok = tok::Tokenizer::byte_level({"<fim_prefix>", "<fim_suffix>", "<fim_middle>"});
  const auto fim = tok->fim();
  ASSERT_GE(fim.pre, 0);
  ASSERT_LT(fim.rep, 0);
  auto enc = [&](const std::string& s) { return tok->encode(s, false, false); };
  InfillInput in{"a", "c", "", {{"f.py", "b"}}};
  EXPECT_EQ(server::infill_tokens(*tok, in, 8192, 8),
            cat({enc("\n\n--- snippet ---\n\n"), enc("b"), {fim.pre}, enc("a"), {fim.suf}, enc("c"), {fim.mid}}));
  const auto plain = tok::Tokenizer::byte_level({"<|eos|>"});
  EXPECT_THROW(server::infill_tokens(*plain, in, 8192, 8), Error);
}
