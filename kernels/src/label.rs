//! Connected components of the detection mask (pixels above a level), numbered as
//! `scipy.ndimage.label` numbers them, with union-find on the GPU.
//!
//! Every detected pixel starts as a set of its own; joining two sets points the root with the
//! larger index at the one with the smaller (an `atomicMin` on the parent, so racing joins
//! never lose a link: a join whose root was re-pointed meanwhile retries from the new parent).
//! The parent of a pixel is never larger than the pixel, so each component ends rooted at its
//! smallest raster index: its first pixel in raster order, the one SciPy numbers it by.
//! The mask is never stored: each kernel that needs it compares the f32 pixel with the level
//! in f64, as the CPU reference does (NaN is above nothing).
//!
//! 1. `label_tiles`: a block labels a `TILE_WIDTH × TILE_HEIGHT` tile in shared memory. Each
//!    warp holds one tile row, whose detected pixels are one ballot: a pixel's first parent is
//!    the first pixel of its run in the row (found from the ballot's bits, no memory traffic),
//!    so rows need no joins at all. Joins link runs to the runs above them, once per pair that
//!    touch (at the pixel where the lower run starts, or where the upper one does). The
//!    block then writes each pixel's root as a global index: the tile's forest, flattened.
//! 2. `label_merge`: a warp per tile joins the pixels of its top and left edges with their
//!    neighbours across the edge, in the global parent array. Ownership moves from the block
//!    to the whole grid here:
//!
//!    ```text
//!      after label_tiles              after label_merge
//!      +--------+--------+           +--------+--------+
//!      | a a    |  b b   |           | a a    |  a a   |   b's root pointed at a's
//!      |   a a a|b b     |    ==>    |   a a a|a a     |   (a < b: a comes first)
//!      +--------+--------+           +--------+--------+
//!      |   c    |        |           |   a    |        |   c's root pointed at a's
//!      |   c c  |        |           |   a a  |        |
//!      +--------+--------+           +--------+--------+
//!    ```
//!
//!    Each pixel is drawn as the set it is in. In memory only the roots changed: the pixels
//!    of b and c still point at b and c, which now point at a; step 3 shortens the paths.
//! 3. `label_flatten`: every pixel follows its parents to the root and keeps it (path
//!    compression), and marks whether it is a root.
//! 4. The exclusive sum of the marks (the `scan` family) is each root's rank among the roots,
//!    in raster order.
//! 5. `label_renumber`: a pixel's label is its root's rank + 1, 0 for the background: SciPy's
//!    labels exactly, since SciPy numbers components by their first pixel too.

use crate::{ballot, global_index, shared_address};
use core::arch::asm;
use core::ptr::read_volatile;
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::label::{BACKGROUND, TILE_HEIGHT, TILE_WIDTH};

const TILE_PIXELS: usize = TILE_WIDTH * TILE_HEIGHT;

/// Whether a pixel is part of a source: compared in f64, as `detect` on the CPU.
#[inline(always)]
fn detected(value: f32, level: f64) -> bool {
    value as f64 > level
}


/// Column of the first pixel of the run of set bits of `row` that column `col` is in.
#[inline(always)]
fn run_start(row: u32, col: u32) -> u32 {
    let gaps = !row & ((1u32 << col) - 1);
    if gaps == 0 {
        0
    } else {
        32 - gaps.leading_zeros()
    }
}

/// The operations union-find needs on a parent array.
trait Parents {
    /// The parent of `x`, as it is now.
    unsafe fn parent(&self, x: u32) -> u32;
    /// `parent[x] = min(parent[x], value)`; returns the parent before.
    unsafe fn lower(&self, x: u32, value: u32) -> u32;
}

/// A tile's parents in shared memory. Reads during the joins are atomic too: other threads
/// lower the same words meanwhile.
struct SharedParents(u32);

impl Parents for SharedParents {
    #[inline(always)]
    unsafe fn parent(&self, x: u32) -> u32 {
        let value: u32;
        asm!("atom.shared.or.b32 {v}, [{a}], 0;", v = out(reg32) value, a = in(reg32) self.0 + 4 * x);
        value
    }

