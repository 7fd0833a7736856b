//! Elliptical Gaussians fitted to each island of an image by Levenberg–Marquardt, one block per
//! island, everything in f64: one component per summit of the island (its brightest
//! `MAX_COMPONENTS`), six parameters each, as Aegean fits them (`interface::fit` has the model,
//! the starts and the bounds).
//!
//! The one idea: a block owns an island, and the island's normal equations are small (at most
//! 48 parameters), so the whole fit (every iteration, its solve, and the errors) stays in the
//! block's shared memory; global memory is read for the island's pixels and written once.
//!
//! Indexing: block `b` fits island `b` of `islands` (label and box, `interface::fit` lays the
//! records out); inside the box, pixel `k` (raster order of the box) is at row `y_min + k / w`,
//! column `x_min + k % w`. It belongs to the island where its label is the island's. The fit
//! (2.) also takes in the pixels of no island within `FIT_MARGIN` 4-connected steps of the
//! island, from its box grown by that margin (`interface::fit::in_fit` says why).
//!
//! 1. Summits: a pixel of the island above `seed` × its noise that no neighbour (8-connected,
//!    in the island) beats on the island smoothed by a binomial kernel of half the beam's
//!    variance (`interface::fit::is_summit`, which says why; its exact weights make the sums
//!    the CPU's bit for bit). The box goes through shared memory in square tiles
//!    (`interface::fit::SUMMIT_TILE`): the island's values of a tile and its halo load
//!    together, four a thread in flight at once (a block alone on its SM, a ring's, would
//!    otherwise wait out a load's latency at every pixel; a tile where none of the island lies
//!    is passed over), every pixel of the tile
//!    and its neighbours is smoothed there once, and each thread tests its pixels of the tile
//!    against their neighbours' sums, keeping its brightest `MAX_COMPONENTS` summit keys
//!    (`summit_key`: value, then raster order) in its own slots of the tile. The block's
//!    brightest is then a `max` of the threads' heads in a shared `atom.max.u64`, the winner
//!    moving to its next, once per component, so the components are in a fixed order whatever
//!    the threads' timing. The pass also counts the island's usable pixels and its summits,
//!    and keeps the brightest pixel above the seed: the one summit of an island that has no
//!    other.
//! 2. Each iteration solves `(JᵀJ + λ D) δ = Jᵀr` (Marquardt's damping, `D` the largest
//!    diagonal of `JᵀJ` seen so far, as MINPACK scales) for the step, with `J` and `r`
//!    weighted by 1/noise, and keeps the step when the island's χ² drops (then λ shrinks
//!    tenfold, else it grows tenfold). A pass over the island evaluates the model, the
//!    Jacobian and the residual at the trial point and sums the Gram matrix `[J r]ᵀ[J r]`
//!    (`JᵀJ`, `Jᵀr` and χ² at once, `interface::fit::gram_len`):
//!    - the fit's pixels of the sample are listed once, in shared memory: the first pass
//!      reads the sample in windows of `BLOCK` pixels, a thread each, and ranks the island's
//!      among them by one ballot per warp; every later pass reads the list, and so does no
//!      search of the box, no load from global memory and none of a window's barriers (a
//!      ring's box holds some eight times the pixels that are its own). A sample too large for
//!      the list (`interface::fit::LISTED_PIXELS`) is searched at every pass;
//!    - the listed pixels write their Jacobian rows (the six derivatives of each component,
//!      then the residual) to the shared tile, a thread per pixel and component: no thread sums
//!      a pixel outside the island, a sparse island does its arithmetic with every lane busy,
//!      and so does a many-component one (each pixel's model is then summed in component
//!      order, as the CPU sums it);
//!    - when the tile is full, its rows are summed into the Gram matrix: a thread per entry
//!      (and per segment of the rows, where there are fewer entries than threads,
//!      `interface::fit::segments`), or for a large matrix a block of 4 × 4 entries a thread
//!      (`interface::fit::GRAM_BLOCK`: 8 shared loads for 16 multiply-adds, not 32), each
//!      entry adding in row order with `fma`.
//!
//!    The trial's Gram matrix goes to the second of two buffers: a rejected step costs no pass
//!    to restore the current point's.
//! 3. The solve: the damped matrix is factored as `L·D·Lᵀ` in the tile (Cholesky's
//!    factorization without its square roots), a column at a time, each column's terms taken
//!    by every entry right of it at once, a thread per entry (each thread loads all its values
//!    before it writes one), one barrier a column; one warp substitutes forward and back, a
//!    lane per row, each unknown handed to the other lanes by a shuffle.
//! 4. Converged when a step moves no parameter by more than `STEP_TOLERANCE` relative, or an
//!    accepted one lowers χ² by at most `CHI2_TOLERANCE` of it; after `MAX_ITERATIONS` the fit
//!    is flagged `NOT_CONVERGED`. The errors are the square roots of the diagonal of
//!    `(JᵀJ)⁻¹` at the solution, the covariance for the noise given (Aegean's `covar_errors`):
//!    from the inverse of the factor, a column per thread, into an array of their own (NaN
//!    where the factor does not exist, or a pivot is within `RANK_TOLERANCE` of nothing).
//! 5. Components from the residual (`interface::fit::RESIDUAL_STEPS`), where
//!    `interface::fit::residual_room` allows one more (the island fitted at every pixel, its box
//!    within `RESIDUAL_BOX_PIXELS`): the residual of the box goes to the tile as f32 (NaN off
//!    the island), one pixel a thread, and its summits above the seed level are found as the
//!    data's are, on the tile; the current point is saved, and one thread starts the step at
//!    the brightest: the split of the first component that reaches it
//!    (`interface::fit::split_at`; its bounds held in shared memory, it starts again at the
//!    summit's mirror and one more at the summit), else one more component there (at the
//!    residual's value, within the bounds of the data's). The fit
//!    runs again over all of them. Kept (`interface::fit::keeps_added`, and for a split the
//!    fit converged and both peaks kept), the new fit's errors replace the old; a split given
//!    up puts back the saved point and the held bounds and tries the one more component; that
//!    given up, the saved point comes back, and with it the errors, which the new fits did not
//!    touch.
//!
//! Memory: 94.6 KiB of shared memory, all of it the launch's dynamic memory
//! (`interface::fit::SHARED_BYTES` lays it out: 20 KiB of tile, 19.1 KiB for the two Gram
//! matrices, 7.5 KiB of parameters, bounds, scales, step, errors, the saved point, a split's
//! held bounds, shapes, partial sums, a round's model values, summit keys and counts, and
//! 48 KiB of list), and up to
//! 255 registers a thread: two blocks an H100 SM (`interface::fit::BOUNDS` says why). The
//! residual's search stays in the tile (in global memory, a model evaluation at every tap of
//! every summit test, it took more). The sums go in the same order as the CPU reference's
//! (`cuda_kernels::fit::cpu_reference`), which mirrors the windows, rows and segments, so the
//! two fits differ only by the rounding of `exp`, `sincospi` and contracted multiply-adds; a
//! residual summit or a kept component could part them only where a residual or a χ² gain
//! lies within that rounding of its threshold.
//!
//! Cost: a pass is `pixels · (P + 1)(P + 2) / 2` multiply-adds for `P` parameters, spread over
//! the block's threads, and the launch lasts as long as its slowest island. An island of more
//! pixels than a pass of its `P` may take (`interface::fit::fit_pixels`: 4096 for one
//! component, fewer for more; a survey image's ring or core) is so fitted on every `s`-th row
//! and column of its box (`interface::fit::sample_step`): its passes cost about what a
//! one-component fit of 4096 pixels costs, whatever its extent, or, with many components, what
//! eight pixels a parameter cost (`interface::fit::MIN_SAMPLE_PER_PARAMETER`).

