//! Background and noise maps as BANE (AegeanTools) makes them: on a coarse grid, the
//! σ-clipped median and standard deviation of the pixels in a box around each point, then
//! both interpolated bilinearly to every pixel, with the signal-to-noise image beside them.
//!
//! **The one idea: sort a box once, then every clipping round is a range of it.** A round
//! keeps the values strictly inside median ± κσ of the values kept so far; an interval of
//! sorted values is a run of them. So the box's finite pixels are sorted once, in shared
//! memory, and each round narrows a run `[a, b)` by two binary searches: its median is read at
//! its middle, its mean and deviation are two block sums over it.
//!
//! **`background_grid`: one block of `THREADS` per grid point** (a one-dimensional grid,
//! point `(gy, gx)` in block `gy · columns + gx`, so no grid dimension limits the image).
//! 1. The box's pixels are read row after row (consecutive threads, consecutive pixels), and
//!    the finite ones appended to shared memory: a ballot per warp, one shared atomic per warp
//!    for the warp's place. The order they land in does not matter; the sort fixes it. -0.0 is
//!    stored as 0.0, so equal values are equal bits.
//! 2. A bitonic sort in the all-ascending form (each stage's first comparisons mirror the
//!    block, the rest are half-cleaners): padding the run to a power of two with +∞ would
//!    leave the padding in place, so comparisons with a partner past the run are skipped and
//!    no padding is stored. Shared memory: 4 bytes a pixel of the box (`MAX_BOX_PIXELS` at
//!    most), after the count and the sums' warp totals (`SHARED_HEADER`), all of it dynamic.
//! 3. Up to `rounds` rounds as BANE's `sigmaclip`: the window from this run's median and σ, the
//!    run inside it found by binary search (every thread searches alike, reading the same
//!    words, so no barrier is needed); stop when it keeps nothing (the last statistics stand)
//!    or all. Sums are f64, in the order `interface::background::block_sum` writes out, with
//!    the arithmetic of `interface::background`, rounded op by op: the CPU adds in that order
//!    and gets the same bits.
//! 4. Thread 0 writes the median and σ as the point's two f64 (NaN, NaN for a box with no
//!    finite pixel).
//!
//! **`background_interpolate`: one thread per pixel.** The pixel's cell of the grid, the four
//! corners' weights (`interface::background::cell`, `weights`), the NaN-aware bilinear
//! interpolation of both fields (`interpolate`), and the S/N when asked; NaN wherever the pixel
//! is not finite, as BANE masks its maps. The grid is small and read through the caches; the
//! image is read once and the maps written once. A pixel also costs a few correctly rounded
//! f64 divisions (the cell's fractions, by the weights' sum where it is not exactly 1, the
//! S/N), the same ones the CPU reference makes.
//!
//! **Cost.** The grid kernel's work is the sort: `log2(m)·(log2(m) + 1)/2` stages of `m/2`
//! comparisons for a run padded to `m`, in shared memory, per grid point; boxes overlap (BANE's
//! box is six steps), so each pixel is sorted in 36 boxes.

use crate::ballot;
use core::arch::asm;
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::background::{
    add, add_square, box_range, cell, grid_coordinate, grid_points, interpolate, mean, median, next, snr, std, weights,
    window, BACKGROUND, FIELDS, NOISE, SHARED_COUNT, SHARED_HEADER, SHARED_SQUARES, SHARED_SUMS, THREADS, WARPS,
};

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

/// The median and the standard deviation of the sorted run `values[a..b)`, `a < b`.
#[inline(always)]
unsafe fn statistics(values: *const f32, a: u32, b: u32, sums: *mut f64, squares: *mut f64) -> (f64, f64) {
    let tid = thread::thread_idx_x();
    let count = b - a;
    let mut partial = 0.0;
    let mut i = a + tid;
    while i < b {
        partial = add(partial, *values.add(i as usize) as f64);
        i += THREADS as u32;
    }
    let average = mean(block_total(partial, sums), count);
    let mut partial = 0.0;
    let mut i = a + tid;
    while i < b {
        partial = add_square(partial, *values.add(i as usize), average);
        i += THREADS as u32;
    }
    let sigma = std(block_total(partial, squares), count);
    let middle = median(*values.add((a + (count - 1) / 2) as usize), *values.add((a + count / 2) as usize));
    (middle, sigma)
}

