// A whole file in memory, read-only; the GGUF reader hands out pointers into it. Mapped from the
// file (mmap), or read into anonymous memory up front (llama.cpp's --no-mmap: no page faults
// to the file during inference).
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
  // throws minfer::Error("<path>: ...")
  explicit MappedFile(const std::string& path, bool use_mmap = true);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // The whole pages inside [p, p + n) ∩ the memory leave this process: madvise(MADV_DONTNEED) of
  // the private read-only mapping, whose dropped pages come back from the file when read again;
  // a read copy maps those pages from the file in their place, to the same effect.
  void release(const uint8_t* p, size_t n) const;
  // mlock() of every page not released: what is still read from the mapping stays in RAM.
  // 0, or the errno of the first refusal.
  int lock_kept() const;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;  // kept open for a read copy: release() maps the file over it
  mutable std::mutex mu_;
  mutable std::vector<std::pair<uintptr_t, uintptr_t>> released_;  // whole-page ranges
};

}  // namespace minfer::gguf
