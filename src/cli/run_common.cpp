#include "cli/run_common.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/builtin_templates.h"
#include "cli/llama_flags.h"
#include "cli/progress.h"
#include "common/error.h"
#include "gguf/gguf.h"
#include "grammar/json_schema.h"
#include "runtime/cpu_count.h"
#include "runtime/memory_limit.h"
#include "runtime/sampler_dry.h"
#include "tokenizer/tokenizer.h"

namespace minfer::cli {

// ---- Log ----

void Log::open_file(const std::string& path) {
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) fail("{}: cannot open the log file for writing", path);
}

Log::~Log() {
  if (file_) std::fclose(file_);
}

void Log::line(const std::string& s, bool to_stderr) {
  if (to_stderr) std::fprintf(stderr, "%s\n", s.c_str());
  if (file_) {
    std::fprintf(file_, "%s\n", s.c_str());
    std::fflush(file_);
  }
}

// ---- flags ----

void GenFlags::add_to(CLI::App& app) {
  app.add_option("-n,--n-predict", n_predict, "tokens to generate (-1 = until end or full context)")
      ->capture_default_str();
  app.add_option("-c,--ctx-size", n_ctx,
                 "context size in tokens (0 = the model's, capped at 4096 and by memory)")
      ->capture_default_str();
  app.add_option("-t,--threads", threads, "threads (0 = the physical cores usable)")
      ->capture_default_str();
  app.add_option("-s,--seed", seed, "sampling seed (default: random)");
  app.add_option("--temp", temp, "temperature (0 = greedy)")->capture_default_str();
  app.add_option("--top-k", top_k, "top-k (0 = off)")->capture_default_str();
  app.add_option("--top-p", top_p, "top-p (1 = off)")->capture_default_str();
  app.add_option("--min-p", min_p, "min-p (0 = off)")->capture_default_str();
  app.add_option("--typical", typical_p, "locally typical sampling, parameter p (1 = off)")->capture_default_str();
  app.add_option("--top-n-sigma", top_n_sigma, "keep logits within n standard deviations of the best (<= 0 = off)")
      ->capture_default_str();
  app.add_option("--xtc-probability", xtc_probability, "XTC: how often the likeliest tokens are excluded (0 = off)")
      ->capture_default_str();
  app.add_option("--xtc-threshold", xtc_threshold, "XTC: the probability from which a token is excluded (> 0.5 = off)")
      ->capture_default_str();
  app.add_option("--dynatemp-range", dynatemp_range, "dynamic temperature: temp +- this by the entropy (0 = off)")
      ->capture_default_str();
  app.add_option("--dynatemp-exp", dynatemp_exponent, "dynamic temperature exponent")->capture_default_str();
  app.add_option("--mirostat", mirostat, "mirostat sampling: 0 off, 1 Mirostat, 2 Mirostat 2.0 (top-k, top-p, ... unused)")
      ->capture_default_str();
  app.add_option("--mirostat-lr", mirostat_lr, "mirostat learning rate, eta")->capture_default_str();
  app.add_option("--mirostat-ent", mirostat_ent, "mirostat target entropy, tau")->capture_default_str();
  app.add_option("--min-keep", min_keep, "top-p, min-p, typical and XTC keep at least this many tokens (0 = 1)")
      ->capture_default_str();
  app.add_option("--samplers", samplers,
                 "the samplers in order, separated by ';' (default penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature)");
  app.add_option("--sampling-seq,--sampler-seq", sampling_seq, "the samplers in order as letters (default edskypmxt)");
  app.add_option("--dry-multiplier", dry_multiplier, "DRY: penalty multiplier for extending a repeat (0 = off)")
      ->capture_default_str();
  app.add_option("--dry-base", dry_base, "DRY: the penalty grows as base^(repeat length - allowed length)")
      ->capture_default_str();
  app.add_option("--dry-allowed-length", dry_allowed_length, "DRY: repeats this long go unpenalized")->capture_default_str();
  app.add_option("--dry-penalty-last-n", dry_penalty_last_n, "DRY: tokens looked back over (-1 = all)")->capture_default_str();
  app.add_option("--dry-sequence-breaker", dry_sequence_breakers,
                 "DRY: a text that ends repeats (repeatable; replaces the defaults \\n : \" *; 'none': no breakers)")
      ->allow_extra_args(false);
  app.add_option("--repeat-penalty", repeat_penalty, "repeat penalty (1 = off)")
      ->capture_default_str();
  app.add_option("--repeat-last-n", repeat_last_n, "tokens the penalties look back (0 = off, -1 = all)")
      ->capture_default_str();
  app.add_option("--frequency-penalty", frequency_penalty, "frequency penalty")->capture_default_str();
  app.add_option("--presence-penalty", presence_penalty, "presence penalty")->capture_default_str();
  app.add_option("--stop", stop, "stop string (repeatable); never printed")
      ->allow_extra_args(false)
      ->take_all();
  app.add_option("-l,--logit-bias", logit_bias,
                 "TOKEN_ID(+/-)BIAS added to a token's logit, e.g. 15043+1, 2-inf (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--grammar", grammar, "GBNF grammar the generated text must follow (llama.cpp's format)");
  app.add_option("--grammar-file", grammar_file, "file holding such a grammar");
  app.add_option("-j,--json-schema", json_schema,
                 "JSON schema the generated text must follow (as llama.cpp: {} is any JSON object)");
  app.add_option("--json-schema-file", json_schema_file, "file holding such a schema");
  app.add_option("--kv-type", kv_type, "KV cache type: f32, f16, q8_0")->capture_default_str();
  hardware.add_to(app);
  app.add_option("-b,--batch-size", batch_size, "prompt tokens per decode call (with --ubatch-size, the smaller)")
      ->capture_default_str();
  app.add_option("--ubatch-size", ubatch_size, "-ub: prompt tokens per decode call (with -b, the smaller)")
      ->capture_default_str();
  app.add_flag("--mlock", mlock, "keep the model in RAM (no swapping), as llama.cpp's --mlock");
  app.add_flag("--jinja", jinja, "llama.cpp's --jinja: minfer always renders chat templates with Jinja");
  app.add_option("--parallel", parallel, "-np: llama-server's slots; minfer serves one request at a time (they queue)")
      ->capture_default_str();
  app.add_flag("--cont-batching", cont_batching, "-cb: accepted (one slot: nothing to batch)");
  app.add_flag("--no-cont-batching", no_cont_batching, "-nocb: accepted (one slot: nothing to batch)");
  app.add_flag("--kv-unified", kv_unified, "-kvu: accepted (one slot, one KV cache)");
  app.add_flag("-e,--escape,!--no-escape", escape,
               "process escapes (\\n, \\r, \\t, \\', \\\", \\\\, \\xHH) in the prompt and --stop (default: on, as llama.cpp)");
  app.add_option("--model-draft", model_draft,
                 "-md: draft model for speculative decoding (same vocabulary as the model)");
  app.add_option("--draft-max,--draft,--draft-n", draft.n_max, "tokens drafted per step at most")
      ->capture_default_str();
  app.add_option("--draft-min,--draft-n-min", draft.n_min, "shorter drafts are not used")
      ->capture_default_str();
  app.add_option("--draft-p-min", draft.p_min, "drafting stops at a token less likely than this")
      ->capture_default_str();
  app.add_option("--ctx-size-draft", ctx_size_draft, "-cd: draft model's context size (0 = the model's -c)")
      ->capture_default_str();
  app.add_flag("--context-shift,!--no-context-shift", context_shift,
               "when the context is full, drop the older half of the text after --keep and go on "
               "(default: off, a full context ends the text)");
  app.add_option("--keep", keep, "tokens of the prompt a context shift keeps (-1: all; default 0)");
  app.add_flag("--mmap,!--no-mmap", mmap,
               "map the model file (default); --no-mmap reads it into memory whole at load");
  app.add_option("--override-kv", override_kv,
                 "KEY=TYPE:VALUE[,...] (TYPE int, float, bool, str): the model's metadata key takes this value "
                 "(repeatable)")
      ->allow_extra_args(false);
  app.add_option("--rope-scaling", rope_scaling, "rope scaling: none, linear or yarn (default: the model's)")
      ->check(CLI::IsMember({"none", "linear", "yarn"}));
  app.add_option("--rope-scale", rope_scale, "rope context scaling factor: the context is stretched N times");
  app.add_option("--rope-freq-base", rope_freq_base, "rope base frequency (default: the model's)");
  app.add_option("--rope-freq-scale", rope_freq_scale, "rope frequency scaling factor: the context is stretched 1/N times");
  app.add_option("--yarn-orig-ctx", yarn_orig_ctx, "YaRN: the model's original context (default: the model's)");
  app.add_flag("--special", special, "-sp: print the text of control tokens too (<|im_end|>, ...)");
  app.add_flag("--ignore-eos", ignore_eos, "do not stop at end-of-generation tokens");
  app.add_flag("--no-template", no_template, "raw completion: do not apply the chat template");
  app.add_option("--system,--system-prompt", system, "-sys: system message (with a chat template)");
  app.add_option("--chat-template-file", chat_template_file, "Jinja chat template to use instead of the model's");
  app.add_option("--chat-template", chat_template_text, "the same, given as its Jinja text");
  app.add_option("--system-prompt-file", system_file, "-sysf: the system message from FILE");
  app.add_option("--chat-template-kwargs", chat_template_kwargs,
                 "extra chat template variables as a JSON object, e.g. '{\"enable_thinking\": false}'");
  app.add_option("--reasoning-budget", reasoning_budget, "-1: think as the model does; 0: no thinking (enable_thinking false)")
      ->capture_default_str();
  app.add_flag("--verbose", verbose, "print model and context details on stderr");
  app.add_flag("-q,--quiet", quiet, "print nothing but the generated text (no timings)");
  app.add_option("--log-file", log_file, "also append the stderr messages to FILE");
}