use crate::{ballot, load_shared_f64, load_shared_f64_if, shared_address, unroll};
use core::arch::asm;
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use cuda_std::{intrinsics, warp, GpuFloat};
use interface::fit::{
    binomial_sum, clamp, fit_span, fitted_components, gaussian, gram_len, in_fit, is_summit, keeps_added, pair,
    pair_after, residual,
    residual_room, rows, sample_step, segments, settle, small_step, smoothing_radius, split_at, start, summit_key,
    summit_of, unbeaten, usable, Shape, AT_EDGE, BAD_ISLAND, BLOCK, BLOCKED_COLUMNS, CHI2, CHI2_TOLERANCE,
    CHOLESKY_OWNED, COMPONENTS, COMPONENT_WORDS, FEW_PIXELS, GRAM_BLOCK, GRAM_WORDS, ISLAND_LABEL, ISLAND_WORDS,
    ISLAND_X_MAX, ISLAND_X_MIN, ISLAND_Y_MAX, ISLAND_Y_MIN, LAMBDA_FACTOR, LAMBDA_START, LISTED_PIXELS, LIST_INDICES,
    LIST_NOISE, LIST_VALUES, MAJOR, MAX_COMPONENTS, MAX_ITERATIONS, MINOR, NAN, NOT_CONVERGED, NO_SUMMIT, PARAMETERS,
    PEAK, RANK_TOLERANCE, RECORD_WORDS, RESIDUAL_STEPS, SHARED_COUNTS, SHARED_CURRENT, SHARED_ERRORS, SHARED_GRAMS,
    SHARED_HELD, SHARED_HIGH, SHARED_KEYS, SHARED_LIST, SHARED_LOW, SHARED_MODELS, SHARED_PARTIALS, SHARED_SAVED,
    SHARED_SCALE, SHARED_SHAPES, SHARED_TILE, SHARED_TRIAL, SINGULAR, STATUS_ADDED, STATUS_COMPONENTS, STATUS_FLAGS,
    STATUS_ITERATIONS, STATUS_PIXELS, STATUS_SUMMITS, STATUS_WORDS, SUMMIT_PATCH, SUMMIT_SMOOTHED,
    SUMMIT_SMOOTHED_SIDE, SUMMIT_TILE, THETA, TOO_MANY_SUMMITS, WARPS, X, Y,
};

const THREADS: usize = BLOCK as usize;
/// Pixels of a summit patch each thread loads at once ([`summit_pass`]).
const PATCH_LOADS: usize = 4;
/// Pixels of a summit tile each thread tests: the tile's, `THREADS` apart.
const TESTED: usize = SUMMIT_TILE * SUMMIT_TILE / THREADS;
// The unrolled rounds of `summit_pass` name eight of each.
const _: () = assert!(PATCH_LOADS == 4 && TESTED == 8);
/// Slots of the shared counters after the warps' window counts.
const PIXELS: usize = WARPS;
const SUMMITS: usize = WARPS + 1;
const HAS_NAN: usize = WARPS + 2;
const SMALL: usize = WARPS + 3;
/// The slot that holds how many pixels the list holds once it holds the whole sample, and
/// [`UNLISTED`] until then or if it cannot.
const LISTED: usize = WARPS + 4;
const UNLISTED: u32 = u32::MAX;
/// The slot of the summit keys that holds the brightest pixel above the seed level; once the
/// summits are chosen, the component a residual summit splits, plus one (0: none).
const FALLBACK: usize = MAX_COMPONENTS + 1;
const SPLIT: usize = FALLBACK;

/// What a Levenberg–Marquardt run tries beyond the fit kept: nothing, one more component from
/// the residual, or the split of a component (`interface::fit::split_at`) with one more.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trying {
    Nothing,
    Added,
    Split,
}

/// Entry (`row`, `column`), column ≤ row, of a lower triangle stored row by row.
#[inline(always)]
fn tri(row: usize, column: usize) -> usize {
    row * (row + 1) / 2 + column
}

/// The shared memory of one block (one island).
struct Shared {
    /// Jacobian rows, then the `L·D·Lᵀ` factor and its inverse.
    tile: *mut f64,
    /// The two Gram matrices, `GRAM_WORDS` apart.
    grams: *mut f64,
    /// The current point, the trial point, the bounds, the damping scales, the errors of the
    /// fit kept, and the point a component from the residual is tried from (to go
    /// back to), `MAX_PARAMETERS` each; the bounds of a component a split starts again (low,
    /// then high, to go back to).
    current: *mut f64,
    trial: *mut f64,
    low: *mut f64,
    high: *mut f64,
    scale: *mut f64,
    errors: *mut f64,
    saved: *mut f64,
    held: *mut f64,
    shapes: *mut Shape,
    /// One partial sum per thread.
    partials: *mut f64,
    /// A round of rows' model values, component by component (`interface::fit::MODEL_WORDS`).
    models: *mut f64,
    /// The fit's pixels of the sample, in its raster order, `LISTED_PIXELS` at most (in the
    /// dynamic shared memory): their index in the sample, value and noise. The first pass
    /// lists them; where they all fit, every later pass reads them from here.
    listed: *mut u32,
    listed_values: *mut f32,
    listed_noise: *mut f32,
    /// Before the list: a summit tile's patch and smoothed values ([`summit_pass`]).
    patch: *mut f32,
    smoothed: *mut f64,
    /// The summits chosen, then the search's running maximum, then the brightest pixel above
    /// the seed level.
    keys: *mut u64,
    /// The warps' window counts, then the island's pixels, summits, NaN flag, small-step flag,
    /// and the count of the list.
    counts: *mut u32,
}

/// The island a block fits, and where its image lies.
#[derive(Clone, Copy)]
struct Island {
    image: *const f32,
    labels: *const u32,
    noise: *const f32,
    noise_map: bool,
    width: usize,
    height: usize,
    index: usize,
    label: u32,
    x0: usize,
    y0: usize,
    box_width: usize,
    box_pixels: usize,
    /// The radius of the binomial kernel the summits are found on.
    radius: usize,
    /// The fit's sample: every `step`th row and column of the box grown by `FIT_MARGIN`
    /// (`interface::fit::fit_span`) from (`sample_y0`, `sample_x0`), and how many of its pixels
    /// a row and the whole sample hold.
    step: usize,
    sample_y0: usize,
    sample_x0: usize,
    sample_width: usize,
    sample_pixels: usize,
}

impl Island {
    /// The noise σ at pixel `i` of the image.
    #[inline(always)]
    unsafe fn noise_at(&self, i: usize) -> f32 {
        *self.noise.add(if self.noise_map { i } else { self.index })
    }

    /// Row and column of pixel `k` of the box.
    #[inline(always)]
    fn at(&self, k: usize) -> (usize, usize) {
        (self.y0 + k / self.box_width, self.x0 + k % self.box_width)
    }

    /// The island's fit sampled every `step` rows and columns (`interface::fit::sample_step`) of
    /// its box grown by `FIT_MARGIN`.
    #[inline(always)]
    fn sampled(self, step: usize) -> Island {
        let (y0, y1) = fit_span(self.y0, self.y0 + self.box_pixels / self.box_width - 1, self.height);
        let (x0, x1) = fit_span(self.x0, self.x0 + self.box_width - 1, self.width);
        let sample_width = (x1 - x0 + step) / step;
        let sample_height = (y1 - y0 + step) / step;
        Island { step, sample_y0: y0, sample_x0: x0, sample_width, sample_pixels: sample_width * sample_height, ..self }
    }

    /// Row and column of pixel `k` of the sample.
    #[inline(always)]
    fn sample_at(&self, k: usize) -> (usize, usize) {
        (self.sample_y0 + k / self.sample_width * self.step, self.sample_x0 + k % self.sample_width * self.step)
    }
}

#[inline(always)]
unsafe fn shared_add(counter: *mut u32, value: u32) {
    asm!("red.shared.add.u32 [{a}], {v};", a = in(reg32) shared_address(counter), v = in(reg32) value);
}

#[inline(always)]
unsafe fn shared_max(slot: *mut u64, value: u64) {
    asm!("red.shared.max.u64 [{a}], {v};", a = in(reg32) shared_address(slot), v = in(reg64) value);
}

