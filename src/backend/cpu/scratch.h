// Per-thread scratch memory for the kernels: kept across calls (a decode step allocates
// nothing) and 64-byte aligned. Defined in a plain translation unit so that the SIMD files,
// compiled with other target options, never instantiate std::vector's inline code themselves.
#pragma once
#include <cstddef>
#include <cstdint>

namespace minfer::cpu {

// Slots used by each kernel file, so that nested users never share a buffer.
enum class ScratchSlot : int {
  MatmulActivations = 0,  // kernels_matmul: quantized activation rows (read by every thread)
  MatmulActTiles,         // kernels_matmul: the _0 types' activation tiles (packed path)
  MatmulActScales,        // kernels_matmul: per-block activation scales (packed path)
  MatmulActSums,          // kernels_matmul: per-block offset corrections (packed path)
  MatmulActWide,          // kernels_matmul: the activation tiles widened to int16 (packed path)
  MatmulActMins,          // kernels_matmul: the _1 types' per-block activation sums (packed path)
  MatmulActHalves,        // kernels_matmul: the split types' second-half corrections (packed path)
  SwigluGate,             // kernels_matmul: a work item's gate and up products (matmul_swiglu)
  SwigluUp,
  PackedPanel,            // packed kernels: a group's quants decoded once per call
  IqRows,                 // simd_tiles: a row of a lattice i-quant decoded once per call
  TileA,                  // simd_avx512: prefill GEMM scratch
  TileB,
  TileC,
  TileD,
  AttnKeys,               // attn_tiles: a block's keys, transposed
  AttnScores,             // attn_tiles: a tile's scores
  AttnQueries,            // attn_tiles: a tile's queries
  kCount
};

// At least `bytes` bytes of this thread's buffer for `slot`; the pointer stays valid until the
// same thread asks for more bytes from the same slot.
uint8_t* thread_scratch(ScratchSlot slot, size_t bytes);

template <class T>
T* thread_scratch_array(ScratchSlot slot, size_t n) {
  return reinterpret_cast<T*>(thread_scratch(slot, n * sizeof(T)));
}

}  // namespace minfer::cpu
