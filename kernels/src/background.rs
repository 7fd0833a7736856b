//! Background and noise maps as BANE (AegeanTools) makes them: on a coarse grid, the
//! σ-clipped median and standard deviation of the pixels in a box around each point, then
//! both interpolated bilinearly to every pixel, with the signal-to-noise image beside them.
//!
//! **The one idea: a clipping round needs one value of rank, not an order.** A round keeps the
//! values strictly inside median ± κσ of the values kept so far, so what is kept is always the
//! box's values inside one open interval `(lo, hi)`, and a round needs their count, their sum,
//! their squared deviations and their median: the value of rank `⌊(n − 1)/2⌋` (and the next,
//! for an even count). A value of given rank is found without sorting by narrowing its range:
//! a histogram of the range's values in [`BINS`] bins of equal width, a scan of it for the bin
//! that holds the rank, then the range of that bin; once a range holds at most [`CANDIDATES`]
//! values, each thread ranks one of them against the others. Every step is a pass over the
//! box in shared memory, where sorting it (the earlier way) took a bitonic network of
//! `log2(n)·(log2(n) + 1)/2` passes.
//!
//! **`background_grid`: one block of `THREADS` per grid point** (a one-dimensional grid,
//! point `(gy, gx)` in block `gy · columns + gx`, so no grid dimension limits the image).
//! 1. The box's pixels go to shared memory in the box's row-major order, -0.0 as 0.0 (so that
//!    equal values are equal bits); NaN and ±∞ stay and are never inside the window.
//! 2. Rounds as BANE's `sigmaclip`, the first over every finite pixel: count, sum, least and
//!    greatest of the values inside the window; stop when it keeps none (the last statistics
//!    stand; NaN, NaN for a box with no finite pixel) or as many as the last round; the mean,
//!    the squared deviations, the median; then the next window, `rounds` times at most.
//!    Thread `t` adds the values `t, t + THREADS, …` of the box that the window keeps, in
//!    f64, and the block adds the partials in the order `interface::background::block_sum`
//!    writes out, with the arithmetic of `interface::background`, rounded op by op: the CPU
//!    adds in that order and gets the same bits. The median is a value of the box (or the mean
//!    of two), however it is found. A pass tests each value against the window's bounds in f32
//!    (`interface::background::kept_bounds`, which keep what the window in f64 keeps) and bins
//!    it in f32: converting every value to f64, as the window is, made a conversion each pass
//!    the most of the kernel's instructions.
//! 3. Thread 0 writes the median and σ as the point's two f64, and when asked the count of the
//!    box's finite pixels (by which a second pass tells how much of a box its mask took).
//!
//! A second pass's box that its mask left whole holds the first pass's pixels, so its values
//! would come out the same: the mask marks the tiles (a grid step square) where it left a
//! pixel out, and a block whose box overlaps no marked tile keeps the first pass's values,
//! which its caller put in the grid, and stops before loading the box.
//!
//! **`background_interpolate`: one thread per pixel.** The pixel's cell of the grid, the four
//! corners' weights (`interface::background::cell`, `weights`), the NaN-aware bilinear
//! interpolation of both fields (`interpolate`), and the S/N when asked; NaN wherever the pixel
//! is not finite, as BANE masks its maps. For a second pass it also writes the image masked:
//! NaN where the S/N is above a level, the pixel elsewhere, and counts the pixels it left out
//! and marks their tiles.
//! The grid is small and read through the caches; the image is read once and the maps written
//! once. A pixel also costs a few correctly rounded
//! f64 divisions (the cell's fractions, by the weights' sum where it is not exactly 1, the
//! S/N), the same ones the CPU reference makes.
//!
//! **`background_least_noise`: one thread per grid point.** A second pass masks the pixels
//! above the sky, and the sky's noise must be one that the bright emission it masks has not
//! inflated: each point takes the least noise of the points within a reach of it along each
//! axis (NaN points left out, NaN only where all are), and keeps its background, so that the
//! first pass's grid need not go to the host and back for it.
//!
//! **`background_fill`: one block for the whole grid.** A second pass's point whose box its
//! mask took most of is no measure of the sky: it is made NaN, and so is one whose box lost
//! every pixel; each such point that had a value in the first pass then takes, round by round,
//! the mean of its neighbours that had one at the round's start, until none is left (or none
//! can be reached: those keep the first pass's). A round's means all read the grid before any
//! is written, so they need the whole grid's barrier: one block runs every round, over a list
//! of the points still empty (few: a core, a shell), made with a shared counter. The grid
//! stays on the GPU between the passes.
//!
//! **Cost.** A round is mostly three passes over the box, with a barrier each: the count, sum
//! and range; the squared deviations with the range's histogram; the chosen bin's values as the
//! candidates, ranked for both middle values at once. A bin too full to rank takes two passes
//! more (its range narrowed, and its histogram), and an even count whose middle values fall in
//! two bins one more for the second. Boxes overlap (BANE's box is six steps), so each pixel is
//! read in 36 boxes.

