//! 1D convolution, the 2D tiled idea in one dimension: a block of [`CONV1D_BLOCK`] threads
//! stages its [`CONV1D_BLOCK`] inputs plus the `r`-element halo on each side in shared memory
//! (coalesced loads, each input read from DRAM about once), then each thread applies the
//! `2r + 1` taps from [`FILTER`] (constant memory, see `conv2d`) to its neighbourhood in
//! shared memory. Pixels outside the signal read as zero.

use crate::conv2d::FILTER;
use crate::load_quad;
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::conv::{CONV1D_BLOCK, CONV1D_VEC4_QUADS, CONV1D_VEC4_SPAN, MAX_RADIUS};

/// `Σ FILTER[f] · window[f]` over the `2·radius + 1` taps, unrolled to the largest filter with
/// each tap guarded by the run-time radius.
#[inline(always)]
unsafe fn taps(radius: usize, window: *const f32) -> f32 {
    let mut acc = 0.0f32;
    crate::unroll!([0, 1, 2, 3, 4, 5, 6], |f| {
        if f <= 2 * radius {
            acc += *FILTER.get_unchecked(f) * *window.add(f);
        }
    });
    acc
}

/// # Safety
/// The launcher (`Conv1dArgs` on the host) guarantees: `output` is valid for `input.len()`
/// writes and overlaps nothing the kernel reads; `radius <= MAX_RADIUS`, so the halo fits the
/// shared tile and every tap is inside `FILTER`; and blocks of [`CONV1D_BLOCK`] threads.
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
        *output.add(i) = taps(radius, tile.add(tid));
    }
}

/// **`conv1d_vec4`**: each block covers [`CONV1D_VEC4_SPAN`] outputs, [`CONV1D_VEC4_QUADS`]
/// groups of four per thread. It stages them with 16-byte loads ([`load_quad`]: a block's
/// threads take consecutive quads, so loads coalesce, and each thread has all its quads in
/// flight at once), plus the halo; then thread `t` computes outputs `t`, `t + CONV1D_BLOCK`,
/// ...: consecutive threads read consecutive shared words (no bank conflicts) and write
/// consecutive outputs. The halo is also a smaller share of each block's loads.
///
/// # Safety
/// As for [`conv1d`], and `input` starts 16-byte aligned (it is loaded four floats at a time).
#[kernel]
pub unsafe fn conv1d_vec4(input: &[f32], output: *mut f32, radius: usize) {
    let tile = shared_array![f32; CONV1D_VEC4_SPAN + 2 * MAX_RADIUS];
    let n = input.len();
    let tid = thread::thread_idx_x() as usize;
    let start = thread::block_idx_x() as usize * CONV1D_VEC4_SPAN;

    // tile[radius + e] holds input[start + e].
    let mut quads = [[0.0f32; 4]; CONV1D_VEC4_QUADS];
    for u in 0..CONV1D_VEC4_QUADS {
        let g = start + 4 * (tid + u * CONV1D_BLOCK);
        if g + 4 <= n {
            quads[u] = load_quad(input, g / 4).0;
        } else {
            for j in 0..4 {
                if g + j < n {
                    quads[u][j] = *input.get_unchecked(g + j);
                }
            }
        }
    }
    for u in 0..CONV1D_VEC4_QUADS {
        let e = 4 * (tid + u * CONV1D_BLOCK);
        for j in 0..4 {
            *tile.add(radius + e + j) = quads[u][j];
        }
    }
    if tid < radius {
        let left = (start + tid).wrapping_sub(radius);
        *tile.add(tid) = if left < n { *input.get_unchecked(left) } else { 0.0 };
        let right = start + CONV1D_VEC4_SPAN + tid;
        *tile.add(radius + CONV1D_VEC4_SPAN + tid) = if right < n { *input.get_unchecked(right) } else { 0.0 };
    }
    thread::sync_threads();

    for u in 0..4 * CONV1D_VEC4_QUADS {
        let o = tid + u * CONV1D_BLOCK;
        let i = start + o;
        if i < n {
            *output.add(i) = taps(radius, tile.add(o));
        }
    }
}
