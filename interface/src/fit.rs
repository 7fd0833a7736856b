//! What the Gaussian fitting kernel (`kernels/src/fit.rs`), its host (`library/src/fit.rs`) and
//! its CUDA C twin share: the launch, the records in and out, the flags, the Levenberg–Marquardt
//! settings, and the arithmetic both sides must do alike. The kernel and the CPU reference call
//! the functions here: the starts and bounds of a summit ([`start`]), one component's value and
//! derivatives at a pixel ([`gaussian`]), the order in which the normal equations are summed
//! ([`rows`], [`window`], [`segments`], [`pair`]), and the last touches of a fit ([`settle`]).
//!
//! The model, as Aegean's `elliptical_gaussian` (`AegeanTools/fitting.py`): per component
//! `peak · exp(−½ (x′² / σ_major² + y′² / σ_minor²))`, where `(x′, y′)` is the offset from its
//! centre turned by θ, counter-clockwise from the +x (column) axis towards +y (row), in
//! radians. Starts and bounds are Aegean's `estimate_lmfit_parinfo` with a beam of σ `beam`
//! pixels (see [`start`]).

/// The most components fitted to one island: its brightest summits.
pub const MAX_COMPONENTS: usize = 8;
/// Parameters of one component, in this order: [`PEAK`], [`X`], [`Y`], [`MAJOR`], [`MINOR`],
/// [`THETA`].
pub const PARAMETERS: usize = 6;
pub const PEAK: usize = 0;
pub const X: usize = 1;
pub const Y: usize = 2;
pub const MAJOR: usize = 3;
pub const MINOR: usize = 4;
pub const THETA: usize = 5;
/// Parameters of the largest fit.
pub const MAX_PARAMETERS: usize = MAX_COMPONENTS * PARAMETERS;

/// Threads of a block, one block per island.
pub const BLOCK: u32 = 128;
/// Warps of a block: a window's pixels are ranked by one ballot per warp.
pub const WARPS: usize = BLOCK as usize / 32;
/// Blocks of `fit_islands` an SM must hold: two, so that a thread may have 255 registers.
/// Three (168 at most) left the fit of a large island spilling to local memory, and a launch
/// lasts as long as its largest island's fit; the many small islands fill two blocks an SM
/// as well as three.
pub const MIN_BLOCKS_PER_SM: u32 = 2;
/// The launch bounds of `fit_islands`.
pub const BOUNDS: [crate::LaunchBounds; 1] =
    [crate::LaunchBounds { kernel: "fit_islands", max_threads: BLOCK, min_blocks_per_sm: MIN_BLOCKS_PER_SM }];
/// f64 words of the shared tile: the rows of the Jacobian (each `P + 1` words, the derivatives
/// then the residual, for `P` parameters) while the normal equations are summed, their
/// `L·D·Lᵀ` factor and its inverse while they are solved. 20 KiB.
pub const TILE_WORDS: usize = 2560;
/// f64 words of one Gram matrix of the largest fit ([`gram_len`]); the kernel keeps two, the
/// current point's and the trial's.
pub const GRAM_WORDS: usize = gram_len(MAX_PARAMETERS);
/// Islands of the launch `host launches` lists: the twins' case, a 2048² field of 32 × 32
/// sources (a real launch has one block per island).
pub const LISTED_ISLANDS: u32 = 1024;

/// u32 words of an island's record (the kernel's input): its label, then its box, inclusive.
pub const ISLAND_WORDS: usize = 5;
pub const ISLAND_LABEL: usize = 0;
pub const ISLAND_Y_MIN: usize = 1;
pub const ISLAND_Y_MAX: usize = 2;
pub const ISLAND_X_MIN: usize = 3;
pub const ISLAND_X_MAX: usize = 4;

/// f64 words of one component in a fit's record: its parameters, then their errors.
pub const COMPONENT_WORDS: usize = 2 * PARAMETERS;
/// f64 words of an island's fit record: χ² (weighted by the noise), then [`MAX_COMPONENTS`]
/// components, NaN past the fitted ones.
pub const RECORD_WORDS: usize = 1 + MAX_COMPONENTS * COMPONENT_WORDS;
pub const CHI2: usize = 0;
pub const COMPONENTS: usize = 1;

/// u32 words of an island's status record: the components written, the flags, the
/// Levenberg–Marquardt iterations, the island's pixels in the fit, its summits, and how many of
/// the components were added from the residual (the last ones; [`RESIDUAL_STEPS`]).
pub const STATUS_WORDS: usize = 6;
pub const STATUS_COMPONENTS: usize = 0;
pub const STATUS_FLAGS: usize = 1;
pub const STATUS_ITERATIONS: usize = 2;
pub const STATUS_PIXELS: usize = 3;
pub const STATUS_SUMMITS: usize = 4;
pub const STATUS_ADDED: usize = 5;

/// At the solution, a pivot of `JᵀJ`'s Cholesky factorisation at or below this fraction of its
/// diagonal entry makes the fit [`SINGULAR`]: that parameter is, to rounding, a combination of
/// the others (a round component's angle, a few pixels' worth of data), its error is
/// meaningless, and rounding alone would decide the pivot's sign, so the GPU and the CPU, whose
/// `exp` round differently, would disagree on the flag.
pub const RANK_TOLERANCE: f64 = 1e-9;

