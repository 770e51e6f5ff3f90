#include "gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace minfer::gguf {

MappedFile::MappedFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail("{}: cannot stat: {}", path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{}: not a regular file", path);
  }
  size_ = size_t(st.st_size);
  if (size_ == 0) {
    ::close(fd);
    fail("{}: file is empty", path);
  }
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (p == MAP_FAILED) fail("{}: cannot mmap {} bytes: {}", path, size_, std::strerror(e));
  data_ = static_cast<const uint8_t*>(p);
}

void MappedFile::release(const uint8_t* p, size_t n) const {
  const auto lo = std::max(reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(data_));
  const auto hi = std::min(reinterpret_cast<uintptr_t>(p) + n, reinterpret_cast<uintptr_t>(data_) + size_);
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t a = (lo + page - 1) / page * page, b = hi / page * page;
  if (a >= b) return;
  // Advice only: a failure changes nothing but the memory footprint.
  (void)::madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
  std::lock_guard lk(mu_);
  released_.emplace_back(a, b);
}

int MappedFile::lock_kept() const {
  std::lock_guard lk(mu_);
  std::vector<std::pair<uintptr_t, uintptr_t>> gaps = released_;
  std::sort(gaps.begin(), gaps.end());
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  uintptr_t from = reinterpret_cast<uintptr_t>(data_) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(data_) + size_;
  auto lock = [](uintptr_t a, uintptr_t b) {
    return a < b && ::mlock(reinterpret_cast<void*>(a), b - a) != 0 ? errno : 0;
  };
  for (const auto& [a, b] : gaps) {
    if (const int e = lock(from, a)) return e;
    from = std::max(from, b);
  }
  return lock(from, end);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace minfer::gguf
