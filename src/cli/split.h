// Text cut at a separator: what llama-embedding's --embd-separator and llama-bench's comma lists
// both need.
#pragma once
#include <string>
#include <vector>

namespace minfer::cli {

// The pieces of s between occurrences of sep (an empty sep: s whole); "" gives one empty piece.
inline std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t at = sep.empty() ? std::string::npos : s.find(sep, pos);
    out.push_back(s.substr(pos, at == std::string::npos ? std::string::npos : at - pos));
    if (at == std::string::npos) return out;
    pos = at + sep.size();
  }
}

}  // namespace minfer::cli