void GenFlags::validate() {
  if (n_predict < -1) fail("-n {}: must be -1 (no limit) or >= 0", n_predict);
  if (n_predict > (int64_t(1) << 24)) fail("-n {}: absurdly large", n_predict);
  if (n_ctx < 0) fail("-c {}: the context size must be > 0", n_ctx);
  if (n_ctx > (int64_t(1) << 20)) fail("-c {}: larger than 1048576 tokens", n_ctx);
  if (threads < 0) fail("-t {}: the thread count must be > 0", threads);
  if (threads > 1024) fail("-t {}: more than 1024 threads", threads);
  kv_cache_type();
  if (parallel < 1 || parallel > 256) fail("-np {}: must be between 1 and 256", parallel);
  if (batch_size < 1) fail("-b {}: must be >= 1", batch_size);
  if (ubatch_size < 1) fail("-ub {}: must be >= 1", ubatch_size);
  if (keep < -1) fail("--keep {}: must be -1 (the whole prompt) or >= 0", keep);
  hardware.check([](const std::string&) {});  // the values; setup_log gives the warnings
  (void)kv_overrides();  // the --override-kv texts and rope values, before the model loads
  (void)template_vars();
  sampler_params().validate();
  draft.validate();
  if (ctx_size_draft < 0) fail("-cd {}: the context size must be >= 0", ctx_size_draft);
  if (ctx_size_draft > (int64_t(1) << 20)) fail("-cd {}: larger than 1048576 tokens", ctx_size_draft);
  if (escape)
    for (std::string& s : stop) s = process_escapes(s);
  if (!chat_template_text.empty() && !chat_template_file.empty())
    fail("--chat-template and --chat-template-file: give one of them");
  // llama.cpp's Jinja mode knows one name, "chatml"; its other names (llama3, gemma, ...) belong
  // to its older hard-coded formatter.
  if (!chat_template_text.empty() && !chat::builtin_template(chat_template_text) &&
      chat_template_text.find("{{") == std::string::npos && chat_template_text.find("{%") == std::string::npos)
    fail("--chat-template {}: minfer takes the template's Jinja text here, or the name chatml (llama.cpp's "
         "other built-in names are not templates here; give a file with --chat-template-file)", chat_template_text);
  if (!system_file.empty()) {
    if (!system.empty()) fail("--system and --system-prompt-file: give one of them");
    system = read_text_file(system_file, "system prompt");
    if (system.ends_with('\n')) system.pop_back();
  }
}

