//! Background and noise maps as BANE (AegeanTools) makes them, on the GPU: the σ-clipped
//! median and standard deviation of the pixels in a box around each point of a coarse grid,
//! interpolated bilinearly to every pixel, and the signal-to-noise image
//! `(pixel − background) / noise` beside them. [`background`] (device arrays) and
//! [`background_array`] (`ndarray` views) make them on the GPU, [`cpu_reference`] on the CPU.
//! A second pass that masks the sources takes its sky from a grid whose noise is the least
//! within a reach of each point: `background_least_noise` ([`Mapper::least_noise_args`]) on
//! the GPU, [`least_noise`] on the CPU; its grid then leaves out the points whose boxes the mask
//! took most of, and fills them from their neighbours: `background_fill`
//! ([`Mapper::fill_args`]) on the GPU, [`drop_crowded`] and [`fill`] on the CPU.
//!
//! **What BANE does, and what is kept** (`AegeanTools/BANE.py`):
//! - The grid step is 4 beams: `⌈4·√(BMAJ·BMIN) / √|CDELT1·CDELT2|⌉` pixels, 16 without a beam
//!   in the header; the box is 6 steps ([`Params::from_beam`], [`Params::default`]). Both can
//!   be given instead ([`Params::new`]), per axis too.
//! - Grid points at `0, step, 2·step, …` along each axis and one on the last pixel (BANE's is
//!   one past it); the box from `centre − ⌊box/2⌋`, `box` pixels, cut to the image (BANE's slice
//!   also drops the image's last row and column).
//! - Clipping as BANE's `sigmaclip`: the statistics of the box's finite pixels, then up to
//!   [`DEFAULT_ROUNDS`] rounds keeping the values strictly inside centre ± κσ (κ = 3) of those
//!   kept so far, stopping when a round keeps all of them, or none (the last statistics
//!   stand). The centre of the window and the background are the **median**, as this project's
//!   issue asks and as BANE did until 2018 (it now takes the mean); the noise is the standard
//!   deviation (`np.std`, ddof 0) of the same pixels, in one pass (BANE now measures it in a
//!   second pass, on the image less the interpolated background).
//! - Bilinear interpolation between grid points (BANE's `RegularGridInterpolator`), and NaN in
//!   every map where the pixel is not finite (BANE's default mask).
//!
//! **NaN.** Non-finite pixels are left out of every box. A grid point whose box holds no
//! finite pixel is NaN in both fields, and the interpolation leaves NaN corners out: a pixel
//! gets the weighted mean of the corners of its cell that have a positive weight and a
//! value, and NaN only where none has (`interface::background::interpolate`). An image that
//! is all NaN gives NaN maps. Where a box's values are all equal the noise is 0 and the S/N
//! `±∞` (or NaN for the pixel equal to the background), as f64 division gives them.
//!
//! **Equal to the CPU, and why.** Every step rounds the same f64 operations in the same order
//! on both sides: the arithmetic is `interface::background`'s, which the kernels run with
//! explicitly rounded PTX (never fused into an `fma`), and the CPU reference adds each box's
//! values in the order of the kernel's block reduction
//! ([`interface::background::block_sum`]). The median is a value of the data (or the mean of
//! two, exact in f64), so the background is exact; [`compare`] holds the maps to that: the
//! grid's and the map's background equal bit for bit, the noise within [`NOISE_TOLERANCE`]
//! relative on the grid and one f32 ulp on the maps (an operation rounded otherwise, were
//! there one, would move the f64 noise by an ulp, and its f32 by at most one).

use crate::check::Check;
use crate::gpu::{
    product, refuse, require, require_apart, require_disjoint, require_kernel, require_len, DeviceArray, DeviceMatrix, DeviceVector,
    Gpu, GpuResult, KernelArgs, LaunchConfig, Params as KernelParams, Span,
};
use cust::memory::DeviceSlice;
use interface::background::{
    add, add_square, block_sum, box_range, cell, grid_coordinate, grid_points, interpolate, mean, median, next, snr,
    std, tiles, weights, window, BACKGROUND, FIELDS, FILL_BLOCK, INTERPOLATE_BLOCK, LEAST_NOISE_BLOCK, MAX_BOX_PIXELS,
    NOISE, SHARED_HEADER, THREADS,
};
use interface::measure::peak_key;
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use std::ops::Range;

/// BANE's grid step without a beam in the header: 16 pixels (4 pixels a beam, 4 beams a step).
pub const DEFAULT_STEP: usize = 16;
/// Beams a grid step spans (BANE: "4x the synthesized beam width").
pub const BEAMS_PER_STEP: f64 = 4.0;
/// Steps a box spans (BANE: "6x the step size so we have ~30 beams").
pub const STEPS_PER_BOX: usize = 6;
/// The clipping window's half-width in σ (BANE's `sigmaclip(arr, 3, 3)`).
pub const DEFAULT_KAPPA: f64 = 3.0;
/// The most clipping rounds (BANE's `reps=10`).
pub const DEFAULT_ROUNDS: u32 = 10;
/// Relative tolerance of a grid point's noise against the CPU's (see the module's notes).
pub const NOISE_TOLERANCE: f64 = 1e-12;
/// The most pixels a box cut to the image may hold: they are kept in the shared memory of
/// one block.
pub const MAX_BOX: usize = MAX_BOX_PIXELS;

/// The restoring beam and the pixel's size, in degrees, as a FITS header gives them: `BMAJ`,
/// `BMIN`, and `CDELT1`, `CDELT2` (or `CD1_1`, `CD2_2`). Signs are ignored, as BANE ignores them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Beam {
    /// `BMAJ`, the beam's major axis (FWHM).
    pub major: f64,
    /// `BMIN`, its minor axis.
    pub minor: f64,
    /// `CDELT1`, a pixel's width.
    pub pixel_x: f64,
    /// `CDELT2`, its height.
    pub pixel_y: f64,
}

impl Beam {
    /// The beam's width in pixels, `√|BMAJ·BMIN| / √|CDELT1·CDELT2|`; an error unless it is a
    /// positive number.
    pub fn pixels(&self) -> GpuResult<f64> {
        let width = (self.major * self.minor).abs().sqrt() / (self.pixel_x * self.pixel_y).abs().sqrt();
        require(width.is_finite() && width > 0.0, || {
            format!(
                "background: a beam of {}° × {}° on pixels of {}° × {}° is no width in pixels",
                self.major, self.minor, self.pixel_x, self.pixel_y
            )
        })?;
        Ok(width)
    }
}

/// How the maps are made: the grid's step and the box's size in pixels, each as (rows,
/// columns), and the clipping.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Pixels between grid points along the rows (y) and the columns (x); at least 1.
    pub step: (usize, usize),
    /// The box's height and width in pixels; at least 1. Cut to the image, it may hold at most
    /// [`MAX_BOX`] pixels.
    pub box_size: (usize, usize),
    /// Values strictly inside median ± κσ stay in a round; finite and above 0.
    pub kappa: f64,
    /// The most clipping rounds; 0 takes the statistics of all of the box's finite pixels.
    pub rounds: u32,
}

impl Default for Params {
    /// BANE's defaults without a beam: a step of 16 pixels, a box of 96, κ = 3, 10 rounds.
    fn default() -> Self {
        Self::new(DEFAULT_STEP, STEPS_PER_BOX * DEFAULT_STEP)
    }
}

impl Params {
    /// A square grid of `step` and a square box of `box_size` pixels, clipped as BANE clips.
    pub fn new(step: usize, box_size: usize) -> Self {
        Self { step: (step, step), box_size: (box_size, box_size), kappa: DEFAULT_KAPPA, rounds: DEFAULT_ROUNDS }
    }

    /// BANE's grid for `beam` (`get_step_size`): a step of `⌈4 · beam width in pixels⌉` and a
    /// box of 6 steps.
    ///
    /// ```
    /// use cuda_kernels::background::{Beam, Params};
    ///
    /// // A 25″ beam on 5″ pixels: 5 pixels a beam, a step of 20, a box of 120.
    /// let beam = Beam { major: 25.0 / 3600.0, minor: 25.0 / 3600.0, pixel_x: -5.0 / 3600.0, pixel_y: 5.0 / 3600.0 };
    /// assert_eq!(Params::from_beam(&beam)?, Params::new(20, 120));
    /// # Ok::<(), cuda_kernels::GpuError>(())
    /// ```
    pub fn from_beam(beam: &Beam) -> GpuResult<Self> {
        let step = (BEAMS_PER_STEP * beam.pixels()?).ceil();
        require(step <= u32::MAX as f64, || format!("background: a grid step of {step} pixels"))?;
        let step = step as usize;
        Ok(Self::new(step, STEPS_PER_BOX * step))
    }