use crate::{shared_address, unroll};
use core::arch::asm;
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use cuda_std::shared_array;
use interface::background::{
    add, add_square, bin, box_range, cell, grid_coordinate, grid_points, interpolate, kept_bounds, mean, median, next,
    snr, std, tile_span, tiles, weights, window, BinScale, BACKGROUND, BINS_PER_THREAD, CANDIDATES, FIELDS, FILL_NONE,
    NOISE, PICK_BELOW, PICK_BIN, PICK_COUNT, PICK_NEXT, PICK_PLACED, PICK_VALUE, SHARED_BINS, SHARED_CANDIDATES,
    SHARED_COUNTS, SHARED_HEADER, SHARED_LEAST, SHARED_MOST, SHARED_PICK, SHARED_SQUARES, SHARED_SUMS, THREADS, WARPS,
};

/// The whole part of `value`, 0 to 2^23: 2^23 added rounding towards zero leaves it in the
/// low bits (`interface::background::bin` asks for it).
#[inline(always)]
fn truncate(value: f32) -> u32 {
    let shifted: f32;
    // SAFETY: an addition between registers; it reads and writes no memory.
    unsafe { asm!("add.rz.f32 {o}, {v}, 0f4B000000;", o = out(reg32) shifted, v = in(reg32) value) };
    shifted.to_bits() - 0x4B00_0000
}

/// `value` of the lane `mask` away, 32 bits at a time.
#[inline(always)]
unsafe fn butterfly(value: f64, mask: u32) -> f64 {
    let bits = value.to_bits();
    let (low, high): (u32, u32);
    asm!("shfl.sync.bfly.b32 {o}, {v}, {m}, 31, 0xffffffff;", o = out(reg32) low, v = in(reg32) bits as u32, m = in(reg32) mask);
    asm!("shfl.sync.bfly.b32 {o}, {v}, {m}, 31, 0xffffffff;", o = out(reg32) high, v = in(reg32) (bits >> 32) as u32, m = in(reg32) mask);
    f64::from_bits((high as u64) << 32 | low as u64)
}

/// The sum of `value` over the warp, in every lane: lanes 16 apart first, then 8, 4, 2, 1
/// (`interface::background::warp_tree`).
#[inline(always)]
unsafe fn warp_total(value: f64) -> f64 {
    let mut v = value;
    v = v + butterfly(v, 16);
    v = v + butterfly(v, 8);
    v = v + butterfly(v, 4);
    v = v + butterfly(v, 2);
    v + butterfly(v, 1)
}

/// The sum of every thread's `partial`, in every thread (`interface::background::block_sum`).
/// `totals` holds `WARPS` f64 of shared memory that no thread reads from an earlier call.
#[inline(always)]
unsafe fn block_total(partial: f64, totals: *mut f64) -> f64 {
    let tid = thread::thread_idx_x() as usize;
    let lane = tid % 32;
    let warp = warp_total(partial);
    if lane == 0 {
        *totals.add(tid / 32) = warp;
    }
    thread::sync_threads();
    warp_total(if lane < WARPS { *totals.add(lane) } else { 0.0 })
}

/// `value` of the lane `mask` away.
#[inline(always)]
unsafe fn butterfly_u32(value: u32, mask: u32) -> u32 {
    let out: u32;
    asm!("shfl.sync.bfly.b32 {o}, {v}, {m}, 31, 0xffffffff;", o = out(reg32) out, v = in(reg32) value, m = in(reg32) mask);
    out
}

/// A tally of values kept by a window: how many, the least and the greatest.
#[derive(Clone, Copy)]
struct Tally {
    count: u32,
    least: f32,
    most: f32,
}

impl Tally {
    const EMPTY: Tally = Tally { count: 0, least: f32::INFINITY, most: f32::NEG_INFINITY };

    #[inline(always)]
    fn with(self, v: f32) -> Tally {
        Tally { count: self.count + 1, least: self.least.min(v), most: self.most.max(v) }
    }

    #[inline(always)]
    fn merge(self, other: Tally) -> Tally {
        Tally { count: self.count + other.count, least: self.least.min(other.least), most: self.most.max(other.most) }
    }