std::vector<std::string> GenFlags::dry_breaker_texts() const {
  std::vector<std::string> breakers = dry_sequence_breakers.empty() ? runtime::default_dry_breakers() : dry_sequence_breakers;
  if (breakers.size() == 1 && breakers[0] == "none") breakers.clear();
  if (escape)
    for (std::string& b : breakers) b = process_escapes(b);
  return breakers;
}

nlohmann::ordered_json GenFlags::template_vars() const {
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  if (!chat_template_kwargs.empty()) {
    try {
      vars = nlohmann::ordered_json::parse(chat_template_kwargs);
    } catch (const nlohmann::json::exception& e) {
      fail("--chat-template-kwargs: not JSON ({})", e.what());
    }
    if (!vars.is_object()) fail("--chat-template-kwargs: must be a JSON object, e.g. '{{\"enable_thinking\": false}}'");
  }
  if (reasoning_budget != -1 && reasoning_budget != 0)
    fail("--reasoning-budget {}: only -1 (unlimited) and 0 (no thinking) are supported, as in llama.cpp", reasoning_budget);
  if (reasoning_budget == 0) vars["enable_thinking"] = false;
  return vars;
}

std::vector<gguf::KV> GenFlags::kv_overrides() const {
  std::vector<gguf::KV> out;
  for (const std::string& list : override_kv) {
    size_t at = 0;
    while (at <= list.size()) {
      const size_t end = std::min(list.find(',', at), list.size());
      if (end > at) out.push_back(gguf::parse_kv_override(list.substr(at, end - at)));
      at = end + 1;
    }
  }
  // The rope flags are overrides of the keys llama.cpp's flags stand in for.
  if (!rope_scaling.empty()) out.push_back({"{arch}.rope.scaling.type", gguf::Value::str(rope_scaling)});
  if (rope_freq_base < 0) fail("--rope-freq-base {}: must be positive", rope_freq_base);
  if (rope_freq_base > 0) out.push_back({"{arch}.rope.freq_base", gguf::Value::f64(rope_freq_base)});
  if (rope_scale < 0 || rope_freq_scale < 0) fail("--rope-scale / --rope-freq-scale: must be positive");
  if (rope_scale > 0 && rope_freq_scale > 0) fail("--rope-scale and --rope-freq-scale: give one of them");
  if (rope_scale > 0) out.push_back({"{arch}.rope.scaling.factor", gguf::Value::f64(rope_scale)});
  if (rope_freq_scale > 0) out.push_back({"{arch}.rope.scaling.factor", gguf::Value::f64(1.0 / rope_freq_scale)});
  if (yarn_orig_ctx < 0) fail("--yarn-orig-ctx {}: must be positive", yarn_orig_ctx);
  if (yarn_orig_ctx > 0)
    out.push_back({"{arch}.rope.scaling.original_context_length", gguf::Value::i64(yarn_orig_ctx)});
  return out;
}