/// The summit search, in one pass over the box by tiles of `SUMMIT_TILE` square: the tile and
/// its halo to the patch (the island's values, `interface::fit::SUMMIT_PATCH` says how), the
/// tile's pixels and their neighbours smoothed from it (`binomial_sum`), then each pixel a
/// thread's. Each thread keeps the brightest `MAX_COMPONENTS` summit keys it finds, in order, in
/// its own slots of the tile (free until the fit), and returns how many it holds; the island's
/// usable pixels, summits and whether it has NaN go into the counters, and the largest key of
/// any pixel above the seed level into `keys[FALLBACK]`. [`brightest_summits`] then takes the
/// brightest of them all.
///
/// # Safety
/// Every thread of the block calls it together, the counters zeroed.
#[inline(always)]
unsafe fn summit_pass(island: &Island, shared: &Shared, seed: f64) -> usize {
    let t = thread::thread_idx_x() as usize;
    let list = (shared.tile as *mut u64).add(t * MAX_COMPONENTS);
    let (patch, sums) = (shared.patch, shared.smoothed);
    let (mut pixels, mut summits, mut nan, mut brightest, mut held) = (0u32, 0u32, 0u32, 0u64, 0usize);
    let (radius, box_width) = (island.radius, island.box_width);
    let box_height = island.box_pixels / box_width;
    // Patch (pr, pc) is box pixel (ty + pr − halo, tx + pc − halo); smoothed (sr, sc) is patch
    // (sr + radius, sc + radius), box pixel (ty + sr − 1, tx + sc − 1).
    let (halo, inner) = (radius + 1, SUMMIT_SMOOTHED_SIDE);
    let side = SUMMIT_TILE + 2 * halo;
    let mut ty = 0;
    while ty < box_height {
        let mut tx = 0;
        while tx < box_width {
            // The patch in rounds of `PATCH_LOADS` pixels a thread, every load of a round in
            // flight at once: a block alone on its SM (a ring's) waits out one load's latency a
            // round, not one a pixel.
            let (mut first, mut on_island) = (t, 0);
            while first < side * side {
                let mut loaded = [(0u32, 0.0f32); PATCH_LOADS];
                unroll!([0, 1, 2, 3], |r| {
                    let p = first + r * THREADS;
                    let (by, bx) = ((ty + p / side).wrapping_sub(halo), (tx + p % side).wrapping_sub(halo));
                    if p < side * side && by < box_height && bx < box_width {
                        let i = (island.y0 + by) * island.width + island.x0 + bx;
                        loaded[r] = (*island.labels.add(i), *island.image.add(i));
                    }
                });
                unroll!([0, 1, 2, 3], |r| {
                    let p = first + r * THREADS;
                    if p < side * side {
                        let (pixel_label, v) = loaded[r];
                        // Label 0 is no island's: a pixel off the box reads as off the island.
                        let mut value = f32::NAN;
                        if pixel_label == island.label {
                            value = if v.is_finite() { v } else { f32::INFINITY };
                            on_island = 1;
                        }
                        *patch.add(p) = value;
                    }
                });
                first += PATCH_LOADS * THREADS;
            }
            // A tile whose patch holds none of the island (most of a ring's box) has no pixel
            // and no summit of it: the block goes on to the next.
            if thread::sync_threads_or(on_island) == 0 {
                tx += SUMMIT_TILE;
                continue;
            }
            let mut q = t;
            while q < inner * inner {
                let corner = patch.add(q / inner * side + q % inner);
                let centre = *corner.add(radius * side + radius);
                *sums.add(q) =
                    if centre.is_finite() { binomial_sum(radius, |a, b| *corner.add(a * side + b)) } else { f64::NAN };
                q += THREADS;
            }
            thread::sync_threads();
            // Each thread's pixels of the tile (`TESTED` of them, `THREADS` apart), their noise
            // loaded at once before any is tested.
            let mut noises = [0.0f32; TESTED];
            unroll!([0, 1, 2, 3, 4, 5, 6, 7], |r| {
                let (oy, ox) = ((t + r * THREADS) / SUMMIT_TILE, (t + r * THREADS) % SUMMIT_TILE);
                let (by, bx) = (ty + oy, tx + ox);
                if by < box_height && bx < box_width && !(*patch.add((oy + halo) * side + ox + halo)).is_nan() {
                    noises[r] = island.noise_at((island.y0 + by) * island.width + island.x0 + bx);
                }
            });
            unroll!([0, 1, 2, 3, 4, 5, 6, 7], |r| {
                let (oy, ox) = ((t + r * THREADS) / SUMMIT_TILE, (t + r * THREADS) % SUMMIT_TILE);
                let (by, bx) = (ty + oy, tx + ox);
                let value = if by < box_height && bx < box_width {
                    *patch.add((oy + halo) * side + ox + halo)
                } else {
                    f32::NAN
                };
                // NaN: off the island (or the box); +∞: on it, not finite.
                if !value.is_nan() {
                    let noise = noises[r];
                    if usable(value, noise) {
                        pixels += 1;
                        if value as f64 > seed * noise as f64 {
                            let k = by * box_width + bx;
                            let key = summit_key(value, k as u32);
                            if key > brightest {
                                brightest = key;
                            }
                            let around = sums.add(oy * inner + ox);
                            let own = *around.add(inner + 1);
                            let summit = unbeaten(own, |dr, dc| {
                                let neighbour = *around.add(dr * inner + dc);
                                if neighbour.is_nan() {
                                    None
                                } else {
                                    Some(neighbour)
                                }
                            });
                            if summit {
                                summits += 1;
                                held = keep_brightest(list, held, key);
                            }
                        }
                    } else {
                        nan = 1;
                    }
                }
            });
            // The next tile's patch overwrites this one's after every thread has read it.
            thread::sync_threads();
            tx += SUMMIT_TILE;
        }
        ty += SUMMIT_TILE;
    }
    shared_add(shared.counts.add(PIXELS), pixels);
    shared_add(shared.counts.add(SUMMITS), summits);
    shared_add(shared.counts.add(HAS_NAN), nan);
    if brightest > 0 {
        shared_max(shared.keys.add(FALLBACK), brightest);
    }
    held
}

/// Offers `key` to a thread's list of its brightest `MAX_COMPONENTS` summit keys (`held` of
/// them, brightest first): inserted in order where it is among them, the last falling off a
/// full list. Returns how many the list holds.
///
/// # Safety
/// `list` is the thread's `MAX_COMPONENTS` slots.
#[inline(always)]
unsafe fn keep_brightest(list: *mut u64, held: usize, key: u64) -> usize {
    if held < MAX_COMPONENTS || key > *list.add(held - 1) {
        let mut at = if held < MAX_COMPONENTS { held } else { held - 1 };
        while at > 0 && *list.add(at - 1) < key {
            *list.add(at) = *list.add(at - 1);
            at -= 1;
        }
        *list.add(at) = key;
        held + if held < MAX_COMPONENTS { 1 } else { 0 }
    } else {
        held
    }
}

/// The `given` brightest summits of the threads' lists (`held` each, [`summit_pass`]) into
/// `keys[0..given]`, brightest first: each round every thread offers the head of its list to a
/// shared `max`, and the one whose head won moves past it (keys are distinct: they hold the
/// pixel's place). Where `keys[MAX_COMPONENTS]` holds a key before the first round (the
/// fallback summit), it is taken when no list offers one.
///
/// # Safety
/// Every thread of the block calls it together, with its `held`, after the pass and a barrier.
#[inline(always)]
unsafe fn brightest_summits(shared: &Shared, held: usize, given: usize) {
    let t = thread::thread_idx_x() as usize;
    let list = (shared.tile as *const u64).add(t * MAX_COMPONENTS);
    let mut next = 0;
    for j in 0..given {
        let head = if next < held { *list.add(next) } else { 0 };
        if head > 0 {
            shared_max(shared.keys.add(MAX_COMPONENTS), head);
        }
        thread::sync_threads();
        let best = *shared.keys.add(MAX_COMPONENTS);
        next += if head == best && head > 0 { 1 } else { 0 };
        thread::sync_threads();
        if t == 0 {
            *shared.keys.add(j) = best;
            *shared.keys.add(MAX_COMPONENTS) = 0;
        }
        thread::sync_threads();
    }
}

