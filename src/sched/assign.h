// Backend assignment and splits, with ggml_backend_sched_split_graph's semantics:
//  1. a node that reads a weight goes to the first backend holding that weight (a weight no
//     backend claims is in host memory: the last backend) if it supports the node; graph
//     inputs go to the last backend (the host/CPU); a node already assigned keeps its backend
//     when that backend supports it;
//  2. assignments expand to unassigned neighbours: non-CPU backends down then up, then any
//     backend down then up (only to backends that support the node);
//  3. anything still unassigned goes to the supporting backend that produces most of its
//     sources, ties to the earlier backend (the CPU, last in the list, is the fallback).
// Every node ends assigned, never to a backend that cannot run it (else minfer::Error).
//
// Splits are maximal runs of live nodes (node order) on one backend; each lists the sources
// produced on another backend, which the executor copies in before running the split.
#pragma once
#include <span>
#include <vector>

#include "graph/ir.h"
#include "sched/backend.h"

namespace minfer::sched {

// backends: priority order, the last one is the CPU fallback. Fills CNode::backend.
void assign_backends(graph::ComputeGraph& g, std::span<Backend* const> backends);

struct Split {
  int backend = -1;
  std::vector<graph::NodeId> nodes;   // live nodes, in node order
  std::vector<graph::NodeId> copies;  // sources produced on another backend (buffered ones)
};

// Call after assign_backends and FusionPass. Skips non-live nodes; KvStore/KvLoad outputs
// are the KV regions and are never copied.
std::vector<Split> make_splits(const graph::ComputeGraph& g);

// True when node `id`'s output lives in an arena buffer (live and not a KV view).
bool has_buffer(const graph::ComputeGraph& g, const std::vector<bool>& live, graph::NodeId id);

}  // namespace minfer::sched