void GenFlags::set_context_shift(runtime::GenerateOptions& go, int64_t prompt_tokens, bool add_bos) const {
  go.context_shift = context_shift;
  go.n_keep = keep < 0 || keep > prompt_tokens ? prompt_tokens : std::min(prompt_tokens, keep + (add_bos ? 1 : 0));
}

GgmlType GenFlags::kv_cache_type() const {
  return parse_kv_type(hardware.kv_type_or(kv_type));
}

std::shared_ptr<const grammar::Grammar> GenFlags::grammar_rules() const {
  const int given = !grammar.empty() + !grammar_file.empty() + !json_schema.empty() + !json_schema_file.empty();
  if (given > 1) fail("--grammar, --grammar-file, --json-schema, --json-schema-file: give one of them");
  if (!json_schema.empty() || !json_schema_file.empty()) {
    const std::string text = json_schema.empty() ? read_text_file(json_schema_file, "JSON schema file") : json_schema;
    grammar::SchemaGrammar g = grammar::json_schema_text_to_gbnf(text);
    for (const std::string& w : g.warnings) std::fprintf(stderr, "warning: JSON schema: %s\n", w.c_str());
    return std::make_shared<const grammar::Grammar>(std::move(g.grammar));
  }
  if (grammar_file.empty() && grammar.empty()) return nullptr;
  const std::string text = grammar_file.empty() ? grammar : read_text_file(grammar_file, "grammar file");
  if (text.empty()) fail("{}: the grammar file is empty", grammar_file);
  return std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(text));
}

