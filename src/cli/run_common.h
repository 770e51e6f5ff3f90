// What `run`, `chat` and `demo` share: the sampling/context flags, model loading with clear
// errors, prompt rendering through the model's chat template, logging to stderr (--quiet,
// --verbose, --log-file) and llama.cpp-style timings.
#pragma once
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/llama_flags.h"
#include "grammar/gbnf.h"
#include "runtime/context.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/speculative.h"

namespace minfer::cli {

// stderr messages: info lines unless quiet, detail lines only when verbose; everything is
// also appended to the log file when one is open. stdout is never touched.
class Log {
 public:
  bool quiet = false;
  bool verbose = false;
  void open_file(const std::string& path);  // Error when it cannot be created
  ~Log();

  template <typename... A>
  void info(fmt::format_string<A...> f, A&&... a) {
    line(fmt::format(f, std::forward<A>(a)...), !quiet);
  }
  template <typename... A>
  void detail(fmt::format_string<A...> f, A&&... a) {
    line(fmt::format(f, std::forward<A>(a)...), verbose && !quiet);
  }
  template <typename... A>
  void warn(fmt::format_string<A...> f, A&&... a) {
    line("warning: " + fmt::format(f, std::forward<A>(a)...), true);
  }

 private:
  void line(const std::string& s, bool to_stderr);
  std::FILE* file_ = nullptr;
};

// The flags every generating command has, filled by CLI11, checked by validate().
struct GenFlags {
  int64_t n_predict = -1;
  int64_t n_ctx = 0;
  int threads = 0;
  std::optional<uint64_t> seed;
  float temp = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  // llama.cpp's other samplers (runtime/sampler.h): --typical, --top-n-sigma, --xtc-*,
  // --dynatemp-*, --mirostat*, --min-keep, --samplers / --sampling-seq, --dry-multiplier (0 only).
  float typical_p = 1.0f, top_n_sigma = -1.0f, xtc_probability = 0.0f, xtc_threshold = 0.1f;
  float dynatemp_range = 0.0f, dynatemp_exponent = 1.0f;
  int mirostat = 0;
  float mirostat_lr = 0.1f, mirostat_ent = 5.0f;
  int32_t min_keep = 0;
  std::string samplers, sampling_seq;
  float dry_multiplier = 0.0f, dry_base = 1.75f;
  int32_t dry_allowed_length = 2, dry_penalty_last_n = -1;
  std::vector<std::string> dry_sequence_breakers;  // empty: llama.cpp's defaults; "none": no breakers
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  std::vector<std::string> stop;
  std::vector<std::string> logit_bias;  // TOKEN_ID(+/-)BIAS, as llama.cpp's -l
  std::string grammar;       // GBNF text (--grammar)
  std::string grammar_file;  // or a file of it (--grammar-file)
  std::string json_schema;       // or a JSON schema, made a grammar as llama.cpp does (-j)
  std::string json_schema_file;  // or a file of it
  std::string kv_type = "f16";  // llama.cpp's default
  int64_t batch_size = 2048, ubatch_size = 512;  // llama.cpp's -b/-ub: prompt tokens per decode call
  HardwareFlags hardware;                        // llama.cpp's -ngl -ngld -fa -ctk -ctv
  bool jinja = false;                            // llama.cpp's --jinja: templates are always Jinja
  int parallel = 1;                              // llama-server's -np: one slot here (a warning)
  bool cont_batching = false, no_cont_batching = false, kv_unified = false;  // -cb -nocb -kvu: one slot
  bool escape = true;                            // llama.cpp's -e/--no-escape
  bool mlock = false;                            // llama.cpp's --mlock
  bool mmap = true;                              // llama.cpp's --mmap/--no-mmap
  std::vector<std::string> override_kv;          // llama.cpp's --override-kv KEY=TYPE:VALUE[,...]
  // llama.cpp's rope flags, as overrides of the GGUF's keys (0 / "": the file's).
  std::string rope_scaling;
  float rope_scale = 0, rope_freq_base = 0, rope_freq_scale = 0;
  int64_t yarn_orig_ctx = 0;
  bool context_shift = false;                    // llama.cpp's --context-shift (off by default, as there)
  int64_t keep = 0;                              // llama.cpp's --keep: prompt tokens a shift keeps (-1: all)
  // Speculative decoding, llama.cpp's flags: -md, --draft-max, --draft-min, --draft-p-min, -cd.
  std::string model_draft;
  runtime::DraftParams draft;
  int64_t ctx_size_draft = 0;  // 0: the target's context size
  bool no_template = false;
  bool ignore_eos = false;
  bool special = false;  // llama.cpp's -sp: control tokens' text printed
  std::string system;
  std::string chat_template_file;
  std::string chat_template_text;  // llama.cpp's --chat-template: the template's Jinja text
  std::string system_file;         // llama.cpp's -sysf: the system message from a file
  std::string chat_template_kwargs;  // llama.cpp's: a JSON object of extra template variables
  int reasoning_budget = -1;         // llama.cpp's: -1 unlimited, 0 no thinking (enable_thinking false)
  bool verbose = false;
  bool quiet = false;
  std::string log_file;

