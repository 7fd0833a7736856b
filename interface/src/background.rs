//! What the background and noise kernels (`kernels/src/background.rs`), their host
//! (`library/src/background.rs`) and their CUDA C twins share: the launch shapes, the grid's
//! layout, and the arithmetic itself. The CPU reference calls these same functions, so a map
//! it makes equals the GPU's bit for bit: the kernels and the reference round the same f64
//! operations in the same order.
//!
//! The grid, as BANE lays it out (`AegeanTools/BANE.py`, `sigma_filter`): along each axis its
//! points sit at `0, step, 2·step, …`, and one more at the image's last pixel (BANE puts it one
//! past). Each point's box is `size` pixels along the axis, from `centre − ⌊size/2⌋`, cut at
//! the image's edges (BANE's `data[c − size//2 : c + size//2]`, which also leaves out the last
//! row and column of the image; here they are in).

/// Threads of a `background_grid` block, one block per grid point. The sums over a box are
/// added in a fixed order that this number sets (see [`block_sum`]), so the CPU reference
/// adds in the same one.
pub const THREADS: usize = 256;
/// Warps of a `background_grid` block: the partial sums the first level of [`block_sum`] leaves.
pub const WARPS: usize = THREADS / 32;
/// Blocks of `background_grid` an SM must hold: four, so that a thread has at most 64
/// registers. A box of BANE's default size (a beam of 2.355 pixels: 96², 37 KiB) lets an H100
/// SM hold five, and a block's passes and barriers leave the SM idle unless several blocks
/// take turns; left free, the registers rose past 64 and three blocks fitted.
pub const GRID_BLOCKS_PER_SM: u32 = 4;
/// The launch bounds of `background_grid`.
pub const BOUNDS: [crate::LaunchBounds; 1] = [crate::LaunchBounds {
    kernel: "background_grid",
    max_threads: THREADS as u32,
    min_blocks_per_sm: GRID_BLOCKS_PER_SM,
}];
/// The most pixels of a box, cut to the image: they are kept in shared memory, four bytes
/// each, so 160 KiB at most (and [`SHARED_HEADER`]), within an H100's per-block limit (227
/// KiB; the launcher checks the device's). BANE's default box for a beam of 8 pixels is 192²
/// = 36864 pixels.
pub const MAX_BOX_PIXELS: usize = 40960;
/// Bins of the histogram that narrows a median's range by a factor of up to this per pass.
pub const BINS: usize = 1024;
/// Bins each thread of a `background_grid` block counts up in the histogram's scan.
pub const BINS_PER_THREAD: usize = BINS / THREADS;
/// A range holding at most this many values is ranked directly, a thread to a value.
pub const CANDIDATES: usize = THREADS;
/// Bytes at the start of `background_grid`'s dynamic shared memory before the box's values,
/// at these offsets: the [`WARPS`] f64 warp totals of the sums, then of the squared
/// deviations; per warp a u32 count, an f32 least and an f32 greatest value; the chosen bin's
/// record ([`PICK_WORDS`] u32); the histogram ([`BINS`] u32); the candidates ([`CANDIDATES`]
/// f32). Everything lives in the dynamic shared memory: cuda_std declares it as a 16-byte
/// array that ptxas places first, before any static shared array, which the values past its
/// 16 bytes would overwrite.
pub const SHARED_SUMS: usize = 0;
pub const SHARED_SQUARES: usize = SHARED_SUMS + 8 * WARPS;
pub const SHARED_COUNTS: usize = SHARED_SQUARES + 8 * WARPS;
pub const SHARED_LEAST: usize = SHARED_COUNTS + 4 * WARPS;
pub const SHARED_MOST: usize = SHARED_LEAST + 4 * WARPS;
pub const SHARED_PICK: usize = SHARED_MOST + 4 * WARPS;
pub const SHARED_BINS: usize = SHARED_PICK + 4 * PICK_WORDS;
pub const SHARED_CANDIDATES: usize = SHARED_BINS + 4 * BINS;
pub const SHARED_HEADER: usize = SHARED_CANDIDATES + 4 * CANDIDATES;
/// u32 words of the chosen bin's record, at these indices: the bin, the values below it, the
/// values in it, the candidates placed so far, and the bits of the values selected (of the rank
/// asked for, and of the next).
pub const PICK_WORDS: usize = 6;
pub const PICK_BIN: usize = 0;
pub const PICK_BELOW: usize = 1;
pub const PICK_COUNT: usize = 2;
pub const PICK_PLACED: usize = 3;
pub const PICK_VALUE: usize = 4;
pub const PICK_NEXT: usize = 5;
/// Threads of a `background_interpolate` block, one per pixel.
pub const INTERPOLATE_BLOCK: u32 = 256;
/// Threads of a `background_least_noise` block, one per grid point.
pub const LEAST_NOISE_BLOCK: u32 = 256;
/// Threads of `background_fill`'s one block: its rounds need the whole grid's barrier.
pub const FILL_BLOCK: u32 = 1024;
/// The bit `background_fill` sets on a listed point that found no neighbour in a round (grid
/// points are below 2^31).
pub const FILL_NONE: u32 = 1 << 31;
/// f64 values per grid point in the grid the first kernel writes and the second reads: the
/// background (the σ-clipped median), then the noise (the σ-clipped standard deviation).
pub const FIELDS: usize = 2;
pub const BACKGROUND: usize = 0;
pub const NOISE: usize = 1;