/// The fit stopped at [`MAX_ITERATIONS`] without meeting the convergence test.
pub const NOT_CONVERGED: u32 = 1;
/// The island's box touches the image's edge: the source may go on outside.
pub const AT_EDGE: u32 = 2;
/// A pixel of the island, or its noise, is NaN or infinite (or the noise is not above 0):
/// the fit leaves it out.
pub const NAN: u32 = 4;
/// More summits than [`MAX_COMPONENTS`]: the brightest are fitted.
pub const TOO_MANY_SUMMITS: u32 = 8;
/// The normal equations at the solution are not positive definite, or nearly not
/// ([`RANK_TOLERANCE`]): the errors are NaN.
pub const SINGULAR: u32 = 16;
/// Too few pixels for every summit's component ([`fitted_components`]): only as many as the
/// pixels allow are fitted, and with [`PARAMETERS`] pixels or fewer none is: the brightest
/// summit's start is given, with NaN errors.
pub const FEW_PIXELS: u32 = 32;
/// No pixel of the island is a summit above the seed level: no component.
pub const NO_SUMMIT: u32 = 64;
/// Label 0, or a box outside the image or inverted: nothing is read, no component.
pub const BAD_ISLAND: u32 = 128;

/// Levenberg–Marquardt iterations (each one solve and at most one pass over the island) before
/// a fit is given up as [`NOT_CONVERGED`].
pub const MAX_ITERATIONS: u32 = 100;
/// The damping λ at the start; a step that lowers χ² divides it by [`LAMBDA_FACTOR`], one that
/// does not (or a damped matrix that is not positive definite) multiplies it.
pub const LAMBDA_START: f64 = 1e-3;
pub const LAMBDA_FACTOR: f64 = 10.0;
/// A step moves no parameter by more than this times `max(|value|, 1)`: the fit has converged
/// (whether the step lowered χ² or not: a step this small that does not is rounding).
pub const STEP_TOLERANCE: f64 = 1e-10;
/// A step that lowers χ² by no more than this fraction of it: the fit has converged.
pub const CHI2_TOLERANCE: f64 = 1e-12;

/// A Gaussian's FWHM over its σ, `2 √(2 ln 2)`.
pub const FWHM: f64 = 2.354_820_045_030_949_4;
/// The bounds on the peak: Aegean's lower one, `PEAK_LOW · min(seed · noise, summit)`, and
/// its upper one, `PEAK_HIGH · summit + seed · noise`, with the factor raised to what the summit
/// pixel can lose to the peak at the narrowest axes allowed, half a pixel off along both axes:
/// `exp(1 / (4 σ_low²))` (Aegean's 5% assumes a beam of 3 pixels or more; `host sky`'s point
/// sources have σ from 1 pixel).
pub const PEAK_LOW: f64 = 0.95;
pub const PEAK_HIGH: f64 = 1.05;
/// Aegean's start and bounds of the axes: σ_major starts at `SIGMA_START · beam` (not equal
/// to σ_minor, where θ would have no derivative), σ_minor at `beam`; both lie between
/// `SIGMA_LOW · beam` and `max((longest side + 1) · √2 / FWHM, SIGMA_HIGH · SIGMA_START · beam)`.
pub const SIGMA_LOW: f64 = 0.8;
pub const SIGMA_START: f64 = 1.01;
pub const SIGMA_HIGH: f64 = 1.1;

/// Components a fit may add from its residual, one at a time: after the fit of an island's
/// summits ends, the brightest summit of the residual (data − model, [`residual`]) above the
/// seed level, by [`is_summit`] on the residual, starts the step. Where a component reaches the
/// summit ([`split_at`]), its split is tried first: that component starts again at the summit's
/// mirror through its centre and one more at the summit, each from the data's value there
/// ([`start`]), and the split is kept where the fit of every component from there converges and
/// [`keeps_added`] holds for both. Else, or where it is not kept, one more component starts at
/// the summit at the residual's value, within the bounds [`start`] gives the data's value there
/// (the data bound what one component may be there; the residual's value, less what the fitted
/// components took of the member, held it below the member and the fit at that bound), every
/// component is fitted again from where it stands, and the new one is kept when [`keeps_added`]
/// says so; the first step not kept ends the steps. Only an island fitted at every pixel of its box with one more component, in a box
/// of at most [`RESIDUAL_BOX_PIXELS`], takes the step ([`residual_room`]).
///
/// Why: two sources about a beam apart make one summit on the smoothed image, and the one
/// component fitted to it lost the fainter, the misses above 10σ on `host sky --survey`. The
/// split is for a pair of near brightness ([`SPLIT_REACH`] says why): without it, a pair of
/// equal peaks 1.2 beams apart ended [`NOT_CONVERGED`] with a third component. (The measured
/// effects are in the commits that brought these steps.)
pub const RESIDUAL_STEPS: usize = 2;
/// The least drop in χ² (the noise-weighted sum, [`CHI2`]) for which a component added from the
/// residual is kept: five standard deviations of one parameter's χ². One pixel 6σ above the
/// noise on a source's flank gains about 22.
pub const RESIDUAL_GAIN: f64 = 25.0;
/// A component added from the residual is kept only if its peak ended more than this fraction
/// above its floor (`PEAK_LOW` times the seed level at its summit, [`start`]): one the fit
/// pushed down to the floor is one the data would take lower still, a noise bump, not a source.
pub const FLOOR_MARGIN: f64 = 0.01;

/// How near, in σ of a component's own ellipse, the residual's summit must lie to the
/// component's centre for the step to try splitting that component first ([`split_at`]): two
/// sources of near brightness about a beam apart make one summit, and the one component fitted
/// there sits between them, stretched along the pair, with the residual's summits at the members
/// within about 1.2 of its σ; a component added at one of them from the residual, its peak
/// bounded by the residual's, cannot take that member from the component between, whose centre
/// is bounded by its summit's. A fainter neighbour the component does not reach lies further out
/// (1.5 beams from a point source: 3 of its σ) and takes the plain step.
pub const SPLIT_REACH: f64 = 1.5;

