#include "server/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "common/error.h"

namespace minfer::server {
namespace {

struct Entry {
  int64_t step = 0;
  int32_t id = 0;
  std::string name, op, file;
  std::vector<int64_t> shape;
};
using Key = std::tuple<int64_t, int32_t, std::string>;

std::map<Key, Entry> read_index(const std::string& dir) {
  const std::string path = dir + "/index.jsonl";
  std::ifstream in(path);
  if (!in) fail("compare: cannot read {} (is {} a MINFER_GRAPH_DUMP directory?)", path, dir);
  std::map<Key, Entry> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    Entry e;
    try {
      const auto j = nlohmann::json::parse(line);
      e.step = j.at("step").get<int64_t>();
      e.id = j.at("id").get<int32_t>();
      e.name = j.at("name").get<std::string>();
      e.op = j.value("op", "");
      e.file = j.at("file").get<std::string>();
      if (j.contains("shape")) e.shape = j.at("shape").get<std::vector<int64_t>>();
    } catch (const nlohmann::json::exception& ex) {
      fail("compare: {} line {}: {}", path, lineno, ex.what());
    }
    // The index names files relative to its directory; anything else is not ours to read.
    if (e.file.empty() || e.file[0] == '/' || e.file.find("..") != std::string::npos)
      fail("compare: {} line {}: file '{}' is outside the dump directory", path, lineno, e.file);
    out[{e.step, e.id, e.name}] = std::move(e);
  }
  return out;
}

std::vector<float> read_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail("compare: cannot read {}", path);
  const auto size = static_cast<size_t>(in.tellg());
  if (size % sizeof(float) != 0) fail("compare: {} is {} bytes, not a whole number of f32", path, size);
  std::vector<float> v(size / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), std::streamsize(size));
  if (!in) fail("compare: short read of {}", path);
  return v;
}

std::string key_string(const Key& k) {
  return fmt::format("{}/{}/{}", std::get<0>(k), std::get<1>(k), std::get<2>(k));
}

}  // namespace

DumpComparison compare_dumps(const std::string& dir_a, const std::string& dir_b, double tol) {
  if (!(tol >= 0)) fail("compare: tolerance must be >= 0, got {}", tol);
  const auto a = read_index(dir_a), b = read_index(dir_b);
  DumpComparison c;
  c.tol = tol;
  for (const auto& [k, ea] : a) {
    auto it = b.find(k);
    if (it == b.end()) {
      c.only_in_a.push_back(key_string(k));
      continue;
    }
    const auto va = read_f32(dir_a + "/" + ea.file), vb = read_f32(dir_b + "/" + it->second.file);
    NodeDiff d;
    d.step = ea.step;
    d.id = ea.id;
    d.name = ea.name;
    d.op = ea.op;
    d.shape = ea.shape;
    if (va.size() != vb.size()) {
      d.size_mismatch = true;
      d.max_abs = INFINITY;
      d.rel = INFINITY;
    } else {
      d.n = int64_t(va.size());
      for (size_t i = 0; i < va.size(); ++i) {
        const double x = va[i], y = vb[i];
        double diff;
        if (std::isnan(x) || std::isnan(y)) {
          diff = (std::isnan(x) && std::isnan(y)) ? 0 : INFINITY;
        } else if (x == y) {
          diff = 0;  // equal infinities included
        } else {
          diff = std::fabs(x - y);
        }
        d.max_abs = std::max(d.max_abs, diff);
        if (std::isfinite(x)) d.max_ref = std::max(d.max_ref, std::fabs(x));
      }
      d.rel = d.max_abs == 0 ? 0 : d.max_abs / std::max(d.max_ref, 1e-30);
    }
    c.nodes.push_back(std::move(d));
  }
  for (const auto& [k, eb] : b)
    if (!a.count(k)) c.only_in_b.push_back(key_string(k));
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    if (c.nodes[i].rel > tol) {
      c.first_diverging = i;
      break;
    }
  }
  return c;
}

std::string comparison_json(const DumpComparison& c) {
  using nlohmann::json;
  // JSON has no infinity: a mismatch reports null and the size_mismatch flag.
  auto num = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  json nodes = json::array();
  for (const NodeDiff& d : c.nodes) {
    nodes.push_back({{"step", d.step}, {"id", d.id}, {"name", d.name}, {"op", d.op}, {"shape", d.shape}, {"n", d.n},
                     {"max_abs", num(d.max_abs)}, {"max_ref", num(d.max_ref)}, {"rel", num(d.rel)},
                     {"size_mismatch", d.size_mismatch}, {"diverged", d.rel > c.tol}});
  }
  json j = {{"tol", c.tol}, {"nodes", nodes}, {"only_in_a", c.only_in_a}, {"only_in_b", c.only_in_b}};
  if (c.first_diverging) {
    const NodeDiff& d = c.nodes[*c.first_diverging];
    j["first_diverging"] = {{"step", d.step}, {"id", d.id}, {"name", d.name}};
  } else {
    j["first_diverging"] = nullptr;
  }
  return j.dump();
}

}  // namespace minfer::server
