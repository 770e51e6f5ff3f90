#include "sched/alloc.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <new>

#include "common/error.h"

namespace minfer::sched {

using graph::BufferInfo;
using graph::CNode;
using graph::ComputeGraph;
using graph::NodeId;

namespace {

size_t align_up(size_t n) { return (n + kBufferAlign - 1) / kBufferAlign * kBufferAlign; }

// Offsets inside one arena: best-fit over released ranges (coalesced), growth at the top.
class ArenaPlanner {
 public:
  size_t alloc(size_t size) {
    size = align_up(std::max<size_t>(size, 1));
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= size && (best == free_.end() || it->second < best->second)) best = it;
    if (best != free_.end()) {
      const size_t off = best->first, len = best->second;
      free_.erase(best);
      if (len > size) free_.emplace(off + size, len - size);
      return off;
    }
    // No range fits: extend the free range that ends at the top, if any, else the top itself.
    size_t off = top_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == top_) {
        off = last->first;
        free_.erase(last);
      }
    }
    top_ = off + size;
    peak_ = std::max(peak_, top_);
    return off;
  }

  void release(size_t off, size_t size) {
    size = align_up(std::max<size_t>(size, 1));
    auto it = free_.emplace(off, size).first;
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
        it = prev;
      }
    }
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
  }

  size_t peak() const { return peak_; }

 private:
  std::map<size_t, size_t> free_;  // offset -> size
  size_t top_ = 0, peak_ = 0;
};

// Time line: the copies of split s happen at 2*first(s), node n runs at 2*n+1.
int64_t node_time(NodeId n) { return 2 * int64_t(n) + 1; }

}  // namespace

AllocPlan plan_allocation(const ComputeGraph& g, const std::vector<Split>& splits,
                          int n_backends) {
  const size_t n = g.nodes.size();
  const std::vector<bool> live = g.live_mask();
  int needed = 1;
  for (const CNode& nd : g.nodes) needed = std::max(needed, nd.backend + 1);
  if (n_backends < needed)
    fail("allocator: graph uses backend {} but only {} arenas were requested", needed - 1,
         n_backends);

  AllocPlan plan;
  plan.node_buf.assign(n, std::nullopt);
  plan.alias_of.assign(n, -1);
  plan.split_copies.resize(splits.size());
  plan.arena_size.assign(size_t(n_backends), 0);

  std::vector<bool> pinned(n, false);  // inputs and outputs: never released
  for (NodeId id : g.inputs) pinned[size_t(id)] = true;
  for (NodeId id : g.outputs) pinned[size_t(id)] = true;

  // Which split reads each source through a copy, and the last read of every buffer.
  std::vector<int> split_of(n, -1);
  for (size_t s = 0; s < splits.size(); ++s)
    for (NodeId id : splits[s].nodes) split_of[size_t(id)] = int(s);
  std::vector<int64_t> last_use(n, -1);
  std::vector<std::vector<int64_t>> copy_last(splits.size());
  for (size_t s = 0; s < splits.size(); ++s) {
    const Split& sp = splits[s];
    copy_last[s].assign(sp.copies.size(), -1);
    const int64_t copy_time = sp.nodes.empty() ? 0 : 2 * int64_t(sp.nodes.front());
    for (NodeId src : sp.copies) last_use[size_t(src)] = std::max(last_use[size_t(src)], copy_time);
    for (NodeId id : sp.nodes) {
      for (NodeId src : g.nodes[size_t(id)].src) {
        auto it = std::find(sp.copies.begin(), sp.copies.end(), src);
        if (it != sp.copies.end()) {
          int64_t& l = copy_last[s][size_t(it - sp.copies.begin())];
          l = std::max(l, node_time(id));
        } else {
          last_use[size_t(src)] = std::max(last_use[size_t(src)], node_time(id));
        }
      }
    }
  }

  std::vector<ArenaPlanner> arenas(size_t(n_backends), ArenaPlanner{});
  auto take = [&](int arena, size_t size) {
    return BufferInfo{arena, arenas[size_t(arena)].alloc(size), size};
  };
  auto give_back = [&](const BufferInfo& b) { arenas[size_t(b.arena)].release(b.offset, b.size); };
  auto arena_of = [&](const CNode& nd) { return nd.backend < 0 ? n_backends - 1 : nd.backend; };

  // Graph inputs are filled before anything runs and read anywhere: allocate them first.
  for (NodeId id : g.inputs) {
    const CNode& nd = g.nodes[size_t(id)];
    if (!plan.node_buf[size_t(id)]) plan.node_buf[size_t(id)] = take(arena_of(nd), nd.n_bytes());
  }

  for (size_t s = 0; s < splits.size(); ++s) {
    const Split& sp = splits[s];
    for (NodeId src : sp.copies)
      plan.split_copies[s].push_back({src, take(sp.backend, g.nodes[size_t(src)].n_bytes())});
    // A source whose last reader is this copy can go now (it lives in another arena).
    for (NodeId src : sp.copies)
      if (!pinned[size_t(src)] && plan.node_buf[size_t(src)] && !sp.nodes.empty() &&
          last_use[size_t(src)] == 2 * int64_t(sp.nodes.front()))
        give_back(*plan.node_buf[size_t(src)]);

    for (NodeId id : sp.nodes) {
      const CNode& nd = g.nodes[size_t(id)];
      const int64_t now = node_time(id);
      const bool buffered = has_buffer(g, live, id);
      NodeId donor = -1;
      if (buffered && graph::is_elementwise(nd.op) && !nd.src.empty() && !pinned[size_t(id)]) {
        const NodeId a = nd.src[0];
        const CNode& an = g.nodes[size_t(a)];
        const bool copied =
            std::find(sp.copies.begin(), sp.copies.end(), a) != sp.copies.end();
        if (!copied && !pinned[size_t(a)] && plan.node_buf[size_t(a)] &&
            last_use[size_t(a)] == now && an.backend == nd.backend && an.n_bytes() == nd.n_bytes())
          donor = a;
      }
      if (donor >= 0) {
        plan.node_buf[size_t(id)] = plan.node_buf[size_t(donor)];
        plan.alias_of[size_t(id)] = donor;
      } else if (buffered) {
        plan.node_buf[size_t(id)] = take(arena_of(nd), nd.n_bytes());
      }
      // Release what dies here, after the output was placed (a kernel reads its sources
      // while writing its output, so they must not overlap unless in place).
      std::vector<NodeId> seen;
      for (NodeId src : nd.src) {
        if (std::find(seen.begin(), seen.end(), src) != seen.end()) continue;
        seen.push_back(src);
        auto it = std::find(sp.copies.begin(), sp.copies.end(), src);
        if (it != sp.copies.end()) {
          const size_t k = size_t(it - sp.copies.begin());
          if (copy_last[s][k] == now) give_back(plan.split_copies[s][k].buf);
        } else if (src != donor && !pinned[size_t(src)] && plan.node_buf[size_t(src)] &&
                   last_use[size_t(src)] == now) {
          give_back(*plan.node_buf[size_t(src)]);
        }
      }
      // Live only for its side effects or unread: nothing will read the buffer.
      if (buffered && !pinned[size_t(id)] && last_use[size_t(id)] < 0)
        give_back(*plan.node_buf[size_t(id)]);
    }
  }
  // Outputs that no split produced (e.g. an input marked as output) still need buffers.
  for (NodeId id : g.outputs)
    if (!plan.node_buf[size_t(id)] && has_buffer(g, live, id))
      plan.node_buf[size_t(id)] = take(arena_of(g.nodes[size_t(id)]), g.nodes[size_t(id)].n_bytes());

  for (size_t b = 0; b < arenas.size(); ++b) plan.arena_size[b] = arenas[b].peak();
  return plan;
}