/// f64 arithmetic rounded once per operation. libNVVM would contract a multiply and an add
/// into one `fma`, which rounds once and makes the GPU's result differ from the CPU's in the
/// last bit; PTX operations with an explicit rounding mode are never contracted.
macro_rules! rounded {
    ($($(#[$doc:meta])* $name:ident($a:ident $(, $b:ident)?) $op:tt $ptx:literal;)+) => {
        $(
            $(#[$doc])*
            #[inline(always)]
            pub fn $name($a: f64 $(, $b: f64)?) -> f64 {
                #[cfg(target_os = "cuda")]
                {
                    let out: u64;
                    // SAFETY: arithmetic on registers only.
                    unsafe {
                        core::arch::asm!(
                            concat!($ptx, " {o}, {a}", $(", {", stringify!($b), "}",)? ";"),
                            o = out(reg64) out,
                            a = in(reg64) $a.to_bits(),
                            $($b = in(reg64) $b.to_bits(),)?
                            options(pure, nomem, nostack),
                        );
                    }
                    f64::from_bits(out)
                }
                #[cfg(not(target_os = "cuda"))]
                {
                    rounded!(@host $a $op $($b)?)
                }
            }
        )+
    };
    (@host $a:ident sqrt) => { $a.sqrt() };
    (@host $a:ident $op:tt $b:ident) => { $a $op $b };
}

rounded! {
    /// `a + b`.
    add(a, b) + "add.rn.f64";
    /// `a − b`.
    sub(a, b) - "sub.rn.f64";
    /// `a · b`.
    mul(a, b) * "mul.rn.f64";
    /// `a / b`, correctly rounded.
    div(a, b) / "div.rn.f64";
    /// `√a`, correctly rounded.
    sqrt(a) sqrt "sqrt.rn.f64";
}

/// Grid points along an axis of `extent` pixels (at least 1) for a step of `step` (at least
/// 1): `⌈(extent − 1) / step⌉ + 1`, so that the last lies on the last pixel.
#[inline(always)]
pub fn grid_points(extent: u32, step: u32) -> u32 {
    if extent <= 1 {
        1
    } else {
        (extent - 2) / step + 2
    }
}

/// The pixel of grid point `i` of `points` ([`grid_points`]): `i · step`, the last on
/// `extent − 1`.
#[inline(always)]
pub fn grid_coordinate(i: u32, extent: u32, step: u32, points: u32) -> u32 {
    if i + 1 >= points {
        extent - 1
    } else {
        i * step
    }
}

/// The pixels `start..end` of a box of `size` (at least 1) around `centre`, cut to the image:
/// `centre − ⌊size/2⌋ .. centre − ⌊size/2⌋ + size`.
#[inline(always)]
pub fn box_range(centre: u32, extent: u32, size: u32) -> (u32, u32) {
    let start = centre.saturating_sub(size / 2);
    let end = centre as u64 + (size - size / 2) as u64;
    (start, if end < extent as u64 { end as u32 } else { extent })
}

/// Tiles of `step` pixels (at least 1) along an axis of `extent` pixels (at least 1), the last
/// cut short: tile `i` holds pixels `i · step ..`. A second pass's mask marks the tiles its
/// pixels fall in, a u32 a tile, row-major with `tiles(width, step_x)` a row, so that
/// `background_grid` can tell a box that the mask left whole.
#[inline(always)]
pub fn tiles(extent: u32, step: u32) -> u32 {
    (extent - 1) / step + 1
}

/// The tiles ([`tiles`]) that pixels `start..end` (not empty) overlap: `first..last`.
#[inline(always)]
pub fn tile_span(start: u32, end: u32, step: u32) -> (u32, u32) {
    (start / step, (end - 1) / step + 1)
}

/// The grid point at or before pixel `p` along an axis of `points` grid points
/// ([`grid_points`]), and how far `p` lies from it towards the next ([`next`]), 0 to 1: the
/// cell of the bilinear interpolation. With one grid point the fraction is 0.
#[inline(always)]
pub fn cell(p: u32, extent: u32, step: u32, points: u32) -> (u32, f64) {
    // Returns a pair, not a triple: libNVVM keeps a returned triple in local memory.
    let last_cell = points.saturating_sub(2);
    let lower = if p / step < last_cell { p / step } else { last_cell };
    let first = lower * step;
    let second = grid_coordinate(next(lower, points), extent, step, points);
    let fraction = if second > first { div((p - first) as f64, (second - first) as f64) } else { 0.0 };
    (lower, fraction)
}

/// The grid point after point `i` of `points`: `i + 1`, or `i` itself when it is the last.
#[inline(always)]
pub fn next(i: u32, points: u32) -> u32 {
    if i + 1 < points {
        i + 1
    } else {
        i
    }
}

/// The weights of a cell's corners, in the order (lower row, lower column), (lower row, upper
/// column), (upper row, lower column), (upper row, upper column), for fractions `fy` along the
/// rows and `fx` along the columns: what `scipy.interpolate.RegularGridInterpolator` gives
/// each corner in BANE.
#[inline(always)]
pub fn weights(fy: f64, fx: f64) -> [f64; 4] {
    let (wy, wx) = (sub(1.0, fy), sub(1.0, fx));
    [mul(wy, wx), mul(wy, fx), mul(fy, wx), mul(fy, fx)]
}

/// The bilinear interpolation of a cell's corner values, leaving out NaN corners: the
/// weighted mean of the corners of positive weight whose value is a number, in corner order;
/// NaN when there is none (every corner of the pixel's cell that touches it has no finite
/// pixel in its box). Where all four are numbers this is BANE's interpolation, divided by the
/// weights' sum (1 but for rounding).
#[inline(always)]
pub fn interpolate(values: [f64; 4], weights: [f64; 4]) -> f64 {
    let (mut sum, mut total) = (0.0, 0.0);
    // Unrolled by hand: a loop over the arrays could leave them in local memory.
    accumulate(&mut sum, &mut total, values[0], weights[0]);
    accumulate(&mut sum, &mut total, values[1], weights[1]);
    accumulate(&mut sum, &mut total, values[2], weights[2]);
    accumulate(&mut sum, &mut total, values[3], weights[3]);
    // The weights of four corners mostly add up to exactly 1, and x / 1 is x: the division is
    // skipped then, with the same result.
    if total == 1.0 {
        sum
    } else if total > 0.0 {
        div(sum, total)
    } else {
        f64::NAN
    }
}

#[inline(always)]
fn accumulate(sum: &mut f64, total: &mut f64, value: f64, weight: f64) {
    if weight > 0.0 && !value.is_nan() {
        *sum = add(*sum, mul(weight, value));
        *total = add(*total, weight);
    }
}

/// The signal-to-noise ratio of `pixel`: `(pixel − background) / noise` in f64, rounded once
/// to f32 (±∞ or NaN where the noise is 0).
#[inline(always)]
pub fn snr(pixel: f32, background: f64, noise: f64) -> f32 {
    div(sub(pixel as f64, background), noise) as f32
}

/// The histogram bin of `v` among values from `least` to `most`, [`BINS`] bins of equal
/// width, for the [`BinScale`] of that range: nondecreasing in `v`, `least` in the first bin
/// and `most` in the last, so that a bin holds a range of values and a pass always splits the
/// range. In f32, once per value, where f64 would take three conversions: the bins only steer
/// the search, and any split with those properties finds the same value. `truncate` takes a
/// value from 0 to `BINS − 1` to its whole part (Rust's `as u32`; in the kernel one addition
/// rounded towards zero, where `as` takes a conversion instruction, which an SM runs at an
/// eighth of the rate of an addition).
#[inline(always)]
pub fn bin(v: f32, least: f32, scale: BinScale, truncate: impl Fn(f32) -> u32) -> usize {
    truncate(((v - least) * scale.pre * scale.scale).max(0.0).min((BINS - 1) as f32)) as usize
}

/// How [`bin`] scales a value's distance from the range's least: by `pre`, a power of two (so
/// exactly), then by `scale`, `BINS` over the range so scaled, rounded to f32. `pre` is
/// [`NARROW_PRE`] for a range under [`NARROW_RANGE`], else 1: `BINS` over a range of a few
/// subnormal steps is past f32's largest, and an infinite scale would split off only the least
/// value at each pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BinScale {
    pub pre: f32,
    pub scale: f32,
}

/// Ranges narrower than this (2⁻¹⁰⁰) are scaled by [`NARROW_PRE`] before they are binned.
pub const NARROW_RANGE: f64 = 7.888609052210118e-31;
/// 2¹⁰⁰: a narrow range's distances times this are below 1 and at least 2⁻⁴⁹, so `BINS` over
/// them is at most 2⁵⁹.
pub const NARROW_PRE: f32 = 1.2676506e30;

impl BinScale {
    /// The scale of [`bin`] for values from `least` to `most` (`least < most`; the range is
    /// taken in f64, so it is never ∞ itself and `scale` is at least `BINS` over 2·f32::MAX).
    #[inline(always)]
    pub fn of(least: f32, most: f32) -> BinScale {
        let range = most as f64 - least as f64;
        let pre = if range < NARROW_RANGE { NARROW_PRE } else { 1.0 };
        BinScale { pre, scale: (BINS as f64 / (range * pre as f64)) as f32 }
    }
}

/// The window `(lo, hi)` as the bounds `[least, most]` in f32 that keep the same f32 values:
/// `least ≤ v ≤ most` exactly when `lo < v < hi` in f64, for every f32 `v` (never NaN or ±∞:
/// `least` is at least −f32::MAX and `most` at most f32::MAX). A pass over a box then compares
/// each value as it is, where the window in f64 takes a conversion of each.
#[inline(always)]
pub fn kept_bounds((lo, hi): (f64, f64)) -> (f32, f32) {
    (least_above(lo), -least_above(-hi))
}

/// The least f32 greater than `x` in f64 (−f32::MAX for −∞ and below it, NaN for NaN, +∞ for
/// +∞ and above f32::MAX). `x as f32` is the f32 nearest `x`: it is the least above `x` if it is
/// above, else the next one up is (a nearer one would lie between them).
#[inline(always)]
fn least_above(x: f64) -> f32 {
    let nearest = x as f32;
    if nearest as f64 > x {
        nearest
    } else {
        next_up(nearest)
    }
}

/// The next f32 above `v`: the least subnormal above ±0, −f32::MAX above −∞, `v` itself for
/// +∞ and NaN (`f32::next_up`, newer than the kernels' toolchain).
#[inline(always)]
fn next_up(v: f32) -> f32 {
    let bits = v.to_bits();
    if v.is_nan() || v == f32::INFINITY {
        v
    } else if v == 0.0 {
        f32::from_bits(1)
    } else if v > 0.0 {
        f32::from_bits(bits + 1)
    } else {
        f32::from_bits(bits - 1)
    }
}

/// The median of a sorted run of values from its two middle ones (the same one for an odd
/// count): their mean, exact in f64 for any two f32 of like size, as `np.median` takes it.
#[inline(always)]
pub fn median(lower_middle: f32, upper_middle: f32) -> f64 {
    mul(add(lower_middle as f64, upper_middle as f64), 0.5)
}

/// The mean and the population standard deviation (`np.std`, ddof 0) of `count` values from
/// their sum and the sum of their squared deviations from that mean.
#[inline(always)]
pub fn mean(sum: f64, count: u32) -> f64 {
    div(sum, count as f64)
}

/// See [`mean`].
#[inline(always)]
pub fn std(squares: f64, count: u32) -> f64 {
    sqrt(div(squares, count as f64))
}

/// `(v − mean)²` added to a thread's partial sum of squared deviations.
#[inline(always)]
pub fn add_square(partial: f64, v: f32, mean: f64) -> f64 {
    let d = sub(v as f64, mean);
    add(partial, mul(d, d))
}

/// The clipping window of a round: the values strictly inside `median ± κ·σ` stay.
#[inline(always)]
pub fn window(median: f64, std: f64, kappa: f64) -> (f64, f64) {
    let reach = mul(kappa, std);
    (sub(median, reach), add(median, reach))
}

/// How the kernel adds a run of `count` values, `value(0..count)`, in a block of [`THREADS`]
/// threads, written out for the CPU: thread `t` adds values `t, t + THREADS, …` in order
/// (`partial(t)` returns its sum); each warp adds its 32 partials as a butterfly of shuffles,
/// lanes 16 apart first, then 8, 4, 2, 1 ([`warp_tree`]); the same tree then adds the
/// [`WARPS`] warp sums, padded with zeros to 32.
#[cfg(not(target_os = "cuda"))]
pub fn block_sum(partial: impl Fn(usize) -> f64) -> f64 {
    let mut warps = [0.0; 32];
    for (w, total) in warps.iter_mut().enumerate().take(WARPS) {
        let mut lanes = [0.0; 32];
        for (lane, value) in lanes.iter_mut().enumerate() {
            *value = partial(32 * w + lane);
        }
        *total = warp_tree(lanes);
    }
    warp_tree(warps)
}

/// A butterfly of shuffles over 32 lanes as every lane ends it: lane `i` and lane `i + 16`
/// added first, then the pairs 8 apart of those sums, and so on.
#[cfg(not(target_os = "cuda"))]
pub fn warp_tree(mut lanes: [f64; 32]) -> f64 {
    let mut distance = 16;
    while distance > 0 {
        for i in 0..distance {
            lanes[i] += lanes[i + distance];
        }
        distance /= 2;
    }
    lanes[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    fn bin(v: f32, least: f32, most: f32) -> usize {
        super::bin(v, least, BinScale::of(least, most), |b| b as u32)
    }

    #[test]
    fn the_narrow_range_scale_is_exactly_a_power_of_two() {
        assert_eq!(NARROW_PRE as f64, 2f64.powi(100));
        assert_eq!(NARROW_RANGE, 2f64.powi(-100));
        let tiniest = BinScale::of(0.0, f32::from_bits(1));
        assert!(tiniest.scale.is_finite() && tiniest.pre == NARROW_PRE, "{tiniest:?}");
    }

    #[test]
    fn bins_run_from_the_least_to_the_most_and_clamp_the_rest() {
        let (least, most) = (-1.5f32, 2.5f32);
        assert_eq!(bin(least, least, most), 0);
        assert_eq!(bin(most, least, most), BINS - 1);
        assert_eq!(bin(0.5, least, most), BINS / 2);
        for v in [f32::NAN, f32::NEG_INFINITY, -2.0] {
            assert_eq!(bin(v, least, most), 0, "{v}");
        }
        for v in [f32::INFINITY, 3.0] {
            assert_eq!(bin(v, least, most), BINS - 1, "{v}");
        }
        let at = |i: u32| least + (most - least) * i as f32 / 4000.0;
        assert!((0..4000).all(|i| bin(at(i), least, most) <= bin(at(i + 1), least, most)));
    }

    #[test]
    fn bins_split_the_widest_and_the_narrowest_ranges() {
        let next = |v: f32| next_up(v);
        for (least, most) in [
            (-f32::MAX, f32::MAX),
            (0.0, f32::from_bits(1)),
            (1.0, next(1.0)),
            (-1e-30, next(next(-1e-30))),
            (-1e-36, next(next(-1e-36))),
            (f32::from_bits(3), f32::from_bits(5)),
            (-f32::from_bits(1), f32::from_bits(1)),
            (f32::MAX / 3.0, f32::MAX),
        ] {
            assert_eq!(bin(least, least, most), 0, "{least} {most}");
            assert_eq!(bin(most, least, most), BINS - 1, "{least} {most}");
            // Halfway between (where there is a value between), halfway along the bins.
            let middle = (least as f64 / 2.0 + most as f64 / 2.0) as f32;
            if middle != least && middle != most {
                assert_eq!(bin(middle, least, most), BINS / 2, "{least} {most}");
            }
        }
    }

    /// Values near `x` in f32: the nearest and its neighbours, and the extremes.
    fn around(x: f64) -> Vec<f32> {
        let nearest = x as f32;
        let mut values = vec![0.0, -0.0, f32::MAX, -f32::MAX, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        if nearest.is_finite() {
            let bits = nearest.to_bits() as i64;
            values.extend((-3..=3).map(|d| f32::from_bits((bits + d).clamp(0, u32::MAX as i64) as u32)));
        }
        values
    }

    #[test]
    fn kept_bounds_keep_what_the_window_keeps() {
        let mut edges = vec![
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NAN,
            0.0,
            -0.0,
            f32::MAX as f64,
            f32::MAX as f64 * 1.5,
            -(f32::MAX as f64) * 1.5,
            f32::from_bits(1) as f64 / 2.0,
            -(f32::from_bits(1) as f64) / 2.0,
        ];
        // Near f32 values, at them, and halfway between two (where `as f32` rounds to even).
        for v in [1.0f32, -1.0, 0.013, -7.5e-3, 3.0e38, 1.0e-40, 123456.78] {
            let up = next_up(v) as f64;
            edges.extend([v as f64, (v as f64 + up) / 2.0, v as f64 + 1e-12 * v as f64, v as f64 - 1e-12 * v as f64]);
        }
        for &lo in &edges {
            for &hi in &edges {
                let (least, most) = kept_bounds((lo, hi));
                for v in around(lo).into_iter().chain(around(hi)) {
                    let x = v as f64;
                    assert_eq!(
                        v >= least && v <= most,
                        x > lo && x < hi,
                        "{v:e} in ({lo:e}, {hi:e}): [{least:e}, {most:e}]"
                    );
                }
            }
        }
    }
}
