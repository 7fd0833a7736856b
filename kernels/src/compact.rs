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
//! The kept values of a warp land in one contiguous run of the output. Written straight from
//! registers, each store would scatter a few words over several lines; instead the warp packs
//! them into its part of shared memory first, and consecutive lanes then write consecutive
//! words. A partial last tile pads with NaN, which lies in no window.

use crate::scan::{lane_and_warp, load_tile, next_tile, scan_tile};
use crate::Quad;
use core::arch::asm;
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::scan::{QUADS_PER_THREAD, TILE};
use interface::window::Window;

/// Values one warp stages in shared memory: its share of the tile.
const WARP_SPAN: usize = 32 * 4 * QUADS_PER_THREAD;

/// Keeps the values `v` of `input` with `low < v < high` (compared in f64; NaN never), in
/// order, at the start of `output`, and writes how many to `*count`.
///
/// # Safety
/// The launcher (`CompactArgs` on the host) guarantees: `input` is not empty, holds fewer than
/// 2^32 values and starts 16-byte aligned; `output` holds `input.len()` values and overlaps
/// neither `input` nor `scratch`; `scratch` holds `interface::scan::scratch_words(input.len())`
/// words (zeroed, or the result is wrong: no access depends on it); `count` is one writable
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
    let tile = match next_tile(scratch, n) {
        Some(tile) => tile,
        None => return,
    };
    let start = tile * TILE;
    let full = n - start >= TILE;
    let mut values = [Quad([f32::NAN; 4]); QUADS_PER_THREAD];
    // Bit `4·j + k`: value `k` of quad `j` is kept.
    let mut keep = 0u32;
    let mut kept = [0u32; QUADS_PER_THREAD];
    load_tile(input, tile, full, &mut values);
    crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
        crate::unroll!([0, 1, 2, 3], |k| {
            let inside = window.contains(values[j].0[k]) as u32;
            keep |= inside << (4 * j + k);
            kept[j] += inside;
        });
    });
    let (offset, warp_kept) = scan_tile(&mut kept, tile, scratch, count, n - start <= TILE);

    // The warp's kept values, packed in its part of shared memory, then written out by
    // consecutive lanes: whole lines instead of one scattered word per kept value.
    let (lane, warp) = lane_and_warp();
    let staged = stage.add(warp * WARP_SPAN);
    crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
        let mut place = kept[j] as usize;
        crate::unroll!([0, 1, 2, 3], |k| {
            if keep & (1 << (4 * j + k)) != 0 {
                *staged.add(place) = values[j].0[k];
                place += 1;
            }
        });
    });
    asm!("bar.warp.sync 0xffffffff;");
    // `offset + i < n` always holds with zeroed scratch; checked so that no write depends on it.
    let mut i = lane as usize;
    while i < warp_kept as usize && (offset as usize) + i < n {
        *output.add(offset as usize + i) = *staged.add(i);
        i += 32;
    }
}
