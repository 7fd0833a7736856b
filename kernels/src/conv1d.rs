//! 1D convolution, the 2D tiled idea in one dimension: a block of [`CONV1D_BLOCK`] threads
//! stages its [`CONV1D_BLOCK`] inputs plus the `r`-element halo on each side in shared memory
//! (coalesced loads, each input read from DRAM about once), then each thread applies the
//! `2r + 1` taps from [`FILTER`] (constant memory, see `conv2d`) to its neighbourhood in
//! shared memory. Pixels outside the signal read as zero.

use crate::conv2d::FILTER;
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::conv::{CONV1D_BLOCK, MAX_RADIUS};

#[kernel]
pub unsafe fn conv1d(input: &[f32], output: *mut f32, radius: usize) {
    let tile = shared_array![f32; CONV1D_BLOCK + 2 * MAX_RADIUS];
    let n = input.len();
    let tid = thread::thread_idx_x() as usize;
    let start = thread::block_idx_x() as usize * CONV1D_BLOCK;

    let mut e = tid;
    while e < CONV1D_BLOCK + 2 * radius {
        let g = (start + e).wrapping_sub(radius);
        *tile.add(e) = if g < n { *input.get_unchecked(g) } else { 0.0 };
        e += CONV1D_BLOCK;
    }
    thread::sync_threads();

    let i = start + tid;
    if i < n {
        let mut acc = 0.0f32;
        for f in 0..2 * radius + 1 {
            acc += FILTER[f] * *tile.add(tid + f);
        }
        *output.add(i) = acc;
    }
}
