#include "golden.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/test_data.h"

namespace minfer::test {

GoldenFile read_golden(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  GoldenFile g;
  g.path = path;
  g.model = j.at("model").get<std::string>();
  g.weight_type = j.at("weight_type").get<std::string>();
  g.prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
  g.greedy_ids = j.at("greedy").at("ids").get<std::vector<int32_t>>();
  for (const auto& p : j.at("positions")) {
    std::vector<GoldenTop> top;
    for (const auto& t : p.at("top")) top.push_back({t.at("id").get<int32_t>(), t.at("logprob").get<double>()});
    g.positions.push_back(std::move(top));
  }
  return g;
}

std::vector<std::string> golden_files() {
  // Without the folder, one case that names it: it skips where ../shared is missing and fails
  // where only the goldens are, rather than aborting the test binary at start-up.
  const std::string dir = shared_path("golden/models");
  if (!std::filesystem::is_directory(dir)) return {dir + "/missing"};
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".json" && name.find("greedy64") == std::string::npos)
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The README's tolerances for an engine that mirrors llama.cpp's activation rounding (our
// kernels quantize activations to the weight's vec_dot type as ggml does).
Tolerance tolerance_for(const std::string& wt) {
  if (wt == "F32") return {0.001, 0.05, -1};
  if (wt == "F16") return {0.02, 0.05, -1};
  if (wt == "Q8_0") return {0.25, 0.1, 0.05};
  if (wt == "Q4_0") return {0.25, 0.1, 0.04};
  return {0, 0, 0};
}

Comparison compare(const GoldenFile& g, const std::vector<std::vector<double>>& lp,
                   const Tolerance& tol) {
  Comparison c;
  double sum = 0;
  size_t count = 0;
  for (size_t pos = 0; pos < g.positions.size(); ++pos) {
    const auto& top = g.positions[pos];
    const auto& e = lp[pos];
    for (const GoldenTop& t : top) {
      const double d = std::fabs(e[size_t(t.id)] - t.logprob);
      sum += d;
      ++count;
      if (d > c.max_abs) {
        c.max_abs = d;
        c.worst = fmt::format("pos {} id {}: engine {:.6f} golden {:.6f}", pos, t.id, e[size_t(t.id)], t.logprob);
      }
    }
    const int32_t engine_top1 = int32_t(std::max_element(e.begin(), e.end()) - e.begin());
    if (top.size() >= 2 && top[0].logprob - top[1].logprob > tol.margin && engine_top1 != top[0].id)
      ++c.top1_disagreements;
    const double bar = top.back().logprob + tol.max_abs;
    for (size_t id = 0; id < e.size(); ++id) {
      if (e[id] <= bar) continue;
      bool listed = false;
      for (const GoldenTop& t : top) listed |= size_t(t.id) == id;
      if (!listed) ++c.intruders;
    }
  }
  c.mean_abs = count ? sum / double(count) : 0;
  return c;
}

}  // namespace minfer::test