    /// The grid and the launches for a `height × width` image, or an error naming what does
    /// not fit.
    fn layout(&self, height: usize, width: usize) -> GpuResult<Layout> {
        let pixels = width.checked_mul(height).filter(|&n| n >= 1 && n <= u32::MAX as usize);
        require(pixels.is_some(), || format!("background: a {height}×{width} image: 1 to 2^32 − 1 pixels"))?;
        let (step_y, step_x) = self.step;
        let (box_y, box_x) = self.box_size;
        require(step_y >= 1 && step_x >= 1, || format!("background: a grid step of {step_y}×{step_x} pixels"))?;
        require(box_y >= 1 && box_x >= 1, || format!("background: a box of {box_y}×{box_x} pixels"))?;
        require(self.kappa.is_finite() && self.kappa > 0.0, || {
            format!("background: κ = {}: it must be a number above 0", self.kappa)
        })?;
        let area = box_y.min(height) * box_x.min(width);
        require(area <= MAX_BOX, || {
            format!(
                "background: a box of {box_y}×{box_x} pixels holds {area} pixels of this {height}×{width} image; \
                 at most {MAX_BOX} (the box's shared memory)"
            )
        })?;
        // Steps past the image and boxes twice its size give the same grid and boxes as these,
        // which fit the kernels' u32 (the image's sides do).
        let fit = |size: usize, extent: usize| size.min(2 * extent).min(u32::MAX as usize) as u32;
        let layout = Layout {
            width,
            height,
            step_x: fit(step_x, width),
            step_y: fit(step_y, height),
            box_x: fit(box_x, width),
            box_y: fit(box_y, height),
            kappa: self.kappa,
            rounds: self.rounds,
        };
        let points = layout.points();
        require(points <= i32::MAX as usize, || {
            format!("background: {points} grid points; at most 2^31 − 1 (a block each)")
        })?;
        Ok(layout)
    }
}

/// The grid and the boxes of one image, checked: what the kernels take.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Layout {
    width: usize,
    height: usize,
    step_x: u32,
    step_y: u32,
    box_x: u32,
    box_y: u32,
    kappa: f64,
    rounds: u32,
}

impl Layout {
    /// Grid points along the rows and the columns.
    fn grid_shape(&self) -> (usize, usize) {
        (grid_points(self.height as u32, self.step_y) as usize, grid_points(self.width as u32, self.step_x) as usize)
    }

    /// The rows and the columns of the box of grid point (`row`, `column`), cut to the image.
    fn box_of(&self, (row, column): (usize, usize)) -> (Range<usize>, Range<usize>) {
        let (rows, columns) = self.grid_shape();
        let (w, h) = (self.width as u32, self.height as u32);
        let (x0, x1) = box_range(grid_coordinate(column as u32, w, self.step_x, columns as u32), w, self.box_x);
        let (y0, y1) = box_range(grid_coordinate(row as u32, h, self.step_y, rows as u32), h, self.box_y);
        (y0 as usize..y1 as usize, x0 as usize..x1 as usize)
    }

    fn points(&self) -> usize {
        let (rows, columns) = self.grid_shape();
        rows * columns
    }
}

/// The arguments of `background_grid`: the σ-clipped median and standard deviation of the
/// finite pixels of `image` in the box around each grid point, written to `grid`.
pub struct GridArgs<'a> {
    /// The image, `height × width`, row-major.
    pub image: &'a DeviceSlice<f32>,
    /// Pixels a row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Pixels between grid points along a row…
    pub step_x: u32,
    /// …and along a column.
    pub step_y: u32,
    /// The box's width…
    pub box_x: u32,
    /// …and height.
    pub box_y: u32,
    /// The clipping window's half-width in σ.
    pub kappa: f64,
    /// The most clipping rounds.
    pub rounds: u32,
    /// [`FIELDS`] f64 per grid point, the points row-major: median, then standard deviation.
    pub grid: &'a DeviceSlice<f64>,
    /// If given, a u32 per grid point: how many finite pixels its box holds.
    pub finite: Option<&'a DeviceSlice<u32>>,
    /// A second pass's marked tiles ([`Mapper::tiles`]), if given: a point whose box overlaps
    /// none is left as it is in `grid` and `finite`, which hold the first pass's values.
    pub touched: Option<&'a DeviceSlice<u32>>,
}

impl<'a> GridArgs<'a> {
    /// These arguments with each box's count of finite pixels written to `finite`.
    pub fn counting(self, finite: &'a DeviceSlice<u32>) -> Self {
        Self { finite: Some(finite), ..self }
    }

    /// These arguments for a second pass whose mask marked `touched` ([`Mapper::tiles`] u32,
    /// as [`InterpolateArgs::masking`] marks them): a point whose box overlaps no marked tile
    /// is left as it is, so `grid`, and the counts when asked, must hold the first pass's
    /// values there (its box's pixels, and so its values, are the first pass's).
    pub fn keeping_untouched(self, touched: &'a DeviceSlice<u32>) -> Self {
        Self { touched: Some(touched), ..self }
    }
}

/// Tiles of a step's square on `width × height` ([`tiles`]), a u32 each in a second pass's mask.
fn tile_len(width: usize, height: usize, step_x: u32, step_y: u32) -> usize {
    tiles(width as u32, step_x) as usize * tiles(height as u32, step_y) as usize
}

/// Pixels of `image` (`height × width`) a launch reads, or an error unless 1 to 2^32 − 1.
fn image_pixels(kernel: &str, width: usize, height: usize) -> GpuResult<usize> {
    let n = product(kernel, width, height)?;
    if n == 0 || n > u32::MAX as usize {
        return Err(refuse(kernel, format!("a {width}x{height} image: 1 to 2^32 - 1 pixels")));
    }
    Ok(n)
}

/// Grid points (rows · columns) for steps `step_x`, `step_y` (at least 1) on `width × height`.
fn grid_len(kernel: &str, width: usize, height: usize, step_x: u32, step_y: u32) -> GpuResult<usize> {
    if step_x == 0 || step_y == 0 {
        return Err(refuse(kernel, "a grid step of 0 pixels"));
    }
    let points = grid_points(width as u32, step_x) as usize * grid_points(height as u32, step_y) as usize;
    if points > i32::MAX as usize {
        return Err(refuse(kernel, format!("{points} grid points, a block each: at most 2^31 - 1")));
    }
    Ok(points)
}

/// The launch shape of `background_grid` for `points` grid points and boxes of at most `area`
/// pixels: a block per grid point, the shared memory's header and an f32 per pixel.
fn grid_config(points: usize, area: usize) -> LaunchConfig {
    LaunchConfig {
        grid: (points as u32, 1, 1),
        block: (THREADS as u32, 1, 1),
        shared_bytes: (SHARED_HEADER + area * std::mem::size_of::<f32>()) as u32,
    }
}

// SAFETY: `background_grid(image: &[f32], width: usize, height: usize, step_x: u32, step_y: u32,
// box_x: u32, box_y: u32, kappa: f64, rounds: u32, grid: *mut f64, finite: *mut u32, touched:
// *const u32)` reads `image[..width · height]`, checked to hold that much (1 to 2^32 − 1 pixels, so
// u32 pixel indices hold); steps and boxes are checked non-zero; the dynamic shared memory holds
// `SHARED_HEADER` bytes and an f32 for every pixel of the largest box cut to the image
// (`box_y.min(height) · box_x.min(width)`, at most `MAX_BOX_PIXELS`), so the box's values stay
// inside it; thread 0 of each block writes its grid point's two f64 and, when `finite` is given
// (null otherwise), its u32: `grid` is checked to hold `FIELDS · points` and `finite` `points`,
// neither overlapping the image or the other; `touched`, when given (null otherwise), is read at
// the tiles of each box, all below the `tile_len` u32 it is checked to hold, and overlaps neither
// output. One block of `THREADS` per grid point.
unsafe impl KernelArgs for GridArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &["background_grid"], "GridArgs")?;
        let n = image_pixels(kernel, self.width, self.height)?;
        require_len(kernel, "the image", self.image, n)?;
        let points = grid_len(kernel, self.width, self.height, self.step_x, self.step_y)?;
        if self.box_x == 0 || self.box_y == 0 {
            return Err(refuse(kernel, "a box of 0 pixels"));
        }
        let area = (self.box_y as usize).min(self.height) * (self.box_x as usize).min(self.width);
        if area > MAX_BOX_PIXELS {
            return Err(refuse(kernel, format!("a box of {area} pixels: at most {MAX_BOX_PIXELS}")));
        }
        let values = product(kernel, points, FIELDS)?;
        require_len(kernel, "the grid", self.grid, values)?;
        let mut written = vec![Span::of("the grid", self.grid, values)];
        let mut read = vec![Span::of("the image", self.image, n)];
        if let Some(finite) = self.finite {
            require_len(kernel, "the finite counts", finite, points)?;
            written.push(Span::of("the finite counts", finite, points));
        }
        // The touched tiles are only read here, as the image is: they may share its memory.
        if let Some(touched) = self.touched {
            let tiles = tile_len(self.width, self.height, self.step_x, self.step_y);
            require_len(kernel, "the touched tiles", touched, tiles)?;
            read.push(Span::of("the touched tiles", touched, tiles));
        }
        require_apart(kernel, &written, &read)?;
        Ok(grid_config(points, area))
    }

    fn params(&self, _kernel: &str) -> KernelParams {
        KernelParams::new()
            .slice(self.image)
            .value(self.width)
            .value(self.height)
            .value(self.step_x)
            .value(self.step_y)
            .value(self.box_x)
            .value(self.box_y)
            .value(self.kappa)
            .value(self.rounds)
            .pointer(self.grid)
            .value(self.finite.map_or(0, |finite| finite.as_device_ptr().as_raw()))
            .value(self.touched.map_or(0, |touched| touched.as_device_ptr().as_raw()))
    }
}