    /// The tally of the whole warp, in every lane.
    #[inline(always)]
    unsafe fn warp(mut self) -> Tally {
        let mut mask = 16;
        while mask > 0 {
            let other = Tally {
                count: butterfly_u32(self.count, mask),
                least: f32::from_bits(butterfly_u32(self.least.to_bits(), mask)),
                most: f32::from_bits(butterfly_u32(self.most.to_bits(), mask)),
            };
            self = self.merge(other);
            mask /= 2;
        }
        self
    }
}

/// The shared memory of a `background_grid` block (`interface::background::SHARED_HEADER`).
struct Scratch {
    sums: *mut f64,
    squares: *mut f64,
    counts: *mut u32,
    least: *mut f32,
    most: *mut f32,
    pick: *mut u32,
    bins: *mut u32,
    candidates: *mut f32,
    values: *mut f32,
    /// `values` as a `.shared` address: the passes over the box load by 32-bit offsets.
    values_at: u32,
}

impl Scratch {
    #[inline(always)]
    unsafe fn new() -> Scratch {
        let shared = dynamic_shared_mem::<u8>();
        Scratch {
            sums: shared.add(SHARED_SUMS) as *mut f64,
            squares: shared.add(SHARED_SQUARES) as *mut f64,
            counts: shared.add(SHARED_COUNTS) as *mut u32,
            least: shared.add(SHARED_LEAST) as *mut f32,
            most: shared.add(SHARED_MOST) as *mut f32,
            pick: shared.add(SHARED_PICK) as *mut u32,
            bins: shared.add(SHARED_BINS) as *mut u32,
            candidates: shared.add(SHARED_CANDIDATES) as *mut f32,
            values: shared.add(SHARED_HEADER) as *mut f32,
            values_at: crate::shared_address(shared.add(SHARED_HEADER)),
        }
    }

    /// Value `q` of the box.
    ///
    /// # Safety
    /// `q` is below the box's area, its values written and seen.
    #[inline(always)]
    unsafe fn value(&self, q: u32) -> f32 {
        crate::load_shared_f32(self.values_at + 4 * q)
    }

    /// The block's tally from every thread's `mine`, in every thread. The tally slots must not
    /// be read from an earlier call that no barrier has closed since.
    #[inline(always)]
    unsafe fn block_tally(&self, mine: Tally) -> Tally {
        let tid = thread::thread_idx_x() as usize;
        let warp = mine.warp();
        if tid % 32 == 0 {
            *self.counts.add(tid / 32) = warp.count;
            *self.least.add(tid / 32) = warp.least;
            *self.most.add(tid / 32) = warp.most;
        }
        thread::sync_threads();
        self.read_tally()
    }

    /// The warps' tallies, merged.
    #[inline(always)]
    unsafe fn read_tally(&self) -> Tally {
        let mut all = Tally::EMPTY;
        for w in 0..WARPS {
            all = all.merge(Tally { count: *self.counts.add(w), least: *self.least.add(w), most: *self.most.add(w) });
        }
        all
    }
}

/// Whether `v` lies in the window's bounds (`interface::background::kept_bounds`): never for
/// NaN or ±∞.
#[inline(always)]
fn kept(v: f32, (least, most): (f32, f32)) -> bool {
    v >= least && v <= most
}

/// Count, sum, least and greatest of the box's `area` values inside `limits`: one pass and one
/// barrier. The sum is the block's in `interface::background::block_sum`'s order.
#[inline(always)]
unsafe fn first_moments(s: &Scratch, area: u32, limits: (f32, f32)) -> (Tally, f64) {
    let tid = thread::thread_idx_x();
    let (mut mine, mut partial) = (Tally::EMPTY, 0.0);
    each_value(s, area, |v| {
        if kept(v, limits) {
            mine = mine.with(v);
            partial = add(partial, v as f64);
        }
    });
    let lane = tid as usize % 32;
    let sum = warp_total(partial);
    let warp = mine.warp();
    if lane == 0 {
        let w = tid as usize / 32;
        *s.sums.add(w) = sum;
        *s.counts.add(w) = warp.count;
        *s.least.add(w) = warp.least;
        *s.most.add(w) = warp.most;
    }
    thread::sync_threads();
    let total = warp_total(if lane < WARPS { *s.sums.add(lane) } else { 0.0 });
    (s.read_tally(), total)
}

/// `visit` called with each of the box's `area` values that this thread takes: values `t`,
/// `t + THREADS`, … for thread `t`, in that order (the order of its partial sums).
#[inline(always)]
unsafe fn each_value(s: &Scratch, area: u32, mut visit: impl FnMut(f32)) {
    let mut q = thread::thread_idx_x();
    while q < area {
        visit(s.value(q));
        q += THREADS as u32;
    }
}

