//! **Step 5d: split k on step 5c's tiles.** Step 5c is the fastest f32 step where C has enough
//! of its 128×256 tiles to fill the SMs, but a mid-sized C has few: 1024×1024 is 32 tiles for
//! 132 SMs, so three quarters of the GPU waits while each busy SM walks the whole of k. The
//! smaller tiles that would fill the SMs (step 4d's 64×64) do less work per byte they stage.
//!
//! **How.** Step 4d's split, on step 5c's kernel: layer z of a grid `splits` deep takes one
//! run of k's slices of `ASYNC_BK` (`interface::matmul::split_slices`) and writes its partial
//! product, every element of its tile inside C, to layer z of a workspace of `splits × m × n`
//! floats; `matmul_split_reduce` (`split_k.rs`) then sums the layers into C in a fixed order.
//! The host picks the count whose waves of blocks take least time, each split charged a little
//! for its partials' traffic and its pipeline's fill, each run long enough to keep those small
//! beside its work (`split::async_splits_for` in the library).
//!
//! ```text
//!   1024×1024×1024, 4 splits:  32 tiles × 4 runs of 256 = 128 blocks, one wave
//!                              partials 4 × 4 MB ──► reduce ──► C
//! ```

use super::interior_block;
use super::scheduled::matmul_async;
use cuda_std::prelude::*;
use interface::matmul::{split_slices, ASYNC_BK, ASYNC_BM, ASYNC_BN};

/// Layer `blockIdx.z` of the product over split `blockIdx.z` of `gridDim.z` splits of k's
/// slices: the tile at block (`blockIdx.y`, `blockIdx.x`) of `A[:, k0..k1] × B[k0..k1, :]` into
/// `c[z·m·n ..]`. A grid of one layer is the whole product into C.
///
/// # Safety
/// `a.len() >= m·k`, `b.len() >= k·n`; `c` valid for `gridDim.z·m·n` writes and aliasing
/// neither; `a`, `b`, `c` 16-byte aligned. `gridDim.z` leaves no split empty
/// (`split_count(⌈k / ASYNC_BK⌉, gridDim.z) == gridDim.z`). Launch: blocks of `ASYNC_THREADS`,
/// a grid of `⌈n / ASYNC_BN⌉ × ⌈m / ASYNC_BM⌉ × splits`, `ASYNC_SHARED_BYTES` of dynamic
/// shared memory.
#[kernel]
pub unsafe fn matmul_async_128x256_split(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    let split = thread::block_idx_z() as usize;
    let (first, count) = split_slices((k + ASYNC_BK - 1) / ASYNC_BK, split, thread::grid_dim_z() as usize);
    let run = (first * ASYNC_BK, ((first + count) * ASYNC_BK).min(k));
    // A layer is 16-byte aligned where C's rows are (`interior_block` asks n % 4 == 0).
    let layer = c.add(split * m * n);
    if interior_block(ASYNC_BM, ASYNC_BN, ASYNC_BK, m, n, k) {
        matmul_async::<false>(a, b, layer, m, n, k, run);
    } else {
        matmul_async::<true>(a, b, layer, m, n, k, run);
    }
}