/// The arguments of `background_interpolate`: both fields of `grid` interpolated to every
/// pixel of `image`, and the S/N where `snr` is given.
pub struct InterpolateArgs<'a> {
    /// The image, `height × width`, row-major.
    pub image: &'a DeviceSlice<f32>,
    /// Pixels a row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Pixels between grid points along a row…
    pub step_x: u32,
    /// …and along a column.
    pub step_y: u32,
    /// [`FIELDS`] f64 per grid point, as `background_grid` writes them.
    pub grid: &'a DeviceSlice<f64>,
    /// The background map, the image's shape.
    pub background: &'a DeviceSlice<f32>,
    /// The noise map, the image's shape.
    pub noise: &'a DeviceSlice<f32>,
    /// The S/N image, the image's shape, if wanted.
    pub snr: Option<&'a DeviceSlice<f32>>,
    /// The image masked for a second pass, if wanted.
    pub mask: Option<Mask<'a>>,
}

/// What a second pass masks: the image's pixels whose S/N is above `level` made NaN in
/// `masked` (the others copied), how many there were added to `count[0]`, and the tiles they
/// fall in marked (made non-zero) in `touched`.
pub struct Mask<'a> {
    /// The S/N above which a pixel is left out.
    pub level: f64,
    /// The masked image, the image's shape.
    pub masked: &'a DeviceSlice<f32>,
    /// One u32, to which the number of pixels left out is added.
    pub count: &'a DeviceSlice<u32>,
    /// A u32 per tile ([`Mapper::tiles`]), zero where the mask is to tell a tile it left whole.
    pub touched: &'a DeviceSlice<u32>,
}

impl<'a> InterpolateArgs<'a> {
    /// These arguments with the image masked at `level` into `masked`, counted into `count`,
    /// its tiles marked in `touched`.
    pub fn masking(self, mask: Mask<'a>) -> Self {
        Self { mask: Some(mask), ..self }
    }
}

// SAFETY: `background_interpolate(image: &[f32], width: usize, height: usize, step_x: u32, step_y:
// u32, grid: &[f64], background: *mut f32, noise: *mut f32, snr: *mut f32, mask_level: f64, masked:
// *mut f32, masked_count: *mut u32, touched: *mut u32)` reads `image[..n]`, `n = width · height` (1
// to 2^32 − 1, so u32 indices hold), and the grid's `FIELDS` values of the four corners of each
// pixel's cell, all below `FIELDS · points`, which the grid is checked to hold; it writes element
// `i < n` of each output, each checked to hold `n` and to overlap no input or other output; `snr`
// is null when not given, `masked`, `masked_count` and `touched` all null unless a mask is, the
// count then checked to hold one u32 and the tiles `tile_len`, each apart from every other array
// (both are written atomically, the tile of pixel (x, y) at `(y / step_y) · tiles(width, step_x) +
// x / step_x`). One thread per pixel in one-dimensional blocks.
unsafe impl KernelArgs for InterpolateArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &["background_interpolate"], "InterpolateArgs")?;
        let n = image_pixels(kernel, self.width, self.height)?;
        require_len(kernel, "the image", self.image, n)?;
        let values = product(kernel, grid_len(kernel, self.width, self.height, self.step_x, self.step_y)?, FIELDS)?;
        require_len(kernel, "the grid", self.grid, values)?;
        let mut outputs = vec![("the background", self.background), ("the noise", self.noise)];
        outputs.extend(self.snr.map(|snr| ("the S/N", snr)));
        outputs.extend(self.mask.as_ref().map(|mask| ("the masked image", mask.masked)));
        let mut written = Vec::with_capacity(outputs.len() + 2);
        for &(name, output) in &outputs {
            require_len(kernel, name, output, n)?;
            written.push(Span::of(name, output, n));
        }
        if let Some(mask) = &self.mask {
            let tiles = tile_len(self.width, self.height, self.step_x, self.step_y);
            require_len(kernel, "the masked count", mask.count, 1)?;
            require_len(kernel, "the touched tiles", mask.touched, tiles)?;
            written.push(Span::of("the masked count", mask.count, 1));
            written.push(Span::of("the touched tiles", mask.touched, tiles));
        }
        require_apart(kernel, &written, &[Span::of("the image", self.image, n), Span::of("the grid", self.grid, values)])?;
        LaunchConfig::linear(n, INTERPOLATE_BLOCK)
    }

    fn params(&self, _kernel: &str) -> KernelParams {
        let snr = self.snr.map_or(0, |snr| snr.as_device_ptr().as_raw());
        let raw = |slice: &DeviceSlice<u32>| slice.as_device_ptr().as_raw();
        let (level, masked, count, touched) = self
            .mask
            .as_ref()
            .map_or((0.0, 0, 0, 0), |m| (m.level, m.masked.as_device_ptr().as_raw(), raw(m.count), raw(m.touched)));
        KernelParams::new()
            .slice(self.image)
            .value(self.width)
            .value(self.height)
            .value(self.step_x)
            .value(self.step_y)
            .slice(self.grid)
            .pointer(self.background)
            .pointer(self.noise)
            .value(snr)
            .value(level)
            .value(masked)
            .value(count)
            .value(touched)
    }
}

/// The points of a grid of `shape` and its f64 values ([`FIELDS`] a point), for a kernel that
/// indexes points with u32: 1 to 2^31 − 1 points, or an error naming `kernel`.
fn grid_len_checked(kernel: &str, shape: (usize, usize)) -> GpuResult<(usize, usize)> {
    let points = product(kernel, shape.0, shape.1)?;
    if points == 0 || points > i32::MAX as usize {
        return Err(refuse(kernel, format!("{points} grid points: 1 to 2^31 - 1")));
    }
    Ok((points, product(kernel, points, FIELDS)?))
}

/// `background_fill`'s launch: one block, its rounds' barriers the whole grid's.
fn fill_config() -> LaunchConfig {
    LaunchConfig { grid: (1, 1, 1), block: (FILL_BLOCK, 1, 1), shared_bytes: 0 }
}

/// The arguments of `background_least_noise`: `grid` into `sky`, each point's background as
/// it is and its noise the least within `reach` points (rows, columns) of it ([`least_noise`]).
pub struct LeastNoiseArgs<'a> {
    /// [`FIELDS`] f64 per grid point, as `background_grid` writes them.
    pub grid: &'a DeviceSlice<f64>,
    /// Grid points along the rows and the columns ([`Mapper::grid_shape`]).
    pub shape: (usize, usize),
    /// Points along the rows and the columns on either side of a point that its window holds.
    pub reach: (usize, usize),
    /// As many f64 as the grid.
    pub sky: &'a DeviceSlice<f64>,
}

// SAFETY: `background_least_noise(grid: &[f64], rows: u32, columns: u32, reach_y: u32, reach_x:
// u32, sky: *mut f64)` reads the `FIELDS` values of the points within reach of each point, all
// below `FIELDS · rows · columns`, which `grid` is checked to hold (1 to 2^31 − 1 points, so u32
// point indices hold), and writes the same of `sky`, checked to hold as many and to overlap it
// not; the reach is cut to u32 (a window past the grid's ends is cut to them). One thread per
// point in one-dimensional blocks.
unsafe impl KernelArgs for LeastNoiseArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &["background_least_noise"], "LeastNoiseArgs")?;
        let (points, values) = grid_len_checked(kernel, self.shape)?;
        require_len(kernel, "the grid", self.grid, values)?;
        require_len(kernel, "the sky's grid", self.sky, values)?;
        require_disjoint(kernel, ("the sky's grid", self.sky, values), ("the grid", self.grid, values))?;
        LaunchConfig::linear(points, LEAST_NOISE_BLOCK)
    }

    fn params(&self, _kernel: &str) -> KernelParams {
        let cut = |reach: usize| reach.min(u32::MAX as usize) as u32;
        KernelParams::new()
            .slice(self.grid)
            .value(self.shape.0 as u32)
            .value(self.shape.1 as u32)
            .value(cut(self.reach.0))
            .value(cut(self.reach.1))
            .pointer(self.sky)
    }
}