  void add_to(CLI::App& app);
  // quiet, verbose and --log-file applied to `log`; warnings for llama.cpp flags that change
  // nothing here (-ngl N, -fa off).
  void setup_log(Log& log) const;
  // Range checks (Error, exit 1) and the derived sampler parameters.
  // DRY's sequence breakers as texts: --dry-sequence-breaker's (escapes processed), or llama.cpp's
  // defaults; "none": none.
  std::vector<std::string> dry_breaker_texts() const;
  // With a tokenizer, DRY's sequence breakers are made for it (when DRY is on).
  runtime::SamplerParams sampler_params(const tok::Tokenizer* tok = nullptr) const;
  // Range checks; then, as llama.cpp parses its flags, the escapes of the --stop strings processed
  // (unless --no-escape).
  void validate();
  GgmlType kv_cache_type() const;  // --kv-type, or -ctk/-ctv where given
  int64_t n_batch() const { return std::min(batch_size, ubatch_size); }
  // --chat-template-kwargs with --reasoning-budget 0's enable_thinking false: the chat template's
  // extra variables (an object; Error for text that is not a JSON object).
  nlohmann::ordered_json template_vars() const;
  // --override-kv and the rope flags as the model's metadata overrides (runtime::LoadOptions).
  std::vector<gguf::KV> kv_overrides() const;
  // The context shift of GenerateOptions for a prompt of `prompt_tokens` tokens at the start of
  // the cache, as llama-cli counts --keep: -1 (or more than the prompt) keeps the whole prompt,
  // otherwise N tokens after the BOS the vocabulary adds.
  void set_context_shift(runtime::GenerateOptions& go, int64_t prompt_tokens, bool add_bos) const;
  // --grammar, --grammar-file, --json-schema or --json-schema-file parsed (nullptr when none;
  // Error for two of them, a file that cannot be read, a grammar that does not parse or a schema
  // that does not convert; what a schema's grammar does not enforce is a warning on stderr). The
  // commands call it once, before the model loads.
  std::shared_ptr<const grammar::Grammar> grammar_rules() const;
};

struct Loaded {
  std::unique_ptr<runtime::Model> model;
  double load_ms = 0;
};

// The draft model of -md with its context and drafter (all empty without -md).
struct Draft {
  std::unique_ptr<runtime::Model> model;
  std::unique_ptr<runtime::Context> ctx;
  std::unique_ptr<runtime::Drafter> drafter;
};

// Checks the path first (missing file, directory) so that the message is about the file.
// use_mmap false: llama.cpp's --no-mmap, the file read into memory whole (the verbose log says so).
Loaded load_model(const std::string& path, Log& log, bool use_mmap = true,
                  std::vector<gguf::KV> kv_overrides = {});
// The same with the flags' --no-mmap and metadata overrides.
Loaded load_model(const std::string& path, Log& log, const GenFlags& f);

// The context size to use: the flag when given (Error beyond 1M tokens), else the trained
// context capped at 4096 and at what a quarter of the memory this process may use (RAM, or
// the cgroup limit when lower) holds for the KV cache.
int64_t choose_n_ctx(const runtime::Model& m, int64_t requested, GgmlType kv_type);
GgmlType parse_kv_type(const std::string& s);
runtime::ContextParams context_params(const runtime::Model& m, const GenFlags& f);
// --mlock: the model's weights (and the draft's) are locked in RAM, as llama.cpp's --mlock keeps
// them from being swapped out; a warning (and nothing else) when the system refuses, e.g. past
// RLIMIT_MEMLOCK.
void lock_memory(const GenFlags& f, const runtime::Model& model, const runtime::Model* draft, Log& log);

// Loads -md's model, with a context of -cd tokens (0: the target's) and the target's threads
// and KV type. Error naming the file when its vocabulary cannot stand in for the target's.
Draft load_draft(const GenFlags& f, const runtime::Model& target, const runtime::ContextParams& target_cp, Log& log);

// The chat template to use: --chat-template's text, --chat-template-file, else the model's;
// nullopt when none.
std::optional<std::string> chat_template(const runtime::Model& m, const GenFlags& f);
// The same, or for a model without one ChatML, with a notice, as llama.cpp's chat paths do (chat,
// serve's chat endpoint; `run` answers such a model without a template, as llama-cli does).
std::string chat_template_or_chatml(const runtime::Model& m, const GenFlags& f, Log& log);
// load_ms < 0: no load line (later turns of a chat).
void print_timings(Log& log, double load_ms, const runtime::GenerateResult& r);

std::string read_text_file(const std::string& path, const char* what);

}  // namespace minfer::cli
