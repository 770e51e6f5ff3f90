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

MappedFile::MappedFile(const std::string& path, bool use_mmap) {
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
  if (use_mmap) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    ::close(fd);  // the mapping keeps the file alive
    if (p == MAP_FAILED) fail("{}: cannot mmap {} bytes: {}", path, size_, std::strerror(e));
    data_ = static_cast<const uint8_t*>(p);
    return;
  }
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    ::close(fd);
    fail("{}: cannot allocate {} bytes to read it into: {}", path, size_, std::strerror(e));
  }
  auto* dst = static_cast<uint8_t*>(p);
  for (size_t done = 0; done < size_;) {
    const ssize_t n = ::pread(fd, dst + done, std::min<size_t>(size_ - done, size_t(1) << 30), off_t(done));
    if (n <= 0) {
      const int e = n < 0 ? errno : 0;
      ::munmap(p, size_);
      ::close(fd);
      fail("{}: cannot read byte {} of {}: {}", path, done, size_, e ? std::strerror(e) : "the file got shorter");
    }
    done += size_t(n);
  }
  (void)::mprotect(p, size_, PROT_READ);  // read-only, as a mapping would be
  data_ = dst;
  fd_ = fd;
}

void MappedFile::release(const uint8_t* p, size_t n) const {
  const auto lo = std::max(reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(data_));
  const auto hi = std::min(reinterpret_cast<uintptr_t>(p) + n, reinterpret_cast<uintptr_t>(data_) + size_);
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t a = (lo + page - 1) / page * page, b = hi / page * page;
  if (a >= b) return;
  // Advice only: a failure changes nothing but the memory footprint. (The offsets in the file
  // are the offsets in the memory, whole pages from a page-aligned start.)
  if (fd_ < 0)
    (void)::madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
  else
    (void)::mmap(reinterpret_cast<void*>(a), b - a, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd_,
                 off_t(a - reinterpret_cast<uintptr_t>(data_)));
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
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace minfer::gguf
