//! Vector addition, the "hello world" of CUDA: `c[i] = a[i] + b[i]`.
//!
//! One thread per element. A thread finds its element from its block's position in the grid
//! and its own position in the block: `i = blockIdx.x * blockDim.x + threadIdx.x`
//! ([`global_index`], in 64 bits so arrays past 2^32 elements work). The grid is rounded up
//! to whole blocks, so the last block may hold threads past the end of the data; the bounds
//! check keeps them from writing.
//!
//! Each thread reads 8 bytes and writes 4 with no reuse, so the kernel is bound by memory
//! bandwidth. Neighbouring threads touch neighbouring addresses, so every warp's loads and
//! stores coalesce into full 128-byte transactions.

use crate::global_index;
use cuda_std::prelude::*;

#[kernel]
pub unsafe fn vector_add(a: &[f32], b: &[f32], c: *mut f32) {
    let i = global_index();
    if i < a.len() && i < b.len() {
        *c.add(i) = a[i] + b[i];
    }
}