/// The most pixels of an island's box whose residual is searched for summits: as many f32 as
/// the kernel's tile holds, where it keeps them while it searches. An island of point sources
/// small enough to take a component from its residual ([`residual_room`]) has a far smaller box:
/// on `host sky --survey`'s skies at 4096², the largest box of an island of at most 1260 pixels
/// (two components at every pixel) is 1369 pixels.
pub const RESIDUAL_BOX_PIXELS: usize = 2 * TILE_WORDS;

/// Whether an island of `pixels` usable pixels in a box of `box_pixels`, fitted with `fitted`
/// components, may take one more from its residual: fewer than [`MAX_COMPONENTS`], the pixels
/// for it ([`fitted_components`]), every pixel of the box fitted both without it and with it
/// ([`sample_step`] 1 for both: [`fit_pixels`] rises again past four components), and a box of
/// at most [`RESIDUAL_BOX_PIXELS`]. A sampled island's residual between its samples is not
/// fitted, and the extended emission that makes an island that large is not a pair of points.
#[inline(always)]
pub fn residual_room(fitted: usize, pixels: u32, box_pixels: usize) -> bool {
    fitted < MAX_COMPONENTS
        && fitted_components(fitted + 1, pixels) == fitted + 1
        && sample_step(pixels, fitted * PARAMETERS) == 1
        && sample_step(pixels, (fitted + 1) * PARAMETERS) == 1
        && box_pixels <= RESIDUAL_BOX_PIXELS
}

/// The residual of a pixel of value `value` under a model of value `model` there, as the search
/// for its summits reads it (in f32, as the image is).
#[inline(always)]
pub fn residual(value: f32, model: f64) -> f32 {
    (value as f64 - model) as f32
}

/// Whether a component added from the residual is kept: the fit with it lowered χ² from
/// `before` to `after` by more than [`RESIDUAL_GAIN`], and its peak (`peak`) ended above its
/// floor (`floor`, its lower bound) by more than [`FLOOR_MARGIN`]. False where either χ² is NaN.
#[inline(always)]
pub fn keeps_added(before: f64, after: f64, peak: f64, floor: f64) -> bool {
    after < before - RESIDUAL_GAIN && peak > floor * (1.0 + FLOOR_MARGIN)
}

/// Words of a Gram matrix over `parameters` parameters and the residual: the lower triangle
/// of the `(P + 1) × (P + 1)` matrix `[J r]ᵀ [J r]`, row by row ([`pair`]). Its first
/// `P (P + 1) / 2` words are `JᵀJ`, the next `P` are `Jᵀr` and the last is χ².
pub const fn gram_len(parameters: usize) -> usize {
    (parameters + 1) * (parameters + 2) / 2
}

/// Entry `e` of a lower triangle stored row by row, as (row, column), column ≤ row.
#[inline(always)]
pub fn pair(e: usize) -> (usize, usize) {
    pair_after((0, 0), e)
}

/// The entry `by` entries after (`row`, `column`) in a lower triangle stored row by row: a
/// thread that walks its entries `BLOCK` apart steps from one to the next in a few rows,
/// rather than from the first entry each time.
#[inline(always)]
pub fn pair_after((mut row, mut column): (usize, usize), by: usize) -> (usize, usize) {
    column += by;
    while column > row {
        row += 1;
        column -= row;
    }
    (row, column)
}

/// Jacobian rows the tile holds for `parameters` parameters: how many island pixels are summed
/// into the Gram matrix at a time (the tile is summed when it is full, and at the pass's end).
pub const fn rows(parameters: usize) -> usize {
    TILE_WORDS / (parameters + 1)
}

/// The tile's rows a round of a pass makes at once: as many as the tile has room for, one
/// pixel a thread at most.
pub const fn rows_at_once(parameters: usize) -> usize {
    let room = rows(parameters);
    if room < BLOCK as usize {
        room
    } else {
        BLOCK as usize
    }
}

/// f64 words of the components' model values that a round of rows holds (one per pixel and
/// component, summed per pixel in component order), the most any number of components takes.
pub const MODEL_WORDS: usize = {
    let (mut most, mut components) = (0, 1);
    while components <= MAX_COMPONENTS {
        let words = rows_at_once(components * PARAMETERS) * components;
        most = if words > most { words } else { most };
        components += 1;
    }
    most
};

/// Entries of the largest fit's normal equations (`JᵀJ`, [`MAX_PARAMETERS`] square, its lower
/// triangle) that a thread of the block owns while they are factored by Cholesky: the entries
/// `t`, `t + BLOCK`, … (the kernel unrolls its loop over them: ten).
pub const CHOLESKY_OWNED: usize = (MAX_PARAMETERS * (MAX_PARAMETERS + 1) / 2 + BLOCK as usize - 1) / BLOCK as usize;
const _: () = assert!(CHOLESKY_OWNED == 10);

/// Rows and columns of the blocks of Gram entries a thread sums where the matrix has at least
/// [`BLOCKED_COLUMNS`] columns (`P + 1`): for each row of the tile the thread loads `2 · b`
/// words for `b²` multiply-adds, where a thread per entry loads 2 for 1, and the shared loads,
/// not the arithmetic, bound a large fit's passes. Each entry still adds its rows in order.
pub const GRAM_BLOCK: usize = 4;
pub const BLOCKED_COLUMNS: usize = 33;

/// Segments of the tile's rows each Gram entry is summed over, one thread per entry and
/// segment, when there are fewer entries than threads; the segments' sums are then added in
/// order. With more entries than threads, 1: each thread sums whole entries.
pub const fn segments(entries: usize) -> usize {
    if entries <= BLOCK as usize {
        BLOCK as usize / entries
    } else {
        1
    }
}

