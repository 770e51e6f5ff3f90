// The CPU kernels' thread pool: persistent workers (created by set_threads, not per call) that
// take chunks of a parallel_for from an atomic counter, the calling thread taking chunks too.
//
// Why not OpenMP: with a static split, a region's end waits for every thread's share, so one
// descheduled worker on a loaded machine stalls the caller for a whole scheduler time slice,
// and libgomp's spin-waiting makes it worse (decode 100x slower at 2 threads than at 1 on a
// busy 2-core machine). Here a chunk is claimed only by a running thread: a worker that is not
// scheduled claims nothing and the caller does its share; the caller waits only for chunks
// already started. Idle threads spin for a few microseconds (the gap between two kernels of a
// decode step), then sleep on a futex.
//
// Determinism: which thread runs a chunk varies from call to call, so a chunk's result must not
// depend on the thread that runs it (the kernels give each output element to exactly one chunk
// and compute it the same way whatever the thread count).
#pragma once
#include <cstdint>
#include <memory>
#include <type_traits>

namespace minfer::cpu {

// (set_threads and threads are declared in kernels.h.) set_threads(n): n threads in all, the
// caller included, so n - 1 workers; changing n joins the old workers and starts new ones.
// Before the first set_threads the count is the CPUs this process may run on.

using ChunkFn = void (*)(void* ctx, int64_t chunk, int thread);

// Calls fn(ctx, c, thread) once for every c in [0, n_chunks) and returns when all have
// returned. `thread` < threads() tells apart the threads running this call (0 = the caller),
// for per-thread scratch. Runs everything on the calling thread when the pool has one thread,
// when n_chunks == 1, when called from inside a chunk (nested use) or while another thread
// holds the pool. The first exception a chunk throws is rethrown here once every chunk has
// finished (later chunks still run).
void parallel_for_raw(int64_t n_chunks, ChunkFn fn, void* ctx);

template <class F>
void parallel_for(int64_t n_chunks, F&& f) {
  using Fn = std::remove_reference_t<F>;
  parallel_for_raw(
      n_chunks,
      [](void* ctx, int64_t chunk, int thread) { (*static_cast<Fn*>(ctx))(chunk, thread); },
      const_cast<void*>(static_cast<const void*>(std::addressof(f))));
}

// True on a thread that is running a parallel_for chunk.
bool in_parallel();

}  // namespace minfer::cpu
