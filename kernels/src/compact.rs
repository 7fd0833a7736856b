//! Stream compaction: the values inside a [`Window`], packed in their order, in one pass.
//!
//! A kept value's place in the output is the number of kept values before it: the exclusive
//! scan of the keep-flags (1 or 0). So compaction is the scan of `scan.rs` run over flags,
//! with the values kept in registers meanwhile: each block loads its tile once, computes the
//! flags, learns how many values the tiles before it keep by the same decoupled look-back, and
//! writes each kept value straight to its place. Stable by construction, since places follow
//! input order; the last tile writes the count.
//!
//! ```text
//!   values:  3.1  -7.0   0.4   NaN   2.2   9.9      window (0, 5)
//!   flags:    1     0     1     0     1     0
//!   places:   0     1     1     2     2     3       exclusive scan of the flags
//!   output:  [3.1, 0.4, 2.2]                        count 3
//! ```
//!
//! The writes of a warp land in one contiguous run of the output, so they coalesce as far as
//! the kept values allow. A partial last tile pads with NaN, which lies in no window.

use crate::scan::{exclusive_prefixes, next_tile, quad_index};
use crate::{load_quad, Quad};
use cuda_std::prelude::*;
use interface::scan::{QUADS_PER_THREAD, TILE};
use interface::window::Window;

/// Keeps the values `v` of `input` with `low < v < high` (compared in f64; NaN never), in
/// order, at the start of `output`, and writes how many to `*count`.
///
/// # Safety
/// The launcher (`CompactArgs` on the host) guarantees: `input` is not empty, holds fewer than
/// 2^32 values and starts 16-byte aligned; `output` holds `input.len()` values and overlaps
/// neither `input` nor `scratch`; `scratch` holds `interface::scan::scratch_words(input.len())`
/// words (zeroed, or the result is wrong: no access depends on it); `count` is one writable
/// word apart from the others; the grid is one block of
/// `interface::scan::BLOCK` threads per tile, one-dimensional.
#[kernel]
pub unsafe fn compact_window_f32(
    input: &[f32],
    low: f64,
    high: f64,
    output: *mut f32,
    scratch: *mut u64,
    count: *mut u32,
) {
    let window = Window::new(low, high);
    let n = input.len();
    let tile = match next_tile(scratch, n) {
        Some(tile) => tile,
        None => return,
    };
    let start = tile * TILE;
    let full = n - start >= TILE;
    let mut values = [Quad([f32::NAN; 4]); QUADS_PER_THREAD];
    let mut flags = [Quad([0u32; 4]); QUADS_PER_THREAD];
    crate::unroll!([0, 1, 2, 3], |j| {
        let quad = quad_index(tile, j);
        if full {
            values[j] = load_quad(input, quad);
        } else {
            crate::unroll!([0, 1, 2, 3], |k| {
                if 4 * quad + k < n {
                    values[j].0[k] = *input.get_unchecked(4 * quad + k);
                }
            });
        }
        crate::unroll!([0, 1, 2, 3], |k| {
            flags[j].0[k] = window.contains(values[j].0[k]) as u32;
        });
    });
    let mut places = flags;
    exclusive_prefixes(&mut places, tile, scratch, count, n - start <= TILE);
    crate::unroll!([0, 1, 2, 3], |j| {
        crate::unroll!([0, 1, 2, 3], |k| {
            let place = places[j].0[k] as usize;
            // `place < n` always holds with zeroed scratch; checked so that no write depends on it.
            if flags[j].0[k] != 0 && place < n {
                *output.add(place) = values[j].0[k];
            }
        });
    });
}