/// `grid` (`shape` points, [`FIELDS`] f64 each, row-major) with each point's noise made the
/// least of those within `reach` points of it along the rows and the columns (NaN points left
/// out; NaN only where every one is), its background kept: what `background_least_noise`
/// writes, taken here along the rows and then the columns.
///
/// ```
/// use cuda_kernels::background::least_noise;
///
/// // A row of three points, each (background, noise), the middle one's noise NaN; a reach of
/// // one point along the row.
/// let grid = [0.0, 3.0, 1.0, f64::NAN, 2.0, 1.5];
/// assert_eq!(least_noise(&grid, (1, 3), (0, 1)), [0.0, 3.0, 1.0, 1.5, 2.0, 1.5]);
/// ```
pub fn least_noise(grid: &[f64], (rows, columns): (usize, usize), (reach_y, reach_x): (usize, usize)) -> Vec<f64> {
    let near = |i: usize, reach: usize, len: usize| {
        let last = i.saturating_add(reach);
        i.saturating_sub(reach)..last.saturating_add(1).min(len)
    };
    let noise = |r: usize, c: usize| grid[(r * columns + c) * FIELDS + NOISE];
    // The least of each row's window, then the least of those in each column's: the window's.
    let along_rows: Vec<f64> = (0..rows * columns)
        .into_par_iter()
        .map(|p| near(p % columns, reach_x, columns).map(|c| noise(p / columns, c)).fold(f64::NAN, f64::min))
        .collect();
    let mut sky = grid.to_vec();
    sky.par_chunks_mut(FIELDS).enumerate().for_each(|(p, point)| {
        let (r, c) = (p / columns, p % columns);
        point[NOISE] = near(r, reach_y, rows).map(|r| along_rows[r * columns + c]).fold(f64::NAN, f64::min);
    });
    sky
}

/// `background_fill`'s arguments: a second pass's `grid` made NaN where its box lost more than
/// `at_most` of its finite pixels (`before` counts them in the image, `after` in the masked
/// image), then filled where `first` (the first pass's grid) has a value: [`drop_crowded`], then
/// [`fill`]. `lists` and `means` are the kernel's scratch.
pub struct FillArgs<'a> {
    /// [`FIELDS`] f64 per grid point, read and written.
    pub grid: &'a DeviceSlice<f64>,
    /// As many f64 as the grid.
    pub first: &'a DeviceSlice<f64>,
    /// A count per grid point: its box's finite pixels in the image.
    pub before: &'a DeviceSlice<u32>,
    /// A count per grid point: its box's finite pixels in the masked image.
    pub after: &'a DeviceSlice<u32>,
    /// Grid points along the rows and the columns ([`Mapper::grid_shape`]).
    pub shape: (usize, usize),
    /// The share of a box's finite pixels that its mask may take and its point still stand.
    pub at_most: f64,
    /// Two u32 per grid point.
    pub lists: &'a DeviceSlice<u32>,
    /// An f64 per grid point.
    pub means: &'a DeviceSlice<f64>,
}

// SAFETY: `background_fill(grid: *mut f64, first: &[f64], before: &[u32], after: &[u32], points:
// u32, columns: u32, at_most: f64, lists: *mut u32, means: *mut f64)` reads and writes the
// `FIELDS` values of each of `points` points of `grid` (and of their neighbours, within the
// grid of `columns` a row) and reads as many of `first`; it reads a count of each point in
// `before` and `after`, and writes below `2 · points` words of `lists` and `points` values of
// `means`. All are checked to hold that much, 1 to 2^31 − 1 points (u32 indices, below
// `FILL_NONE`), and the three written buffers to overlap nothing. One block of `FILL_BLOCK`
// threads.
unsafe impl KernelArgs for FillArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &["background_fill"], "FillArgs")?;
        let (points, values) = grid_len_checked(kernel, self.shape)?;
        if self.at_most.is_nan() {
            return Err(refuse(kernel, "the share a mask may take is NaN"));
        }
        require_len(kernel, "the grid", self.grid, values)?;
        require_len(kernel, "the first pass's grid", self.first, values)?;
        require_len(kernel, "the counts before the mask", self.before, points)?;
        require_len(kernel, "the counts after it", self.after, points)?;
        require_len(kernel, "the lists", self.lists, 2 * points)?;
        require_len(kernel, "the means", self.means, points)?;
        let written = [
            Span::of("the grid", self.grid, values),
            Span::of("the lists", self.lists, 2 * points),
            Span::of("the means", self.means, points),
        ];
        let read = [
            Span::of("the first pass's grid", self.first, values),
            Span::of("the counts before the mask", self.before, points),
            Span::of("the counts after it", self.after, points),
        ];
        require_apart(kernel, &written, &read)?;
        Ok(fill_config())
    }

    fn params(&self, _kernel: &str) -> KernelParams {
        KernelParams::new()
            .pointer(self.grid)
            .slice(self.first)
            .slice(self.before)
            .slice(self.after)
            .value(self.shape.0 as u32 * self.shape.1 as u32)
            .value(self.shape.1 as u32)
            .value(self.at_most)
            .pointer(self.lists)
            .pointer(self.means)
    }
}

/// Makes NaN the points of a second pass's `grid` whose boxes had more than `at_most` of their
/// finite pixels left out by its mask: `before` and `after` count each box's finite pixels in the
/// image and in the masked image. What `background_fill` does first.
///
/// ```
/// use cuda_kernels::background::drop_crowded;
///
/// // Two points: the first lost 3 of its 4 pixels to the mask, the second 1.
/// let mut grid = [1.0, 0.5, 2.0, 0.25];
/// drop_crowded(&mut grid, &[4, 4], &[1, 3], 0.5);
/// assert!(grid[0].is_nan() && grid[1].is_nan());
/// assert_eq!(grid[2..], [2.0, 0.25]);
/// ```
pub fn drop_crowded(grid: &mut [f64], before: &[u32], after: &[u32], at_most: f64) {
    for ((point, &finite), &left) in grid.chunks_mut(FIELDS).zip(before).zip(after) {
        if f64::from(finite.wrapping_sub(left)) > at_most * f64::from(finite) {
            point.fill(f64::NAN);
        }
    }
}

/// Fills the points of a second pass's `grid` (row-major, `columns` a row) that are NaN where
/// the first pass's `first` is not (their boxes' finite pixels all left out, or crowded,
/// [`drop_crowded`]): in rounds, each such point takes the mean of its 8 neighbours that had a
/// value at the round's start (added row by row), until none is left; a point no value reaches
/// (every point left out) keeps `first`'s. Each field is filled alone. What `background_fill`
/// does next, bit for bit.
///
/// ```
/// use cuda_kernels::background::fill;
///
/// // A row of three points: the middle one lost its value, its neighbours' mean fills it.
/// let mut grid = [1.0, 0.5, f64::NAN, f64::NAN, 3.0, 1.5];
/// fill(&mut grid, &[1.0, 0.5, 9.0, 9.0, 3.0, 1.5], 3);
/// assert_eq!(grid, [1.0, 0.5, 2.0, 1.0, 3.0, 1.5]);
/// ```
pub fn fill(grid: &mut [f64], first: &[f64], columns: usize) {
    let points = grid.len() / FIELDS;
    let rows = points / columns.max(1);
    for field in [BACKGROUND, NOISE] {
        let at = |p: usize| p * FIELDS + field;
        let mut empty: Vec<usize> = (0..points).filter(|&p| grid[at(p)].is_nan() && !first[at(p)].is_nan()).collect();
        while !empty.is_empty() {
            let means: Vec<Option<f64>> = empty
                .iter()
                .map(|&p| {
                    let (r, c) = (p / columns, p % columns);
                    let (mut sum, mut count) = (0.0, 0u32);
                    for nr in r.saturating_sub(1)..(r + 2).min(rows) {
                        for nc in c.saturating_sub(1)..(c + 2).min(columns) {
                            let v = grid[at(nr * columns + nc)];
                            if !v.is_nan() {
                                (sum, count) = (sum + v, count + 1);
                            }
                        }
                    }
                    (count > 0).then(|| sum / f64::from(count))
                })
                .collect();
            if means.iter().all(Option::is_none) {
                empty.iter().for_each(|&p| grid[at(p)] = first[at(p)]);
                break;
            }
            for (&p, mean) in empty.iter().zip(&means) {
                if let Some(mean) = mean {
                    grid[at(p)] = *mean;
                }
            }
            empty = empty.into_iter().zip(means).filter(|(_, m)| m.is_none()).map(|(p, _)| p).collect();
        }
    }
}