/// Adds `v` to the histogram at `bins` (a `.shared` address) of the range from `least` at
/// `scale` ([`bin`]).
#[inline(always)]
unsafe fn count(bins: u32, v: f32, least: f32, scale: BinScale) {
    let at = bins + 4 * bin(v, least, scale, truncate) as u32;
    asm!("red.shared.add.u32 [{a}], 1;", a = in(reg32) at);
}

/// The sum of the squared deviations from `average` of the values inside `limits`, and where
/// `histogram` gives a range's least and scale (the range of all those values, to be
/// narrowed), their histogram in the same pass: both need only what the first pass found.
/// Its bins were left zero by the last scan or the launch.
#[inline(always)]
unsafe fn squared_deviations(
    s: &Scratch,
    area: u32,
    limits: (f32, f32),
    average: f64,
    histogram: Option<(f32, BinScale)>,
) -> f64 {
    let mut partial = 0.0;
    match histogram {
        Some((least, scale)) => {
            let bins = crate::shared_address(s.bins);
            each_value(s, area, |v| {
                if kept(v, limits) {
                    partial = add_square(partial, v, average);
                    count(bins, v, least, scale);
                }
            });
        }
        None => each_value(s, area, |v| {
            if kept(v, limits) {
                partial = add_square(partial, v, average);
            }
        }),
    }
    block_total(partial, s.squares)
}

/// The values of rank `rank` and `rank + 1` (0 for the least) among the box's values that the
/// window keeps, of which `range` tallies them all: the values from its least to its greatest,
/// which the window holds. The second is `None` where the values it narrowed the search to do
/// not hold it ([`successor`] finds it then). `counted` says that the bins hold the histogram of
/// `range` already. Every thread calls it and gets the values.
#[inline(always)]
unsafe fn select(s: &Scratch, area: u32, mut rank: u32, mut range: Tally, mut counted: bool) -> (f32, Option<f32>) {
    let tid = thread::thread_idx_x();
    let inside = |v: f32, r: &Tally| v >= r.least && v <= r.most;
    let bins = crate::shared_address(s.bins);
    loop {
        if range.least == range.most {
            // The tally slots were read since the last barrier, and the caller's next pass
            // writes them.
            thread::sync_threads();
            return (range.least, if rank + 1 < range.count { Some(range.least) } else { None });
        }
        if range.count as usize <= CANDIDATES {
            let all = range;
            return rank_candidates(s, area, rank, range.count, |v| inside(v, &all));
        }
        let scale = BinScale::of(range.least, range.most);
        if !counted {
            let whole = range;
            each_value(s, area, |v| {
                if inside(v, &whole) {
                    count(bins, v, whole.least, scale);
                }
            });
            thread::sync_threads();
        }
        counted = false;
        // The histogram's scan: each thread takes BINS_PER_THREAD bins in a row; the thread
        // whose bins hold the rank records that bin, and each zeroes its bins for the next
        // histogram.
        let first = tid as usize * BINS_PER_THREAD;
        let mut own = 0;
        for i in 0..BINS_PER_THREAD {
            own += *s.bins.add(first + i);
        }
        let mut below = exclusive_scan(own, s.counts);
        for i in 0..BINS_PER_THREAD {
            let count = *s.bins.add(first + i);
            *s.bins.add(first + i) = 0;
            if below <= rank && rank < below + count {
                *s.pick.add(PICK_BIN) = (first + i) as u32;
                *s.pick.add(PICK_BELOW) = below;
                *s.pick.add(PICK_COUNT) = count;
            }
            below += count;
        }
        thread::sync_threads();
        let (chosen, skipped, count) =
            (*s.pick.add(PICK_BIN) as usize, *s.pick.add(PICK_BELOW), *s.pick.add(PICK_COUNT));
        rank -= skipped;
        let whole = range;
        let in_chosen = move |v: f32| inside(v, &whole) && bin(v, whole.least, scale, truncate) == chosen;
        // Few enough: the chosen bin's values are the candidates, with no pass to narrow the
        // range to them first.
        if count as usize <= CANDIDATES {
            return rank_candidates(s, area, rank, count, in_chosen);
        }
        // The chosen bin's values are the range's values between its least and its greatest.
        let mut mine = Tally::EMPTY;
        each_value(s, area, |v| {
            if in_chosen(v) {
                mine = mine.with(v);
            }
        });
        let narrowed = s.block_tally(mine);
        range = Tally { count, ..narrowed };
    }
}