/// Adds the first `filled` rows of the tile (`parameters + 1` words each) into `gram`. A
/// thread walks its entries `THREADS` apart ([`pair_after`]) and sums two of them at once:
/// each entry still adds its rows in order.
///
/// # Safety
/// Every thread of the block calls it together, after the rows are written and before the tile
/// is written again.
#[inline(always)]
unsafe fn accumulate(shared: &Shared, gram: *mut f64, filled: usize, parameters: usize) {
    if filled == 0 {
        return;
    }
    let t = thread::thread_idx_x() as usize;
    let (stride, entries) = (parameters + 1, gram_len(parameters));
    if stride >= BLOCKED_COLUMNS {
        accumulate_blocks(shared, gram, filled, stride);
        return;
    }
    let parts = segments(entries);
    if parts == 1 {
        let (tile, filled, row_bytes) = (shared_address(shared.tile), filled as u32, 8 * stride as u32);
        let mut e = t;
        let mut first = pair(e);
        while e < entries {
            let second = pair_after(first, THREADS);
            let (a, b) = (8 * first.0 as u32, 8 * first.1 as u32);
            let (c, d) = (8 * second.0 as u32, 8 * second.1 as u32);
            let (mut sum, mut next) = (0.0f64, 0.0f64);
            let mut row = 0u32;
            if e + THREADS < entries {
                while row < filled {
                    let words = tile + row * row_bytes;
                    sum = load_shared_f64(words + a).mul_add(load_shared_f64(words + b), sum);
                    next = load_shared_f64(words + c).mul_add(load_shared_f64(words + d), next);
                    row += 1;
                }
                *gram.add(e + THREADS) += next;
            } else {
                while row < filled {
                    let words = tile + row * row_bytes;
                    sum = load_shared_f64(words + a).mul_add(load_shared_f64(words + b), sum);
                    row += 1;
                }
            }
            *gram.add(e) += sum;
            e += 2 * THREADS;
            first = pair_after(second, THREADS);
        }
    } else {
        let length = (filled + parts - 1) / parts;
        if t < entries * parts {
            let (e, part) = (t / parts, t % parts);
            let (a, b) = pair(e);
            let end = if (part + 1) * length < filled { (part + 1) * length } else { filled };
            let mut sum = 0.0f64;
            let mut r = part * length;
            while r < end {
                let row = shared.tile.add(r * stride);
                sum = (*row.add(a)).mul_add(*row.add(b), sum);
                r += 1;
            }
            *shared.partials.add(t) = sum;
        }
        thread::sync_threads();
        if t < entries {
            let mut total = *gram.add(t);
            for part in 0..parts {
                total += *shared.partials.add(t * parts + part);
            }
            *gram.add(t) = total;
        }
    }
}

/// [`accumulate`] for a large matrix: a block of `GRAM_BLOCK` × `GRAM_BLOCK` entries a
/// thread (the blocks of the lower triangle in order, `BLOCK` apart), each entry adding the
/// tile's rows in order with `fma` and then its sum to the matrix, as a thread per entry does;
/// the columns past the last are read as the last and not written.
///
/// # Safety
/// As for [`accumulate`]; `columns` (`P + 1`) is the rows' stride.
#[inline(always)]
unsafe fn accumulate_blocks(shared: &Shared, gram: *mut f64, filled: usize, columns: usize) {
    let edge = (columns + GRAM_BLOCK - 1) / GRAM_BLOCK;
    let (blocks, last) = (edge * (edge + 1) / 2, (columns - 1) as u32);
    let (tile, filled, row_bytes) = (shared_address(shared.tile), filled as u32, 8 * columns as u32);
    let mut q = thread::thread_idx_x() as usize;
    let mut block = pair(q);
    while q < blocks {
        let (a0, b0) = ((block.0 * GRAM_BLOCK) as u32, (block.1 * GRAM_BLOCK) as u32);
        let (mut at_a, mut at_b) = ([0u32; GRAM_BLOCK], [0u32; GRAM_BLOCK]);
        unroll!([0, 1, 2, 3], |i| {
            at_a[i] = if a0 + (i as u32) < last { a0 + i as u32 } else { last };
            at_b[i] = if b0 + (i as u32) < last { b0 + i as u32 } else { last };
        });
        let mut sums = [0.0f64; GRAM_BLOCK * GRAM_BLOCK];
        let mut row = 0u32;
        while row < filled {
            let words = tile + row * row_bytes;
            let (mut x, mut y) = ([0.0f64; GRAM_BLOCK], [0.0f64; GRAM_BLOCK]);
            unroll!([0, 1, 2, 3], |i| {
                x[i] = load_shared_f64(words + 8 * at_a[i]);
                y[i] = load_shared_f64(words + 8 * at_b[i]);
            });
            unroll!([0, 1, 2, 3], |i| {
                unroll!([0, 1, 2, 3], |j| {
                    sums[i * GRAM_BLOCK + j] = x[i].mul_add(y[j], sums[i * GRAM_BLOCK + j]);
                });
            });
            row += 1;
        }
        unroll!([0, 1, 2, 3], |i| {
            unroll!([0, 1, 2, 3], |j| {
                let (a, b) = (a0 as usize + i, b0 as usize + j);
                if a < columns && b <= a {
                    *gram.add(tri(a, b)) += sums[i * GRAM_BLOCK + j];
                }
            });
        });
        q += THREADS;
        block = pair_after(block, THREADS);
    }
}

/// The Gram matrix `[J r]ᵀ[J r]` of the island at `params` (`parameters` of them) into `gram`.
///
/// # Safety
/// Every thread of the block calls it together; `params` and `gram` are shared buffers of
/// `parameters` and `gram_len(parameters)` words.
unsafe fn evaluate(island: &Island, shared: &Shared, params: *const f64, gram: *mut f64, parameters: usize) {
    let t = thread::thread_idx_x() as usize;
    let components = parameters / PARAMETERS;
    if t < components {
        let p = params.add(t * PARAMETERS);
        let (mut sin, mut cos) = (0.0f64, 0.0f64);
        intrinsics::sincospi(*p.add(THETA) * core::f64::consts::FRAC_1_PI, &mut sin, &mut cos);
        *shared.shapes.add(t) = Shape::new(*p.add(MAJOR), *p.add(MINOR), cos, sin);
    }
    let entries = gram_len(parameters);
    let mut e = t;
    while e < entries {
        *gram.add(e) = 0.0;
        e += THREADS;
    }
    thread::sync_threads();
    let mut filled = 0;
    let listed = *shared.counts.add(LISTED);
    if listed != UNLISTED {
        rows_of_listed(island, shared, params, gram, parameters, listed as usize, &mut filled);
    } else {
        list_sample(island, shared, params, gram, parameters, &mut filled);
    }
    accumulate(shared, gram, filled, parameters);
    thread::sync_threads();
}

/// The first pass of a fit: finds the fit's pixels of the sample, in windows of `BLOCK`
/// pixels, a thread each, ranks those of a window by one ballot per warp and lists them after
/// the ones before, and makes their rows ([`rows_of_listed`]). A sample of more than
/// `LISTED_PIXELS` makes the rows of a full list before listing on from its start, and is
/// searched again by the next pass; else the list's count is kept, for the next pass to read.
///
/// # Safety
/// Every thread of the block calls it together, the Gram matrix zeroed and seen.
#[inline(always)]
unsafe fn list_sample(
    island: &Island,
    shared: &Shared,
    params: *const f64,
    gram: *mut f64,
    parameters: usize,
    filled: &mut usize,
) {
    let t = thread::thread_idx_x() as usize;
    let (warp, lane) = (t / 32, t % 32);
    let (mut listed, mut whole) = (0, true);
    let mut first = 0;
    while first < island.sample_pixels {
        let k = first + t;
        let (mut value, mut noise) = (0.0f32, 0.0f32);
        let mut valid = k < island.sample_pixels;
        if valid {
            let (r, c) = island.sample_at(k);
            let i = r * island.width + c;
            value = *island.image.add(i);
            noise = island.noise_at(i);
            let labels = |j: usize| *island.labels.add(j);
            valid = in_fit(labels, (r, c), (island.height, island.width), island.label) && usable(value, noise);
        }
        let bits = ballot(valid);
        if lane == 0 {
            *shared.counts.add(warp) = bits.count_ones();
        }
        thread::sync_threads();
        let (mut before, mut total) = (0, 0);
        for w in 0..WARPS {
            let count = *shared.counts.add(w) as usize;
            before += if w < warp { count } else { 0 };
            total += count;
        }
        if listed + total > LISTED_PIXELS {
            rows_of_listed(island, shared, params, gram, parameters, listed, filled);
            listed = 0;
            whole = false;
        }
        if valid {
            let at = listed + before + (bits & ((1u32 << lane) - 1)).count_ones() as usize;
            *shared.listed.add(at) = k as u32;
            *shared.listed_values.add(at) = value;
            *shared.listed_noise.add(at) = noise;
        }
        listed += total;
        thread::sync_threads();
        first += THREADS;
    }
    rows_of_listed(island, shared, params, gram, parameters, listed, filled);
    // Read by the next pass, after the barriers that end this one.
    if whole && t == 0 {
        *shared.counts.add(LISTED) = listed as u32;
    }
}

