#include "tools/quantize.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "common/error.h"
#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tools/imatrix.h"
#include "tools/quantize_rules.h"

namespace minfer::tools {
namespace {

// Reads an integer hyperparameter that may also be a per-layer array (then its first entry).
int hparam(const gguf::File& f, const std::string& key, int fallback) {
  const gguf::Value* v = f.find(key);
  if (!v) return fallback;
  if (const gguf::Array* a = v->as_array()) {
    if (a->items.empty()) return fallback;
    v = &a->items[0];
  }
  const std::optional<int64_t> i = v->as_int();
  if (!i) fail("{}: metadata {} is not an integer", f.path(), key);
  return int(*i);
}

ModelShape model_shape(const gguf::File& f) {
  ModelShape s;
  s.arch = f.architecture();
  s.n_layer = hparam(f, s.arch + ".block_count", 0);
  s.n_head = hparam(f, s.arch + ".attention.head_count", 0);
  s.n_head_kv = hparam(f, s.arch + ".attention.head_count_kv", s.n_head);
  s.n_expert = hparam(f, s.arch + ".expert_count", 0);
  for (const gguf::TensorInfo& t : f.tensors()) {
    const std::string& n = t.name;
    if (n.find("attn_v.weight") != std::string::npos ||
        n.find("attn_qkv.weight") != std::string::npos ||
        n.find("attn_kv_b.weight") != std::string::npos)
      ++s.n_attention_wv;
    else if (n == "output.weight")
      s.has_output = true;
  }
  return s;
}

// Converts a whole tensor row by row: dequantize (unless F32) then quantize, rows split
// across OpenMP threads; `imatrix` (or nullptr): ne[0] weights per expert (ne[2]), each
// expert's rows taking theirs. The first failure is rethrown after the parallel region.
void convert_tensor(const gguf::TensorInfo& t, GgmlType dst_type, uint8_t* dst, int n_threads,
                    const std::string& path, const float* imatrix) {
  const int64_t nx = t.ne[0];
  const int64_t nrows = nx > 0 ? t.n_elements() / nx : 0;
  const size_t src_rs = row_size(t.type, nx);
  const size_t dst_rs = row_size(dst_type, nx);
  std::mutex mu;
  std::optional<std::string> first_error;  // guarded by mu
  std::atomic<bool> failed{false};
#pragma omp parallel num_threads(n_threads)
  {
    std::vector<float> buf(static_cast<size_t>(nx));
#pragma omp for schedule(dynamic, 16)
    for (int64_t r = 0; r < nrows; ++r) {
      if (failed.load(std::memory_order_relaxed)) continue;  // skip the rest after a failure
      try {
        const uint8_t* src = t.data + size_t(r) * src_rs;
        const float* row = reinterpret_cast<const float*>(src);
        if (t.type != GgmlType::F32) {
          quant::dequantize_row(t.type, src, buf.data(), nx);
          row = buf.data();
        }
        const float* qw = imatrix ? imatrix + (r / std::max<int64_t>(1, t.ne[1])) * nx : nullptr;
        quant::quantize_row(dst_type, row, dst + size_t(r) * dst_rs, nx, qw);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first_error)
          first_error = fmt::format("{}: tensor {} row {}: {}", path, t.name, r, e.what());
        failed.store(true, std::memory_order_relaxed);
      }
    }
  }
  if (first_error) throw Error(*first_error);
}

// The tensor's importance weights: ne[0] x ne[2] values, or none when the imatrix has no entry
// for it (llama-quantize goes on without them). A size mismatch is an error except for
// token_embd, whose entry llama-quantize ignores.
const float* imatrix_for(const Imatrix* m, const gguf::TensorInfo& t, const std::string& path) {
  if (!m) return nullptr;
  const auto it = m->weights.find(t.name);
  if (it == m->weights.end()) return nullptr;
  if (int64_t(it->second.size()) == t.ne[0] * t.ne[2]) return it->second.data();
  if (t.name == "token_embd.weight") return nullptr;
  fail("{}: imatrix {} has {} values for tensor {}, which needs {} (row length x experts)", path, m->path,
       it->second.size(), t.name, t.ne[0] * t.ne[2]);
}

}  // namespace