/// The values of rank `rank` and `rank + 1` among the `count` values (at most [`CANDIDATES`])
/// for which `wanted` holds: gathered (in any order), then each ranked by a thread against all;
/// the second `None` where `rank + 1` is not below `count`.
#[inline(always)]
unsafe fn rank_candidates(
    s: &Scratch,
    area: u32,
    rank: u32,
    count: u32,
    wanted: impl Fn(f32) -> bool,
) -> (f32, Option<f32>) {
    let tid = thread::thread_idx_x();
    let placed = crate::shared_address(s.pick.add(PICK_PLACED));
    each_value(s, area, |v| {
        if wanted(v) {
            let at: u32;
            asm!("atom.shared.add.u32 {o}, [{a}], 1;", o = out(reg32) at, a = in(reg32) placed);
            *s.candidates.add(at as usize) = v;
        }
    });
    thread::sync_threads();
    if tid == 0 {
        *s.pick.add(PICK_PLACED) = 0;
    }
    if tid < count {
        let v = *s.candidates.add(tid as usize);
        let (mut less, mut equal, mut equal_before) = (0, 0, 0);
        // A counted `while`, not a range: a range's step tests for overflow, and its loop
        // neither unrolls nor vectorizes its shared loads.
        let mut j = 0;
        while j < count {
            let other = *s.candidates.add(j as usize);
            less += (other < v) as u32;
            equal += (other == v) as u32;
            equal_before += (other == v && j < tid) as u32;
            j += 1;
        }
        // One writer of each: the first of the candidates equal to the value of that rank.
        if equal_before == 0 {
            if less <= rank && rank < less + equal {
                *s.pick.add(PICK_VALUE) = v.to_bits();
            }
            if less <= rank + 1 && rank + 1 < less + equal {
                *s.pick.add(PICK_NEXT) = v.to_bits();
            }
        }
    }
    thread::sync_threads();
    let next = if rank + 1 < count { Some(f32::from_bits(*s.pick.add(PICK_NEXT))) } else { None };
    (f32::from_bits(*s.pick.add(PICK_VALUE)), next)
}

/// The value of rank `rank + 1` among the values inside `limits`, given `lower`, that of rank
/// `rank`: `lower` again if more than `rank + 1` values are at most it, else the least above it.
#[inline(always)]
unsafe fn successor(s: &Scratch, area: u32, limits: (f32, f32), rank: u32, lower: f32) -> f32 {
    let (mut at_most, mut above) = (0u32, Tally::EMPTY);
    each_value(s, area, |v| {
        if kept(v, limits) {
            if v <= lower {
                at_most += 1;
            } else {
                above = above.with(v);
            }
        }
    });
    let tally = s.block_tally(Tally { count: at_most, ..above });
    // The next round's first pass writes the tally's slots again.
    thread::sync_threads();
    if tally.count > rank + 1 {
        lower
    } else {
        tally.least
    }
}

/// The exclusive prefix sum of `value` over the block's threads, in thread order; `totals`
/// holds `WARPS` u32 that no thread reads from an earlier call no barrier has closed since.
#[inline(always)]
unsafe fn exclusive_scan(value: u32, totals: *mut u32) -> u32 {
    let tid = thread::thread_idx_x() as usize;
    let lane = (tid % 32) as u32;
    let mut inclusive = value;
    let mut delta = 1;
    while delta < 32 {
        let from: u32;
        asm!("shfl.sync.up.b32 {o}, {v}, {d}, 0, 0xffffffff;", o = out(reg32) from, v = in(reg32) inclusive, d = in(reg32) delta);
        if lane >= delta {
            inclusive += from;
        }
        delta *= 2;
    }
    if lane == 31 {
        *totals.add(tid / 32) = inclusive;
    }
    thread::sync_threads();
    // Every warp's total is read, those before this one's kept: a loop of fixed length.
    let mut before = 0;
    for w in 0..WARPS {
        let total = *totals.add(w);
        before += if w < tid / 32 { total } else { 0 };
    }
    before + inclusive - value
}

/// Whether the mask marked any tile of `touched` that the box `(x0, x1) × (y0, y1)` overlaps:
/// each thread reads some of them, and the block's barrier ORs every thread's answer.
#[inline(always)]
unsafe fn box_touched(
    touched: *const u32,
    (x0, x1): (u32, u32),
    (y0, y1): (u32, u32),
    (step_x, step_y): (u32, u32),
    width: u32,
) -> bool {
    let row = tiles(width, step_x);
    let (tx0, tx1) = tile_span(x0, x1, step_x);
    let (ty0, ty1) = tile_span(y0, y1, step_y);
    let span = tx1 - tx0;
    let mut marked = 0;
    let mut k = thread::thread_idx_x();
    while k < span * (ty1 - ty0) {
        marked |= *touched.add(((ty0 + k / span) * row + tx0 + k % span) as usize);
        k += THREADS as u32;
    }
    thread::sync_threads_or(marked) != 0
}

