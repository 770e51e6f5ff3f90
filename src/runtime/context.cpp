#include "runtime/context.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <list>
#include <vector>

#include "backend/cpu/kernels.h"
#include "common/error.h"
#include "graph/cache.h"
#include "graph/export.h"
#include "graph/params.h"
#include "models/llama_graph.h"
#include "runtime/cpu_backend.h"
#include "runtime/cpu_count.h"
#include "runtime/kv_state.h"
#include "runtime/memory_limit.h"
#include "runtime/model.h"
#include "runtime/node_trace.h"
#include "sched/alloc.h"
#include "sched/assign.h"
#include "sched/executor.h"
#include "sched/fusion.h"

namespace minfer::runtime {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// One cached graph with its schedule and buffers. Prefill and decode each have their own, so
// that a generation alternating between them (prompt, tokens, next prompt...) rebuilds neither.
struct Slot {
  graph::GraphCache cache;
  std::vector<sched::Split> splits;
  sched::GraphAllocator alloc;
};

// Speculative decoding verifies a token and its draft in one batch whose rows are all wanted, a
// few tokens long and of a length that changes from step to step: the last few such shapes keep
// their graphs (their buffers are small) instead of rebuilding the prompt's slot each step.
constexpr size_t kVerifySlots = 8;
constexpr int64_t kMaxVerifyTokens = 64;

}  // namespace

struct Context::Impl {
  explicit Impl(GgmlType kv_type) : kv(kv_type) {}

  CpuBackend cpu;
  std::vector<sched::Backend*> backends{&cpu};
  sched::Executor exec{backends};
  sched::KvStore kv;
  Slot prefill, decode, shift;
  std::list<Slot> verify;  // most recently used first
  graph::CParams cparams;
  int n_threads = 1;
  std::vector<float> logits;
  NodeObserver observer;
  std::unique_ptr<NodeTrace> trace;
  uint64_t step = 0;
};

Context::Context(const Model& model, ContextParams params)
    : model_(model), params_(params), impl_(std::make_unique<Impl>(params.kv_type)) {
  const models::HParams& hp = model.hparams();
  if (params_.n_ctx < 0) fail("context size must be positive, got {}", params_.n_ctx);
  if (params_.n_ctx == 0) params_.n_ctx = std::min<int64_t>(hp.n_ctx_train, 4096);
  if (params_.n_threads < 0) fail("thread count must be positive, got {}", params_.n_threads);
  impl_->n_threads = params_.n_threads > 0 ? params_.n_threads : usable_physical_cores();

  graph::CParams cp;
  cp.n_ctx = params_.n_ctx;
  cp.kv_type = params_.kv_type;
  cp.fuse_qkv = params_.fuse_qkv;
  cp.fuse_ffn = params_.fuse_ffn;
  cp.embeddings = params_.embeddings;
  cp.backends = {impl_->cpu.name()};
  impl_->cparams = graph::CParams::from_env(cp);
  params_.fuse_qkv = impl_->cparams.fuse_qkv;
  params_.fuse_ffn = impl_->cparams.fuse_ffn;
  // Attention reads the cache per head, so each head's row must be whole Q8_0 blocks.
  if (params_.kv_type == GgmlType::Q8_0 && (hp.head_dim % 32 != 0 || hp.head_dim_v % 32 != 0)) {
    fail("KV cache type q8_0 needs head sizes that are multiples of 32 (this model: {} and {})",
         hp.head_dim, hp.head_dim_v);
  }
  // The KV regions now, not in the first decode: their memory (zeroed, on huge pages) is then
  // paid with the model's load, as llama.cpp does, not inside the first prompt's time (470 MB
  // for qwen3-0.6b at 4096 tokens: a 2007-token prompt measured 17 % slower when the kernel
  // had to find huge pages during it).
  check_kv_fits(kv_cache_bytes(hp, params_.n_ctx, params_.kv_type), params_.n_ctx,
                usable_memory_bytes());  // before any is allocated
  for (int il = 0; il < hp.n_layer; ++il) {
    const graph::KvMeta m = models::kv_meta(hp, params_.n_ctx, il);
    impl_->kv.ensure_layer(m.layer, m.k_width, m.v_width, m.n_ctx, m.n_head_kv);
  }
  impl_->trace = NodeTrace::from_env();
}

Context::~Context() = default;

int64_t Context::n_ctx() const { return params_.n_ctx; }
int64_t Context::n_vocab() const { return model_.n_vocab(); }
int64_t Context::row_width() const { return params_.embeddings ? model_.hparams().n_embd : model_.n_vocab(); }

void Context::set_observer(NodeObserver obs) { impl_->observer = std::move(obs); }

void Context::truncate(int64_t n) {
  n_past_ = std::clamp<int64_t>(n, 0, n_past_);
  tokens_.resize(size_t(n_past_));
}

