// Reading llama.cpp's test-tokenizer-0 vectors (.inp/.out pairs in ../shared/vocab).
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_data.h"
#include "tokenizer/tokenizer.h"

namespace minfer::test {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};

// Every input is followed by "\n__ggml_vocab_test__\n"; the .out file has one line of
// space-separated ids per input.
inline std::vector<VocabCase> read_vocab_cases(const std::string& inp_path,
                                               const std::string& out_path) {
  const std::string inp = read_file(inp_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<VocabCase> cases;
  size_t pos = 0;
  for (size_t m; (m = inp.find(sep, pos)) != std::string::npos; pos = m + sep.size())
    cases.push_back({inp.substr(pos, m - pos), {}});
  std::istringstream out(read_file(out_path));
  std::string line;
  for (auto& c : cases) {
    if (!std::getline(out, line)) break;
    std::istringstream ls(line);
    for (int32_t id; ls >> id;) c.ids.push_back(id);
  }
  return cases;
}

inline std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    s += ' ';
    s += std::to_string(id);
  }
  return s;
}

// Runs every vector of vocab/<stem>.inp/.out through `tok` (gtest expectations).
inline void check_vectors(const minfer::tok::Tokenizer& tok, const std::string& stem) {
  const auto cases = read_vocab_cases(shared_path("vocab/" + stem + ".inp"),
                                      shared_path("vocab/" + stem + ".out"));
  ASSERT_EQ(cases.size(), 46u) << stem;
  int passed = 0;
  for (const auto& c : cases) {
    const auto ids = tok.encode(c.text, /*add_special=*/false, /*parse_special=*/false);
    EXPECT_EQ(show(ids), show(c.ids)) << stem << " input: '" << c.text << "'";
    passed += ids == c.ids;
  }
  std::printf("%s: %d/%zu\n", stem.c_str(), passed, cases.size());
}

}  // namespace minfer::test