/// The 4-connected steps from an island within which pixels of no island join its fit.
///
/// An island holds the pixels above the flood level, so at its rim it keeps the pixels that
/// noise pushed up and leaves out the ones it pushed down: fitted on its own pixels, a faint
/// source's wings come out high, its Gaussian too wide and its peak too low, the more so the
/// fainter it is (a simulation of beam-sized sources in white noise shows it, and so did the
/// survey skies' point sources). Two steps of its surroundings take in the rim's pixels
/// whatever their noise, which removes that bias and with it much of a faint source's error.
pub const FIT_MARGIN: usize = 2;

/// Whether pixel (`row`, `col`) of an image of `height × width` pixels, whose labels
/// `label_at` reads by index, is in the fit of island `label`: a pixel of the island, or of no
/// island within [`FIT_MARGIN`] 4-connected steps of one.
#[inline(always)]
pub fn in_fit(
    label_at: impl Fn(usize) -> u32,
    (row, col): (usize, usize),
    (height, width): (usize, usize),
    label: u32,
) -> bool {
    let own = label_at(row * width + col);
    if own != 0 {
        return own == label;
    }
    let margin = FIT_MARGIN as isize;
    let mut dy = -margin;
    while dy <= margin {
        let r = row as isize + dy;
        let reach = margin - dy.abs();
        let mut dx = -reach;
        while r >= 0 && r < height as isize && dx <= reach {
            let c = col as isize + dx;
            if c >= 0 && c < width as isize && label_at(r as usize * width + c as usize) == label {
                return true;
            }
            dx += 1;
        }
        dy += 1;
    }
    false
}

/// The rows or columns `lo..=hi` of an island's box grown by [`FIT_MARGIN`] on both sides,
/// within `0..len`: the part of the image its fit samples.
#[inline(always)]
pub fn fit_span(lo: usize, hi: usize, len: usize) -> (usize, usize) {
    (lo.saturating_sub(FIT_MARGIN), (hi + FIT_MARGIN).min(len - 1))
}

/// The pixel's value and noise are usable in a fit: both finite, the noise above 0.
#[inline(always)]
pub fn usable(value: f32, noise: f32) -> bool {
    value.is_finite() && noise.is_finite() && noise > 0.0
}

/// Whether a pixel whose smoothed value is `value` is not beaten by a neighbour in its island
/// whose smoothed value is `neighbour`: ties go to the pixel first in raster order, so a flat
/// top is one summit.
#[inline(always)]
pub fn beats(value: f64, neighbour: f64, neighbour_first: bool) -> bool {
    value > neighbour || (value == neighbour && !neighbour_first)
}

/// The largest [`smoothing_radius`]: a binomial of order 16, whose weights (at most
/// `C(16, 8)² < 2²⁸`) times an f32 (24 bits) are exact in f64.
const MAX_SMOOTHING_RADIUS: usize = 8;

/// The radius of the binomial kernel the summits are found on, for a beam of σ `beam` pixels:
/// `round(σ²)`, 1 to 8. A binomial of order `2r` has variance `r / 2`, so the kernel has half
/// the beam's variance (σ 1: `[1 2 1]` each way, 3 × 3 taps) up to σ 2.9, less past it.
#[inline(always)]
pub fn smoothing_radius(beam: f64) -> usize {
    let radius = beam * beam + 0.5;
    if radius < 2.0 {
        1
    } else if radius >= (MAX_SMOOTHING_RADIUS + 1) as f64 {
        MAX_SMOOTHING_RADIUS
    } else {
        radius as usize
    }
}

/// The binomial weight after `weight = C(n, k)`: `C(n, k + 1)`, exact (`C(n, k) (n − k)` is an
/// integer below 2¹⁸ that `k + 1` divides).
#[inline(always)]
fn next_binomial(weight: f64, n: usize, k: usize) -> f64 {
    weight * (n - k) as f64 / (k + 1) as f64
}

/// The island's image at (`row`, `col`) smoothed by the binomial kernel of `radius` (the
/// matched filter of [`is_summit`]): `Σ C(2r, r + dr) C(2r, r + dc) v(row + dr, col + dc)` over
/// the offsets inside the image whose pixel belongs to the island with a finite value
/// (`in_island(j)` is pixel `j`'s value where it belongs, else `None`); the others count 0.
#[inline(always)]
pub fn smoothed(
    (row, col): (usize, usize),
    (height, width): (usize, usize),
    radius: usize,
    in_island: &impl Fn(usize) -> Option<f32>,
) -> f64 {
    binomial_sum(radius, |a, b| {
        let inside = row + a >= radius && row + a < height + radius && col + b >= radius && col + b < width + radius;
        if inside {
            in_island((row + a - radius) * width + col + b - radius).unwrap_or(f32::NAN)
        } else {
            f32::NAN
        }
    })
}

/// The sum of [`smoothed`] in its one order: `tap(a, b)` is the value at offset
/// `(a − radius, b − radius)`, rows then columns, and a value that is not finite (off the
/// island or the image) counts 0. Every product is exact, so the sum is the same on any device
/// that adds in this order, whether it contracts the multiply-adds or not.
#[inline(always)]
pub fn binomial_sum(radius: usize, tap: impl Fn(usize, usize) -> f32) -> f64 {
    let n = 2 * radius;
    let mut sum = 0.0f64;
    let mut row_weight = 1.0f64;
    // Half-open ranges: an inclusive one keeps a flag for its last step, a test and a select
    // each turn of the kernel's loops.
    for a in 0..n + 1 {
        let mut col_weight = 1.0f64;
        for b in 0..n + 1 {
            let value = tap(a, b);
            if value.is_finite() {
                sum += row_weight * col_weight * value as f64;
            }
            col_weight = next_binomial(col_weight, n, b);
        }
        row_weight = next_binomial(row_weight, n, a);
    }
    sum
}

