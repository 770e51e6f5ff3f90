#include "cli/llama_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "cli/split.h"
#include "common/error.h"

namespace minfer::cli {
namespace {

// Spelled as llama.cpp spells them; the long forms are options of run, chat and serve.
constexpr std::pair<std::string_view, const char*> kLongForms[] = {
    {"-md", "--model-draft"},     {"-cd", "--ctx-size-draft"},  {"-ngl", "--n-gpu-layers"},
    {"-ngld", "--n-gpu-layers-draft"}, {"-fa", "--flash-attn"}, {"-ub", "--ubatch-size"},
    {"-ctk", "--cache-type-k"},   {"-ctv", "--cache-type-v"},   {"-sys", "--system-prompt"},
    {"-jf", "--json-schema-file"}, {"-no-cnv", "--no-conversation"}, {"-cnv", "--conversation"},
    {"-sysf", "--system-prompt-file"}, {"-np", "--parallel"},        {"-cb", "--cont-batching"},   {"-nocb", "--no-cont-batching"},
    {"-sp", "--special"},
    {"-kvu", "--kv-unified"},
};

struct Refused {
  std::string_view flag;
  const char* long_form;
  const char* why;
};
constexpr const char* kCpu = "minfer runs the whole model on the CPU";
constexpr const char* kLocal = "give minfer a local GGUF file";
constexpr Refused kRefused[] = {
    {"-ot", "--override-tensor", kCpu},       {"-ts", "--tensor-split", kCpu},
    {"-sm", "--split-mode", kCpu},            {"-mg", "--main-gpu", kCpu},
    {"-dev", "--device", kCpu},               {"-devd", "--device-draft", kCpu},
    {"-nkvo", "--no-kv-offload", kCpu},       {"-cmoe", "--cpu-moe", kCpu},
    {"-ncmoe", "--n-cpu-moe", kCpu},          {"-hf", "--hf-repo", kLocal},
    {"-hfr", "--hf-repo", kLocal},            {"-hff", "--hf-file", kLocal},
    {"-hft", "--hf-token", kLocal},           {"-hfd", "--hf-repo-draft", kLocal},
    {"-mu", "--model-url", kLocal},
    {"-tb", "--threads-batch", "-t sets the threads of prompts and of decoding alike"},
    {"-td", "--threads-draft", "the draft model runs with -t threads"},
    {"-ctkd", "--cache-type-k-draft", "the draft model's KV cache takes --kv-type"},
    {"-ctvd", "--cache-type-v-draft", "the draft model's KV cache takes --kv-type"},
    {"-dkvc", "--dump-kv-cache", "not supported"},
    {"-C", "--cpu-mask", "CPU masks are not supported (taskset works)"},
    {"-Cr", "--cpu-range", "CPU masks are not supported (taskset works)"},
    {"-lv", "--verbosity", "use --verbose or --quiet"},
    {"-dt", "--defrag-thold", "the KV cache is one sequence and never fragments"},
    // Long flags without a counterpart, named the same way.
    {"--numa", "--numa", "not supported"},
    {"--rpc", "--rpc", "minfer runs on this machine's CPU"},
    {"--lora", "--lora", "LoRA adapters are not supported"},
    {"--lora-scaled", "--lora-scaled", "LoRA adapters are not supported"},
    {"--control-vector", "--control-vector", "control vectors are not supported"},
    {"--mmproj", "--mmproj", "minfer runs text models only"},
    {"--image", "--image", "minfer runs text models only"},
    {"--yarn-ext-factor", "--yarn-ext-factor", "YaRN's factors come from the GGUF (or --override-kv)"},
    {"--yarn-attn-factor", "--yarn-attn-factor", "YaRN's factors come from the GGUF (or --override-kv ARCH.rope.scaling.attn_factor=float:F)"},
    {"--yarn-beta-fast", "--yarn-beta-fast", "YaRN's factors come from the GGUF"},
    {"--yarn-beta-slow", "--yarn-beta-slow", "YaRN's factors come from the GGUF"},
};

}  // namespace

std::vector<char*> with_llama_cpp_flags(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    for (const auto& [flag, long_form] : kLongForms)
      if (a == flag) args[size_t(i)] = const_cast<char*>(long_form);
    for (const Refused& r : kRefused) {
      if (a != r.flag && !(a.starts_with(r.flag) && a.size() > r.flag.size() && a[r.flag.size()] == '=')) continue;
      if (r.flag == r.long_form) fail("{} (llama.cpp's) is not a minfer option: {}", r.flag, r.why);
      fail("{} (llama.cpp's {}) is not a minfer option: {}", r.flag, r.long_form, r.why);
    }
  }
  return args;
}

void HardwareFlags::add_to(CLI::App& app) {
  app.add_option("--n-gpu-layers,--gpu-layers", n_gpu_layers, "-ngl: llama.cpp's GPU layers; minfer runs on the CPU");
  app.add_option("--n-gpu-layers-draft,--gpu-layers-draft", n_gpu_layers_draft, "-ngld: as -ngl, for a draft model");
  app.add_option("--flash-attn", flash_attn,
                 "-fa on|off|auto: minfer's attention always streams the softmax (flash attention)");
  app.add_option("--cache-type-k", cache_type_k, "-ctk: the K cache type (K and V share one here: --kv-type)");
  app.add_option("--cache-type-v", cache_type_v, "-ctv: the V cache type (K and V share one here: --kv-type)");
}

void HardwareFlags::check(const std::function<void(const std::string&)>& warn) const {
  // llama-bench takes comma-separated lists of each.
  auto each = [](const std::string& list, auto&& fn) {
    if (list.empty()) return;
    for (const std::string& v : split(list, ",")) fn(v);
  };
  for (const std::string* ngl : {&n_gpu_layers, &n_gpu_layers_draft})
    each(*ngl, [&](const std::string& v) {
      if (v != "auto" && v != "all" && v != "-1" && (v.empty() || v.find_first_not_of("0123456789") != std::string::npos))
        fail("-ngl {}: expected a number of layers, auto or all", v);
    });
  each(flash_attn, [&](const std::string& v) {
    if (v != "on" && v != "off" && v != "auto" && v != "1" && v != "0")
      fail("-fa {}: expected on, off or auto (or 1, 0)", v);
  });
  if (!cache_type_k.empty() && !cache_type_v.empty() && cache_type_k != cache_type_v)
    fail("-ctk {} -ctv {}: minfer's KV cache has one type for K and V (--kv-type)", cache_type_k, cache_type_v);
  for (const std::string* ngl : {&n_gpu_layers, &n_gpu_layers_draft})
    each(*ngl, [&](const std::string& v) {
      if (v != "0") warn(fmt::format("-ngl {}: minfer runs on the CPU; there are no layers to offload", v));
    });
  each(flash_attn, [&](const std::string& v) {
    if (v == "off" || v == "0")
      warn(fmt::format("-fa {}: minfer's attention always streams the softmax over the KV cache, as flash attention does", v));
  });
}

const std::string& HardwareFlags::kv_type_or(const std::string& kv_type) const {
  return !cache_type_k.empty() ? cache_type_k : !cache_type_v.empty() ? cache_type_v : kv_type;
}

std::string process_escapes(const std::string& s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case '\'': case '"': case '\\': out += c; break;
      case 'x':
        if (i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
          out += char(hex(s[i + 1]) * 16 + hex(s[i + 2]));
          i += 2;
          break;
        }
        [[fallthrough]];
      default:
        out += '\\';
        out += c;
    }
  }
  return out;
}

}  // namespace minfer::cli