/// The Jacobian rows (the six derivatives of each component, then the residual, weighted by
/// 1/noise) of the first `listed` pixels of the list, a thread each, into the tile after its
/// `filled` rows; a full tile is summed into `gram` ([`accumulate`]) before the next row, so
/// the matrix adds the island's pixels `rows(parameters)` at a time, in raster order of the
/// sample.
///
/// # Safety
/// Every thread of the block calls it together, the listed pixels written and seen.
#[inline(always)]
unsafe fn rows_of_listed(
    island: &Island,
    shared: &Shared,
    params: *const f64,
    gram: *mut f64,
    parameters: usize,
    listed: usize,
    filled: &mut usize,
) {
    let t = thread::thread_idx_x() as usize;
    let (components, stride, capacity) = (parameters / PARAMETERS, parameters + 1, rows(parameters));
    let mut done = 0;
    while done < listed {
        if *filled == capacity {
            accumulate(shared, gram, *filled, parameters);
            *filled = 0;
            thread::sync_threads();
        }
        let room = if capacity - *filled < THREADS { capacity - *filled } else { THREADS };
        let take = if room < listed - done { room } else { listed - done };
        // A thread per pixel and component: a many-component island keeps every lane busy.
        let mut w = t;
        while w < take * components {
            let (k, c) = (w % take, w / take);
            let at = done + k;
            let (row, col) = island.sample_at(*shared.listed.add(at) as usize);
            let weight = 1.0 / *shared.listed_noise.add(at) as f64;
            // A pixel of the margin may lie left of or above the box.
            let (dx, dy) = (col as f64 - island.x0 as f64, row as f64 - island.y0 as f64);
            let p = params.add(c * PARAMETERS);
            let (m, d) =
                gaussian(*p.add(PEAK), &*shared.shapes.add(c), dx - *p.add(X), dy - *p.add(Y), |x: f64| x.exp());
            *shared.models.add(w) = m;
            let o = shared.tile.add((*filled + k) * stride + c * PARAMETERS);
            unroll!([0, 1, 2, 3, 4, 5], |q| {
                *o.add(q) = d[q] * weight;
            });
            w += THREADS;
        }
        thread::sync_threads();
        if t < take {
            let at = done + t;
            let mut model = 0.0f64;
            for c in 0..components {
                model += *shared.models.add(c * take + t);
            }
            let weight = 1.0 / *shared.listed_noise.add(at) as f64;
            let value = *shared.listed_values.add(at) as f64;
            *shared.tile.add((*filled + t) * stride + parameters) = (value - model) * weight;
        }
        *filled += take;
        done += take;
        thread::sync_threads();
    }
}

/// Factors the `n × n` lower triangle in the tile in place as `L·D·Lᵀ` (`L` unit lower
/// triangular, `D` diagonal): `L·D` below the diagonal, `D` on it; false when a pivot `D[j]`
/// is not finite and above `least` times the matrix's diagonal entry, which `diagonal` holds.
/// Right-looking, a column at a time: every thread reads the column's pivot, and each entry
/// `(i, c)` right of the column takes its term, `a[i][c] − a[i][j] · (a[c][j] · (1 / D[j]))`,
/// the last step one `fma`. A thread owns the entries `t`, `t + BLOCK`, … of the whole triangle
/// (`interface::fit::CHOLESKY_OWNED` at most, their rows and columns found once, in registers).
/// A column reads only entries that it does not write, so it takes one barrier, and its path is
/// a division and a multiply-add: no square root, and no division of the column by it before
/// the update can start (which took a second barrier).
///
/// # Safety
/// Every thread of the block calls it together, the tile's matrix written and seen; `diagonal`
/// is not written meanwhile; `n` is at most `MAX_PARAMETERS`.
unsafe fn cholesky(tile: *mut f64, n: usize, diagonal: *const f64, least: f64) -> bool {
    let t = thread::thread_idx_x() as usize;
    // Row << 16 | column of each owned entry; past the triangle, a column no `j` is below.
    let mut owned = [0u32; CHOLESKY_OWNED];
    let mut at = pair(t);
    unroll!([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], |s| {
        owned[s] = if t + s * THREADS < n * (n + 1) / 2 { (at.0 << 16 | at.1) as u32 } else { 0 };
        at = pair_after(at, THREADS);
    });
    let words = shared_address(tile);
    // A counted `while`, not a range: a range's step keeps a flag, a compare and a select more.
    let mut j = 0;
    while j < n {
        // The loads first, the pivot's among them: they overlap. Predicated, not branched
        // around: an entry left of the column loads nothing.
        let column = j as u32;
        let (mut entries, mut left, mut right) =
            ([0.0f64; CHOLESKY_OWNED], [0.0f64; CHOLESKY_OWNED], [0.0f64; CHOLESKY_OWNED]);
        unroll!([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], |s| {
            let (i, c) = (owned[s] >> 16, owned[s] & 0xFFFF);
            let (row_i, row_c, wanted) = (i * (i + 1) / 2, c * (c + 1) / 2, c > column);
            entries[s] = load_shared_f64_if(wanted, words + 8 * (row_i + c));
            left[s] = load_shared_f64_if(wanted, words + 8 * (row_i + column));
            right[s] = load_shared_f64_if(wanted, words + 8 * (row_c + column));
        });
        let pivot = *tile.add(tri(j, j));
        let floor = if least > 0.0 { least * *diagonal.add(tri(j, j)) } else { 0.0 };
        let inverse = 1.0 / pivot;
        unroll!([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], |s| {
            let (i, c) = (owned[s] >> 16, owned[s] & 0xFFFF);
            if c > column {
                *tile.add((i * (i + 1) / 2 + c) as usize) = (-left[s]).mul_add(right[s] * inverse, entries[s]);
            }
        });
        thread::sync_threads();
        // Tested after the column's update, which then goes unused: a test before it would
        // hold the loads back behind the pivot's.
        if !(pivot > floor && pivot < f64::INFINITY) {
            return false;
        }
        j += 1;
    }
    true
}