/// The maps of one image: the grid's two fields and the three images.
#[derive(Debug, Clone, PartialEq)]
pub struct Maps {
    /// Grid points along the rows and the columns.
    pub grid_shape: (usize, usize),
    /// [`FIELDS`] f64 per grid point, row-major: the σ-clipped median (the background), then
    /// the standard deviation (the noise); NaN for a box without a finite pixel.
    pub grid: Vec<f64>,
    /// The background at every pixel, NaN where the pixel is not finite.
    pub background: Array2<f32>,
    /// The noise at every pixel, NaN where the pixel is not finite.
    pub noise: Array2<f32>,
    /// `(pixel − background) / noise`, NaN where the pixel is not finite.
    pub snr: Array2<f32>,
}

/// The σ-clipped median and standard deviation of `values`, the pixels of one box in its
/// row-major order (-0.0 as 0.0; NaN and ±∞ never kept), added as the kernel adds them: the
/// values a window keeps are those strictly inside it, and thread `t` of the kernel's block adds
/// the kept ones of `t, t + THREADS, …`.
fn clipped(values: &[f32], kappa: f64, rounds: u32) -> (f64, f64) {
    // What a window keeps is a run of the finite values in order, which gives its count and
    // median; its sums are added in the kernel's order, over the box.
    let mut sorted: Vec<f32> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_unstable_by(f32::total_cmp);
    let mut limits = (f64::NEG_INFINITY, f64::INFINITY);
    let (mut middle, mut sigma) = (f64::NAN, f64::NAN);
    let mut last_count = 0;
    for round in 0..=rounds {
        let (lo, hi) = limits;
        let first = sorted.partition_point(|&v| v as f64 <= lo);
        let run = &sorted[first..first + sorted[first..].partition_point(|&v| (v as f64) < hi)];
        let count = run.len();
        if count == 0 || count == last_count {
            break;
        }
        // Thread t's partial: the kept values of t, t + THREADS, …, in that order.
        let sum = |f: &dyn Fn(f64, f32) -> f64| {
            let mut partials = [0.0; THREADS];
            for row in values.chunks(THREADS) {
                for (partial, &v) in partials.iter_mut().zip(row) {
                    if (v as f64) > lo && (v as f64) < hi {
                        *partial = f(*partial, v);
                    }
                }
            }
            block_sum(|t| partials[t])
        };
        let average = mean(sum(&|s, v| add(s, v as f64)), count as u32);
        sigma = std(sum(&|s, v| add_square(s, v, average)), count as u32);
        middle = median(run[(count - 1) / 2], run[count / 2]);
        if round == rounds {
            break;
        }
        let (low, high) = window(middle, sigma, kappa);
        limits = (lo.max(low), hi.min(high));
        last_count = count;
    }
    (middle, sigma)
}

/// The background and noise of grid point (`row`, `column`) of `layout` over `pixels`, on the
/// CPU: the box's pixels (-0.0 as 0.0, as the kernel stores them), clipped.
fn grid_point(pixels: &[f32], layout: &Layout, point: (usize, usize)) -> [f64; 2] {
    let (rows, columns) = layout.box_of(point);
    let row_of = |y: usize| &pixels[y * layout.width..][columns.clone()];
    let values: Vec<f32> = rows.flat_map(row_of).map(|&v| if v == 0.0 { 0.0 } else { v }).collect();
    let (middle, sigma) = clipped(&values, layout.kappa, layout.rounds);
    [middle, sigma]
}

/// The grid of `layout` over `pixels`, on the CPU.
fn cpu_grid(pixels: &[f32], layout: &Layout) -> Vec<f64> {
    let (rows, columns) = layout.grid_shape();
    (0..rows * columns)
        .into_par_iter()
        .flat_map_iter(|p| grid_point(pixels, layout, (p / columns, p % columns)))
        .collect()
}

/// The maps at pixel `i` of `pixels` from `grid`: background, noise and S/N, as the
/// interpolation kernel computes them.
fn pixel_maps(pixels: &[f32], grid: &[f64], layout: &Layout, i: usize) -> [f32; 3] {
    let pixel = pixels[i];
    if !pixel.is_finite() {
        return [f32::NAN; 3];
    }
    let (w, h) = (layout.width as u32, layout.height as u32);
    let (y, x) = (i as u32 / w, i as u32 % w);
    let (rows, columns) = (grid_points(h, layout.step_y), grid_points(w, layout.step_x));
    let (r0, fy) = cell(y, h, layout.step_y, rows);
    let (c0, fx) = cell(x, w, layout.step_x, columns);
    let (r1, c1) = (next(r0, rows), next(c0, columns));
    let corners = |field: usize| {
        [(r0, c0), (r0, c1), (r1, c0), (r1, c1)].map(|(r, c)| grid[(r * columns + c) as usize * FIELDS + field])
    };
    let weights = weights(fy, fx);
    let (level, sigma) = (interpolate(corners(BACKGROUND), weights), interpolate(corners(NOISE), weights));
    [level as f32, sigma as f32, snr(pixel, level, sigma)]
}

/// The rows of `pixels` in rows of `width`, or an error unless they make whole rows.
fn rows_of(pixels: &[f32], width: usize) -> GpuResult<usize> {
    require(width > 0 && pixels.len().is_multiple_of(width), || {
        format!("background: {} pixels do not make rows of {width}", pixels.len())
    })?;
    Ok(pixels.len() / width)
}

/// The maps of `pixels` (row-major, `width` a row) with `params`, on the CPU, by the same
/// definitions and arithmetic as the kernels (the module's notes give them); an error for
/// parameters [`background`] refuses.
///
/// ```
/// use cuda_kernels::background::{cpu_reference, Params};
///
/// // A row of 20 pixels, 0 and 1 alternating, and 100 at column 10: one box holds them all.
/// let mut pixels: Vec<f32> = (0..20).map(|x| (x % 2) as f32).collect();
/// pixels[10] = 100.0;
/// let maps = cpu_reference(&pixels, 20, &Params::new(19, 40))?;
/// assert_eq!(maps.grid_shape, (1, 2));
/// // Round 1 clips 100 (median 1, σ 21.7); round 2 keeps the other 19: 9 zeros and 10 ones.
/// assert_eq!(maps.grid[0], 1.0);
/// assert!((maps.grid[1] - 90f64.sqrt() / 19.0).abs() < 1e-12);
/// assert_eq!(maps.background[[0, 5]], 1.0);
/// assert!(maps.snr[[0, 10]] > 190.0);
/// # Ok::<(), cuda_kernels::GpuError>(())
/// ```
pub fn cpu_reference(pixels: &[f32], width: usize, params: &Params) -> GpuResult<Maps> {
    let height = rows_of(pixels, width)?;
    let layout = params.layout(height, width)?;
    let grid = cpu_grid(pixels, &layout);
    let maps: Vec<[f32; 3]> =
        (0..pixels.len()).into_par_iter().map(|i| pixel_maps(pixels, &grid, &layout, i)).collect();
    let map =
        |k: usize| Array2::from_shape_vec((height, width), maps.iter().map(|m| m[k]).collect()).expect("a pixel each");
    Ok(Maps { grid_shape: layout.grid_shape(), grid, background: map(0), noise: map(1), snr: map(2) })
}

/// The σ-clipped median and standard deviation of the box around grid point (`row`, `column`)
/// of `pixels` (row-major, `width` a row), on the CPU: one point of [`cpu_reference`]'s grid,
/// for checking a few points of an image too large to map whole on the CPU.
pub fn cpu_point(pixels: &[f32], width: usize, params: &Params, (row, column): (usize, usize)) -> GpuResult<[f64; 2]> {
    let layout = params.layout(rows_of(pixels, width)?, width)?;
    let (rows, columns) = layout.grid_shape();
    require(row < rows && column < columns, || {
        format!("background: no grid point ({row}, {column}) on {rows}×{columns}")
    })?;
    Ok(grid_point(pixels, &layout, (row, column)))
}

/// The background, noise and S/N at pixel `i` of `pixels` (row-major, `width` a row),
/// interpolated from `grid` ([`Maps::grid`], from the GPU or [`cpu_reference`]) on the CPU as
/// the kernel interpolates: one pixel of [`cpu_reference`]'s maps, for checking a few pixels
/// of an image too large to map whole on the CPU.
pub fn cpu_pixel(pixels: &[f32], width: usize, params: &Params, grid: &[f64], i: usize) -> GpuResult<[f32; 3]> {
    let layout = params.layout(rows_of(pixels, width)?, width)?;
    require(i < pixels.len(), || format!("background: no pixel {i} of {}", pixels.len()))?;
    require(grid.len() == layout.points() * FIELDS, || {
        format!("background: a grid of {} values for {} points", grid.len(), layout.points())
    })?;
    Ok(pixel_maps(pixels, grid, &layout, i))
}

