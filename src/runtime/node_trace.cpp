#include "runtime/node_trace.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "common/error.h"

namespace minfer::runtime {
namespace {

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      o += fmt::format("\\u{:04x}", int(c));
    } else {
      o += c;
    }
  }
  return o;
}

// File names keep what a shell handles without quoting.
std::string file_safe(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return o;
}

std::string shape_json(const graph::Shape& s) {
  return fmt::format("[{},{},{},{}]", s[0], s[1], s[2], s[3]);
}

// JSON has no NaN/Infinity literals.
std::string num(double x) {
  if (std::isnan(x)) return "null";
  if (std::isinf(x)) return x > 0 ? "1e999" : "-1e999";
  return fmt::format("{:.9g}", x);
}

}  // namespace

OutputStats output_stats(const float* x, size_t n) {
  OutputStats s;
  bool first = true;
  double sum = 0, sq = 0;
  size_t finite = 0;
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (std::isnan(v)) {
      ++s.nan;
      continue;
    }
    if (std::isinf(v)) {
      ++s.inf;
      continue;
    }
    if (first || v < s.min) s.min = v;
    if (first || v > s.max) s.max = v;
    first = false;
    sum += v;
    sq += double(v) * v;
    ++finite;
  }
  if (finite > 0) {
    s.mean = sum / double(finite);
    s.rms = std::sqrt(sq / double(finite));
  }
  return s;
}

std::unique_ptr<NodeTrace> NodeTrace::from_env() {
  const char* t = std::getenv("MINFER_TRACE");
  const char* d = std::getenv("MINFER_GRAPH_DUMP");
  const std::string tf = t ? t : "", dd = d ? d : "";
  if (tf.empty() && dd.empty()) return nullptr;
  return std::make_unique<NodeTrace>(tf, dd);
}

NodeTrace::NodeTrace(std::string trace_file, std::string dump_dir) : dump_dir_(std::move(dump_dir)) {
  if (!trace_file.empty()) {
    trace_ = std::fopen(trace_file.c_str(), "w");
    if (!trace_) fail("MINFER_TRACE: cannot write {}", trace_file);
  }
  if (!dump_dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dump_dir_, ec);
    const std::string idx = dump_dir_ + "/index.jsonl";
    index_ = std::fopen(idx.c_str(), "w");
    if (ec || !index_) fail("MINFER_GRAPH_DUMP: cannot write {}", idx);
  }
}

NodeTrace::~NodeTrace() {
  if (trace_) std::fclose(trace_);
  if (index_) std::fclose(index_);
}

void NodeTrace::begin_step(uint64_t step, uint64_t uid, bool reused, uint64_t built_total,
                           uint64_t reused_total, const std::string& params) {
  step_ = step;
  if (!trace_) return;
  std::fputs(fmt::format("{{\"step\":{},\"event\":\"graph\",\"uid\":{},\"reused\":{},"
                         "\"built_total\":{},\"reused_total\":{},\"params\":\"{}\"}}\n",
                         step, uid, reused, built_total, reused_total, json_escape(params))
                 .c_str(),
             trace_);
}

void NodeTrace::record(const sched::NodeEvent& e) {
  const graph::CNode& n = *e.node;
  const bool f32 = n.dtype == graph::DType::F32 && e.data != nullptr;
  const float* x = static_cast<const float*>(e.data);
  // The node's own element count: a buffer may be larger than the node (in-place reuse).
  const size_t count = f32 ? std::min(e.bytes / sizeof(float), size_t(n.n_elements())) : 0;
  if (trace_) {
    std::string line = fmt::format(
        "{{\"step\":{},\"id\":{},\"name\":\"{}\",\"op\":\"{}\",\"shape\":{},\"backend\":\"{}\","
        "\"ms\":{:.4f}",
        step_, n.id, json_escape(n.name), graph::op_name(n.op), shape_json(n.shape),
        json_escape(std::string(e.backend_name)), e.ms);
    if (f32) {
      const OutputStats s = output_stats(x, count);
      line += fmt::format(",\"min\":{},\"max\":{},\"mean\":{},\"rms\":{},\"nan\":{},\"inf\":{}",
                          num(s.min), num(s.max), num(s.mean), num(s.rms), s.nan, s.inf);
    }
    line += "}\n";
    std::fputs(line.c_str(), trace_);
  }
  if (index_ && f32) {
    const std::string step_dir = fmt::format("step{:04d}", step_);
    std::filesystem::create_directories(dump_dir_ + "/" + step_dir);
    const std::string rel = fmt::format("{}/{:04d}-{}.f32", step_dir, n.id, file_safe(n.name));
    const std::string path = dump_dir_ + "/" + rel;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) fail("MINFER_GRAPH_DUMP: cannot write {}", path);
    const size_t written = std::fwrite(x, sizeof(float), count, f);
    std::fclose(f);
    if (written != count) fail("MINFER_GRAPH_DUMP: short write to {}", path);
    std::fputs(fmt::format("{{\"step\":{},\"id\":{},\"name\":\"{}\",\"op\":\"{}\",\"shape\":{},"
                           "\"file\":\"{}\"}}\n",
                           step_, n.id, json_escape(n.name), graph::op_name(n.op),
                           shape_json(n.shape), rel)
                   .c_str(),
               index_);
  }
}

}  // namespace minfer::runtime