/// # Safety
/// The launcher (`GridArgs` on the host) guarantees: `image` holds `width · height` pixels,
/// 1 to 2^32 − 1 of them; `step_x`, `step_y`, `box_x` and `box_y` are at least 1; the launch's
/// dynamic shared memory holds `SHARED_HEADER` bytes and then an f32 for every pixel of the
/// largest box cut to the image; `grid` holds `FIELDS` f64 per grid point
/// (`grid_points` along each axis) and overlaps no input; `finite` is null or holds a u32 per
/// grid point and overlaps nothing else; `touched` is null or holds a u32 per tile (`tiles`
/// of `step_x` by `step_y` pixels) and overlaps no output (a block it skips writes nothing, so
/// `grid`, and `finite` unless null, hold the first pass's values); blocks of `THREADS`
/// threads, one per grid point, in a one-dimensional grid.
#[kernel]
pub unsafe fn background_grid(
    image: &[f32],
    width: usize,
    height: usize,
    step_x: u32,
    step_y: u32,
    box_x: u32,
    box_y: u32,
    kappa: f64,
    rounds: u32,
    grid: *mut f64,
    finite: *mut u32,
    touched: *const u32,
) {
    let s = Scratch::new();
    let tid = thread::thread_idx_x();
    let (w, h) = (width as u32, height as u32);
    let point = thread::block_idx_x();
    let (columns, rows) = (grid_points(w, step_x), grid_points(h, step_y));
    let cx = grid_coordinate(point % columns, w, step_x, columns);
    let cy = grid_coordinate(point / columns, h, step_y, rows);
    let (x0, x1) = box_range(cx, w, box_x);
    let (y0, y1) = box_range(cy, h, box_y);
    // A second pass keeps the first's values for a box that its mask left whole.
    if !touched.is_null() && !box_touched(touched, (x0, x1), (y0, y1), (step_x, step_y), w) {
        return;
    }
    let (box_columns, area) = (x1 - x0, (x1 - x0) * (y1 - y0));
    let mut q = tid;
    while q < area {
        let v = *image.get_unchecked((y0 + q / box_columns) as usize * width + (x0 + q % box_columns) as usize);
        // -0.0 becomes 0.0: a value of some rank has one set of bits.
        *s.values.add(q as usize) = if v == 0.0 { 0.0 } else { v };
        q += THREADS as u32;
    }
    for i in 0..BINS_PER_THREAD {
        *s.bins.add(tid as usize * BINS_PER_THREAD + i) = 0;
    }
    if tid == 0 {
        *s.pick.add(PICK_PLACED) = 0;
    }
    thread::sync_threads();

    let mut limits = (f64::NEG_INFINITY, f64::INFINITY);
    let (mut middle, mut sigma) = (f64::NAN, f64::NAN);
    let mut last_count = 0;
    let mut round = 0;
    loop {
        let bounds = kept_bounds(limits);
        let (range, sum) = first_moments(&s, area, bounds);
        if round == 0 && tid == 0 && !finite.is_null() {
            *finite.add(point as usize) = range.count;
        }
        if range.count == 0 || range.count == last_count {
            break;
        }
        let average = mean(sum, range.count);
        // A range to narrow has its first histogram counted in the pass of the deviations.
        let narrowing = range.least != range.most && range.count as usize > CANDIDATES;
        let histogram = if narrowing { Some((range.least, BinScale::of(range.least, range.most))) } else { None };
        sigma = std(squared_deviations(&s, area, bounds, average, histogram), range.count);
        let rank = (range.count - 1) / 2;
        let (lower, next) = select(&s, area, rank, range, narrowing);
        let upper = match next {
            _ if range.count % 2 == 1 => lower,
            Some(next) => next,
            None => successor(&s, area, bounds, rank, lower),
        };
        middle = median(lower, upper);
        if round == rounds {
            break;
        }
        let (low, high) = window(middle, sigma, kappa);
        limits = (limits.0.max(low), limits.1.min(high));
        last_count = range.count;
        round += 1;
    }
    if tid == 0 {
        let out = grid.add(point as usize * FIELDS);
        *out.add(BACKGROUND) = middle;
        *out.add(NOISE) = sigma;
    }
}