/// Where `a` and `b` stand apart in f32 steps (0: the same bits, or both NaN).
fn ulps(a: f32, b: f32) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => 0.0,
        (false, false) => (peak_key(a) as f64 - peak_key(b) as f64).abs(),
        _ => f64::INFINITY,
    }
}

/// The verdict on `errors`, each in units of its tolerance (1 passes; NaN fails).
fn verdict(errors: impl Iterator<Item = f64>, same_shape: bool) -> Check {
    Check::from_errors(errors, 1.0, same_shape)
}

/// 0 where `g` and `c` are the same bits or both NaN, else ∞.
fn exact(g: f64, c: f64) -> f64 {
    if g.to_bits() == c.to_bits() || (g.is_nan() && c.is_nan()) {
        0.0
    } else {
        f64::INFINITY
    }
}

/// Each grid value's error in units of its tolerance: the median exact, the noise within
/// [`NOISE_TOLERANCE`] relative.
fn grid_errors<'a>(gpu: &'a [f64], cpu: &'a [f64]) -> impl Iterator<Item = f64> + 'a {
    gpu.iter().zip(cpu).enumerate().map(|(i, (&g, &c))| match i % FIELDS {
        BACKGROUND => exact(g, c),
        _ if g == c || (g.is_nan() && c.is_nan()) => 0.0,
        _ => (g - c).abs() / (c.abs() * NOISE_TOLERANCE),
    })
}

/// A grid from `background_grid` against the CPU's ([`Maps::grid`]): the medians equal bit
/// for bit, the noise within [`NOISE_TOLERANCE`] relative, NaN only where the other is NaN.
pub fn compare_grid(gpu: &[f64], cpu: &[f64]) -> Check {
    verdict(grid_errors(gpu, cpu), gpu.len() == cpu.len())
}

/// `gpu` against `cpu`: the grid as [`compare_grid`] holds it, the background map equal bit
/// for bit, the noise and S/N maps within one f32 ulp; NaN only where the other is NaN. Each
/// element's error is in units of its tolerance (1 passes; an exact field's error is 0 or ∞),
/// the grid's elements first, then the three maps'.
pub fn compare(gpu: &Maps, cpu: &Maps) -> Check {
    let background = gpu.background.iter().zip(&cpu.background).map(|(&g, &c)| exact(g as f64, c as f64));
    let maps = [(&gpu.noise, &cpu.noise), (&gpu.snr, &cpu.snr)];
    let others = maps.into_iter().flat_map(|(g, c)| g.iter().zip(c).map(|(&g, &c)| ulps(g, c)));
    let same_shape = gpu.grid_shape == cpu.grid_shape
        && gpu.grid.len() == cpu.grid.len()
        && gpu.background.dim() == cpu.background.dim()
        && gpu.noise.dim() == cpu.noise.dim()
        && gpu.snr.dim() == cpu.snr.dim();
    verdict(grid_errors(&gpu.grid, &cpu.grid).chain(background).chain(others), same_shape)
}

/// The kernels' arguments for images of one shape and one set of [`Params`], checked once.
#[derive(Debug, Clone, Copy)]
pub struct Mapper {
    layout: Layout,
}

impl Mapper {
    /// The grid and boxes of `params` on a `height × width` image, checked against the device:
    /// an error names what does not fit (the image, the steps, the box, κ, the shared memory).
    pub fn new(gpu: &Gpu, shape: (usize, usize), params: &Params) -> GpuResult<Self> {
        let mapper = Self::for_shape(shape, params)?;
        for (kernel, config) in mapper.configs()? {
            gpu.validate(kernel, &config)?;
        }
        Ok(mapper)
    }

    /// [`Mapper::new`] without a device: the checks of `params` alone.
    pub fn for_shape((height, width): (usize, usize), params: &Params) -> GpuResult<Self> {
        Ok(Self { layout: params.layout(height, width)? })
    }

    /// Each kernel's launch shape: for `background_grid`, a block per grid point and an f32 of
    /// shared memory per pixel of the largest box (after its sums, tallies and histogram); for
    /// `background_interpolate`, a thread per pixel; for `background_least_noise`, a thread per
    /// grid point.
    pub fn configs(&self) -> GpuResult<[(&'static str, LaunchConfig); 4]> {
        let l = &self.layout;
        let area = (l.box_y as usize).min(l.height) * (l.box_x as usize).min(l.width);
        let grid = grid_config(l.points(), area);
        let pixels = LaunchConfig::linear(l.width * l.height, INTERPOLATE_BLOCK)?;
        let points = LaunchConfig::linear(l.points(), LEAST_NOISE_BLOCK)?;
        Ok([
            ("background_grid", grid),
            ("background_interpolate", pixels),
            ("background_least_noise", points),
            ("background_fill", fill_config()),
        ])
    }

    /// Grid points along the rows and the columns.
    pub fn grid_shape(&self) -> (usize, usize) {
        self.layout.grid_shape()
    }

    /// The image's rows and columns in the box of grid point (`row`, `column`), cut to the
    /// image: the pixels its statistics come from.
    pub fn box_of(&self, point: (usize, usize)) -> (Range<usize>, Range<usize>) {
        self.layout.box_of(point)
    }

    /// Tiles of a step's square over the image, row-major: the u32 a second pass's mask marks
    /// ([`Mask::touched`]).
    pub fn tiles(&self) -> usize {
        let l = &self.layout;
        tile_len(l.width, l.height, l.step_x, l.step_y)
    }

    /// f64 values of the grid: [`FIELDS`] per point.
    pub fn grid_len(&self) -> usize {
        self.layout.points() * FIELDS
    }

    /// `background_grid`'s arguments: `image` into `grid`.
    pub fn grid_args<'a>(&self, image: &'a DeviceSlice<f32>, grid: &'a DeviceSlice<f64>) -> GridArgs<'a> {
        let l = self.layout;
        GridArgs {
            image,
            width: l.width,
            height: l.height,
            step_x: l.step_x,
            step_y: l.step_y,
            box_x: l.box_x,
            box_y: l.box_y,
            kappa: l.kappa,
            rounds: l.rounds,
            grid,
            finite: None,
            touched: None,
        }
    }

    /// `background_least_noise`'s arguments: `grid` into `sky`, each point's noise the least
    /// within `reach` points of it (rows, columns).
    pub fn least_noise_args<'a>(
        &self,
        grid: &'a DeviceSlice<f64>,
        reach: (usize, usize),
        sky: &'a DeviceSlice<f64>,
    ) -> LeastNoiseArgs<'a> {
        LeastNoiseArgs { grid, shape: self.grid_shape(), reach, sky }
    }

    /// `background_fill`'s arguments for this grid: `grid`'s crowded points (more than
    /// `at_most` of `before`'s pixels gone in `after`) made NaN, and its empty ones filled.
    pub fn fill_args<'a>(
        &self,
        grid: &'a DeviceSlice<f64>,
        first: &'a DeviceSlice<f64>,
        (before, after): (&'a DeviceSlice<u32>, &'a DeviceSlice<u32>),
        at_most: f64,
        lists: &'a DeviceSlice<u32>,
        means: &'a DeviceSlice<f64>,
    ) -> FillArgs<'a> {
        FillArgs { grid, first, before, after, shape: self.grid_shape(), at_most, lists, means }
    }

    /// `background_interpolate`'s arguments: `grid` and `image` into the maps.
    pub fn interpolate_args<'a>(
        &self,
        image: &'a DeviceSlice<f32>,
        grid: &'a DeviceSlice<f64>,
        background: &'a DeviceSlice<f32>,
        noise: &'a DeviceSlice<f32>,
        snr: Option<&'a DeviceSlice<f32>>,
    ) -> InterpolateArgs<'a> {
        let l = self.layout;
        InterpolateArgs {
            image,
            width: l.width,
            height: l.height,
            step_x: l.step_x,
            step_y: l.step_y,
            grid,
            background,
            noise,
            snr,
            mask: None,
        }
    }
}

