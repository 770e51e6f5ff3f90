// A whole file mapped read-only into memory; the GGUF reader hands out pointers into it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace minfer::gguf {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws minfer::Error("<path>: ...")
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // madvise(MADV_DONTNEED) on the whole pages inside [p, p + n) ∩ the mapping: the mapping is
  // private and read-only, so dropped pages come back from the file when read again.
  void release(const uint8_t* p, size_t n) const;
  // mlock() of every page not released: what is still read from the mapping stays in RAM.
  // 0, or the errno of the first refusal.
  int lock_kept() const;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  mutable std::mutex mu_;
  mutable std::vector<std::pair<uintptr_t, uintptr_t>> released_;  // whole-page ranges
};

}  // namespace minfer::gguf