/// Whether pixel (`row`, `col`), in an image of `height` × `width`, is a summit: no neighbour
/// of its island with a finite value (of the eight around it) [`beats`] it on the image
/// [`smoothed`] by the kernel of `radius` ([`smoothing_radius`] of the beam). `in_island(j)` is
/// pixel `j`'s value where pixel `j` belongs to the island, else `None`.
///
/// Why smoothed: on the raw image every noise bump on a resolved source that is a local
/// maximum above the seed became a component of its own (most of the false detections at
/// 4096², many at the fit's bounds). Smoothing divides white noise by about `2√π σ_k` for a
/// kernel of σ_k (2.7 for `[1 2 1]`), and merges two sources of σ only closer than
/// `2√(σ² + σ_k²)`. Measured on
/// `host sky --survey` at 2048² (constant and varying noise, `host sources --cpu --truth`),
/// against the raw rule: half the beam's variance (`[1 2 1]` for σ 1) cut the fitted false
/// components from 45–55 to 10–11 and kept every pair and every source above 10σ; the whole
/// beam's variance (`[1 4 6 4 1]`) cut one or two more but lost 3 of 46 pairs and 2–3 sources
/// above 10σ, and 1.5 times it lost 6 pairs. Aegean's rule (connected regions of negative curvature) breaks such
/// a source up as much on white noise, whose 3 × 3 Laplacian has σ 4.5 times the pixels'; a
/// prominence rule needs a flood per summit in the kernel; a wider neighbourhood than eight
/// pixels keeps the bumps far from a 6-pixel-wide source's centre and merges close pairs.
///
/// An island with pixels above the seed but no smoothed maximum among them (a faint source
/// whose smoothed top falls on a pixel below the seed) takes its brightest pixel above the
/// seed as its one summit, so that every seeded island keeps a component, as the raw rule gave.
#[inline(always)]
pub fn is_summit(
    (row, col): (usize, usize),
    (height, width): (usize, usize),
    radius: usize,
    in_island: impl Fn(usize) -> Option<f32>,
) -> bool {
    let own = smoothed((row, col), (height, width), radius, &in_island);
    unbeaten(own, |dr, dc| {
        if row + dr < 1 || row + dr > height || col + dc < 1 || col + dc > width {
            return None;
        }
        let (r, c) = (row + dr - 1, col + dc - 1);
        match in_island(r * width + c).map(f32::is_finite) {
            Some(true) => Some(smoothed((r, c), (height, width), radius, &in_island)),
            _ => None,
        }
    })
}

/// [`is_summit`]'s test in its one order: no neighbour at offset `(dr − 1, dc − 1)`, rows then
/// columns, [`beats`] a pixel whose smoothed value is `own`; `neighbour(dr, dc)` is that
/// neighbour's smoothed value where it belongs to the island with a finite value, else `None`
/// (asked only until one beats it).
#[inline(always)]
pub fn unbeaten(own: f64, neighbour: impl Fn(usize, usize) -> Option<f64>) -> bool {
    let mut summit = true;
    for dr in 0..3 {
        for dc in 0..3 {
            if summit && (dr != 1 || dc != 1) {
                if let Some(value) = neighbour(dr, dc) {
                    summit = beats(own, value, dr == 0 || (dr == 1 && dc == 0));
                }
            }
        }
    }
    summit
}

/// How many of `chosen` summits get a component on an island of `pixels` usable pixels: each
/// component needs more pixels than its [`PARAMETERS`]. With no pixel to spare, the normal
/// equations at the solution are exactly determined, their errors mean nothing, and whether
/// they count as singular turns on the last bit of rounding.
#[inline(always)]
pub fn fitted_components(chosen: usize, pixels: u32) -> usize {
    let most = (pixels as usize).saturating_sub(1) / PARAMETERS;
    if chosen < most {
        chosen
    } else {
        most
    }
}

/// The most pixels a one-component fit evaluates in a pass; a fit of more components
/// evaluates fewer ([`fit_pixels`]). An island of more usable pixels is fitted on every `s`-th
/// row and column of its box ([`sample_step`]). An extended source's shape is still plain on
/// that grid, and the launch lasts as long as its slowest island: a survey image's core or
/// ring (tens of thousands of pixels, eight components) would otherwise take most of it.
pub const MAX_FIT_PIXELS: u32 = 4096;

/// The island's pixels of its sample that a fit lists once, in shared memory, for every later
/// pass to read from there rather than search the box again: as many as a one-component fit
/// samples ([`MAX_FIT_PIXELS`]). A sample that holds more (an island whose shape puts more of it
/// on the sampled rows) is searched at every pass.
pub const LISTED_PIXELS: usize = MAX_FIT_PIXELS as usize;
/// Byte offsets in the list, [`LISTED_PIXELS`] of each: the pixels' indices in the sample
/// (u32), their values and their noise (f32).
pub const LIST_INDICES: usize = 0;
pub const LIST_VALUES: usize = 4 * LISTED_PIXELS;
pub const LIST_NOISE: usize = 8 * LISTED_PIXELS;
pub const LIST_BYTES: usize = 12 * LISTED_PIXELS;