/// The background and noise maps of `image` with `params` on `gpu`, written to `background`
/// and `noise`, and the S/N image to `snr` when given; returns the grid (rows × columns ×
/// [`FIELDS`] f64, as [`Maps::grid`]), whose drop waits for the kernels that use it.
///
/// The definitions are the module's (BANE's, with the differences it lists); the maps equal
/// [`cpu_reference`]'s as [`compare`] checks. Two kernels are queued and nothing waits: one
/// block per grid point keeps its box's pixels in shared memory and clips them, then a
/// thread per pixel interpolates.
///
/// Checked before anything runs: every map has the image's shape and every array lives on
/// `gpu`; the image has 1 to 2^32 − 1 pixels; steps and boxes are at least 1; κ is a number
/// above 0; a box cut to the image holds at most [`MAX_BOX`] pixels, which the device's shared
/// memory must hold too. An error says what is wrong, e.g. "background: the noise map is 3×4,
/// the image 4×3".
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::background::{background, cpu_reference, Params};
/// use cuda_kernels::data::random_normal;
/// use cuda_kernels::DeviceMatrix;
/// use ndarray::Array2;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// // Noise on a slope, 37×53 pixels, a grid step of 8 and boxes of 24.
/// let pixels = Array2::from_shape_fn((37, 53), |(y, x)| 0.01 * x as f32 + 0.1 * y as f32);
/// let noisy = &pixels + &Array2::from_shape_vec((37, 53), random_normal(37 * 53, 5)).unwrap();
/// let params = Params::new(8, 24);
/// let image = DeviceMatrix::from_array(&gpu, noisy.view())?;
/// let (mut level, mut noise, mut snr) =
///     (DeviceMatrix::zeros(&gpu, (37, 53))?, DeviceMatrix::zeros(&gpu, (37, 53))?, DeviceMatrix::zeros(&gpu, (37, 53))?);
/// let grid = background(&gpu, &image, &params, &mut level, &mut noise, Some(&mut snr))?;
/// let expected = cpu_reference(noisy.as_slice().unwrap(), 53, &params)?;
/// assert_eq!(level.to_array(&gpu)?, expected.background);
/// assert_eq!(grid.to_array(&gpu)?.as_slice().unwrap(), &expected.grid[..]);
/// # Ok(())
/// # }
/// ```
pub fn background(
    gpu: &Gpu,
    image: &DeviceMatrix<f32>,
    params: &Params,
    background: &mut DeviceMatrix<f32>,
    noise: &mut DeviceMatrix<f32>,
    snr: Option<&mut DeviceMatrix<f32>>,
) -> GpuResult<DeviceVector<f64>> {
    let (height, width) = image.dim();
    let snr = snr.map(|s| &*s);
    for (name, map) in [("background", Some(&*background)), ("noise", Some(&*noise)), ("S/N", snr)] {
        if let Some(map) = map {
            let (rows, cols) = map.dim();
            require(map.dim() == image.dim(), || {
                format!("background: the {name} map is {rows}×{cols}, the image {height}×{width}")
            })?;
        }
    }
    gpu.bind()?;
    let mapper = Mapper::new(gpu, (height, width), params)?;
    let grid = DeviceArray::zeros(gpu, mapper.grid_len())?;
    let (pixels, grid_slice) = (image.slice(gpu)?, grid.slice(gpu)?);
    let (level, sigma) = (background.slice(gpu)?, noise.slice(gpu)?);
    let ratio = snr.map(|s| s.slice(gpu)).transpose()?;
    // SAFETY: every buffer is a DeviceArray whose use is recorded below, so none is freed
    // before the stream has run the kernels.
    let launched = unsafe {
        gpu.launch("background_grid", &mapper.grid_args(pixels, grid_slice)).and_then(|()| {
            gpu.launch("background_interpolate", &mapper.interpolate_args(pixels, grid_slice, level, sigma, ratio))
        })
    };
    // Recorded whatever the second launch did: the first kernel may be queued.
    image.record_use(gpu)?;
    grid.record_use(gpu)?;
    background.record_use(gpu)?;
    noise.record_use(gpu)?;
    if let Some(snr) = snr {
        snr.record_use(gpu)?;
    }
    launched?;
    Ok(grid)
}

