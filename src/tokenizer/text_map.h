// Token text -> id for a loaded vocabulary: an open-addressing table of ids whose keys are the
// vocabulary's own strings (nothing copied, one allocation for 150K tokens where a
// std::unordered_map<std::string, int> made a node and a key copy per token and took a third of
// a Qwen tokenizer's load), plus, per id, the previous id with the same text, so that the ids of
// a duplicated text can all be found.
#pragma once
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace minfer::tok::detail {

class TextMap {
 public:
  // Indexes texts(0) .. texts(n - 1); texts(i) must stay valid (and unchanged) while the map is
  // used. A duplicated text maps to its last id, as llama.cpp's token_to_id.
  template <class Texts>
  void build(size_t n, Texts texts) {
    size_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    slots_.assign(cap, -1);
    mask_ = cap - 1;
    before_.assign(n, -1);
    for (size_t i = 0; i < n; ++i) {
      const std::string_view t = texts(i);
      for (size_t s = hash(t) & mask_;; s = (s + 1) & mask_) {
        if (slots_[s] < 0) {
          slots_[s] = int32_t(i);
          break;
        }
        if (texts(size_t(slots_[s])) == t) {
          before_[i] = slots_[s];
          slots_[s] = int32_t(i);
          break;
        }
      }
    }
  }

  // The last id of text, or -1.
  template <class Texts>
  int32_t find(std::string_view text, Texts texts) const {
    if (slots_.empty()) return -1;
    for (size_t s = hash(text) & mask_;; s = (s + 1) & mask_) {
      if (slots_[s] < 0) return -1;
      if (texts(size_t(slots_[s])) == text) return slots_[s];
    }
  }

  // The id before `id` with the same text, or -1: from find()'s id, every id of a text in
  // descending order.
  int32_t before(int32_t id) const { return before_[size_t(id)]; }

 private:
  static size_t hash(std::string_view t) { return std::hash<std::string_view>{}(t); }
  std::vector<int32_t> slots_;   // ids, -1 empty
  std::vector<int32_t> before_;  // per id
  size_t mask_ = 0;
};

}  // namespace minfer::tok::detail
