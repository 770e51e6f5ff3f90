// llama.cpp's importance-matrix files (llama-imatrix's output), read as llama-quantize reads
// them: per weight tensor, the mean of each input column's squared activation, which the
// quantizers use to weight their error (quantize_row's `imatrix`).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace minfer::tools {

struct Imatrix {
  std::string path;  // as given to load_imatrix (llama-quantize records it in the output)
  // Per tensor name, ne0 values per expert (ne0 x n_expert for 3D expert tensors).
  std::map<std::string, std::vector<float>> weights;
  std::vector<std::string> datasets;
  int chunk_count = 0;  // 0 when the file does not say
};

// Both formats: GGUF (tensors NAME.in_sum2 and NAME.counts, F32; the values are
// in_sum2 / counts per expert, 1 where a count is 0; the keys imatrix.datasets,
// imatrix.chunk_count and imatrix.chunk_size must be present) and the legacy binary one
// (int32 n_entries; per entry: int32 name length, name, int32 ncall, int32 nval, nval floats
// already multiplied by ncall; optionally int32 chunk count, int32 length, dataset name).
// minfer::Error naming the file for anything malformed, truncated or non-finite.
Imatrix load_imatrix(const std::string& path);
// The same from bytes in memory (`name` for messages; the fuzzer's entry point).
Imatrix parse_imatrix(const uint8_t* data, size_t size, const std::string& name);

}  // namespace minfer::tools
