// `minfer bench`: llama-bench style throughput. For each thread count, each ppN (one N-token
// prefill from an empty KV cache) and tgN (N single-token decode steps from an empty cache),
// at each depth -d (tokens already in the cache, prefilled untimed: "tg64 @ d1024"),
// runs once to warm up and then -r times; the table gives mean ± stddev tokens/s, the JSON
// every sample. Both also say which kernel path ran (the ISA the runtime dispatch chose per
// weight type, whether weights were repacked) and the load average, because a benchmark on
// a shared machine or on a fallback path is otherwise silently wrong.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernel_info.h"
#include "cli/command.h"
#include "cli/run_common.h"
#include "common/error.h"
#include "runtime/bench.h"
#include "runtime/context.h"
#include "runtime/cpu_count.h"
#include "runtime/model.h"

namespace {

using minfer::runtime::BenchResult;
using minfer::runtime::BenchTest;

// The 1-minute load average: other processes competing for the cores skew every number.
double load_average() {
  std::ifstream in("/proc/loadavg");
  double l = -1;
  if (!(in >> l)) return -1;
  return l;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string human_bytes(uint64_t b) {
  if (b >= (uint64_t(1) << 30)) return fmt::format("{:.2f} GiB", double(b) / double(1 << 30));
  if (b >= (uint64_t(1) << 20)) return fmt::format("{:.2f} MiB", double(b) / double(1 << 20));
  return fmt::format("{:.2f} KiB", double(b) / 1024.0);
}

std::string human_count(uint64_t n) {
  if (n >= 1000000000) return fmt::format("{:.2f} B", double(n) / 1e9);
  if (n >= 1000000) return fmt::format("{:.2f} M", double(n) / 1e6);
  return fmt::format("{:.2f} K", double(n) / 1e3);
}

// Per weight type present in the model: the ISA its matmul kernel really uses.
std::map<std::string, std::string> matmul_paths(const minfer::runtime::Model& m) {
  std::set<minfer::GgmlType> types;
  for (const auto& t : m.tensors().all())
    if (t.ne[1] > 1) types.insert(t.type);
  std::map<std::string, std::string> out;
  for (auto t : types)
    out[std::string(minfer::type_name(t))] = minfer::cpu::matmul_path_name(t);
  return out;
}

bool any_repacked(const minfer::runtime::Model& m) { return m.weights().n_packed() > 0; }

struct Row {
  BenchResult r;
  double load_before = -1, load_after = -1;
  std::string time;
};

int run_bench_cmd(int argc, char** argv) {
  CLI::App app{"Measure prefill (ppN) and decode (tgN) throughput like llama-bench",
               "minfer bench"};
  std::string model_path, output = "md", kv_type = "f16";
  std::vector<int64_t> n_prompt{128, 512}, n_gen{64}, n_depth{0};
  std::vector<int> threads;
  int reps = 5;
  uint64_t seed = 1234;
  bool verbose = false;
  app.add_option("-m,--model", model_path, "GGUF model file")->required();
  app.add_option("-p,--n-prompt", n_prompt, "prompt sizes, comma separated (0 = no pp test)")
      ->delimiter(',');
  app.add_option("-n,--n-gen", n_gen, "decode lengths, comma separated (0 = no tg test)")
      ->delimiter(',');
  app.add_option("-d,--n-depth", n_depth,
                 "tokens already in the KV cache before each test, comma separated (default 0)")
      ->delimiter(',');
  app.add_option("-t,--threads", threads,
                 "thread counts, comma separated (default: usable physical cores)")
      ->delimiter(',');
  app.add_option("-r,--repetitions", reps, "timed repetitions per test (after one warm-up)");
  app.add_option("-o,--output", output, "output format: md or json")
      ->check(CLI::IsMember({"md", "json"}));
  app.add_option("--kv-type", kv_type, "KV cache type: f16 (default, as llama.cpp), f32 or q8_0");
  app.add_option("-s,--seed", seed, "seed of the random token ids");
  app.add_flag("-v,--verbose", verbose, "progress and kernel details on stderr");
  // llama-bench's flags for what it varies on other machines.
  int64_t batch_size = 2048, ubatch_size = 512;
  minfer::cli::HardwareFlags hardware;
  app.add_option("-b,--batch-size", batch_size, "prompt tokens per decode call, with --ubatch-size the smaller")
      ->capture_default_str();
  app.add_option("--ubatch-size", ubatch_size, "-ub: prompt tokens per decode call, with -b the smaller")
      ->capture_default_str();
  hardware.add_to(app);
  minfer::cli::parse(app, argc, argv);
  if (batch_size < 1 || ubatch_size < 1) minfer::fail("-b/-ub: must be >= 1");
  hardware.check([](const std::string& w) { std::fprintf(stderr, "minfer bench: warning: %s\n", w.c_str()); });
  kv_type = hardware.kv_type_or(kv_type);

  if (reps < 1 || reps > 1000) minfer::fail("-r {}: must be between 1 and 1000", reps);
  for (auto p : n_prompt)
    if (p < 0 || p > 1000000) minfer::fail("-p {}: must be between 0 and 1000000", p);
  for (auto n : n_gen)
    if (n < 0 || n > 1000000) minfer::fail("-n {}: must be between 0 and 1000000", n);
  for (auto d : n_depth)
    if (d < 0 || d > 1000000) minfer::fail("-d {}: must be between 0 and 1000000", d);
  for (int t : threads)
    if (t < 1 || t > 1024) minfer::fail("-t {}: must be between 1 and 1024", t);
  if (threads.empty()) threads.push_back(minfer::runtime::usable_physical_cores());
  const minfer::GgmlType kv = minfer::cli::parse_kv_type(kv_type);

  // llama-bench's order: depth outer, then the pp tests, then the tg tests.
  std::vector<BenchTest> tests;
  for (auto d : n_depth) {
    for (auto p : n_prompt)
      if (p > 0) tests.push_back(minfer::runtime::pp_test(p, d));
    for (auto n : n_gen)
      if (n > 0) tests.push_back(minfer::runtime::tg_test(n, d));
  }
  if (tests.empty()) minfer::fail("nothing to measure: every -p and -n is 0");
  int64_t need = 1;
  for (const auto& t : tests) need = std::max(need, t.n_depth + std::max(t.n_prompt, t.n_gen));

  minfer::cli::Log log;
  log.quiet = !verbose;
  log.verbose = verbose;
  auto loaded = minfer::cli::load_model(model_path, log);
  const auto& model = *loaded.model;
  const auto fp = minfer::runtime::model_footprint(model);
  const auto paths = matmul_paths(model);
  const bool repacked = any_repacked(model);
  const size_t copied = model.weights().n_copied();  // unpacked matrices staged on huge pages
  const auto active = minfer::cpu::active_isa(), detected = minfer::cpu::detected_isa();

  // A benchmark on a slower path than the machine offers must say so loudly.
  if (active != detected)
    std::fprintf(stderr, "minfer bench: warning: kernels run %s, the CPU supports %s (MINFER_ISA?)\n",
                 minfer::cpu::isa_name(active), minfer::cpu::isa_name(detected));
  // Types without a kernel at the active level (AVX-512 at most: AMX serves only the packed
  // types) fall back to a lower one.
  const auto floor = std::min(active, minfer::cpu::Isa::Avx512);
  for (const auto& [type, isa] : paths)
    if (auto t = minfer::type_from_name(type); t && minfer::cpu::matmul_isa(*t) < floor)
      std::fprintf(stderr, "minfer bench: warning: %s weights fall back to the %s kernels\n",
                   type.c_str(), isa.c_str());

  std::vector<Row> rows;
  for (int nt : threads) {
    minfer::runtime::ContextParams cp;
    cp.n_ctx = need;
    cp.n_threads = nt;
    cp.kv_type = kv;
    minfer::runtime::Context ctx(model, cp);
    for (const auto& t : tests) {
      Row row;
      row.time = utc_now();
      row.load_before = load_average();
      if (verbose) std::fprintf(stderr, "bench: %s, %d threads...\n", t.name.c_str(), nt);
      row.r = minfer::runtime::run_bench(ctx, t, reps, seed, std::min(batch_size, ubatch_size));
      row.r.threads = nt;
      row.load_after = load_average();
      rows.push_back(std::move(row));
    }
  }

  const std::string model_file = std::filesystem::path(model_path).filename().string();
  const std::string model_type = fmt::format("{} {} {}", model.arch(), minfer::runtime::size_class(model.hparams()),
                                             minfer::runtime::file_type_desc(model));
  const std::string isa = minfer::cpu::isa_name(active);
  std::string paths_text;
  for (const auto& [type, p] : paths) paths_text += fmt::format("{}{}={}", paths_text.empty() ? "" : " ", type, p);

  if (output == "json") {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& row : rows) {
      nlohmann::ordered_json j;
      j["test"] = row.r.test;
      j["threads"] = row.r.threads;
      j["avg_ts"] = row.r.avg_ts;
      j["stddev_ts"] = row.r.stddev_ts;
      j["samples_ts"] = row.r.samples_ts;
      j["n_prompt"] = row.r.n_prompt;
      j["n_gen"] = row.r.n_gen;
      j["n_depth"] = row.r.n_depth;
      j["n_batch"] = batch_size;
      j["n_ubatch"] = ubatch_size;
      j["model_filename"] = model_file;
      j["model_type"] = model_type;
      j["model_size"] = fp.tensor_bytes;
      j["model_n_params"] = fp.n_params;
      j["bytes_per_token"] = fp.bytes_per_token;
      j["backend"] = "CPU";
      j["isa"] = isa;
      j["isa_detected"] = minfer::cpu::isa_name(detected);
      j["matmul_isa"] = paths;
      j["repacked_at_load"] = repacked;
      j["copied_at_load"] = copied;
      j["kv_type"] = std::string(minfer::type_name(kv));
      j["n_ctx"] = need;
      j["repetitions"] = reps;
      j["seed"] = seed;
      j["time"] = row.time;
      j["loadavg_before"] = row.load_before;
      j["loadavg_after"] = row.load_after;
      arr.push_back(std::move(j));
    }
    std::fputs((arr.dump(2) + "\n").c_str(), stdout);
    return 0;
  }

  std::string out;
  out += "| model | size | params | backend | threads | test | t/s | load |\n";
  out += "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& row : rows) {
    out += fmt::format("| {} | {} | {} | CPU ({}) | {} | {} | {:.2f} ± {:.2f} | {:.2f} |\n",
                       model_type, human_bytes(fp.tensor_bytes), human_count(fp.n_params), isa,
                       row.r.threads, row.r.test, row.r.avg_ts, row.r.stddev_ts,
                       std::max(row.load_before, row.load_after));
  }
  out += fmt::format(
      "\nmodel {}; matmul kernels: {}; weights repacked at load: {}; matrices copied to huge pages "
      "at load: {}; KV cache {}; {} rep(s) after 1 warm-up; load = 1-min load average (max of "
      "before/after)\n",
      model_file, paths_text, repacked ? "yes" : "no", copied, minfer::type_name(kv), reps);
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

MINFER_COMMAND(bench, "measure prefill and decode throughput like llama-bench", run_bench_cmd);