/// Box pixels a side of the square tiles the summit search goes through: the island's pixels
/// of a tile and of a halo of `radius + 1` around it (the taps of its pixels' neighbours) go to
/// shared memory once, in rows that load together, the tile's pixels and their neighbours are
/// smoothed there once each ([`binomial_sum`]), and each pixel is tested against its neighbours'
/// sums ([`unbeaten`]). Pixel by pixel from global memory, a tap waiting on its label's load,
/// a ring's summits took longer than its whole fit.
pub const SUMMIT_TILE: usize = 32;
/// f32 words a side of a summit tile's patch at the largest radius: the tile and its halo.
pub const SUMMIT_PATCH_SIDE: usize = SUMMIT_TILE + 2 * (MAX_SMOOTHING_RADIUS + 1);
/// f64 words a side of a summit tile's smoothed values: the tile and its neighbours.
pub const SUMMIT_SMOOTHED_SIDE: usize = SUMMIT_TILE + 2;
/// Byte offsets in the list (free until the first pass of the fit lists the sample): the patch
/// (the value of each pixel of the island, +∞ for one not finite, NaN off the island), and the
/// smoothed values; and the bytes of both, which the list holds.
pub const SUMMIT_PATCH: usize = 0;
pub const SUMMIT_SMOOTHED: usize = (4 * SUMMIT_PATCH_SIDE * SUMMIT_PATCH_SIDE + 7) / 8 * 8;
pub const SUMMIT_BYTES: usize = SUMMIT_SMOOTHED + 8 * SUMMIT_SMOOTHED_SIDE * SUMMIT_SMOOTHED_SIDE;
const _: () = assert!(SUMMIT_BYTES <= LIST_BYTES);

/// u32 words of a block's counters: the warps' window counts, then the island's pixels, its
/// summits, whether it has NaN, whether a step was small, and the count of the list.
pub const COUNT_WORDS: usize = WARPS + 5;
/// u64 words of a block's summit keys: the summits chosen, then the search's running maximum,
/// then the brightest pixel above the seed level.
pub const KEY_WORDS: usize = MAX_COMPONENTS + 2;

/// The byte offsets of a `fit_islands` block's shared memory, all of it dynamic (why:
/// [`crate::background::SHARED_SUMS`]):
/// the tile ([`TILE_WORDS`] f64), the two Gram matrices ([`GRAM_WORDS`] f64 each), the current
/// point, the trial point, the bounds, the damping scales, the errors and the point saved
/// ([`MAX_PARAMETERS`] f64 each), a split's held bounds (2 · [`PARAMETERS`] f64), the
/// shapes ([`MAX_COMPONENTS`] of [`Shape`]), a partial sum per thread (f64), a round's model
/// values ([`MODEL_WORDS`] f64), the summit keys,
/// the counters, and the list, 16-byte aligned; and the bytes of the whole.
pub const SHARED_TILE: usize = 0;
pub const SHARED_GRAMS: usize = SHARED_TILE + 8 * TILE_WORDS;
pub const SHARED_CURRENT: usize = SHARED_GRAMS + 2 * 8 * GRAM_WORDS;
pub const SHARED_TRIAL: usize = SHARED_CURRENT + 8 * MAX_PARAMETERS;
pub const SHARED_LOW: usize = SHARED_TRIAL + 8 * MAX_PARAMETERS;
pub const SHARED_HIGH: usize = SHARED_LOW + 8 * MAX_PARAMETERS;
pub const SHARED_SCALE: usize = SHARED_HIGH + 8 * MAX_PARAMETERS;
pub const SHARED_ERRORS: usize = SHARED_SCALE + 8 * MAX_PARAMETERS;
pub const SHARED_SAVED: usize = SHARED_ERRORS + 8 * MAX_PARAMETERS;
pub const SHARED_HELD: usize = SHARED_SAVED + 8 * MAX_PARAMETERS;
pub const SHARED_SHAPES: usize = SHARED_HELD + 8 * 2 * PARAMETERS;
pub const SHARED_PARTIALS: usize = SHARED_SHAPES + core::mem::size_of::<Shape>() * MAX_COMPONENTS;
pub const SHARED_MODELS: usize = SHARED_PARTIALS + 8 * BLOCK as usize;
pub const SHARED_KEYS: usize = SHARED_MODELS + 8 * MODEL_WORDS;
pub const SHARED_COUNTS: usize = SHARED_KEYS + 8 * KEY_WORDS;
pub const SHARED_LIST: usize = (SHARED_COUNTS + 4 * COUNT_WORDS + 15) / 16 * 16;
pub const SHARED_BYTES: usize = SHARED_LIST + LIST_BYTES;

/// The fewest pixels per parameter that a sampled fit keeps. A survey image's core and ring
/// take eight components, the most, and this floor, not the pass's budget (the multiply-adds of
/// a one-component fit over [`MAX_FIT_PIXELS`], which would leave them two pixels a parameter),
/// sets their samples; the launch lasts as long as the slower of the two, so their passes'
/// cost is the launch's.
pub const MIN_SAMPLE_PER_PARAMETER: u32 = 8;

/// The most pixels a pass of a fit of `parameters` evaluates: as many as keep the pass's
/// multiply-adds (`pixels · gram_len(parameters)`) within a one-component fit's over
/// [`MAX_FIT_PIXELS`], but at least [`MIN_SAMPLE_PER_PARAMETER`] per parameter.
#[inline(always)]
pub fn fit_pixels(parameters: usize) -> u64 {
    let budget = MAX_FIT_PIXELS as u64 * gram_len(PARAMETERS) as u64 / gram_len(parameters) as u64;
    let least = MIN_SAMPLE_PER_PARAMETER as u64 * parameters as u64;
    if budget > least {
        budget
    } else {
        least
    }
}

/// The step between the rows (and the columns) of its box that a fit of `parameters` samples
/// on an island of `pixels` usable pixels: the least `s` with `pixels ≤ s² · fit_pixels`.
#[inline(always)]
pub fn sample_step(pixels: u32, parameters: usize) -> usize {
    let most = fit_pixels(parameters);
    let mut step = 1usize;
    while pixels as u64 > (step * step) as u64 * most {
        step += 1;
    }
    step
}

/// The order of summits: brighter first, then first in raster order of the box (`index`).
/// Every key is above 0.
#[inline(always)]
pub fn summit_key(value: f32, index: u32) -> u64 {
    ((crate::measure::peak_key(value) as u64) << 32) | (u32::MAX - index) as u64
}

