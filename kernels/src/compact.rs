//! Stream compaction: the values inside a [`Window`], packed in their order, in one pass.
//!
//! A kept value's place in the output is the number of kept values before it: the exclusive
//! scan of the keep-flags (1 or 0). So compaction is the scan of `scan.rs` run over flags,
//! with the values kept in registers meanwhile: each block loads its tile once, computes the
//! flags, learns how many values the tiles before it keep by the same decoupled look-back, and
//! writes the kept values to their places. Stable by construction, since places follow input
//! order; the last tile writes the count.
//!
//! ```text
//!   values:  3.1  -7.0   0.4   NaN   2.2   9.9      window (0, 5)
//!   flags:    1     0     1     0     1     0
//!   places:   0     1     1     2     2     3       exclusive scan of the flags
//!   output:  [3.1, 0.4, 2.2]                        count 3
//! ```
//!
//! The kept values of a tile land in one contiguous run of the output. Written straight from
//! registers, each store would scatter a few words over several lines; instead every thread
//! puts its kept values at their places in a copy of that run in shared memory, and after one
//! barrier the block's consecutive threads write consecutive words of it. One run per tile,
//! not one per warp: a run starts and ends mid-line, and a line at the seam of two runs is
//! written in two pieces at two times, so the fewer seams the fewer partial writes. A partial
//! last tile pads with NaN, which lies in no window.
//!
//! ```text
//!   tile's kept values, by warp:   w0: a b c   w1: d e   w2: f g h i  …
//!   staged (shared memory):        [a b c d e f g h i …]   each warp at its offset in the tile
//!   output:        … previous tiles' values | a b c d e f g h i … | next tile's …
//!                                   └ threads 0, 1, 2, … write words 0, 1, 2, …
//! ```

use crate::scan::{claim_tile, scan_tile};
use crate::Quad;
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::scan::{BLOCK, QUADS_PER_THREAD, TILE};
use interface::window::Window;

/// Keeps the values `v` of `input` with `low < v < high` (compared in f64; NaN never), in
/// order, at the start of `output`, and writes how many to `*count`.
///
/// # Safety
/// The launcher (`CompactArgs` on the host, which only `Scanner` builds) guarantees: `input` is
/// not empty, holds fewer than 2^32 values and starts 16-byte aligned; `output` holds
/// `input.len()` values and overlaps neither `input` nor `scratch`; `scratch` holds
/// `interface::scan::scratch_words(input.len())` words, zeroed (as for `scan_exclusive_u32`:
/// else a hang or a wrong result, though no access depends on it); `count` is one writable
/// word apart from the others; the grid is one block of `interface::scan::BLOCK` threads per
/// tile, one-dimensional.
#[kernel]
pub unsafe fn compact_window_f32(
    input: &[f32],
    low: f64,
    high: f64,
    output: *mut f32,
    scratch: *mut u64,
    count: *mut u32,
) {
    let stage = shared_array![f32; TILE];
    let window = Window::new(low, high);
    let n = input.len();
    let mut values = [Quad([f32::NAN; 4]); QUADS_PER_THREAD];
    let claimed = match claim_tile(input, scratch, &mut values) {
        Some(claimed) => claimed,
        None => return,
    };
    let tile = claimed.index;
    // Bit `4·j + k`: value `k` of quad `j` is kept.
    let mut keep = 0u32;
    let mut kept = [0u32; QUADS_PER_THREAD];
    crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
        crate::unroll!([0, 1, 2, 3], |k| {
            let inside = window.contains(values[j].0[k]) as u32;
            keep |= inside << (4 * j + k);
            kept[j] += inside;
        });
    });
    let sums = scan_tile(&mut kept, tile, scratch, count, claimed.last());

    // The tile's kept values, each at its place in the tile's run, then written out by
    // consecutive threads: whole lines instead of one scattered word per kept value.
    let base = sums.tile_before;
    let staged = stage.add(sums.warp_before.wrapping_sub(base) as usize);
    crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
        let mut place = kept[j] as usize;
        crate::unroll!([0, 1, 2, 3], |k| {
            if keep & (1 << (4 * j + k)) != 0 {
                *staged.add(place) = values[j].0[k];
                place += 1;
            }
        });
    });
    thread::sync_threads();
    // The run's length is the tile's own count, whatever the scratch held; `base + i < n`
    // always holds with zeroed scratch, and is checked so that no write depends on it.
    let run = sums.tile_through.wrapping_sub(base) as usize;
    let mut i = thread::thread_idx_x() as usize;
    while i < run && (base as usize) + i < n {
        *output.add(base as usize + i) = *stage.add(i);
        i += BLOCK;
    }
}