/// # Safety
/// The launcher (`FitArgs` on the host) guarantees: `image` and `labels` hold `width · height`
/// values, 1 to 2^32 − 1; `noise` holds that many when `noise_map` is non-zero, else one per
/// island; `islands` holds whole records of `ISLAND_WORDS`, one block each, in one-dimensional
/// blocks of `BLOCK` threads, each with `SHARED_BYTES` of dynamic shared memory; `fits` and
/// `status` hold `RECORD_WORDS` and `STATUS_WORDS` words per island and overlap nothing else;
/// `seed` and `beam` are finite and above 0. An island's record may hold anything: a box
/// outside the image is flagged `BAD_ISLAND`, not read.
#[kernel]
pub unsafe fn fit_islands(
    image: *const f32,
    labels: *const u32,
    noise: *const f32,
    noise_map: u32,
    width: usize,
    height: usize,
    islands: &[u32],
    seed: f64,
    beam: f64,
    fits: *mut f64,
    status: *mut u32,
) {
    let memory = dynamic_shared_mem::<u8>();
    let at = |offset: usize| memory.add(offset);
    let shared = Shared {
        tile: at(SHARED_TILE) as *mut f64,
        grams: at(SHARED_GRAMS) as *mut f64,
        current: at(SHARED_CURRENT) as *mut f64,
        trial: at(SHARED_TRIAL) as *mut f64,
        low: at(SHARED_LOW) as *mut f64,
        high: at(SHARED_HIGH) as *mut f64,
        scale: at(SHARED_SCALE) as *mut f64,
        errors: at(SHARED_ERRORS) as *mut f64,
        saved: at(SHARED_SAVED) as *mut f64,
        held: at(SHARED_HELD) as *mut f64,
        shapes: at(SHARED_SHAPES) as *mut Shape,
        partials: at(SHARED_PARTIALS) as *mut f64,
        models: at(SHARED_MODELS) as *mut f64,
        listed: at(SHARED_LIST + LIST_INDICES) as *mut u32,
        listed_values: at(SHARED_LIST + LIST_VALUES) as *mut f32,
        listed_noise: at(SHARED_LIST + LIST_NOISE) as *mut f32,
        patch: at(SHARED_LIST + SUMMIT_PATCH) as *mut f32,
        smoothed: at(SHARED_LIST + SUMMIT_SMOOTHED) as *mut f64,
        keys: at(SHARED_KEYS) as *mut u64,
        counts: at(SHARED_COUNTS) as *mut u32,
    };
    let t = thread::thread_idx_x() as usize;
    let index = thread::block_idx_x() as usize;
    let field = |w: usize| *islands.get_unchecked(index * ISLAND_WORDS + w) as usize;
    let (label, y0, y1, x0, x1) = (
        field(ISLAND_LABEL) as u32,
        field(ISLAND_Y_MIN),
        field(ISLAND_Y_MAX),
        field(ISLAND_X_MIN),
        field(ISLAND_X_MAX),
    );
    let output = Output { fits: fits.add(index * RECORD_WORDS), status: status.add(index * STATUS_WORDS) };
    if label == 0 || y0 > y1 || x0 > x1 || y1 >= height || x1 >= width {
        output.write(&shared, 0, f64::NAN, [BAD_ISLAND, 0, 0, 0, 0]);
        return;
    }
    let box_width = x1 - x0 + 1;
    let island = Island {
        image,
        labels,
        noise,
        noise_map: noise_map != 0,
        width,
        height,
        index,
        label,
        x0,
        y0,
        box_width,
        box_pixels: box_width * (y1 - y0 + 1),
        radius: smoothing_radius(beam),
        step: 1,
        sample_y0: y0,
        sample_x0: x0,
        sample_width: 0,
        sample_pixels: 0,
    }
    .sampled(1);

    // 1. The summits, brightest first.
    if t == 0 {
        for slot in 0..4 {
            *shared.counts.add(PIXELS + slot) = 0;
        }
        *shared.counts.add(LISTED) = UNLISTED;
        *shared.keys.add(MAX_COMPONENTS) = 0;
        *shared.keys.add(FALLBACK) = 0;
    }
    thread::sync_threads();
    let held = summit_pass(&island, &shared, seed);
    thread::sync_threads();
    let pixels = *shared.counts.add(PIXELS);
    let mut summits = *shared.counts.add(SUMMITS) as usize;
    if summits == 0 && *shared.keys.add(FALLBACK) > 0 {
        // No smoothed maximum lies above the seed level: the brightest pixel that does is the
        // island's one summit, as `interface::fit::is_summit` says.
        summits = 1;
        thread::sync_threads();
        if t == 0 {
            *shared.keys.add(MAX_COMPONENTS) = *shared.keys.add(FALLBACK);
        }
        thread::sync_threads();
    }
    let chosen = if summits < MAX_COMPONENTS { summits } else { MAX_COMPONENTS };
    let fitted = fitted_components(chosen, pixels);
    // Without a component to fit, the brightest summit's start is still given.
    let given = if fitted == 0 && chosen > 0 { 1 } else { fitted };
    let mut flags = 0;
    flags |= if y0 == 0 || x0 == 0 || y1 == height - 1 || x1 == width - 1 { AT_EDGE } else { 0 };
    flags |= if *shared.counts.add(HAS_NAN) != 0 { NAN } else { 0 };
    flags |= if summits > MAX_COMPONENTS { TOO_MANY_SUMMITS } else { 0 };
    flags |= if fitted < chosen { FEW_PIXELS } else { 0 };
    flags |= if summits == 0 { NO_SUMMIT } else { 0 };
    brightest_summits(&shared, held, given);
    if t < given {
        let (value, k) = summit_of(*shared.keys.add(t));
        let (row, col) = island.at(k as usize);
        let sigma = island.noise_at(row * width + col) as f64;
        let (x, y) = ((col - x0) as f64, (row - y0) as f64);
        let s = start(value as f64, x, y, sigma, seed, beam, box_width, y1 - y0 + 1, |x: f64| x.exp());
        let base = t * PARAMETERS;
        unroll!([0, 1, 2, 3, 4, 5], |q| {
            *shared.current.add(base + q) = s.params[q];
            *shared.low.add(base + q) = s.low[q];
            *shared.high.add(base + q) = s.high[q];
            *shared.errors.add(base + q) = f64::NAN;
        });
    }
    thread::sync_threads();
    let counts = [flags, 0, pixels, summits as u32, 0];
    if fitted == 0 {
        output.settle(&shared, given, x0, y0);
        output.write(&shared, given, f64::NAN, counts);
        return;
    }

    // 2. Levenberg–Marquardt, on a sample of the box where the island is large, and the errors
    //    at its solution; 3. components from the residual, each fitted with the others and kept
    //    (with the errors of the new solution) or given up (back to the point saved).
    let mut parameters = fitted * PARAMETERS;
    let island = island.sampled(sample_step(pixels, parameters));
    let (mut added, mut iterations, mut trying) = (0u32, 0, Trying::Nothing);
    let (mut chi2, mut converged, mut singular) = (f64::NAN, false, false);
    loop {
        let run =
            levenberg(&island, &shared, if trying == Trying::Nothing { parameters } else { parameters + PARAMETERS });
        iterations += run.iterations;
        if trying != Trying::Nothing {
            let kept = |c: usize| {
                let peak = c * PARAMETERS + PEAK;
                keeps_added(chi2, run.chi2, *shared.current.add(peak), *shared.low.add(peak))
            };
            let split = *shared.keys.add(SPLIT) as usize;
            let keep = kept(parameters / PARAMETERS) && (trying == Trying::Added || (run.converged && kept(split - 1)));
            if !keep {
                // Every thread has read the peaks that the point saved is about to replace.
                thread::sync_threads();
                if t < parameters {
                    *shared.current.add(t) = *shared.saved.add(t);
                }
                if trying == Trying::Added {
                    break;
                }
                if t == 0 {
                    unsplit(&island, &shared, seed, beam, parameters, split - 1);
                }
                thread::sync_threads();
                trying = Trying::Added;
                continue;
            }
            parameters += PARAMETERS;
            added += 1;
        }
        chi2 = run.chi2;
        converged = run.converged;
        singular = !errors(&shared, run.gram, parameters);
        if added as usize == RESIDUAL_STEPS || !residual_room(parameters / PARAMETERS, pixels, island.box_pixels) {
            break;
        }
        trying = residual_summit(&island, &shared, seed, beam, parameters);
        if trying == Trying::Nothing {
            break;
        }
    }
    let fitted = parameters / PARAMETERS;
    flags |= if converged { 0 } else { NOT_CONVERGED };
    flags |= if singular { SINGULAR } else { 0 };
    thread::sync_threads();
    output.settle(&shared, fitted, x0, y0);
    output.write(&shared, fitted, chi2, [flags, iterations, pixels, summits as u32, added]);
}

/// Where a Levenberg–Marquardt run ended: its χ², its iterations, whether it converged, and the
/// Gram buffer that holds the matrix of its point (in `current`).
struct Run {
    chi2: f64,
    iterations: u32,
    converged: bool,
    gram: *mut f64,
}

/// Levenberg–Marquardt on the island's first `parameters` parameters from `current`, within
/// `low` and `high`; the point it ends at is left in `current`.
///
/// # Safety
/// Every thread of the block calls it together, with `current`, `low` and `high` set.
#[inline(always)]
unsafe fn levenberg(island: &Island, shared: &Shared, parameters: usize) -> Run {
    let t = thread::thread_idx_x() as usize;
    let entries = gram_len(parameters);
    let normal = parameters * (parameters + 1) / 2;
    let mut gram = shared.grams;
    let mut other = shared.grams.add(GRAM_WORDS);
    evaluate(island, shared, shared.current, gram, parameters);
    if t < parameters {
        *shared.scale.add(t) = *gram.add(tri(t, t));
    }
    let mut chi2 = *gram.add(entries - 1);
    let mut lambda = LAMBDA_START;
    let (mut iterations, mut converged) = (0, false);
    while iterations < MAX_ITERATIONS && !converged {
        iterations += 1;
        thread::sync_threads();
        let (mut e, mut at) = (t, pair(t));
        while e < normal {
            let (a, b) = at;
            *shared.tile.add(e) = *gram.add(e) + if a == b { lambda * *shared.scale.add(a) } else { 0.0 };
            e += THREADS;
            at = pair_after(at, THREADS);
        }
        thread::sync_threads();
        if !cholesky(shared.tile, parameters, gram, 0.0) {
            lambda *= LAMBDA_FACTOR;
            continue;
        }
        if t < 32 {
            solve(shared, gram, parameters);
        }
        thread::sync_threads();
        evaluate(island, shared, shared.trial, other, parameters);
        let trial = *other.add(entries - 1);
        let small = *shared.counts.add(SMALL) != 0;
        if trial < chi2 {
            converged = small || chi2 - trial <= CHI2_TOLERANCE * chi2;
            chi2 = trial;
            core::mem::swap(&mut gram, &mut other);
            lambda /= LAMBDA_FACTOR;
            if t < parameters {
                *shared.current.add(t) = *shared.trial.add(t);
                let diagonal = *gram.add(tri(t, t));
                if diagonal > *shared.scale.add(t) {
                    *shared.scale.add(t) = diagonal;
                }
            }
        } else {
            converged = small;
            lambda *= LAMBDA_FACTOR;
        }
    }
    thread::sync_threads();
    Run { chi2, iterations, converged, gram }
}