/// The first index of the sorted run `values[lo..hi)` whose value `beyond` holds for (`hi` if
/// none): `beyond` is false, then true, along the run.
#[inline(always)]
unsafe fn search(values: *const f32, mut lo: u32, mut hi: u32, beyond: impl Fn(f64) -> bool) -> u32 {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if beyond(*values.add(mid as usize) as f64) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Compares `values[i]` with `values[l]`, `i < l`, and puts the smaller first.
#[inline(always)]
unsafe fn order(values: *mut f32, i: u32, l: u32) {
    let (x, y) = (*values.add(i as usize), *values.add(l as usize));
    if x > y {
        *values.add(i as usize) = y;
        *values.add(l as usize) = x;
    }
}

/// Sorts `values[0..n)` ascending: a bitonic network in its all-ascending form, comparisons
/// with a partner at `n` or beyond left out (that partner would be +∞ padding, already in
/// place). Every thread of the block calls it.
#[inline(always)]
unsafe fn sort(values: *mut f32, n: u32) {
    let tid = thread::thread_idx_x();
    let pairs = n.next_power_of_two() / 2;
    let mut size = 2u32;
    while size <= 2 * pairs {
        // The mirror: element `offset` of each block of `size` against element `size − 1 − offset`.
        let half = size / 2;
        let shift = half.trailing_zeros();
        let mut p = tid;
        while p < pairs {
            let start = (p >> shift) << (shift + 1);
            let offset = p & (half - 1);
            let partner = start + size - 1 - offset;
            if partner < n {
                order(values, start + offset, partner);
            }
            p += THREADS as u32;
        }
        thread::sync_threads();
        // The half-cleaners: element `i` against `i + j`, `j` halving down to 1.
        let mut j = half / 2;
        while j > 0 {
            let shift = j.trailing_zeros();
            let mut p = tid;
            while p < pairs {
                let i = ((p >> shift) << (shift + 1)) + (p & (j - 1));
                if i + j < n {
                    order(values, i, i + j);
                }
                p += THREADS as u32;
            }
            thread::sync_threads();
            j /= 2;
        }
        size *= 2;
    }
}

/// Appends the finite pixels of the box `x0..x1 × y0..y1` to `values`, counting them in
/// `*count` (zero on entry, seen by every thread); returns how many there are.
#[inline(always)]
unsafe fn gather(
    image: &[f32],
    width: usize,
    (x0, x1, y0, y1): (u32, u32, u32, u32),
    values: *mut f32,
    count: *mut u32,
) -> u32 {
    let tid = thread::thread_idx_x();
    let lane = tid % 32;
    let below = (1u32 << lane) - 1;
    let counter = crate::shared_address(count);
    let columns = x1 - x0;
    let area = columns * (y1 - y0);
    // Whole warps go round together: the ballot needs every lane.
    let mut first = 0;
    while first < area {
        let q = first + tid;
        let mut value = 0.0f32;
        if q < area {
            let (y, x) = (y0 + q / columns, x0 + q % columns);
            value = *image.get_unchecked(y as usize * width + x as usize);
        }
        let keep = q < area && value.is_finite();
        let kept = ballot(keep);
        if kept != 0 {
            let mut place = 0u32;
            if lane == 0 {
                asm!("atom.shared.add.u32 {o}, [{a}], {v};", o = out(reg32) place, a = in(reg32) counter, v = in(reg32) kept.count_ones());
            }
            asm!("shfl.sync.idx.b32 {o}, {v}, 0, 31, 0xffffffff;", o = out(reg32) place, v = in(reg32) place);
            if keep {
                // -0.0 becomes 0.0: equal values sort as equal bits, whatever their order.
                *values.add((place + (kept & below).count_ones()) as usize) = if value == 0.0 { 0.0 } else { value };
            }
        }
        first += THREADS as u32;
    }
    thread::sync_threads();
    *count
}

/// # Safety
/// The launcher (`GridArgs` on the host) guarantees: `image` holds `width · height` pixels,
/// 1 to 2^32 − 1 of them; `step_x`, `step_y`, `box_x` and `box_y` are at least 1; the launch's
/// dynamic shared memory holds `SHARED_HEADER` bytes and then an f32 for every pixel of the
/// largest box cut to the image; `grid` holds `FIELDS` f64 per grid point
/// (`grid_points` along each axis) and overlaps no input; blocks of `THREADS` threads, one per
/// grid point, in a one-dimensional grid.
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
) {
    // All of the block's shared memory is the dynamic one (`interface::background::SHARED_HEADER`).
    let shared = dynamic_shared_mem::<u8>();
    let count = shared.add(SHARED_COUNT) as *mut u32;
    let sums = shared.add(SHARED_SUMS) as *mut f64;
    let squares = shared.add(SHARED_SQUARES) as *mut f64;
    let values = shared.add(SHARED_HEADER) as *mut f32;
    let (w, h) = (width as u32, height as u32);
    let point = thread::block_idx_x();
    let (columns, rows) = (grid_points(w, step_x), grid_points(h, step_y));
    let cx = grid_coordinate(point % columns, w, step_x, columns);
    let cy = grid_coordinate(point / columns, h, step_y, rows);
    let (x0, x1) = box_range(cx, w, box_x);
    let (y0, y1) = box_range(cy, h, box_y);
    if thread::thread_idx_x() == 0 {
        *count = 0;
    }
    thread::sync_threads();
    let n = gather(image, width, (x0, x1, y0, y1), values, count);
    let out = grid.add(point as usize * FIELDS);
    if n == 0 {
        if thread::thread_idx_x() == 0 {
            *out.add(BACKGROUND) = f64::NAN;
            *out.add(NOISE) = f64::NAN;
        }
        return;
    }
    sort(values, n);
    let (mut a, mut b) = (0, n);
    let (mut middle, mut sigma) = statistics(values, a, b, sums, squares);
    let mut round = 0;
    while round < rounds {
        let (low, high) = window(middle, sigma, kappa);
        let first = search(values, a, b, |v| v > low);
        let end = search(values, first, b, |v| v >= high);
        if end == first || end - first == b - a {
            break;
        }
        a = first;
        b = end;
        let (m, s) = statistics(values, a, b, sums, squares);
        middle = m;
        sigma = s;
        round += 1;
    }
    if thread::thread_idx_x() == 0 {
        *out.add(BACKGROUND) = middle;
        *out.add(NOISE) = sigma;
    }
}

/// # Safety
/// The launcher (`InterpolateArgs` on the host) guarantees: `image` holds `width · height`
/// pixels, 1 to 2^32 − 1 of them; `step_x` and `step_y` are at least 1; `grid` holds `FIELDS`
/// f64 per grid point; `background` and `noise`, and `snr` unless it is null, hold
/// `width · height` f32 each and overlap neither each other nor an input; one-dimensional
/// blocks give at least one thread per pixel.
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
    if !snr_out.is_null() {
        *snr_out.add(t) = snr(pixel, level, sigma);
    }
}
