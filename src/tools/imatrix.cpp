#include "tools/imatrix.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "common/error.h"
#include "gguf/gguf.h"

namespace minfer::tools {
namespace {

void check_finite(const std::string& path, const std::string& name, const std::vector<float>& v) {
  for (float f : v)
    if (!std::isfinite(f)) fail("{}: imatrix entry {} contains a non-finite value ({})", path, name, f);
}

Imatrix load_gguf(const uint8_t* data, size_t size, const std::string& path) {
  const std::unique_ptr<gguf::File> f = gguf::File::from_memory(data, size, path);
  Imatrix m;
  if (!f->find("imatrix.datasets") || !f->find("imatrix.chunk_count") || !f->find("imatrix.chunk_size"))
    fail("{}: not an imatrix file (missing imatrix.datasets, imatrix.chunk_count or imatrix.chunk_size)", path);
  m.datasets = f->get_string_array("imatrix.datasets");
  m.chunk_count = int(f->get_uint("imatrix.chunk_count").value_or(0));
  std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> parts;
  auto strip = [](const std::string& s, std::string_view suffix, std::string* base) {
    if (s.size() <= suffix.size() || s.compare(s.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
    *base = s.substr(0, s.size() - suffix.size());
    return true;
  };
  for (const gguf::TensorInfo& t : f->tensors()) {
    std::string base;
    if (strip(t.name, ".in_sum2", &base))
      parts[base].first = &t;
    else if (strip(t.name, ".counts", &base))
      parts[base].second = &t;
  }
  if (parts.empty()) fail("{}: the imatrix file has no entries", path);
  for (const auto& [name, p] : parts) {
    const auto [sums, counts] = p;
    if (!sums || !counts) fail("{}: imatrix entry {} lacks its {} tensor", path, name, sums ? "counts" : "in_sum2");
    if (sums->type != GgmlType::F32 || counts->type != GgmlType::F32)
      fail("{}: imatrix entry {}: in_sum2 and counts must be F32", path, name);
    const int64_t nval = sums->n_elements(), ncounts = counts->n_elements();
    if (nval < 1) fail("{}: imatrix entry {} has no values", path, name);
    if (ncounts < 1 || nval % ncounts != 0)
      fail("{}: imatrix entry {}: {} values do not divide into {} counts", path, name, nval, ncounts);
    const int64_t ne0 = nval / ncounts;
    std::vector<float> s(static_cast<size_t>(nval)), c(static_cast<size_t>(ncounts));
    std::memcpy(s.data(), sums->data, s.size() * sizeof(float));
    std::memcpy(c.data(), counts->data, c.size() * sizeof(float));
    check_finite(path, name, s);
    check_finite(path, name, c);
    std::vector<float>& w = m.weights[name];
    w.resize(size_t(nval));
    for (int64_t j = 0; j < ncounts; ++j) {
      const float count = float(std::lround(c[size_t(j)]));  // (llama.cpp keeps counts as integers)
      for (int64_t i = 0; i < ne0; ++i)
        w[size_t(j * ne0 + i)] = count > 0.0f ? s[size_t(j * ne0 + i)] / count : 1.0f;
    }
    check_finite(path, name, w);
  }
  return m;
}

// The legacy format, read from memory with every length checked against what is left.
class Reader {
 public:
  Reader(const std::string& path, const uint8_t* data, size_t size) : path_(path), b_(data), size_(size) {}
  bool at_end() const { return pos_ == size_; }
  size_t left() const { return size_ - pos_; }
  int32_t i32(const char* what) {
    int32_t v;
    take(&v, 4, what);
    return v;
  }
  void take(void* dst, size_t n, const char* what) {
    if (n > size_ - pos_) fail("{}: truncated imatrix file (reading {} at byte {})", path_, what, pos_);
    std::memcpy(dst, b_ + pos_, n);
    pos_ += n;
  }

 private:
  std::string path_;
  const uint8_t* b_;
  size_t size_, pos_ = 0;
};

Imatrix load_legacy(const uint8_t* data, size_t size, const std::string& path) {
  Reader r(path, data, size);
  Imatrix m;
  const int32_t n_entries = r.i32("the entry count");
  if (n_entries < 1) fail("{}: the imatrix file has no entries", path);
  for (int32_t e = 0; e < n_entries; ++e) {
    const int32_t len = r.i32("a name length");
    if (len < 1 || size_t(len) > r.left()) fail("{}: imatrix entry {}: bad name length {}", path, e, len);
    std::string name(static_cast<size_t>(len), '\0');
    r.take(name.data(), name.size(), "a name");
    const int32_t ncall = r.i32("a call count");
    const int32_t nval = r.i32("a value count");
    if (nval < 1 || size_t(nval) > r.left() / sizeof(float))
      fail("{}: imatrix entry {}: bad value count {} ({} bytes left)", path, name, nval, r.left());
    std::vector<float> v(static_cast<size_t>(nval));
    r.take(v.data(), v.size() * sizeof(float), "values");
    check_finite(path, name, v);
    if (ncall > 0)
      for (float& x : v) x /= float(ncall);
    if (!m.weights.emplace(name, std::move(v)).second) fail("{}: imatrix entry {} appears twice", path, name);
  }
  if (!r.at_end()) {  // optional: the chunk count, then the dataset's name
    m.chunk_count = r.i32("the chunk count");
    if (!r.at_end()) {
      const int32_t len = r.i32("the dataset name length");
      if (len > 0 && size_t(len) <= r.left()) {
        std::string ds(static_cast<size_t>(len), '\0');
        r.take(ds.data(), ds.size(), "the dataset name");
        m.datasets.push_back(ds.c_str());  // (up to its first NUL, as llama.cpp reads it)
      }
    }
  }
  return m;
}

}  // namespace

Imatrix parse_imatrix(const uint8_t* data, size_t size, const std::string& name) {
  Imatrix m = size >= 4 && std::memcmp(data, "GGUF", 4) == 0 ? load_gguf(data, size, name) : load_legacy(data, size, name);
  m.path = name;
  return m;
}

Imatrix load_imatrix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open the imatrix file", path);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_imatrix(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
}

}  // namespace minfer::tools