// llama.cpp's -l format: the token id, then + or - and the bias ("-inf" bans the token).
static runtime::LogitBias parse_logit_bias(const std::string& s) {
  const size_t n = s.find_first_not_of("0123456789");
  if (n == 0 || n == std::string::npos || n > 9 || (s[n] != '+' && s[n] != '-') || n + 1 == s.size())
    fail("--logit-bias {}: expected TOKEN_ID(+/-)BIAS, e.g. 15043+1 or 2-inf", s);
  const std::string v = s.substr(n + 1);
  char* end = nullptr;
  float bias = v == "inf" ? INFINITY : std::strtof(v.c_str(), &end);
  if (v != "inf" && (end != v.c_str() + v.size() || v.find_first_not_of("0123456789.") != std::string::npos))
    fail("--logit-bias {}: the bias '{}' is not a number", s, v);
  if (s[n] == '-') bias = -bias;
  return {int32_t(std::stol(s.substr(0, n))), bias};
}

runtime::SamplerParams GenFlags::sampler_params(const tok::Tokenizer* tok) const {
  runtime::SamplerParams p;
  p.temp = temp;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.typical_p = typical_p;
  p.top_n_sigma = top_n_sigma;
  p.xtc_probability = xtc_probability;
  p.xtc_threshold = xtc_threshold;
  p.dynatemp_range = dynatemp_range;
  p.dynatemp_exponent = dynatemp_exponent;
  p.mirostat = mirostat;
  p.mirostat_eta = mirostat_lr;
  p.mirostat_tau = mirostat_ent;
  p.min_keep = min_keep;
  p.dry_multiplier = dry_multiplier;
  p.dry_base = dry_base;
  p.dry_allowed_length = dry_allowed_length;
  p.dry_penalty_last_n = dry_penalty_last_n;
  if (tok && dry_multiplier > 0)
    p.dry_breakers = std::make_shared<const runtime::DryBreakers>(runtime::make_dry_breakers(*tok, dry_breaker_texts()));
  if (!samplers.empty() && !sampling_seq.empty()) fail("--samplers and --sampling-seq: give one of them");
  if (!samplers.empty()) p.order = runtime::parse_sampler_names(samplers);
  if (!sampling_seq.empty()) p.order = runtime::parse_sampler_letters(sampling_seq);
  p.repeat_penalty = repeat_penalty;
  p.repeat_last_n = repeat_last_n;
  p.frequency_penalty = frequency_penalty;
  p.presence_penalty = presence_penalty;
  p.seed = seed ? *seed : runtime::random_seed();
  for (const std::string& b : logit_bias) p.logit_bias.push_back(parse_logit_bias(b));
  return p;
}