/// The errors at a solution whose Gram matrix is `gram`: `√diag((JᵀJ)⁻¹)`, from the inverse of
/// the factor of `JᵀJ` (`L·D·Lᵀ`, in the tile), a column per thread, into `errors`; NaN, and
/// false (for every thread), where `JᵀJ` is not positive definite, or nearly not
/// (`interface::fit::RANK_TOLERANCE`).
///
/// # Safety
/// Every thread of the block calls it together.
#[inline(always)]
unsafe fn errors(shared: &Shared, gram: *const f64, parameters: usize) -> bool {
    let t = thread::thread_idx_x() as usize;
    let normal = parameters * (parameters + 1) / 2;
    let mut e = t;
    while e < normal {
        *shared.tile.add(e) = *gram.add(e);
        e += THREADS;
    }
    thread::sync_threads();
    let factored = cholesky(shared.tile, parameters, gram, RANK_TOLERANCE);
    if t < parameters {
        let mut error = f64::NAN;
        if factored {
            // Column t of W = D⁻¹·L⁻¹: M = L⁻¹ is unit lower triangular, its entry
            // M[i][t] = −Σ L[i][k]·M[k][t] = −Σ (L·D)[i][k]·W[k][t] over k from t to i − 1, and
            // (JᵀJ)⁻¹[t][t] = Σ M[i][t]²/D[i] = Σ M[i][t]·W[i][t].
            let inverse = shared.tile.add(normal);
            let own = 1.0 / *shared.tile.add(tri(t, t));
            *inverse.add(tri(t, t)) = own;
            let mut variance = own;
            for i in t + 1..parameters {
                let mut s = 0.0f64;
                for k in t..i {
                    s = (*shared.tile.add(tri(i, k))).mul_add(*inverse.add(tri(k, t)), s);
                }
                let value = -s;
                let weighted = value / *shared.tile.add(tri(i, i));
                *inverse.add(tri(i, t)) = weighted;
                variance = value.mul_add(weighted, variance);
            }
            error = variance.sqrt();
        }
        *shared.errors.add(t) = error;
    }
    thread::sync_threads();
    factored
}

/// The brightest summit of the residual of the island (sampled at every pixel, its box of at
/// most `RESIDUAL_BOX_PIXELS`) under the model of its first `parameters` parameters in
/// `current`: the island's usable pixels' data less the model (`interface::fit::residual`), in
/// the tile as f32, NaN elsewhere (which `is_summit` passes over as it passes over a pixel not
/// in the island); a summit where it is above `seed` × the noise and `is_summit` holds on the
/// residual over the box (the brightest first, then the first in raster order: `summit_key`).
/// Where there is one (its key in the search's slot of `keys`), saves `current` in `saved` and
/// starts the step there: the split of a component ([`split`]) where one reaches the summit,
/// else one more component after the others ([`start_added`]). What it starts (for every
/// thread); `Trying::Nothing` where there is no summit.
///
/// # Safety
/// Every thread of the block calls it together, the tile free, the island's box of at most
/// `RESIDUAL_BOX_PIXELS` pixels (its residual fills the tile at most).
#[inline(always)]
unsafe fn residual_summit(island: &Island, shared: &Shared, seed: f64, beam: f64, parameters: usize) -> Trying {
    let t = thread::thread_idx_x() as usize;
    let components = parameters / PARAMETERS;
    if t < components {
        let p = shared.current.add(t * PARAMETERS);
        let (mut sin, mut cos) = (0.0f64, 0.0f64);
        intrinsics::sincospi(*p.add(THETA) * core::f64::consts::FRAC_1_PI, &mut sin, &mut cos);
        *shared.shapes.add(t) = Shape::new(*p.add(MAJOR), *p.add(MINOR), cos, sin);
    }
    if t == 0 {
        *shared.keys.add(MAX_COMPONENTS) = 0;
    }
    thread::sync_threads();
    let residuals = shared.tile as *mut f32;
    let mut k = t;
    while k < island.box_pixels {
        let (row, col) = island.at(k);
        let i = row * island.width + col;
        let (value, noise) = (*island.image.add(i), island.noise_at(i));
        let mut r = f32::NAN;
        if *island.labels.add(i) == island.label && usable(value, noise) {
            let (dx, dy) = ((col - island.x0) as f64, (row - island.y0) as f64);
            let mut model = 0.0f64;
            for c in 0..components {
                let p = shared.current.add(c * PARAMETERS);
                let shape = &*shared.shapes.add(c);
                let (x, y) = (dx - *p.add(X), dy - *p.add(Y));
                model += gaussian(*p.add(PEAK), shape, x, y, |x: f64| x.exp()).0;
            }
            r = residual(value, model);
        }
        *residuals.add(k) = r;
        k += THREADS;
    }
    thread::sync_threads();
    let (width, height) = (island.box_width, island.box_pixels / island.box_width);
    let mut best = 0u64;
    let mut k = t;
    while k < island.box_pixels {
        let value = *residuals.add(k);
        let (row, col) = island.at(k);
        if value as f64 > seed * island.noise_at(row * island.width + col) as f64
            && is_summit((k / width, k % width), (height, width), island.radius, |j| Some(*residuals.add(j)))
        {
            let key = summit_key(value, k as u32);
            if key > best {
                best = key;
            }
        }
        k += THREADS;
    }
    if best > 0 {
        shared_max(shared.keys.add(MAX_COMPONENTS), best);
    }
    thread::sync_threads();
    let key = *shared.keys.add(MAX_COMPONENTS);
    if key == 0 {
        return Trying::Nothing;
    }
    if t < parameters {
        *shared.saved.add(t) = *shared.current.add(t);
    }
    thread::sync_threads();
    if t == 0 {
        let split = split(island, shared, seed, beam, parameters);
        *shared.keys.add(SPLIT) = split as u64;
        if split == 0 {
            start_added(island, shared, seed, beam, parameters, false);
        }
    }
    thread::sync_threads();
    if *shared.keys.add(SPLIT) == 0 {
        Trying::Added
    } else {
        Trying::Split
    }
}

/// A split of component `c` given up: its bounds back from `held`, and one more component
/// started at the residual's summit instead ([`start_added`]). One thread.
///
/// # Safety
/// The summit's key is in its slot; no other thread touches the parameters and bounds.
#[inline(always)]
unsafe fn unsplit(island: &Island, shared: &Shared, seed: f64, beam: f64, parameters: usize, c: usize) {
    unroll!([0, 1, 2, 3, 4, 5], |q| {
        *shared.low.add(c * PARAMETERS + q) = *shared.held.add(q);
        *shared.high.add(c * PARAMETERS + q) = *shared.held.add(PARAMETERS + q);
    });
    start_added(island, shared, seed, beam, parameters, false);
}

/// Starts a component in the slot after the first `parameters` parameters at the residual's
/// summit (its key in the search's slot of `keys`), within the bounds of the data's value
/// there, and at that value for a split, else at the residual's
/// (`interface::fit::RESIDUAL_STEPS`). One thread.
///
/// # Safety
/// The summit's key is in its slot; no other thread touches the slot's parameters and bounds.
#[inline(always)]
unsafe fn start_added(island: &Island, shared: &Shared, seed: f64, beam: f64, parameters: usize, split: bool) {
    let (value, k) = summit_of(*shared.keys.add(MAX_COMPONENTS));
    let (row, col) = island.at(k as usize);
    let c = parameters / PARAMETERS;
    start_component(island, shared, seed, beam, c, (row, col), *island.image.add(row * island.width + col) as f64);
    if !split {
        *shared.current.add(c * PARAMETERS + PEAK) = value as f64;
    }
}

/// Starts component `c` (`current`, `low` and `high`) at image pixel (`row`, `col`) of the
/// island's box, of value `value` (`interface::fit::start`). One thread.
///
/// # Safety
/// No other thread touches the component's parameters and bounds.
#[inline(always)]
unsafe fn start_component(
    island: &Island,
    shared: &Shared,
    seed: f64,
    beam: f64,
    c: usize,
    (row, col): (usize, usize),
    value: f64,
) {
    let (width, height) = (island.box_width, island.box_pixels / island.box_width);
    let sigma = island.noise_at(row * island.width + col) as f64;
    let (x, y) = ((col - island.x0) as f64, (row - island.y0) as f64);
    let s = start(value, x, y, sigma, seed, beam, width, height, |x: f64| x.exp());
    let base = c * PARAMETERS;
    unroll!([0, 1, 2, 3, 4, 5], |q| {
        *shared.current.add(base + q) = s.params[q];
        *shared.low.add(base + q) = s.low[q];
        *shared.high.add(base + q) = s.high[q];
    });
}