/// [`background`] of an `ndarray` image: copies `image` (any memory layout) to `gpu`, makes
/// the grid, the maps and the S/N image, and copies them back. The same inputs as
/// [`background`]'s are errors.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::background::{background_array, compare, cpu_reference, Params};
/// use ndarray::Array2;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// // A blanked corner: the maps are NaN there, and numbers elsewhere.
/// let image = Array2::from_shape_fn((30, 41), |(y, x)| if x + y < 8 { f32::NAN } else { ((x * 7 + y * 13) % 11) as f32 });
/// let maps = background_array(&gpu, image.view(), &Params::new(10, 20))?;
/// assert!(maps.noise[[0, 0]].is_nan() && maps.noise[[20, 20]] > 0.0);
/// assert!(compare(&maps, &cpu_reference(image.as_slice().unwrap(), 41, &Params::new(10, 20))?).passed);
/// # Ok(())
/// # }
/// ```
pub fn background_array(gpu: &Gpu, image: ArrayView2<f32>, params: &Params) -> GpuResult<Maps> {
    let dim = image.dim();
    let grid_shape = params.layout(dim.0, dim.1)?.grid_shape();
    let device_image = DeviceArray::from_array(gpu, image)?;
    let (mut level, mut sigma, mut ratio) =
        (DeviceArray::zeros(gpu, dim)?, DeviceArray::zeros(gpu, dim)?, DeviceArray::zeros(gpu, dim)?);
    let grid = background(gpu, &device_image, params, &mut level, &mut sigma, Some(&mut ratio))?;
    Ok(Maps {
        grid_shape,
        grid: grid.to_array(gpu)?.to_vec(),
        background: level.to_array(gpu)?,
        noise: sigma.to_array(gpu)?,
        snr: ratio.to_array(gpu)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::random_in;

    fn layout(height: usize, width: usize, params: &Params) -> Layout {
        params.layout(height, width).unwrap()
    }

    /// The least noise within `reach` of point (`r`, `c`), over the whole window at once.
    fn least_in_window(grid: &[f64], shape: (usize, usize), reach: (usize, usize), (r, c): (usize, usize)) -> f64 {
        let (rows, columns) = shape;
        let window = (r.saturating_sub(reach.0)..=r.saturating_add(reach.0).min(rows - 1))
            .flat_map(|r| (c.saturating_sub(reach.1)..=c.saturating_add(reach.1).min(columns - 1)).map(move |c| (r, c)));
        window.map(|(r, c)| grid[(r * columns + c) * FIELDS + NOISE]).fold(f64::NAN, f64::min)
    }

    /// `least_noise` takes a row and a column at a time; each point here takes its whole window,
    /// on grids from a point to wider than the window, a point in five NaN and a row and a
    /// column all NaN, reaches from none to past the grid.
    #[test]
    fn least_noise_is_the_least_within_reach_of_each_point() {
        for (seed, (shape, reach)) in
            [((1, 1), (6, 6)), ((7, 5), (0, 2)), ((23, 31), (6, 6)), ((40, 3), (usize::MAX, 1))].into_iter().enumerate()
        {
            let (rows, columns) = shape;
            let len = rows * columns * FIELDS;
            let (values, draws) = (random_in(len, seed as u64, 0.0, 1.0), random_in(len, seed as u64 ^ 0x5EED, 0u32, 5));
            let grid: Vec<f64> = (0..len)
                .map(|i| {
                    let point = i / FIELDS;
                    let blank = draws[i] == 0 || point / columns == rows / 2 || point % columns == columns / 2;
                    if blank && i % FIELDS == NOISE { f64::NAN } else { values[i] }
                })
                .collect();
            let sky = least_noise(&grid, shape, reach);
            for (r, c) in (0..rows).flat_map(|r| (0..columns).map(move |c| (r, c))) {
                let at = (r * columns + c) * FIELDS;
                let least = least_in_window(&grid, shape, reach, (r, c));
                assert_eq!(sky[at + NOISE].to_bits(), least.to_bits(), "{shape:?} {reach:?}, point ({r}, {c})");
                assert_eq!(sky[at + BACKGROUND].to_bits(), grid[at + BACKGROUND].to_bits());
            }
        }
    }

    #[test]
    fn grid_points_sit_on_steps_and_the_last_pixel() {
        let l = layout(33, 34, &Params::new(16, 96));
        assert_eq!(l.grid_shape(), (3, 4));
        let columns: Vec<u32> = (0..4).map(|i| grid_coordinate(i, 34, l.step_x, 4)).collect();
        assert_eq!(columns, [0, 16, 32, 33]);
        let rows: Vec<u32> = (0..3).map(|i| grid_coordinate(i, 33, l.step_y, 3)).collect();
        assert_eq!(rows, [0, 16, 32]);
        // One pixel along an axis: one point; a step past the image: its two ends.
        assert_eq!(layout(1, 9, &Params::new(4, 4)).grid_shape(), (1, 3));
        assert_eq!(layout(5, 9, &Params::new(100, 4)).grid_shape(), (2, 2));
    }

    #[test]
    fn boxes_are_cut_to_the_image() {
        assert_eq!(box_range(16, 34, 96), (0, 34));
        assert_eq!(box_range(16, 100, 8), (12, 20));
        // An odd box: ⌊7/2⌋ = 3 before the centre, 4 from it on.
        assert_eq!(box_range(10, 100, 7), (7, 14));
        assert_eq!(box_range(0, 1, u32::MAX), (0, 1));
    }

    #[test]
    fn cells_and_weights_interpolate_between_points() {
        // Points at 0, 16, 32, 33 along 34 pixels.
        assert_eq!(cell(0, 34, 16, 4), (0, 0.0));
        assert_eq!(cell(8, 34, 16, 4), (0, 0.5));
        assert_eq!(cell(16, 34, 16, 4), (1, 0.0));
        assert_eq!(cell(32, 34, 16, 4), (2, 0.0));
        assert_eq!(cell(33, 34, 16, 4), (2, 1.0));
        assert_eq!((next(2, 4), next(3, 4)), (3, 3));
        assert_eq!((cell(0, 1, 16, 1), next(0, 1)), ((0, 0.0), 0));
        let w = weights(0.25, 0.5);
        assert_eq!(w, [0.375, 0.375, 0.125, 0.125]);
        assert_eq!(interpolate([1.0, 3.0, 5.0, 7.0], w), 0.375 + 1.125 + 0.625 + 0.875);
        // NaN corners are left out, and so are corners of zero weight.
        assert_eq!(interpolate([1.0, f64::NAN, 5.0, 7.0], w), (0.375 + 0.625 + 0.875) / 0.625);
        assert_eq!(interpolate([2.0, f64::NAN, f64::NAN, f64::NAN], weights(0.0, 0.0)), 2.0);
        assert!(interpolate([f64::NAN, 1.0, 1.0, 1.0], weights(0.0, 0.0)).is_nan());
    }

    #[test]
    fn clipping_drops_outliers_and_stops_as_bane_does() {
        // 1..=9 and 100: median 5.5 and σ 28.6 put 100 outside 5.5 ± 3σ; round 2 keeps all
        // of 1..=9 (median 5, σ 2.58) and stops.
        let values = [9.0, 1.0, 100.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let (middle, sigma) = clipped(&values, 3.0, 10);
        assert_eq!(middle, 5.0);
        assert!((sigma - (20.0f64 / 3.0).sqrt()).abs() < 1e-15, "{sigma}");
        // No rounds: the statistics of all of them.
        assert_eq!(clipped(&values, 3.0, 0).0, 5.5);
        // Equal values: σ = 0 keeps none, so the first statistics stand.
        assert_eq!(clipped(&[2.5; 7], 3.0, 10), (2.5, 0.0));
        let (middle, sigma) = clipped(&[], 3.0, 10);
        assert!(middle.is_nan() && sigma.is_nan());
        // NaN and ±∞ are never kept: the finite values' statistics.
        let blanked = [f32::NAN, 9.0, 1.0, f32::INFINITY, 100.0, 2.0, 3.0, 4.0, f32::NEG_INFINITY, 5.0, 6.0, 7.0, 8.0];
        assert_eq!(clipped(&blanked, 3.0, 10).0, 5.0);
        let (middle, sigma) = clipped(&[f32::NAN, f32::INFINITY], 3.0, 10);
        assert!(middle.is_nan() && sigma.is_nan());
    }

    /// BANE's clipping as the kernel did it before its histograms: the finite values sorted,
    /// each round a run of them inside the window, plain sums.
    fn sorted_clip(values: &[f32], kappa: f64, rounds: u32) -> (f64, f64) {
        let mut v: Vec<f64> = values.iter().filter(|v| v.is_finite()).map(|&v| v as f64).collect();
        v.sort_by(f64::total_cmp);
        let statistics = |run: &[f64]| {
            let mean = run.iter().sum::<f64>() / run.len() as f64;
            let squares: f64 = run.iter().map(|x| (x - mean) * (x - mean)).sum();
            ((run[(run.len() - 1) / 2] + run[run.len() / 2]) / 2.0, (squares / run.len() as f64).sqrt())
        };
        let (mut a, mut b) = (0, v.len());
        let (mut middle, mut sigma) = statistics(&v);
        for _ in 0..rounds {
            let (low, high) = (middle - kappa * sigma, middle + kappa * sigma);
            let first = a + v[a..b].partition_point(|&x| x <= low);
            let end = first + v[first..b].partition_point(|&x| x < high);
            if end == first || end - first == b - a {
                break;
            }
            (a, b) = (first, end);
            (middle, sigma) = statistics(&v[a..b]);
        }
        (middle, sigma)
    }

    #[test]
    fn clipping_by_windows_equals_clipping_sorted_runs() {
        // Boxes of noise with a tail of sources, ties (values on a coarse lattice), zeros of
        // both signs and blanked pixels: the median is the same value, the σ the same but for
        // the order of the sums.
        let mut seed = 0x5EED_u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for case in 0..200 {
            let n = 1 + (next() * 3000.0) as usize;
            let values: Vec<f32> = (0..n)
                .map(|_| {
                    let u = next();
                    let noise = (next() - 0.5) * 2.0 + (next() - 0.5) * 2.0;
                    match case % 4 {
                        0 => noise as f32,
                        1 => ((noise * 4.0).round() / 4.0) as f32,
                        2 if u < 0.05 => f32::NAN,
                        2 if u < 0.1 => 50.0 * u as f32,
                        3 if u < 0.2 => if u < 0.1 { -0.0 } else { 0.0 },
                        _ => noise as f32 + if u > 0.97 { 20.0 } else { 0.0 },
                    }
                })
                .collect();
            let values: Vec<f32> = values.into_iter().map(|v| if v == 0.0 { 0.0 } else { v }).collect();
            let (middle, sigma) = clipped(&values, 3.0, 10);
            let (want_middle, want_sigma) = sorted_clip(&values, 3.0, 10);
            assert_eq!(middle, want_middle, "case {case}, {n} values");
            assert!((sigma - want_sigma).abs() <= 1e-12 * want_sigma, "case {case}: σ {sigma}, want {want_sigma}");
        }
    }

    #[test]
    fn sums_follow_the_blocks_order() {
        // 2^53 + 1 rounds back to 2^53 (ties to even), so the order of additions shows: one
        // after another, 2^53 + 1 + 0 + 1 loses both ones; the block's tree adds lanes 1 and 3
        // (two apart) first, and 2^53 + 2 is exact.
        let values = [9_007_199_254_740_992.0f64, 1.0, 0.0, 1.0];
        assert_eq!(values.iter().sum::<f64>(), 9_007_199_254_740_992.0);
        assert_eq!(block_sum(|t| values.get(t).copied().unwrap_or(0.0)), 9_007_199_254_740_994.0);
    }

    #[test]
    fn parameters_are_checked() {
        let refused = |height, width, params: Params| params.layout(height, width).unwrap_err().to_string();
        assert!(refused(0, 5, Params::default()).contains("a 0×5 image"));
        assert!(refused(5, 5, Params::new(0, 4)).contains("a grid step of 0×0 pixels"));
        assert!(refused(5, 5, Params::new(2, 0)).contains("a box of 0×0 pixels"));
        let kappa = Params { kappa: f64::NAN, ..Params::default() };
        assert!(refused(5, 5, kappa).contains("κ = NaN"));
        let message = refused(1000, 1000, Params::new(16, 256));
        assert!(message.contains("a box of 256×256 pixels holds 65536 pixels"), "{message}");
        // A box bigger than the image is cut to it.
        assert_eq!(layout(100, 300, &Params::new(16, 10_000)).box_x, 600);
        assert!(layout(1, 40960, &Params::new(16, 1 << 40)).box_y == 2);
        let beam = Beam { major: 0.0, minor: 1.0, pixel_x: 1.0, pixel_y: 1.0 };
        assert!(Params::from_beam(&beam).is_err());
    }

    #[test]
    fn compare_holds_background_exact_and_noise_to_an_ulp() {
        let pixels: Vec<f32> = (0..15 * 17).map(|i| ((i * 37) % 23) as f32 * 0.25 - 1.0).collect();
        let cpu = cpu_reference(&pixels, 17, &Params::new(4, 9)).unwrap();
        assert!(compare(&cpu, &cpu).passed);
        let mut moved = cpu.clone();
        moved.background[[3, 3]] = f32::from_bits(moved.background[[3, 3]].to_bits() + 1);
        assert!(!compare(&moved, &cpu).passed, "a background an ulp off fails");
        let mut moved = cpu.clone();
        moved.noise[[3, 3]] = f32::from_bits(moved.noise[[3, 3]].to_bits() + 1);
        assert!(compare(&moved, &cpu).passed, "a noise an ulp off passes");
        moved.noise[[3, 3]] = f32::from_bits(moved.noise[[3, 3]].to_bits() + 1);
        assert!(!compare(&moved, &cpu).passed, "two ulps fail");
        let mut moved = cpu.clone();
        moved.snr[[0, 0]] = f32::NAN;
        assert!(!compare(&moved, &cpu).passed, "a NaN where the CPU has a number fails");
    }
}