/// The value and box index of the summit of `key`.
#[inline(always)]
pub fn summit_of(key: u64) -> (f32, u32) {
    (crate::measure::peak_of((key >> 32) as u32), u32::MAX - key as u32)
}

/// Where a component starts and what bounds it: one value per parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Start {
    pub params: [f64; PARAMETERS],
    pub low: [f64; PARAMETERS],
    pub high: [f64; PARAMETERS],
}

/// The start of the component of a summit of value `value` at (`x`, `y`) in its island's box
/// (`width × height` pixels), whose noise is `noise`, for a seed level of `seed` σ and a beam
/// of σ `beam` pixels, as Aegean's `estimate_lmfit_parinfo` starts it (`exp` the exponential):
/// the summit's value and position, the beam's axes (σ_major 1% longer) and θ = 0; the peak
/// as [`PEAK_HIGH`] says, the centre within half the beam's FWHM diagonal (`FWHM · beam / √2`)
/// of the summit, the axes as [`SIGMA_LOW`] says, θ free.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn start(
    value: f64,
    x: f64,
    y: f64,
    noise: f64,
    seed: f64,
    beam: f64,
    width: usize,
    height: usize,
    exp: impl Fn(f64) -> f64,
) -> Start {
    let level = seed * noise;
    let reach = FWHM * beam / core::f64::consts::SQRT_2;
    let major = SIGMA_START * beam;
    let side = if width > height { width } else { height };
    let widest = (side as f64 + 1.0) * core::f64::consts::SQRT_2 / FWHM;
    let longest = if widest > SIGMA_HIGH * major { widest } else { SIGMA_HIGH * major };
    let shortest = SIGMA_LOW * beam;
    let loss = exp(0.25 / (shortest * shortest));
    let rise = if loss > PEAK_HIGH { loss } else { PEAK_HIGH };
    Start {
        params: [value, x, y, major, beam, 0.0],
        low: [
            PEAK_LOW * if level < value { level } else { value },
            x - reach,
            y - reach,
            shortest,
            shortest,
            f64::NEG_INFINITY,
        ],
        high: [rise * value + level, x + reach, y + reach, longest, longest, f64::INFINITY],
    }
}

/// `value` within `[low, high]` (NaN stays NaN).
#[inline(always)]
pub fn clamp(value: f64, low: f64, high: f64) -> f64 {
    if value < low {
        low
    } else if value > high {
        high
    } else {
        value
    }
}

/// `|x|` (`f64::abs` is not in `core` for the kernels' toolchain).
#[inline(always)]
pub fn magnitude(x: f64) -> f64 {
    if x < 0.0 {
        -x
    } else {
        x
    }
}

/// Whether moving a parameter from `old` to `new` is below [`STEP_TOLERANCE`].
#[inline(always)]
pub fn small_step(old: f64, new: f64) -> bool {
    let scale = magnitude(old);
    magnitude(new - old) <= STEP_TOLERANCE * if scale > 1.0 { scale } else { 1.0 }
}

/// One component's shape as a pass uses it at every pixel: its rotation and inverse variances.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub cos: f64,
    pub sin: f64,
    /// 1 / σ_major².
    pub a: f64,
    /// 1 / σ_minor².
    pub b: f64,
    /// 1 / σ_major and 1 / σ_minor: a pass multiplies by them at every pixel, where a
    /// division would take most of a derivative's time.
    pub major_inverse: f64,
    pub minor_inverse: f64,
}

impl Shape {
    /// The shape of axes `major`, `minor` turned by θ, given θ's cosine and sine.
    #[inline(always)]
    pub fn new(major: f64, minor: f64, cos: f64, sin: f64) -> Self {
        let (major_inverse, minor_inverse) = (1.0 / major, 1.0 / minor);
        Shape { cos, sin, a: 1.0 / (major * major), b: 1.0 / (minor * minor), major_inverse, minor_inverse }
    }
}

/// The box pixel (row, column) where the component of centre (`x`, `y`) and `shape` would be
/// split by the residual's summit at (`row`, `col`) of a `width × height` box: the pixel nearest
/// the summit mirrored through the centre, where the other member of a pair the component sits
/// between lies. `None` where the summit lies [`SPLIT_REACH`] or more of the component's σ from
/// its centre, or the mirror lies outside the box or is the summit's own pixel.
#[inline(always)]
pub fn split_at(
    x: f64,
    y: f64,
    shape: &Shape,
    (row, col): (usize, usize),
    (height, width): (usize, usize),
) -> Option<(usize, usize)> {
    let (dx, dy) = (col as f64 - x, row as f64 - y);
    let along = dx * shape.cos + dy * shape.sin;
    let across = dy * shape.cos - dx * shape.sin;
    let within = along * along * shape.a + across * across * shape.b < SPLIT_REACH * SPLIT_REACH;
    // The nearest pixel by rounding half up, which `as` (truncation) gives at or above 0.
    let (mx, my) = (x - dx + 0.5, y - dy + 0.5);
    if !(within && mx >= 0.0 && my >= 0.0 && mx < width as f64 && my < height as f64) {
        return None;
    }
    let mirror = (my as usize, mx as usize);
    if mirror == (row, col) {
        return None;
    }
    Some(mirror)
}