/// # Safety
/// The launcher (`InterpolateArgs` on the host) guarantees: `image` holds `width · height`
/// pixels, 1 to 2^32 − 1 of them; `step_x` and `step_y` are at least 1; `grid` holds `FIELDS`
/// f64 per grid point; `background` and `noise`, and `snr` and `masked` unless null, hold
/// `width · height` f32 each and overlap neither each other nor an input; `masked_count` and
/// `touched` are null where `masked` is, else one u32 and a u32 per tile (`tiles` of `step_x`
/// by `step_y` pixels) that overlap nothing else; one-dimensional blocks give at least one
/// thread per pixel.
#[kernel]
pub unsafe fn background_interpolate(
    image: &[f32],
    width: usize,
    height: usize,
    step_x: u32,
    step_y: u32,
    grid: &[f64],
    background: *mut f32,
    noise: *mut f32,
    snr_out: *mut f32,
    mask_level: f64,
    masked: *mut f32,
    masked_count: *mut u32,
    touched: *mut u32,
) {
    let t = thread::block_idx_x() as usize * thread::block_dim_x() as usize + thread::thread_idx_x() as usize;
    let n = width * height;
    if t >= n {
        return;
    }
    let pixel = *image.get_unchecked(t);
    if !pixel.is_finite() {
        *background.add(t) = f32::NAN;
        *noise.add(t) = f32::NAN;
        if !snr_out.is_null() {
            *snr_out.add(t) = f32::NAN;
        }
        if !masked.is_null() {
            *masked.add(t) = pixel;
        }
        return;
    }
    let (w, h) = (width as u32, height as u32);
    let (y, x) = (t as u32 / w, t as u32 % w);
    let (columns, rows) = (grid_points(w, step_x), grid_points(h, step_y));
    let (r0, fy) = cell(y, h, step_y, rows);
    let (c0, fx) = cell(x, w, step_x, columns);
    let (r1, c1) = (next(r0, rows), next(c0, columns));
    let corner = |r: u32, c: u32, field: usize| *grid.get_unchecked((r * columns + c) as usize * FIELDS + field);
    let corners = |field| [corner(r0, c0, field), corner(r0, c1, field), corner(r1, c0, field), corner(r1, c1, field)];
    let weights = weights(fy, fx);
    let level = interpolate(corners(BACKGROUND), weights);
    let sigma = interpolate(corners(NOISE), weights);
    *background.add(t) = level as f32;
    *noise.add(t) = sigma as f32;
    let ratio = snr(pixel, level, sigma);
    if !snr_out.is_null() {
        *snr_out.add(t) = ratio;
    }
    // The mask of a second pass: the pixel left out (NaN) where its S/N is above the level.
    if !masked.is_null() {
        let above = ratio as f64 > mask_level;
        *masked.add(t) = if above { f32::NAN } else { pixel };
        if above {
            let tile = touched.add(((y / step_y) * tiles(w, step_x) + x / step_x) as usize);
            asm!("red.global.add.u32 [{c}], 1;", c = in(reg64) masked_count);
            asm!("red.global.or.b32 [{t}], 1;", t = in(reg64) tile);
        }
    }
}

/// # Safety
/// The launcher (`LeastNoiseArgs` on the host) guarantees: `grid` holds `FIELDS` f64 for each
/// of `rows · columns` points, 1 to 2^31 − 1 of them; `sky` holds as many and overlaps it not;
/// one-dimensional blocks give at least one thread per point.
#[kernel]
pub unsafe fn background_least_noise(grid: &[f64], rows: u32, columns: u32, reach_y: u32, reach_x: u32, sky: *mut f64) {
    let point = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    if point >= rows * columns {
        return;
    }
    let (row, column) = (point / columns, point % columns);
    // The window cut to the grid, without passing either end of a u32.
    let (top, bottom) = (row - row.min(reach_y), row + (rows - 1 - row).min(reach_y) + 1);
    let (left, right) = (column - column.min(reach_x), column + (columns - 1 - column).min(reach_x) + 1);
    let mut least = f64::NAN;
    for r in top..bottom {
        for c in left..right {
            least = least.min(*grid.get_unchecked((r * columns + c) as usize * FIELDS + NOISE));
        }
    }
    let out = sky.add(point as usize * FIELDS);
    *out.add(BACKGROUND) = *grid.get_unchecked(point as usize * FIELDS + BACKGROUND);
    *out.add(NOISE) = least;
}

