//! Step 1: a tree in shared memory, neighbours first. Each thread loads one value into the
//! block's shared array; then, at stride 1, 2, 4, …, every thread whose index is a multiple of
//! twice the stride adds the element one stride away. After `log2(BLOCK)` rounds, element 0
//! holds the block's sum.
//!
//! ```text
//!   stride 1:  [0]+[1]  [2]+[3]  [4]+[5]  [6]+[7]   threads 0, 2, 4, 6 work
//!   stride 2:  [0]+[2]           [4]+[6]            threads 0, 4
//!   stride 4:  [0]+[4]                              thread 0
//! ```
//!
//! Correct, and slow: the working threads are scattered over every warp, so each round keeps
//! all warps busy (branch divergence) for fewer and fewer adds, and `tid % (2·stride)` is an
//! integer division per thread and round.

use super::finish;
use crate::global_index;
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::reduce::BLOCK;

/// # Safety
/// The launcher (`ReduceArgs` on the host) guarantees: a one-dimensional grid of blocks of
/// `BLOCK` threads, one block per `BLOCK` values; `partials` holds a `f64` per block, `sum`
/// one, `tickets` `finish_tickets(gridDim.x)` `u32` at 0, and none overlaps another or the values.
#[kernel]
pub unsafe fn reduce_interleaved(values: &[f32], partials: *mut f64, tickets: *mut u32, sum: *mut f64) {
    let tree = shared_array![f32; BLOCK];
    let tid = thread::thread_idx_x();
    let i = global_index();
    *tree.add(tid as usize) = if i < values.len() { *values.get_unchecked(i) } else { 0.0 };
    thread::sync_threads();
    let mut stride = 1u32;
    while stride < BLOCK as u32 {
        if tid % (2 * stride) == 0 {
            *tree.add(tid as usize) += *tree.add((tid + stride) as usize);
        }
        thread::sync_threads();
        stride *= 2;
    }
    finish(*tree as f64, partials, tickets, sum);
}
