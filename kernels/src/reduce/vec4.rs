//! Step 5: 16-byte grid-stride loads, one partial per block. Steps 1 to 4 launch a block per
//! `2·BLOCK` values: a million blocks for 2^28 values, each paying its start, its barriers and
//! a partial for the last block to add. Here a grid of a few thousand blocks (`BLOCKS_PER_SM`
//! per SM: eight waves of the blocks that fit at once, so that SMs finishing early take more
//! blocks) walks the whole array: each thread loads `QUADS_PER_PASS` quads (16 bytes each,
//! [`crate::load_quad`]) one grid apart, all in flight before it adds any, adds them to its
//! running sum, and moves on by `QUADS_PER_PASS` grids.
//!
//! ```text
//!   quads:  | grid of threads | grid | grid of threads | grid | ...
//!   thread t:  q = t     t+G      (one pass: 2 loads, then 2 adds; the next pass at t+2G)
//! ```
//!
//! Each block then reduces once (shuffles, as step 4) and writes one partial: a few thousand
//! partials instead of a million. Loads are the whole cost; with every SM full of threads that
//! each keep two 16-byte loads in flight, the kernel reads at the speed of a device copy.
//!
//! Accumulation: each quad is added as a two-level f32 tree, `(a + b) + (c + d)`, and the
//! quad's sum goes into the thread's running sum in f64: over hundreds of quads an f32 running
//! sum would grow far past each addend and round every one of them. The conversion and the
//! f64 add come once per 16 bytes, free beside the load.

use super::{block_sum, finish};
use crate::{global_index, grid_threads, load_quad, unroll, Quad};
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::reduce::{QUADS_PER_PASS, WARPS};

// The pass below unrolls over a literal list of this length.
const _: () = assert!(QUADS_PER_PASS == 2);

/// `(a + b) + (c + d)`: two levels of f32 rounding per value.
#[inline(always)]
fn quad_sum(q: Quad<f32>) -> f32 {
    (q.0[0] + q.0[1]) + (q.0[2] + q.0[3])
}

/// # Safety
/// The launcher (`ReduceArgs` on the host) guarantees: `values` starts 16-byte aligned; a
/// one-dimensional grid of any number of blocks of `BLOCK` threads (the loop is grid-stride);
/// `partials` holds a `f64` per block, `sum` one, `tickets` `finish_tickets(gridDim.x)` `u32`
/// at 0, and none overlaps another or the values.
#[kernel]
pub unsafe fn reduce_vec4(values: &[f32], partials: *mut f64, tickets: *mut u32, sum: *mut f64) {
    let totals = shared_array![f64; WARPS];
    let quads = values.len() / 4;
    let stride = grid_threads();
    let mut q = global_index();
    let mut acc = 0.0f64;
    while q + (QUADS_PER_PASS - 1) * stride < quads {
        let mut pass = [Quad([0.0f32; 4]); QUADS_PER_PASS];
        unroll!([0, 1], |j| {
            pass[j] = load_quad(values, q + j * stride);
        });
        unroll!([0, 1], |j| {
            acc += quad_sum(pass[j]) as f64;
        });
        q += QUADS_PER_PASS * stride;
    }
    while q < quads {
        acc += quad_sum(load_quad(values, q)) as f64;
        q += stride;
    }
    // The last `n % 4` values, one each for the first threads of the grid.
    let tail = 4 * quads + global_index();
    if tail < values.len() {
        acc += *values.get_unchecked(tail) as f64;
    }
    finish(block_sum(acc, 0.0, totals), partials, tickets, sum);
}