int64_t Context::keep_prefix(std::span<const int32_t> tokens) {
  size_t n = 0;
  while (n < tokens_.size() && n + 1 < tokens.size() && tokens_[n] == tokens[n]) ++n;
  truncate(int64_t(n));
  return int64_t(n);
}

// The slot for this batch shape: a single token's, a verification batch's (moved to the front
// of the recently used; on a miss the least recently used one is taken over), or the prompts'.
static Slot& slot_for(Context::Impl& im, int64_t nt, int64_t n_out) {
  if (nt == 1) return im.decode;
  if (n_out != nt || nt > kMaxVerifyTokens) return im.prefill;
  auto it = std::find_if(im.verify.begin(), im.verify.end(), [&](const Slot& s) {
    return s.cache.params() && s.cache.params()->n_tokens == nt;
  });
  if (it == im.verify.end()) {
    if (im.verify.size() < kVerifySlots) im.verify.emplace_back();
    it = std::prev(im.verify.end());
  }
  im.verify.splice(im.verify.begin(), im.verify, it);
  return im.verify.front();
}

// The scheduled graph of `s` for params `gp`: reused when the slot holds one built for equal
// params, else built by build_graph (pure), assigned, fused, split and allocated.
template <class Build>
static Slot& cached(Context::Impl& im, Stats& stats, Slot& s, const graph::GraphParams& gp,
                    Build&& build_graph) {
  auto build = [&] {
    graph::ComputeGraph g = build_graph();
    sched::assign_backends(g, im.backends);
    sched::FusionPass::run(g, im.backends);
    return g;
  };
  if (s.cache.try_reuse(gp)) {
#ifndef NDEBUG
    // The tripwire of the reuse invariant: equal params must mean an identical graph.
    graph::GraphCache::verify_structural(s.cache.graph(), build());
#endif
    ++stats.graph_reuses;
    return s;
  }
  const auto t0 = std::chrono::steady_clock::now();
  graph::ComputeGraph g = build();
  s.splits = sched::make_splits(g);
  s.alloc.allocate(g, s.splits, int(im.backends.size()));
  im.kv.ensure(g);
  s.cache.replace(std::move(g), gp);
  ++stats.graphs_built;
  if (gp.gtype != graph::GraphType::KvShift) ++(gp.n_tokens == 1 ? stats.decode_builds : stats.prefill_builds);
  stats.t_build_ms += ms_since(t0);
  return s;
}

// Returns the slot holding the scheduled graph for this batch shape, building it on a miss.
static Slot& prepare(Context::Impl& im, const Model& model, Stats& stats, int64_t nt,
                     int64_t n_out) {
  graph::GraphParams gp;
  gp.n_tokens = nt;
  gp.n_out = n_out;
  gp.gtype = nt == 1 ? graph::GraphType::Decode : graph::GraphType::Prefill;
  gp.cparams = im.cparams;
  models::FusedKernels fk;
  fk.qkv = im.cpu.has_fused(sched::FusedKind::FusedQKV);
  fk.qkv_bias_rope_store = im.cpu.has_fused(sched::FusedKind::QkvBiasRopeStore);
  fk.qkv_norm = im.cpu.has_fused(sched::FusedKind::FusedQkvNorm);
  fk.ffn = im.cpu.has_fused(sched::FusedKind::FusedFFN);
  return cached(im, stats, slot_for(im, nt, n_out), gp,
                [&] { return models::build_llama_graph(model.hparams(), model.tensors(), gp, fk); });
}

const graph::ComputeGraph& Context::graph_for(int64_t n_tokens, int64_t n_out) {
  if (n_tokens <= 0 || n_out <= 0 || n_out > n_tokens) {
    fail("graph_for: need 1 <= n_out ({}) <= n_tokens ({})", n_out, n_tokens);
  }
  return prepare(*impl_, model_, stats_, n_tokens, n_out).cache.graph();
}

// The scheduled graph for this batch shape with what the exporters show beside it.
template <class Export>
static std::string export_graph(Context& ctx, Context::Impl& im, int64_t n_tokens, int64_t n_out,
                                Export&& to_text) {
  const graph::ComputeGraph& g = ctx.graph_for(n_tokens, n_out);
  Slot& s = slot_for(im, n_tokens, n_out);
  graph::ExportInfo info;
  info.params = s.cache.params();
  info.backend_names = {im.cpu.name()};
  info.buffers = s.alloc.buffer_info();
  return to_text(g, info);
}

std::string Context::graph_json(int64_t n_tokens, int64_t n_out) {
  return export_graph(*this, *impl_, n_tokens, n_out, [](const auto& g, const auto& info) {
    return graph::to_json(g, info);
  });
}

std::string Context::graph_dot(int64_t n_tokens, int64_t n_out) {
  return export_graph(*this, *impl_, n_tokens, n_out, [](const auto& g, const auto& info) {
    return graph::to_dot(g, info);
  });
}