    #[inline(always)]
    unsafe fn lower(&self, x: u32, value: u32) -> u32 {
        let old: u32;
        asm!(
            "atom.shared.min.u32 {o}, [{a}], {v};",
            o = out(reg32) old,
            a = in(reg32) self.0 + 4 * x,
            v = in(reg32) value,
        );
        old
    }
}

/// The image's parents in global memory, read past the caches' stale copies.
///
/// A parent is never larger than its pixel. One that is (memory no kernel of this family
/// wrote) is taken as a root, so no input can make a path leave the array or loop.
struct GlobalParents(*mut u32);

impl Parents for GlobalParents {
    #[inline(always)]
    unsafe fn parent(&self, x: u32) -> u32 {
        let parent = read_volatile(self.0.add(x as usize));
        if parent <= x {
            parent
        } else {
            x
        }
    }

    #[inline(always)]
    unsafe fn lower(&self, x: u32, value: u32) -> u32 {
        let old: u32;
        asm!(
            "atom.global.min.u32 {o}, [{a}], {v};",
            o = out(reg32) old,
            a = in(reg64) self.0.add(x as usize),
            v = in(reg32) value,
        );
        // As for `parent`.
        if old <= x {
            old
        } else {
            x
        }
    }
}

#[inline(always)]
unsafe fn find<P: Parents>(parents: &P, mut x: u32) -> u32 {
    loop {
        let parent = parents.parent(x);
        if parent == x {
            return x;
        }
        x = parent;
    }
}

/// Joins the sets of `a` and `b`: the larger root points at the smaller. When the larger
/// root was pointed elsewhere meanwhile, the join goes on from its new parent, so the link
/// the other thread made is kept and so is this one.
#[inline(always)]
unsafe fn join<P: Parents>(parents: &P, mut a: u32, mut b: u32) {
    loop {
        a = find(parents, a);
        b = find(parents, b);
        if a == b {
            return;
        }
        let (high, low) = if a > b { (a, b) } else { (b, a) };
        let old = parents.lower(high, low);
        if old == high {
            return;
        }
        a = old;
        b = low;
    }
}

/// # Safety
/// The launcher (`TilesArgs` on the host) guarantees: `labels` holds `width · height` values
/// and does not overlap `image`, which holds as many; `width · height < BACKGROUND`; the grid covers
/// the image with one block of `TILE_WIDTH × TILE_HEIGHT` threads per tile (block `x` and `y`
/// in that order); `connectivity` is 4 or 8.
#[kernel]
pub unsafe fn label_tiles(image: &[f32], width: usize, height: usize, level: f64, connectivity: u32, labels: *mut u32) {
    let parent = shared_array![u32; TILE_PIXELS];
    let rows = shared_array![u32; TILE_HEIGHT];
    let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
    let col = thread::block_idx_x() as usize * TILE_WIDTH + tx as usize;
    let row = thread::block_idx_y() as usize * TILE_HEIGHT + ty as usize;
    let inside = row < height && col < width;
    let pixel = row * width + col;
    let set = inside && detected(*image.get_unchecked(pixel), level);

    // The warp is the tile row: its ballot is the row's mask.
    let bits = ballot(set);
    if tx == 0 {
        *rows.add(ty as usize) = bits;
    }
    let local = ty * TILE_WIDTH as u32 + tx;
    let start = run_start(bits, tx);
    if set {
        *parent.add(local as usize) = local - tx + start;
    }
    thread::sync_threads();

    let parents = SharedParents(shared_address(parent));
    if set && ty > 0 {
        let above = *rows.add(ty as usize - 1);
        let up = local - TILE_WIDTH as u32;
        // The neighbours above: the pixel straight up, and with 8 neighbours its two corners.
        let first = if connectivity == 8 && tx > 0 { tx - 1 } else { tx };
        let last = if connectivity == 8 && tx + 1 < TILE_WIDTH as u32 { tx + 1 } else { tx };
        let mut c = first;
        while c <= last {
            if above >> c & 1 == 1 && (start == tx || run_start(above, c) == c) {
                join(&parents, local, up - tx + c);
            }
            c += 1;
        }
    }
    thread::sync_threads();

    if inside {
        let value = if set {
            let root = find(&parents, local);
            let (root_row, root_col) = (root as usize / TILE_WIDTH, root as usize % TILE_WIDTH);
            ((row - ty as usize + root_row) * width + col - tx as usize + root_col) as u32
        } else {
            BACKGROUND
        };
        *labels.add(pixel) = value;
    }
}