// ---------------------------------------------------------------------------------------

struct GraphAllocator::Arena {
  uint8_t* data = nullptr;
  size_t size = 0;
  explicit Arena(size_t n) : size(std::max<size_t>(n, kBufferAlign)) {
    data = static_cast<uint8_t*>(::operator new(size, std::align_val_t{kBufferAlign}));
  }
  ~Arena() { ::operator delete(data, std::align_val_t{kBufferAlign}); }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
};

GraphAllocator::GraphAllocator() = default;
GraphAllocator::~GraphAllocator() = default;
GraphAllocator::GraphAllocator(GraphAllocator&&) noexcept = default;
GraphAllocator& GraphAllocator::operator=(GraphAllocator&&) noexcept = default;

void GraphAllocator::allocate(const ComputeGraph& g, const std::vector<Split>& splits,
                              int n_backends) {
  AllocPlan plan = plan_allocation(g, splits, n_backends);
  if (arenas_.size() < plan.arena_size.size()) arenas_.resize(plan.arena_size.size());
  for (size_t b = 0; b < plan.arena_size.size(); ++b)
    if (!arenas_[b] || arenas_[b]->size < plan.arena_size[b])
      arenas_[b] = std::make_unique<Arena>(plan.arena_size[b]);
  dtypes_.clear();
  for (const CNode& nd : g.nodes) dtypes_.push_back(nd.dtype);
  plan_ = std::move(plan);
}

bool GraphAllocator::has_buffer(NodeId id) const {
  return id >= 0 && size_t(id) < plan_.node_buf.size() && plan_.node_buf[size_t(id)].has_value();
}

void* GraphAllocator::data(NodeId id) {
  if (!has_buffer(id)) fail("allocator: node {} has no buffer", id);
  const BufferInfo& b = *plan_.node_buf[size_t(id)];
  return arenas_[size_t(b.arena)]->data + b.offset;
}

size_t GraphAllocator::bytes(NodeId id) const {
  return has_buffer(id) ? plan_.node_buf[size_t(id)]->size : 0;
}

void* GraphAllocator::copy_data(size_t split, NodeId src) {
  if (split < plan_.split_copies.size())
    for (const CopyBuffer& c : plan_.split_copies[split])
      if (c.src == src) return arenas_[size_t(c.buf.arena)]->data + c.buf.offset;
  fail("allocator: split {} has no copy of node {}", split, src);
}

std::span<int32_t> GraphAllocator::input_i32(NodeId id) {
  if (!has_buffer(id) || dtypes_[size_t(id)] != graph::DType::I32)
    fail("allocator: node {} is not a buffered i32 tensor", id);
  return {static_cast<int32_t*>(data(id)), bytes(id) / sizeof(int32_t)};
}

std::span<float> GraphAllocator::tensor_f32(NodeId id) {
  if (!has_buffer(id) || dtypes_[size_t(id)] != graph::DType::F32)
    fail("allocator: node {} is not a buffered f32 tensor", id);
  return {static_cast<float*>(data(id)), bytes(id) / sizeof(float)};
}

size_t GraphAllocator::arena_bytes() const {
  size_t total = 0;
  for (const auto& a : arenas_)
    if (a) total += a->size;
  return total;
}

const uint8_t* GraphAllocator::arena_base(int backend) const {
  if (backend < 0 || size_t(backend) >= arenas_.size() || !arenas_[size_t(backend)]) return nullptr;
  return arenas_[size_t(backend)]->data;
}

size_t GraphAllocator::arena_capacity(int backend) const {
  if (backend < 0 || size_t(backend) >= arenas_.size() || !arenas_[size_t(backend)]) return 0;
  return arenas_[size_t(backend)]->size;
}

}  // namespace minfer::sched
