// Split models (llama.cpp's gguf-split): NAME-00001-of-0000N.gguf holds the metadata and
// split.no / split.count / split.tensors.count; the other parts hold split.* and tensors.
#include <optional>

#include "common/error.h"
#include "gguf/file_impl.h"

namespace minfer::gguf {

static std::optional<int64_t> split_key(const std::vector<KV>& kv, std::string_view key,
                                        const std::string& path) {
  for (const KV& e : kv) {
    if (e.key != key) continue;
    auto x = e.value.is_integer() ? e.value.as_int() : std::nullopt;
    if (!x) fail("{}: key '{}' has type {}, expected an integer", path, key,
                 value_type_name(e.value.type));
    return x;
  }
  return std::nullopt;
}

// llama.cpp's llama_split_path: "%s-%05d-of-%05d.gguf" with a 1-based part number.
static std::string part_path(const std::string& prefix, int64_t no, int64_t count) {
  return fmt::format("{}-{:05d}-of-{:05d}.gguf", prefix, no, count);
}

void open_split_parts(File::Impl& impl) {
  const std::string& first = impl.path;
  auto count = split_key(impl.kv, "split.count", first);
  if (!count || *count <= 1) return;
  if (*count > 99999) fail("{}: split.count {} is out of range", first, *count);
  int64_t no = split_key(impl.kv, "split.no", first).value_or(0);
  if (no != 0)
    fail("{}: this is part {} of a {}-part split model; open the first part "
         "(...-00001-of-{:05d}.gguf)", first, no + 1, *count, *count);
  const std::string suffix = fmt::format("-00001-of-{:05d}.gguf", *count);
  if (first.size() <= suffix.size() || first.compare(first.size() - suffix.size(), suffix.size(), suffix) != 0)
    fail("{}: the file is part 1 of a {}-part split model but its name does not end in '{}', "
         "so the other parts cannot be found", first, *count, suffix);
  const std::string prefix = first.substr(0, first.size() - suffix.size());

  for (int64_t k = 1; k < *count; ++k) {
    std::string p = part_path(prefix, k + 1, *count);
    auto map = std::make_unique<MappedFile>(p, impl.use_mmap);
    ParsedImage img = parse_image(map->data(), map->size(), p);
    auto pc = split_key(img.kv, "split.count", p);
    auto pn = split_key(img.kv, "split.no", p);
    if (!pc || !pn)
      fail("{}: part {} of split model {} has no split.count/split.no keys", p, k + 1, first);
    if (*pc != *count || *pn != k)
      fail("{}: inconsistent split model: this part says it is part {} of {}, expected part {} "
           "of {}", p, *pn + 1, *pc, k + 1, *count);
    for (TensorInfo& ti : img.tensors) {
      ti.split = uint32_t(k);
      impl.tensors.push_back(std::move(ti));
    }
    impl.maps.push_back(std::move(map));
  }
  // Names were unique per part; check across parts.
  std::unordered_map<std::string_view, size_t> seen;
  for (size_t i = 0; i < impl.tensors.size(); ++i)
    if (!seen.emplace(impl.tensors[i].name, i).second)
      fail("{}: tensor '{}' appears in more than one part of the split model", first,
           impl.tensors[i].name);
  if (auto total = split_key(impl.kv, "split.tensors.count", first);
      total && *total != int64_t(impl.tensors.size()))
    fail("{}: split.tensors.count says {} tensors but the {} parts hold {}", first, *total,
         *count, impl.tensors.size());
  impl.n_splits = uint32_t(*count);
}

}  // namespace minfer::gguf