/// # Safety
/// The launcher (`MergeArgs`) guarantees: `labels` holds `width · height` values, fewer than
/// `BACKGROUND`; the grid has one block per tile (`x` the tile column, `y` the tile row) of
/// `MERGE_BLOCK` threads. The labels are right when they are the parents `label_tiles` wrote
/// for the same image and `connectivity`; any other values give wrong labels, never an access
/// outside the array or an endless path (see `GlobalParents`).
#[kernel]
pub unsafe fn label_merge(width: usize, height: usize, connectivity: u32, labels: *mut u32) {
    let parents = GlobalParents(labels);
    let t = thread::thread_idx_x() as usize;
    let col0 = thread::block_idx_x() as usize * TILE_WIDTH;
    let row0 = thread::block_idx_y() as usize * TILE_HEIGHT;
    let reach = if connectivity == 8 { 1 } else { 0 };
    let set = |pixel: usize| read_volatile(labels.add(pixel)) != BACKGROUND;

    // The top edge: pixel (row0, col0 + t) and its neighbours in the row above.
    let col = col0 + t;
    if row0 > 0 && col < width && set(row0 * width + col) {
        let pixel = row0 * width + col;
        let mut c = col.saturating_sub(reach);
        while c <= col + reach && c < width {
            let other = (row0 - 1) * width + c;
            if set(other) {
                join(&parents, pixel as u32, other as u32);
            }
            c += 1;
        }
    }
    // The left edge: pixel (row0 + t, col0) and its neighbours in the column to its left
    // (with 8 neighbours, the one below-left is the only pair no top edge sees).
    let row = row0 + t;
    if col0 > 0 && t < TILE_HEIGHT && row < height && set(row * width + col0) {
        let pixel = row * width + col0;
        let mut r = row.saturating_sub(reach);
        while r <= row + reach && r < height {
            let other = r * width + col0 - 1;
            if set(other) {
                join(&parents, pixel as u32, other as u32);
            }
            r += 1;
        }
    }
}

/// # Safety
/// The launcher (`FlattenArgs`) guarantees: `labels` and `roots` hold `n` values each, `n`
/// below `BACKGROUND`, and do not overlap; one-dimensional blocks, at least `n` threads in
/// all. The labels are right when `label_merge` ran on them (as for it, other values give
/// wrong labels, never an access outside the arrays).
#[kernel]
pub unsafe fn label_flatten(labels: *mut u32, roots: *mut u32, n: usize) {
    let i = global_index();
    if i >= n {
        return;
    }
    let parent = *labels.add(i);
    // A parent above the pixel is the background's BACKGROUND (or memory no kernel wrote).
    if parent < i as u32 {
        // Other threads shorten the same paths meanwhile, to ancestors: any is on the way.
        *labels.add(i) = find(&GlobalParents(labels), parent);
    }
    *roots.add(i) = (parent == i as u32) as u32;
}

/// # Safety
/// The launcher (`RenumberArgs`) guarantees: `labels` holds `ranks.len()` values (at least
/// one), `count` one value, and neither overlaps the other or `ranks`; one-dimensional
/// blocks, at least `ranks.len()` threads in all. The labels are right when `labels` holds
/// the flattened parents (`label_flatten` ran) and `ranks` the exclusive sum of its root
/// marks; a parent outside `ranks` becomes label 0.
#[kernel]
pub unsafe fn label_renumber(labels: *mut u32, ranks: &[u32], count: *mut u32) {
    let i = global_index();
    let n = ranks.len();
    if i >= n {
        return;
    }
    let root = *labels.add(i);
    *labels.add(i) = if (root as usize) < n { *ranks.get_unchecked(root as usize) + 1 } else { 0 };
    if i == n - 1 {
        *count = *ranks.get_unchecked(i) + (root == i as u32) as u32;
    }
}
