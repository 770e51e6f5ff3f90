#include "sched/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/error.h"

namespace minfer::sched {

using graph::CNode;
using graph::ComputeGraph;
using graph::NodeId;

namespace {

// What a backend sees while it runs one node of split `split`.
class SplitTensors final : public TensorMap {
 public:
  SplitTensors(const ComputeGraph& g, const Split& sp, size_t split, GraphAllocator& alloc,
               const WeightStore& weights, KvStore& kv)
      : g_(g), sp_(sp), split_(split), alloc_(alloc), weights_(weights), kv_(kv) {}

  void* data(NodeId id) override {
    if (std::find(sp_.copies.begin(), sp_.copies.end(), id) != sp_.copies.end())
      return alloc_.copy_data(split_, id);
    if (!alloc_.has_buffer(id))
      fail("executor: node {} ('{}') has no buffer{}", id, g_.node(id).name,
           is_kv(id) ? " (its data is the KV cache: use kv(layer))" : "");
    return alloc_.data(id);
  }
  size_t bytes(NodeId id) const override { return alloc_.bytes(id); }
  const WeightRef& weight(const std::string& name) const override { return weights_.get(name); }
  KvPair kv(int layer) override { return kv_.layer(layer); }
  const CNode& node(NodeId id) const override { return g_.node(id); }

 private:
  bool is_kv(NodeId id) const { return graph::is_kv_op(g_.node(id).op); }

  const ComputeGraph& g_;
  const Split& sp_;
  size_t split_;
  GraphAllocator& alloc_;
  const WeightStore& weights_;
  KvStore& kv_;
};

// The KV layer a node writes or reads, -1 when none.
int kv_layer(const CNode& n) {
  if (const auto* o = std::get_if<graph::OpKvStore>(&n.op)) return o->layer;
  if (const auto* o = std::get_if<graph::OpFusedQKV>(&n.op)) return o->layer;
  if (const auto* o = std::get_if<graph::OpQkvBiasRopeStore>(&n.op)) return o->layer;
  if (const auto* o = std::get_if<graph::OpFusedQkvNorm>(&n.op)) return o->layer;
  if (const auto* o = std::get_if<graph::OpKvShift>(&n.op)) return o->layer;
  if (const auto* m = std::get_if<graph::AttnMeta>(&n.meta)) return m->layer;
  return -1;
}

}  // namespace

Executor::Executor(std::vector<Backend*> backends) : backends_(std::move(backends)) {
  if (backends_.empty()) fail("executor: no backends");
}

void Executor::run(const ComputeGraph& g, const std::vector<Split>& splits, GraphAllocator& alloc,
                   const WeightStore& weights, KvStore& kv) {
  if (alloc.plan().node_buf.size() != g.nodes.size() ||
      alloc.plan().split_copies.size() != splits.size())
    fail("executor: the allocation plan does not belong to this graph ({} nodes, {} splits)",
         g.nodes.size(), splits.size());
  kv.ensure(g);  // cheap; makes a graph with a new layer or a wrong geometry fail here
  for (Backend* be : backends_) be->begin_run();
  using clock = std::chrono::steady_clock;
  for (size_t s = 0; s < splits.size(); ++s) {
    const Split& sp = splits[s];
    if (sp.backend < 0 || size_t(sp.backend) >= backends_.size())
      fail("executor: split {} runs on backend {}, which does not exist", s, sp.backend);
    Backend& be = *backends_[size_t(sp.backend)];
    for (NodeId src : sp.copies)
      std::memcpy(alloc.copy_data(s, src), alloc.data(src), alloc.bytes(src));

    SplitTensors tensors(g, sp, s, alloc, weights, kv);
    for (NodeId id : sp.nodes) {
      const CNode& n = g.node(id);
      // KvLoad is a view of the KV regions: nothing to compute. Fusion orphans and other
      // dead nodes have no buffer and no effect: skipped.
      if (std::holds_alternative<graph::OpKvLoad>(n.op)) continue;
      if (!alloc.has_buffer(id) && !graph::has_side_effects(n.op)) continue;

      const int layer = kv_layer(n);
      const int pi = graph::pos_src_index(n.op);
      if (layer >= 0 && pi >= 0 && size_t(pi) < n.src.size()) {
        const int64_t n_ctx = kv.layer(layer).k.n_ctx;
        const NodeId pid = n.src[size_t(pi)];
        const int32_t* pos = tensors.i32(pid);
        const int64_t count = g.node(pid).shape[0];
        for (int64_t t = 0; t < count; ++t)
          if (pos[t] < 0 || pos[t] >= n_ctx)
            fail("position {} is outside the context of {} tokens (node '{}', layer {})", pos[t],
                 n_ctx, n.name, layer);
      }

      const auto t0 = observer_ ? clock::now() : clock::time_point{};
      be.compute(n, tensors);
      if (observer_) {
        const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
        NodeEvent ev;
        ev.node = &n;
        ev.backend = sp.backend;
        ev.backend_name = be.name();
        ev.ms = ms;
        if (alloc.has_buffer(id)) {
          ev.data = alloc.data(id);
          ev.bytes = alloc.bytes(id);
        }
        observer_(ev);
      }
    }
  }
}

}  // namespace minfer::sched