QuantizeReport quantize_model(const std::string& in, const std::string& out,
                              const std::string& ftype_name, int n_threads,
                              const ProgressFn& progress, const Imatrix* imatrix,
                              const TypeOverrides* overrides) {
  const Ftype* ftype = find_ftype(ftype_name);
  if (!ftype) {
    std::string names;
    for (std::string_view n : ftype_names())
      names += std::string(names.empty() ? "" : ", ") + std::string(n);
    fail("unknown quantization type '{}' (expected one of: {})", ftype_name, names);
  }
  if (n_threads <= 0) n_threads = omp_get_max_threads();
  const std::unique_ptr<gguf::File> f = gguf::File::open(in);

  std::vector<const gguf::TensorInfo*> order;
  for (const gguf::TensorInfo& t : f->tensors()) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return llama_tensor_order(a->name, b->name);
  });

  ModelShape shape = model_shape(*f);
  shape.has_imatrix = imatrix != nullptr;
  TypePlanner planner(*ftype, shape, overrides ? *overrides : TypeOverrides{});
  QuantizeReport report;
  std::vector<GgmlType> types;
  std::vector<const float*> weights;  // per tensor in `order`: its imatrix entry or nullptr
  for (const gguf::TensorInfo* t : order) {
    GgmlType type = t->type;
    if (should_quantize(t->name, t->n_dims)) type = planner.choose(t->name, t->ne);
    if (type != t->type) {
      if (!quant::can_dequantize(t->type))
        fail("{}: tensor {}: cannot convert from type {}", in, t->name, type_name(t->type));
      if (t->ne[0] % type_traits(type).block_size != 0)
        fail("{}: tensor {}: row length {} does not fit type {}", in, t->name, t->ne[0],
             type_name(type));
      ++report.n_converted;
    }
    weights.push_back(type != t->type ? imatrix_for(imatrix, *t, in) : nullptr);
    if (type != t->type && !weights.back() && requires_imatrix(t->name, type, *ftype))
      fail("{}: tensor {}: missing importance matrix for a very low-bit quantization ({} needs one: "
           "--imatrix FILE with an entry for it)",
           in, t->name, ftype->name);
    types.push_back(type);
    report.types.emplace_back(t->name, type);
    report.bytes_in += t->nbytes;
    report.bytes_out +=
        row_size(type, t->ne[0]) * size_t(t->n_elements() / std::max<int64_t>(1, t->ne[0]));
  }
  report.n_tensors = int(order.size());
  report.n_fallback = planner.n_fallback();

  gguf::Writer w(f->alignment());
  w.copy_metadata(*f, [](std::string_view key) {
    return key == "split.no" || key == "split.count" || key == "split.tensors.count";
  });
  // As gguf_set_val_*: a key set again moves to the end, so that the header is llama-quantize's
  // byte for byte (an input that has general.file_type keeps it elsewhere otherwise).
  auto set_last = [&](const char* key, gguf::Value v) {
    w.remove(key);
    w.set(key, std::move(v));
  };
  set_last("general.quantization_version", gguf::Value::u32(2));
  set_last("general.file_type", gguf::Value::u32(ftype->value));
  if (imatrix) {  // llama-quantize's record of the imatrix
    set_last("quantize.imatrix.file", gguf::Value::str(imatrix->path));
    if (!imatrix->datasets.empty()) set_last("quantize.imatrix.dataset", gguf::Value::str(imatrix->datasets[0]));
    set_last("quantize.imatrix.entries_count", gguf::Value::u32(uint32_t(imatrix->weights.size())));
    if (imatrix->chunk_count > 0)
      set_last("quantize.imatrix.chunks_count", gguf::Value::u32(uint32_t(imatrix->chunk_count)));
  }

  int done = 0;
  const int total = int(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const gguf::TensorInfo* t = order[i];
    const GgmlType type = types[i];
    const float* qw = weights[i];
    std::vector<int64_t> ne(t->ne.begin(), t->ne.begin() + std::max<uint32_t>(1, t->n_dims));
    w.add_tensor(t->name, type, std::move(ne), [&, t, type, qw](uint8_t* dst, size_t nbytes) {
      if (type == t->type) {
        std::copy(t->data, t->data + std::min<uint64_t>(nbytes, t->nbytes), dst);
      } else {
        convert_tensor(*t, type, dst, n_threads, in, qw);
      }
      ++done;
      if (progress) progress(done, total, t->name);
    });
  }
  w.write(out);
  std::error_code ec;
  report.file_bytes_in = std::filesystem::file_size(in, ec);
  report.file_bytes_out = std::filesystem::file_size(out, ec);
  return report;
}

}  // namespace minfer::tools