/// The split of the first of the first `parameters / PARAMETERS` components (their shapes in
/// `shapes`) within whose reach lies the residual's summit (`interface::fit::split_at`): its
/// bounds held in `held`, it starts again at the summit's mirror through its centre and one more
/// at the summit ([`start_added`]), each from the data's value there. That component's index
/// plus one; 0, and nothing started, where no component reaches the summit, or the mirror or the
/// summit is no usable pixel of the island above the seed level. One thread.
///
/// # Safety
/// The summit's key is in its slot; no other thread touches the parameters and bounds.
#[inline(always)]
unsafe fn split(island: &Island, shared: &Shared, seed: f64, beam: f64, parameters: usize) -> usize {
    let (_, k) = summit_of(*shared.keys.add(MAX_COMPONENTS));
    let (width, height) = (island.box_width, island.box_pixels / island.box_width);
    let summit = (k as usize / width, k as usize % width);
    let above = |(row, col): (usize, usize)| {
        let i = (island.y0 + row) * island.width + island.x0 + col;
        let (value, noise) = (*island.image.add(i), island.noise_at(i));
        *island.labels.add(i) == island.label && usable(value, noise) && value as f64 > seed * noise as f64
    };
    for c in 0..parameters / PARAMETERS {
        let p = shared.current.add(c * PARAMETERS);
        if let Some(mirror) = split_at(*p.add(X), *p.add(Y), &*shared.shapes.add(c), summit, (height, width)) {
            if !(above(mirror) && above(summit)) {
                return 0;
            }
            let base = c * PARAMETERS;
            unroll!([0, 1, 2, 3, 4, 5], |q| {
                *shared.held.add(q) = *shared.low.add(base + q);
                *shared.held.add(PARAMETERS + q) = *shared.high.add(base + q);
            });
            let (row, col) = (island.y0 + mirror.0, island.x0 + mirror.1);
            let value = *island.image.add(row * island.width + col) as f64;
            start_component(island, shared, seed, beam, c, (row, col), value);
            start_added(island, shared, seed, beam, parameters, true);
            return c + 1;
        }
    }
    0
}

/// The step from the factored damped matrix in the tile (`L·D` and `D`, [`cholesky`]), and the
/// trial point it leads to, clamped to the bounds; sets the small-step flag. The first warp,
/// lane `l` holding rows `l` and `l + 32`: forward, `w[k] = (Jᵀr[k] − Σ (L·D)[k][j]·w[j]) /
/// D[k]`, then back, `x[k] = w[k] − (Σ (L·D)[j][k]·x[j]) / D[k]` for `j` after `k`. As each
/// unknown is found, its lane hands it to the others by a shuffle and every row still open takes
/// its term, so each row adds its terms in the order one thread would (forward by rising
/// column, back by falling row). The rows' reciprocal pivots are found before either pass: an
/// unknown waits for a multiply-add and a shuffle, not a square root and a division.
///
/// # Safety
/// The 32 threads of the first warp call it together; the tile holds the factor of
/// `parameters` (at most 64) parameters, `gram` the current Gram matrix.
unsafe fn solve(shared: &Shared, gram: *const f64, parameters: usize) {
    let tile = shared.tile;
    let gradient = gram.add(parameters * (parameters + 1) / 2);
    let lane = thread::thread_idx_x() as usize;
    let rows = [lane, lane + 32];
    let (mut sums, mut inverses) = ([0.0f64; 2], [0.0f64; 2]);
    unroll!([0, 1], |h| {
        if rows[h] < parameters {
            sums[h] = *gradient.add(rows[h]);
            inverses[h] = 1.0 / *tile.add(tri(rows[h], rows[h]));
        }
    });
    // Register arrays indexed by `k < 32`, not `k / 32`: a computed index would put them in
    // local memory.
    let mut found = [0.0f64; 2];
    for k in 0..parameters {
        let w = broadcast(if k < 32 { sums[0] * inverses[0] } else { sums[1] * inverses[1] }, k % 32);
        if lane == k % 32 {
            if k < 32 {
                found[0] = w;
            } else {
                found[1] = w;
            }
        }
        unroll!([0, 1], |h| {
            if rows[h] > k && rows[h] < parameters {
                sums[h] = (-*tile.add(tri(rows[h], k))).mul_add(w, sums[h]);
            }
        });
    }
    let mut rests = [0.0f64; 2];
    let mut small = true;
    for k in (0..parameters).rev() {
        let x = broadcast(
            if k < 32 { inverses[0].mul_add(rests[0], found[0]) } else { inverses[1].mul_add(rests[1], found[1]) },
            k % 32,
        );
        if lane == k % 32 {
            let old = *shared.current.add(k);
            let new = clamp(old + x, *shared.low.add(k), *shared.high.add(k));
            *shared.trial.add(k) = new;
            small &= small_step(old, new);
        }
        unroll!([0, 1], |h| {
            if rows[h] < k {
                rests[h] = (-*tile.add(tri(k, rows[h]))).mul_add(x, rests[h]);
            }
        });
    }
    let all_small = ballot(!small) == 0;
    if lane == 0 {
        *shared.counts.add(SMALL) = all_small as u32;
    }
}

/// Lane `lane`'s `value`, in every lane of the warp.
///
/// # Safety
/// All 32 lanes of the warp call it together, with the same `lane`, below 32.
#[inline(always)]
unsafe fn broadcast(value: f64, lane: usize) -> f64 {
    let bits = value.to_bits();
    let (low, high): (u32, u32);
    let lane = lane as u32;
    asm!("shfl.sync.idx.b32 {o}, {v}, {l}, 31, 0xffffffff;", o = out(reg32) low, v = in(reg32) bits as u32, l = in(reg32) lane, options(nomem, nostack));
    asm!("shfl.sync.idx.b32 {o}, {v}, {l}, 31, 0xffffffff;", o = out(reg32) high, v = in(reg32) (bits >> 32) as u32, l = in(reg32) lane, options(nomem, nostack));
    f64::from_bits((high as u64) << 32 | low as u64)
}

/// Where a block writes its island's results.
struct Output {
    fits: *mut f64,
    status: *mut u32,
}

impl Output {
    /// Settles the first `components` components in shared memory (`interface::fit::settle`):
    /// their parameters in `current`, their errors in `errors`.
    ///
    /// # Safety
    /// Every thread of the block calls it together.
    unsafe fn settle(&self, shared: &Shared, components: usize, x0: usize, y0: usize) {
        let t = thread::thread_idx_x() as usize;
        if t < components {
            let (p, e) = (shared.current.add(t * PARAMETERS), shared.errors.add(t * PARAMETERS));
            let (mut params, mut errors) = ([0.0f64; PARAMETERS], [0.0f64; PARAMETERS]);
            unroll!([0, 1, 2, 3, 4, 5], |q| {
                params[q] = *p.add(q);
                errors[q] = *e.add(q);
            });
            settle(&mut params, &mut errors, x0 as f64, y0 as f64);
            unroll!([0, 1, 2, 3, 4, 5], |q| {
                *p.add(q) = params[q];
                *e.add(q) = errors[q];
            });
        }
        thread::sync_threads();
    }

    /// Writes the record (χ², then the first `components` components from shared memory, NaN
    /// after them) and the status (`counts`: flags, iterations, pixels, summits, components
    /// added from the residual), each word once.
    ///
    /// # Safety
    /// Every thread of the block calls it together.
    unsafe fn write(&self, shared: &Shared, components: usize, chi2: f64, counts: [u32; 5]) {
        let t = thread::thread_idx_x() as usize;
        let mut w = t;
        while w < RECORD_WORDS {
            let value = if w == CHI2 {
                chi2
            } else {
                let (c, q) = ((w - COMPONENTS) / COMPONENT_WORDS, (w - COMPONENTS) % COMPONENT_WORDS);
                if c >= components {
                    f64::NAN
                } else if q < PARAMETERS {
                    *shared.current.add(c * PARAMETERS + q)
                } else {
                    *shared.errors.add(c * PARAMETERS + q - PARAMETERS)
                }
            };
            *self.fits.add(w) = value;
            w += THREADS;
        }
        if t == 0 {
            *self.status.add(STATUS_COMPONENTS) = components as u32;
            *self.status.add(STATUS_FLAGS) = counts[0];
            *self.status.add(STATUS_ITERATIONS) = counts[1];
            *self.status.add(STATUS_PIXELS) = counts[2];
            *self.status.add(STATUS_SUMMITS) = counts[3];
            *self.status.add(STATUS_ADDED) = counts[4];
        }
    }
}