/// # Safety
/// The launcher (`FillArgs` on the host) guarantees: `grid` and `first` hold `FIELDS · points`
/// values, `before` and `after` `points` counts, `lists` `2 · points` words and `means`
/// `points` values, 1 to 2^31 − 1 points of `columns` a row, none of the buffers overlapping;
/// one block of `FILL_BLOCK` threads.
#[kernel]
pub unsafe fn background_fill(
    grid: *mut f64,
    first: &[f64],
    before: &[u32],
    after: &[u32],
    points: u32,
    columns: u32,
    at_most: f64,
    lists: *mut u32,
    means: *mut f64,
) {
    let counts = shared_array![u32; 2];
    let t = thread::thread_idx_x();
    let threads = thread::block_dim_x();
    // The crowded points: more than `at_most` of their box's finite pixels left out.
    let mut p = t;
    while p < points {
        let finite = *before.get_unchecked(p as usize);
        let left = *after.get_unchecked(p as usize);
        if finite.wrapping_sub(left) as f64 > at_most * finite as f64 {
            *grid.add(p as usize * FIELDS + BACKGROUND) = f64::NAN;
            *grid.add(p as usize * FIELDS + NOISE) = f64::NAN;
        }
        p += threads;
    }
    fill_field(grid, first, points, columns, lists, means, counts, BACKGROUND);
    fill_field(grid, first, points, columns, lists, means, counts, NOISE);
}

/// `background_fill`'s rounds over one field of the grid (`BACKGROUND` or `NOISE`): its empty
/// points listed, then filled round by round; `counts` is the block's two shared counters.
///
/// # Safety
/// As `background_fill`'s; every thread of the block calls it together, after the drop.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn fill_field(
    grid: *mut f64,
    first: &[f64],
    points: u32,
    columns: u32,
    lists: *mut u32,
    means: *mut f64,
    counts: *mut u32,
    field: usize,
) {
    let (t, threads, rows) = (thread::thread_idx_x(), thread::block_dim_x(), points / columns);
    let value = |p: u32| *grid.add(p as usize * FIELDS + field);
    if t == 0 {
        *counts = 0;
    }
    thread::sync_threads();
    let mut p = t;
    while p < points {
        if value(p).is_nan() && !first.get_unchecked(p as usize * FIELDS + field).is_nan() {
            *lists.add(atomic_increment(counts) as usize) = p;
        }
        p += threads;
    }
    thread::sync_threads();
    let (mut list, mut next) = (lists, lists.add(points as usize));
    let mut empty = *counts;
    while empty > 0 {
        thread::sync_threads();
        if t == 0 {
            *counts.add(1) = 0;
        }
        thread::sync_threads();
        // Each listed point's mean, from the grid as the round found it; a point without a
        // neighbour goes to the next round's list, marked.
        let mut found = 0;
        let mut i = t;
        while i < empty {
            let p = *list.add(i as usize);
            let (r, c) = (p / columns, p % columns);
            let (top, left) = (r.saturating_sub(1), c.saturating_sub(1));
            let (bottom, right) = ((r + 2).min(rows), (c + 2).min(columns));
            // The window's nine loads in flight at once (NaN off the grid), then added in its
            // row-major order.
            let mut around = [f64::NAN; 9];
            unroll!([0, 1, 2, 3, 4, 5, 6, 7, 8], |k| {
                let (nr, nc) = (top + k as u32 / 3, left + k as u32 % 3);
                if nr < bottom && nc < right {
                    around[k] = value(nr * columns + nc);
                }
            });
            let (mut sum, mut count) = (0.0f64, 0u32);
            unroll!([0, 1, 2, 3, 4, 5, 6, 7, 8], |k| {
                if !around[k].is_nan() {
                    sum += around[k];
                    count += 1;
                }
            });
            if count > 0 {
                *means.add(i as usize) = sum / count as f64;
                found = 1;
            } else {
                *next.add(atomic_increment(counts.add(1)) as usize) = p;
                *list.add(i as usize) = p | FILL_NONE;
            }
            i += threads;
        }
        if thread::sync_threads_or(found) == 0 {
            // No value reaches the rest: they keep the first pass's.
            let mut i = t;
            while i < empty {
                let p = *list.add(i as usize) & !FILL_NONE;
                *grid.add(p as usize * FIELDS + field) = *first.get_unchecked(p as usize * FIELDS + field);
                i += threads;
            }
            break;
        }
        let mut i = t;
        while i < empty {
            let p = *list.add(i as usize);
            if p & FILL_NONE == 0 {
                *grid.add(p as usize * FIELDS + field) = *means.add(i as usize);
            }
            i += threads;
        }
        thread::sync_threads();
        empty = *counts.add(1);
        core::mem::swap(&mut list, &mut next);
    }
    thread::sync_threads();
}

/// Adds 1 to the shared counter and returns what it held.
///
/// # Safety
/// `counter` points into the block's shared memory.
#[inline(always)]
unsafe fn atomic_increment(counter: *mut u32) -> u32 {
    let old: u32;
    asm!("atom.shared.add.u32 {o}, [{a}], 1;", o = out(reg32) old, a = in(reg32) shared_address(counter));
    old
}
