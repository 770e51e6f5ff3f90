// An open-addressing hash map from a pair of token ids to a BPE merge (rank, merged id):
// the hot lookup of byte-level BPE, done without hashing strings.
#pragma once
#include <cstdint>
#include <vector>

namespace minfer::tok::detail {

class PairMap {
 public:
  struct Entry {
    uint64_t key = kEmpty;
    int32_t rank = -1;
    int32_t merged = -1;  // id of left+right, -1 when that text is not a token
  };

  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    table_.assign(cap, Entry{});
    mask_ = cap - 1;
  }
  // Keeps the first entry for a key (the lowest rank, as llama.cpp's map emplace does).
  void insert(int32_t left, int32_t right, int32_t rank, int32_t merged) {
    if (size_ * 2 >= table_.size()) grow();
    const uint64_t key = make_key(left, right);
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      if (table_[i].key == key) return;
      if (table_[i].key == kEmpty) {
        table_[i] = Entry{key, rank, merged};
        ++size_;
        return;
      }
    }
  }
  const Entry* find(int32_t left, int32_t right) const {
    if (table_.empty()) return nullptr;
    const uint64_t key = make_key(left, right);
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      if (table_[i].key == key) return &table_[i];
      if (table_[i].key == kEmpty) return nullptr;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  static uint64_t make_key(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  static size_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return size_t(k);
  }
  void grow() {
    std::vector<Entry> old;
    old.swap(table_);
    reserve(old.empty() ? 16 : old.size());
    size_ = 0;
    for (const Entry& e : old)
      if (e.key != kEmpty) insert(int32_t(e.key >> 32), int32_t(uint32_t(e.key)), e.rank, e.merged);
  }
  std::vector<Entry> table_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace minfer::tok::detail
