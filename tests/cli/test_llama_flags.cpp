// llama.cpp's command-line conventions: its escape sequences (string_process_escapes, the cases
// of its behaviour written out here) and its multi-letter short flags given to CLI11 as long forms.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/llama_flags.h"
#include "common/error.h"

using minfer::cli::process_escapes;

TEST(LlamaFlags, EscapesAsLlamaCppProcessesThem) {
  EXPECT_EQ(process_escapes(R"(a\nb\rc\td)"), "a\nb\rc\td");
  EXPECT_EQ(process_escapes(R"(\'\"\\)"), "'\"\\");
  EXPECT_EQ(process_escapes(R"(\x41\x7a\x0A)"), "Az\n");
  // What is no escape stays as written: unknown letters, short or bad \x, a final backslash.
  EXPECT_EQ(process_escapes(R"(\q \x4 \xZZ end\)"), R"(\q \x4 \xZZ end\)");
  EXPECT_EQ(process_escapes(R"(\\n)"), "\\n");  // an escaped backslash, then n
  EXPECT_EQ(process_escapes("plain text"), "plain text");
  EXPECT_EQ(process_escapes(""), "");
}

TEST(LlamaFlags, MultiLetterShortFlagsBecomeLongForms) {
  std::vector<std::string> in = {"minfer", "m.gguf", "-ngl", "99", "-md", "d.gguf", "-fa", "on", "-ub", "8",
                                 "-ctk", "f16", "-sys", "hi", "-np", "2", "-n", "4", "--", "-ngl"};
  std::vector<char*> argv;
  for (std::string& s : in) argv.push_back(s.data());
  const std::vector<char*> out = minfer::cli::with_llama_cpp_flags(int(argv.size()), argv.data());
  std::vector<std::string> got(out.begin(), out.end());
  EXPECT_EQ(got, (std::vector<std::string>{"minfer", "m.gguf", "--n-gpu-layers", "99", "--model-draft", "d.gguf",
                                           "--flash-attn", "on", "--ubatch-size", "8", "--cache-type-k", "f16",
                                           "--system-prompt", "hi", "--parallel", "2", "-n", "4", "--", "-ngl"}));
}

TEST(LlamaFlags, FlagsWithoutACounterpartAreNamed) {
  std::vector<std::string> in = {"minfer", "m.gguf", "-hf", "org/model"};
  std::vector<char*> argv;
  for (std::string& s : in) argv.push_back(s.data());
  try {
    minfer::cli::with_llama_cpp_flags(int(argv.size()), argv.data());
    FAIL() << "-hf was taken";
  } catch (const minfer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("-hf (llama.cpp's --hf-repo) is not a minfer option: give minfer a local GGUF file"),
              std::string::npos)
        << e.what();
  }
}