void GenFlags::setup_log(Log& log) const {
  log.quiet = quiet;
  log.verbose = verbose;
  if (!log_file.empty()) log.open_file(log_file);
  hardware.check([&log](const std::string& w) { log.warn("{}", w); });
  if (parallel > 1)
    log.warn("-np {}: minfer serves one request at a time; the others wait their turn", parallel);
}

GgmlType parse_kv_type(const std::string& s) {
  auto t = type_from_name(s);
  if (!t || (*t != GgmlType::F32 && *t != GgmlType::F16 && *t != GgmlType::Q8_0))
    fail("--kv-type {}: must be f32, f16 or q8_0", s);
  return *t;
}

// ---- model ----

Loaded load_model(const std::string& path, Log& log, const GenFlags& f) {
  return load_model(path, log, f.mmap, f.kv_overrides());
}

Loaded load_model(const std::string& path, Log& log, bool use_mmap, std::vector<gguf::KV> kv_overrides) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("{}: no such file", path);
  if (fs::is_directory(path, ec)) fail("{}: is a directory, not a GGUF file", path);
  Loaded l;
  const auto t0 = std::chrono::steady_clock::now();
  Progress bar("loading", !log.quiet);
  runtime::LoadOptions lo;
  lo.verbose = log.verbose && !log.quiet;
  lo.use_mmap = use_mmap;
  lo.kv_overrides = std::move(kv_overrides);
  lo.progress = [&](double f) { bar.update(f); };
  try {
    l.model = runtime::Model::load(path, lo);
  } catch (const Error& e) {
    // Every load failure names the file, whatever layer raised it.
    const std::string msg = e.what();
    if (msg.find(path) != std::string::npos) throw;
    fail("{}: {}", path, msg);
  }
  bar.finish();
  l.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto& hp = l.model->hparams();
  log.detail("model: {} ({}), {} layers, n_embd {}, heads {}/{}, vocab {}, trained context {}{}",
             path, l.model->arch(), hp.n_layer, hp.n_embd, hp.n_head, hp.n_head_kv, hp.n_vocab,
             hp.n_ctx_train, use_mmap ? "" : ", read into memory (--no-mmap)");
  return l;
}

int64_t choose_n_ctx(const runtime::Model& m, int64_t requested, GgmlType kv_type) {
  const auto& hp = m.hparams();
  if (requested > 0) {
    if (hp.n_ctx_train > 0 && requested > hp.n_ctx_train)
      std::fprintf(stderr, "warning: -c %lld is beyond the model's trained context (%lld): expect "
                   "degraded output past it\n", (long long)requested, (long long)hp.n_ctx_train);
    return requested;
  }
  int64_t n = hp.n_ctx_train > 0 ? std::min<int64_t>(hp.n_ctx_train, 4096) : 4096;
  const double per_token = double(runtime::kv_cache_bytes(hp, 1, kv_type));
  const double mem = runtime::usable_memory_bytes();
  if (mem > 0 && per_token > 0) {
    const double budget = mem / 4;
    n = std::min<int64_t>(n, std::max<int64_t>(256, int64_t(budget / per_token)));
  }
  return n;
}

runtime::ContextParams context_params(const runtime::Model& m, const GenFlags& f) {
  runtime::ContextParams cp;
  cp.kv_type = f.kv_cache_type();
  cp.n_ctx = choose_n_ctx(m, f.n_ctx, cp.kv_type);
  cp.n_threads = f.threads > 0 ? f.threads : runtime::usable_physical_cores();
  return cp;
}