/// One component's value at offset (`dx`, `dy`) from its centre, and its derivatives there
/// with respect to [`PEAK`], [`X`], [`Y`], [`MAJOR`], [`MINOR`] and [`THETA`], with `exp` the
/// exponential:
///
/// ```text
///   x′ = dx cos θ + dy sin θ        y′ = −dx sin θ + dy cos θ
///   m  = peak · e,   e = exp(−½ (x′² a + y′² b)),   a = 1/σ_major², b = 1/σ_minor²
///   ∂m/∂peak = e                    ∂m/∂x = m (x′ a cos θ − y′ b sin θ)
///   ∂m/∂y    = m (x′ a sin θ + y′ b cos θ)
///   ∂m/∂σ_major = m x′² a / σ_major ∂m/∂σ_minor = m y′² b / σ_minor  (by the shape's 1/σ)
///   ∂m/∂θ    = m x′ y′ (b − a)
/// ```
#[inline(always)]
pub fn gaussian(peak: f64, shape: &Shape, dx: f64, dy: f64, exp: impl Fn(f64) -> f64) -> (f64, [f64; PARAMETERS]) {
    let Shape { cos, sin, a, b, major_inverse, minor_inverse } = *shape;
    let along = dx * cos + dy * sin;
    let across = dy * cos - dx * sin;
    let e = exp(-0.5 * (along * along * a + across * across * b));
    let m = peak * e;
    let (ua, vb) = (along * a, across * b);
    let derivatives = [
        e,
        m * (ua * cos - vb * sin),
        m * (ua * sin + vb * cos),
        m * along * ua * major_inverse,
        m * across * vb * minor_inverse,
        m * along * across * (b - a),
    ];
    (m, derivatives)
}

/// Radians, 2³²: a θ this large is known to no better than a micro-radian, and past it to
/// nothing ([`settle`]).
pub const LOST_ANGLE: f64 = 4_294_967_296.0;

/// A fitted component as the record keeps it, from its parameters in its box (origin
/// `x0`, `y0`): the centre in the image's pixels, σ_major ≥ σ_minor (swapped with their errors,
/// and θ turned by π/2, where the fit ended the other way round), and θ in [−π/2, π/2). A θ of
/// [`LOST_ANGLE`] or more, where a fit that ran away drove it, becomes NaN, with its error:
/// rounding has lost where it lies in the half turn.
#[inline(always)]
pub fn settle(params: &mut [f64; PARAMETERS], errors: &mut [f64; PARAMETERS], x0: f64, y0: f64) {
    params[X] += x0;
    params[Y] += y0;
    if params[MAJOR] < params[MINOR] {
        let (p, e) = (params[MAJOR], errors[MAJOR]);
        params[MAJOR] = params[MINOR];
        errors[MAJOR] = errors[MINOR];
        params[MINOR] = p;
        errors[MINOR] = e;
        params[THETA] += core::f64::consts::FRAC_PI_2;
    }
    // θ − π ⌊θ/π + ½⌋.
    if magnitude(params[THETA]) < LOST_ANGLE {
        let turns = params[THETA] * core::f64::consts::FRAC_1_PI + 0.5;
        let whole = turns as i64 as f64;
        let floor = if whole > turns { whole - 1.0 } else { whole };
        params[THETA] -= floor * core::f64::consts::PI;
    } else {
        params[THETA] = f64::NAN;
        errors[THETA] = f64::NAN;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_walk_the_lower_triangle_row_by_row() {
        let mut e = 0;
        for row in 0..=MAX_PARAMETERS {
            for column in 0..=row {
                assert_eq!(pair(e), (row, column));
                for by in [1, 7, BLOCK as usize] {
                    assert_eq!(pair_after((row, column), by), pair(e + by));
                }
                e += 1;
            }
        }
        assert_eq!(e, gram_len(MAX_PARAMETERS));
    }

    #[test]
    fn a_pass_costs_about_a_one_component_fit_of_max_fit_pixels() {
        assert_eq!(fit_pixels(PARAMETERS), MAX_FIT_PIXELS as u64);
        assert_eq!(sample_step(MAX_FIT_PIXELS, PARAMETERS), 1);
        assert_eq!(sample_step(MAX_FIT_PIXELS + 1, PARAMETERS), 2);
        for components in 2..=MAX_COMPONENTS {
            let parameters = components * PARAMETERS;
            let most = fit_pixels(parameters);
            assert!(most >= MIN_SAMPLE_PER_PARAMETER as u64 * parameters as u64);
            let work = most * gram_len(parameters) as u64;
            let one = MAX_FIT_PIXELS as u64 * gram_len(PARAMETERS) as u64;
            assert!(work <= one || most == MIN_SAMPLE_PER_PARAMETER as u64 * parameters as u64, "{components}: {work}");
        }
        // A survey image's core: 29759 pixels, eight components, every 9th row and column.
        assert_eq!(fit_pixels(MAX_PARAMETERS), 384);
        assert_eq!(sample_step(29759, MAX_PARAMETERS), 9);
    }

    #[test]
    fn a_fit_takes_its_island_and_the_unlabelled_pixels_two_steps_around_it() {
        // A 7 × 5 image: island 1 at (2, 2), island 3 at (0, 6).
        let (height, width) = (5, 7);
        let mut labels = [0u32; 35];
        labels[2 * width + 2] = 1;
        labels[6] = 3;
        let fit = |labels: &[u32], label: u32| -> std::vec::Vec<std::string::String> {
            (0..height)
                .map(|row| {
                    let at = |col| in_fit(|j| labels[j], (row, col), (height, width), label);
                    (0..width).map(|col| if at(col) { '#' } else { '.' }).collect()
                })
                .collect()
        };
        // A diamond: 4-connected steps, cut by nothing inside this image.
        assert_eq!(fit(&labels, 1), ["..#....", ".###...", "#####..", ".###...", "..#...."]);
        // At the corner.
        assert_eq!(fit(&labels, 3), ["....###", ".....##", "......#", ".......", "......."]);
        // Another island's pixel beside it stays out; the pixel beyond, two steps away, is in.
        labels[2 * width + 3] = 3;
        assert_eq!(fit(&labels, 1)[2], "###.#..");
        assert_eq!(fit_span(2, 2, 7), (0, 4));
        assert_eq!(fit_span(0, 6, 7), (0, 6));
        assert_eq!(fit_span(5, 5, 7), (3, 6));
    }
}
