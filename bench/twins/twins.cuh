// Helpers shared by the CUDA C twins; the Rust originals are in kernels/src/lib.rs.
// No #pragma unroll unless the Rust unrolls by hand: which loops unroll is left to the
// compiler on both sides, so the twins differ from the Rust in the language only.
#pragma once
#include <stddef.h>

#include "interface.h"  // the sizes the Rust side uses, generated from interface/src

// 64-bit like the Rust global_index(): a 32-bit index wraps past 2^32 elements.
static __device__ __forceinline__ size_t global_index() {
    return (size_t)blockIdx.x * (size_t)blockDim.x + (size_t)threadIdx.x;
}

static __device__ __forceinline__ size_t grid_threads() {
    return (size_t)blockDim.x * (size_t)gridDim.x;
}

// Whether this block is the last of `arrivals` blocks sharing `ticket` to get here (the Rust
// `last_of`): thread 0 fences and draws a self-resetting ticket.
static __device__ __forceinline__ bool last_of(unsigned* ticket, unsigned arrivals) {
    __shared__ unsigned last;
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicInc(ticket, arrivals - 1) == arrivals - 1;
    }
    __syncthreads();
    return last != 0;
}

// The last block of the grid (the Rust `last_block`).
static __device__ __forceinline__ bool last_block(unsigned* ticket) { return last_of(ticket, gridDim.x); }