void lock_memory(const GenFlags& f, const runtime::Model& model, const runtime::Model* draft, Log& log) {
  if (!f.mlock) return;
  std::string why = model.lock_in_memory();
  if (why.empty() && draft) why = draft->lock_in_memory();
  if (why.empty()) {
    log.detail("--mlock: the model's weights are locked in RAM");
    return;
  }
  struct rlimit lim {};
  const bool have = ::getrlimit(RLIMIT_MEMLOCK, &lim) == 0;
  log.warn("--mlock: cannot lock the model in RAM: {}{}", why,
           have && lim.rlim_cur != RLIM_INFINITY
               ? fmt::format(" (RLIMIT_MEMLOCK is {} KiB; raise it with 'ulimit -l')", lim.rlim_cur / 1024)
               : std::string());
}

Draft load_draft(const GenFlags& f, const runtime::Model& target, const runtime::ContextParams& target_cp, Log& log) {
  Draft d;
  if (f.model_draft.empty()) return d;
  d.model = load_model(f.model_draft, log, f.mmap).model;
  const std::string why = runtime::draft_mismatch(target.tokenizer(), d.model->tokenizer());
  if (!why.empty()) fail("{}: cannot draft for this model: {}", f.model_draft, why);
  runtime::ContextParams cp = target_cp;
  cp.n_ctx = f.ctx_size_draft > 0 ? f.ctx_size_draft : target_cp.n_ctx;
  d.ctx = std::make_unique<runtime::Context>(*d.model, cp);
  d.drafter = std::make_unique<runtime::Drafter>(*d.ctx, f.draft);
  log.detail("draft: {} ({}), context {} tokens, up to {} tokens a step, p-min {}", f.model_draft,
             d.model->arch(), d.ctx->n_ctx(), f.draft.n_max, f.draft.p_min);
  return d;
}

// ---- prompts ----

std::string read_text_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail("{}: no such {} file", path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot read the {} file", path, what);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<std::string> chat_template(const runtime::Model& m, const GenFlags& f) {
  if (auto builtin = chat::builtin_template(f.chat_template_text)) return builtin;
  if (!f.chat_template_text.empty()) return f.chat_template_text;
  if (!f.chat_template_file.empty()) return read_text_file(f.chat_template_file, "chat template");
  return m.tokenizer().chat_template();
}

std::string chat_template_or_chatml(const runtime::Model& m, const GenFlags& f, Log& log) {
  if (auto t = chat_template(m, f)) return *t;
  log.info("the model has no chat template: using ChatML, as llama.cpp does (--chat-template-file to give one)");
  return chat::chatml_template();
}

void print_timings(Log& log, double load_ms, const runtime::GenerateResult& r) {
  auto per = [](double ms, int64_t n) {
    return n > 0 ? fmt::format("({:8.2f} ms per token, {:8.2f} tokens per second)", ms / double(n),
                               ms > 0 ? 1000.0 * double(n) / ms : 0.0)
                 : std::string();
  };
  if (load_ms >= 0) log.info("minfer:        load time = {:10.2f} ms", load_ms);
  log.info("minfer: prompt eval time = {:10.2f} ms / {:5} tokens {}", r.t_prompt_ms, r.n_prompt,
           per(r.t_prompt_ms, r.n_prompt));
  log.info("minfer:        eval time = {:10.2f} ms / {:5} runs   {}", r.t_gen_ms, r.n_gen_evals,
           per(r.t_gen_ms, r.n_gen_evals));
  log.info("minfer:       total time = {:10.2f} ms / {:5} tokens ({} generated, stopped: {})",
           std::max(0.0, load_ms) + r.t_prompt_ms + r.t_gen_ms, r.n_prompt + int64_t(r.tokens.size()),
           r.tokens.size(), runtime::stop_reason_name(r.reason));
  if (r.speculative)
    log.info("minfer:            draft = {:10} tokens drafted, {} accepted ({:.1f} %)", r.n_drafted,
             r.n_draft_accepted, r.n_drafted ? 100.0 * double(r.n_draft_accepted) / double(r.n_drafted) : 0.0);
}

}  // namespace minfer::cli