std::span<const float> Context::decode(std::span<const int32_t> tokens, int64_t n_out) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t nt = int64_t(tokens.size());
  if (nt == 0) fail("decode: no tokens");
  if (n_out < 1 || n_out > nt) fail("decode: n_out = {} must be in [1, {}]", n_out, nt);
  if (n_past_ + nt > params_.n_ctx) {
    fail("the context is full: {} tokens already in the context + {} new > context size {}",
         n_past_, nt, params_.n_ctx);
  }
  const int64_t n_vocab = model_.n_vocab();
  for (int32_t id : tokens) {
    if (id < 0 || id >= n_vocab) fail("token id {} is out of range [0, {})", id, n_vocab);
  }

  Impl& im = *impl_;
  cpu::set_threads(im.n_threads);
  const uint64_t reuses_before = stats_.graph_reuses;
  Slot& s = prepare(im, model_, stats_, nt, n_out);
  const graph::ComputeGraph& g = s.cache.graph();

  for (graph::NodeId id : g.inputs) {
    const std::string& name = g.nodes[size_t(id)].name;
    std::span<int32_t> buf = s.alloc.input_i32(id);
    if (name == "token_ids") {
      std::copy(tokens.begin(), tokens.end(), buf.begin());
    } else if (name == "positions") {
      for (int64_t i = 0; i < nt; ++i) buf[size_t(i)] = int32_t(n_past_ + i);
    } else if (name == "tail_ids") {
      for (int64_t i = 0; i < n_out; ++i) buf[size_t(i)] = int32_t(nt - n_out + i);
    } else {
      fail("decode: graph input '{}' is unknown to the runtime", name);
    }
  }

  if (im.observer || im.trace) {
    if (im.trace) {
      im.trace->begin_step(im.step, g.uid, stats_.graph_reuses > reuses_before,
                           stats_.graphs_built, stats_.graph_reuses, s.cache.params()->to_string());
    }
    im.exec.set_observer([&im](const sched::NodeEvent& e) {
      if (im.trace) im.trace->record(e);
      if (im.observer) {
        const bool f32 = e.node->dtype == graph::DType::F32 && e.data != nullptr;
        im.observer(*e.node, f32 ? static_cast<const float*>(e.data) : nullptr,
                    f32 ? std::min(e.bytes / sizeof(float), size_t(e.node->n_elements())) : 0,
                    e.ms);
      }
    });
  } else {
    im.exec.set_observer(nullptr);
  }
  im.exec.run(g, s.splits, s.alloc, model_.weights(), im.kv);
  ++im.step;

  std::span<const float> out = s.alloc.tensor_f32(g.outputs.at(0));
  if (int64_t(out.size()) != n_out * row_width()) {
    fail("decode: the output has {} values, expected {} x {}", out.size(), n_out, row_width());
  }
  im.logits.assign(out.begin(), out.end());
  n_past_ += nt;
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  stats_.tokens_evaluated += uint64_t(nt);
  ++stats_.decode_calls;
  stats_.t_eval_ms += ms_since(t0);
  return im.logits;
}

void Context::shift(int64_t n_keep, int64_t n_discard) {
  if (n_keep < 0 || n_discard < 1 || n_keep + n_discard > n_past_)
    fail("context shift: cannot discard {} tokens after the first {} of {}", n_discard, n_keep, n_past_);
  if (params_.embeddings) fail("context shift: not for an embeddings context");
  Impl& im = *impl_;
  cpu::set_threads(im.n_threads);
  graph::GraphParams gp;
  gp.gtype = graph::GraphType::KvShift;
  gp.cparams = im.cparams;
  Slot& s = cached(im, stats_, im.shift, gp, [&] {
    return models::build_kv_shift_graph(model_.hparams(), model_.tensors(), gp.cparams);
  });
  const graph::ComputeGraph& g = s.cache.graph();
  for (graph::NodeId id : g.inputs) {
    std::span<int32_t> buf = s.alloc.input_i32(id);
    buf[0] = int32_t(n_keep);
    buf[1] = int32_t(n_discard);
    buf[2] = int32_t(n_past_);
  }
  im.exec.set_observer(nullptr);
  im.exec.run(g, s.splits, s.alloc, model_.weights(), im.kv);
  n_past_ -= n_discard;
  tokens_.erase(tokens_.begin() + n_keep, tokens_.begin() + n_keep + n_discard);
  ++stats_.kv_shifts;
}

size_t Context::save_state(const std::string& path) {
  return write_kv_state(path, model_, impl_->kv, tokens_);
}

int64_t Context::load_state(const std::string& path, size_t* bytes_read) {
  std::vector<int32_t> tokens = read_kv_state(path, model_, impl_->kv, params_.n_ctx, bytes_read);
  tokens_ = std::move(tokens);
  n_past_ = int64_t(tokens_.size());
  return n_past_;
}

}  // namespace minfer::runtime
