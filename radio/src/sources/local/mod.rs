//! Finding the sources as Aegean and BANE find them, the `local` mode of `host sources`:
//!
//! 1. **Background and noise** (`cuda_kernels::background`): the σ-clipped median and standard
//!    deviation in a box around each point of a coarse grid, interpolated to every pixel, and
//!    the S/N image `(pixel − background) / noise`. The grid and the box come from the beam
//!    (BMAJ, BMIN and the pixel's size in the header, or `--beam`), else BANE's defaults.
//!    By default ([`Passes::Two`]) the maps are made twice, as SExtractor, photutils and PyBDSF
//!    make them: extended emission wider than the box (the bright core) raises the first pass's
//!    background and noise so much that it is never detected, and a ring drags the background
//!    up along its ridge. So the second pass leaves out the pixels that stand above the sky
//!    ([`MASK_LEVEL`] against the first pass's background, and its noise taken as the least within
//!    [`MASK_REACH`] boxes, so that the noise the core inflates does not hide the core), fills
//!    the grid points whose boxes lost more than [`MASKED_AT_MOST`] of their pixels from their
//!    neighbours ([`background::fill`]), and interpolates that grid over the whole image.
//! 2. **Islands** (`cuda_kernels::label`, `cuda_kernels::measure`): the connected pixels whose
//!    S/N is above the flood level (3) that hold at least one pixel above the seed level (5).
//!    Measured on the S/N image, an island's peak is its highest S/N; measured on the image
//!    less its background, its pixels' sum and centroid.
//! 3. **Fits** (`cuda_kernels::fit`): elliptical Gaussians, one per summit, fitted to the image
//!    less its background, each pixel weighted by its noise, the summits above the seed level.
//!
//! The steps run on the GPU ([`gpu::Pipeline`]) or on the CPU ([`find`]), where each family's
//! `cpu_reference` is the definition the GPU is checked against ([`compare`]). [`rows`] makes
//! the catalog of the fits, leaving out the components the fit pushed down to its floor
//! ([`FLOOR_MARGIN`]); [`residual`] is the image less the fitted model.

pub mod gpu;

use super::catalog::{self, Island as IslandMeasures, Measured, Row, Shape};
use super::{Agreement, Connectivity, Stage};
use crate::fits::Header;
use crate::io::Image;
use cuda_kernels::background::{self, Beam, Maps, Params, MAX_BOX, STEPS_PER_BOX};
use cuda_kernels::check::{grouped, Check};
use cuda_kernels::data::timed;
use cuda_kernels::fit::{self, FitSettings, Flags, IslandFit, Noise};
use cuda_kernels::gpu::{require, GpuResult};
use cuda_kernels::measure::{self, Source};
use cuda_kernels::{label, Named};
use interface::background::{BACKGROUND, FIELDS, NOISE};
use ndarray::Array2;
use rayon::prelude::*;
use serde::Serialize;
use std::f64::consts::TAU;
use std::ops::Range;

pub use interface::fit::FWHM;
use interface::fit::PEAK_LOW;
/// Islands hold a pixel above this S/N (Aegean's `--seedclip`)…
pub const SEED: f64 = 5.0;
/// …and grow to every connected pixel above this one: PyBDSF's `thresh_isl` (Aegean's
/// `--floodclip` is 4). A faint resolved source, or the flank of extended emission, breaks at 4
/// into several islands of a few pixels, each a false detection beside the one that matches;
/// at 3 they are one island (`docs/performance.md` has the scores).
pub const FLOOD: f64 = 3.0;

/// A fitted component whose peak ended within this fraction above the fit's floor is left out
/// of the catalog ([`rows`]). The fit bounds each peak below at [`PEAK_LOW`] times the seed
/// level at its summit (Aegean's bound), and a component that ends there is one the data would
/// take lower still: a noise bump on a resolved source, or a fragment the fit had no use for,
/// below the level that seeds an island. The margin covers the noise between the summit, where
/// the floor was set, and the fitted centre, where the row's noise is read (it changes by
/// less than 0.3% over the few pixels between them on `host sky`'s primary-beam noise).
pub const FLOOR_MARGIN: f64 = 0.01;

/// The beam assumed where the header has none and none is given: σ of 1 pixel (FWHM 2.35), the
/// narrowest a sampled image holds. The fit bounds each axis below at 0.8 of the beam's, so a
/// wider assumed beam would keep narrower sources from being fitted.
pub const DEFAULT_BEAM_FWHM: f64 = FWHM;

/// The second background pass leaves out the pixels whose S/N is above this level (Aegean's
/// flood level) against the sky's noise ([`MASK_REACH`]). It is not the flood level: where that
/// noise is the least of several boxes it is below the pixel's own, and a lower level leaves
/// out the sky's own noise peaks: at 3σ the noise map of `host sky --survey` falls below the
/// true σ towards the corners, at 4σ it stays at the clipping's own bias everywhere.
pub const MASK_LEVEL: f64 = 4.0;

/// The second background pass leaves out the pixels whose S/N is above [`MASK_LEVEL`] against
/// the sky's noise, which at a grid point is the least noise of the first pass within this many
/// boxes of it along each axis: a box of sky beside the extended emission, whose noise that
/// emission does not inflate. One box is too near on a grid made for the beam: at 4096² the
/// core's σ is 43 pixels, its noise is inflated over more than its box of 60 (a beam of 2.35
/// pixels), and the core was never detected. Farther would reach where a primary-beam-corrected
/// noise is lower, and leave out noise peaks of the sky: within two boxes it is at most 17%
/// lower at the corners of a 4096² `host sky` image without a beam (boxes of 96; 31% at 2048²),
/// and at 17% a 3.3σ peak is left out 1 time in 2000.
pub const MASK_REACH: usize = 2;

/// A grid point of the second pass keeps its own statistics only where the mask left out at
/// most this share of its box's finite pixels (SExtractor's rule for a background mesh); the
/// others are [`background::fill`]ed from their neighbours: what is left of their boxes is too
/// little, and its upper tail is cut by the mask.
pub const MASKED_AT_MOST: f64 = 0.5;

/// How many times the background and noise maps are made (`--background-passes`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Passes {
    /// Once, over every pixel: BANE's maps.
    One,
    /// Again with the pixels above the sky left out (see the module's notes).
    #[default]
    Two,
}

cuda_kernels::named!(Passes { One => "1", Two => "2" });

/// How the sources are found: the lesson's global κσ clip and threshold, or the local
/// background, flooded islands and Gaussian fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Local,
    Lesson,
}

cuda_kernels::named!(Mode { Local => "local", Lesson => "lesson" });

impl Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        by_name(self, serializer)
    }
}

/// A named choice (`Mode`, `Passes`) as the command line names it.
fn by_name<T: Named, S: serde::Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(value.name())
}

/// The beam, as the fit and the integrated flux take it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BeamWidth {
    /// Its FWHM in pixels (the geometric mean of its axes).
    pub fwhm: f64,
    /// Whether it is the image's (the header's, or given): integrated fluxes are then in Jy for
    /// an image in Jy/beam. Otherwise [`DEFAULT_BEAM_FWHM`] is assumed for the fit alone, and
    /// an integrated flux is the image's unit times pixels (the sum of the source's pixels).
    pub known: bool,
}

impl BeamWidth {
    /// The beam's σ in pixels.
    pub fn sigma(&self) -> f64 {
        self.fwhm / FWHM
    }

    /// The beam's area in pixels, 2π σ²: what a flux in Jy is multiplied by to make a sum of
    /// pixels in Jy/beam; 1 for a beam not known, whose fluxes already are such sums.
    pub fn area(&self) -> f64 {
        if self.known {
            TAU * self.sigma() * self.sigma()
        } else {
            1.0
        }
    }
}

/// The beam in the header (`BMAJ`, `BMIN`, and `CDELT1`/`CDELT2` or `CD1_1`/`CD2_2`), as BANE
/// reads it: `None` without the axes or the pixel's size; an error for a keyword that is not a
/// number.
pub fn beam_of(header: &Header) -> Result<Option<Beam>, String> {
    let (Some(major), Some(minor)) = (header.real("BMAJ")?, header.real("BMIN")?) else { return Ok(None) };
    let pixel = match (header.real("CDELT1")?, header.real("CDELT2")?, header.real("CD1_1")?, header.real("CD2_2")?) {
        (Some(x), Some(y), _, _) | (_, _, Some(x), Some(y)) => (x, y),
        _ => return Ok(None),
    };
    Ok(Some(Beam { major, minor, pixel_x: pixel.0, pixel_y: pixel.1 }))
}

/// The beam: `given` (FWHM in pixels, `--beam`) over the header's `beam`, else the default.
pub fn beam_width(beam: Option<&Beam>, given: Option<f64>) -> GpuResult<BeamWidth> {
    if let Some(fwhm) = given {
        require(fwhm.is_finite() && fwhm > 0.0, || format!("--beam must be a positive number of pixels (got {fwhm})"))?;
        return Ok(BeamWidth { fwhm, known: true });
    }
    match beam {
        Some(beam) => Ok(BeamWidth { fwhm: beam.pixels()?, known: true }),
        None => Ok(BeamWidth { fwhm: DEFAULT_BEAM_FWHM, known: false }),
    }
}

/// The background's grid: `step` and `box_size` where given, else BANE's from a known beam
/// (4 beams a step, 6 steps a box) or its defaults (16 and 96); `kappa` clips. A box derived
/// from a wide beam is cut to the largest square the kernel holds ([`MAX_BOX`] pixels).
pub fn grid(beam: &BeamWidth, step: Option<usize>, box_size: Option<usize>, kappa: f64) -> GpuResult<Params> {
    let from_beam = |beam: &BeamWidth| {
        let width = Beam { major: beam.fwhm, minor: beam.fwhm, pixel_x: 1.0, pixel_y: 1.0 };
        Params::from_beam(&width).map(|p| p.step.0)
    };
    let step = match (step, beam.known) {
        (Some(step), _) => step,
        (None, true) => from_beam(beam)?,
        (None, false) => Params::default().step.0,
    };
    let widest = (MAX_BOX as f64).sqrt() as usize;
    let box_size = box_size.unwrap_or((STEPS_PER_BOX * step).min(widest));
    Ok(Params { kappa, ..Params::new(step, box_size) })
}

/// What the local mode is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Settings {
    /// An island holds a pixel whose S/N is above this…
    pub seed: f64,
    /// …and every connected pixel above this.
    pub flood: f64,
    #[serde(serialize_with = "super::neighbours")]
    pub connectivity: Connectivity,
    #[serde(serialize_with = "params")]
    pub params: Params,
    pub beam: BeamWidth,
    /// How many times the maps are made.
    #[serde(serialize_with = "by_name")]
    pub passes: Passes,
    /// Islands of fewer pixels are left out (PyBDSF's `minpix_isl`; [`min_pixels`]).
    pub min_pixels: usize,
}

/// PyBDSF's least island (`minpix_isl`): a third of the beam's area in pixels, rounded up. Of
/// a point source above the seed, more pixels than that lie above the flood; a lone noise pixel
/// above the seed makes an island of one.
pub fn min_pixels(beam: &BeamWidth) -> usize {
    let sigma = beam.sigma();
    (TAU * sigma * sigma / 3.0).ceil().max(1.0) as usize
}

fn params<S: serde::Serializer>(params: &Params, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut s = serializer.serialize_struct("Params", 4)?;
    s.serialize_field("step", &[params.step.0, params.step.1])?;
    s.serialize_field("box", &[params.box_size.0, params.box_size.1])?;
    s.serialize_field("kappa", &params.kappa)?;
    s.serialize_field("rounds", &params.rounds)?;
    s.end()
}

impl Settings {
    /// An error unless the levels are positive numbers and the flood is at most the seed
    /// (the grid's parameters are checked by the background family).
    pub fn check(&self) -> GpuResult<()> {
        check_levels(self.seed, self.flood)
    }

    /// What the fit is given: the seed level, and the beam every component starts from.
    pub fn fit(&self) -> FitSettings {
        FitSettings { seed: self.seed, beam_sigma: self.beam.sigma() }
    }

    /// The S/N (fitted peak over the noise at its centre) below which a fitted component is at
    /// the fit's floor and left out of the catalog ([`FLOOR_MARGIN`]).
    pub fn floor(&self) -> f64 {
        PEAK_LOW * self.seed * (1.0 + FLOOR_MARGIN)
    }
}

/// An error unless the seed and flood levels are positive S/N and the flood is at most the seed.
pub fn check_levels(seed: f64, flood: f64) -> GpuResult<()> {
    for (name, level) in [("--seed-snr", seed), ("--flood", flood)] {
        require(level.is_finite() && level > 0.0, || format!("{name} must be a positive S/N (got {level})"))?;
    }
    require(flood <= seed, || {
        format!("--flood ({flood}) must not be above --seed-snr ({seed}): islands grow down from their seeds")
    })
}

/// What the local mode found in an image.
#[derive(Debug, Clone)]
pub struct Found {
    /// NaN pixels, left out of everything.
    pub nan_pixels: usize,
    /// The background's grid: median and σ per point, as [`Maps::grid`] (the second pass's,
    /// filled, with two passes).
    pub grid: Vec<f64>,
    /// Finite pixels the second background pass left out; `None` with one pass.
    pub masked_pixels: Option<usize>,
    /// The background, noise and S/N maps, where they are on the host: always on the CPU, on
    /// the GPU when copied back.
    pub maps: Option<Maps>,
    /// Pixels above the flood level, and the islands they make (seeded or not).
    pub flooded_pixels: usize,
    pub flooded: usize,
    /// The seeded islands measured on the S/N image: `peak` is the highest S/N.
    pub islands: Vec<Source>,
    /// The same islands measured on the image less its background.
    pub measures: Vec<Source>,
    /// Their fits, one per island.
    pub fits: Vec<IslandFit>,
    /// Each pixel's island (every island above the flood), row by row: empty where it stayed on
    /// the GPU.
    pub labels: Vec<u32>,
    pub stages: Vec<Stage>,
}

impl Found {
    /// The stages' time together, wall clock.
    pub fn total_ms(&self) -> f64 {
        self.stages.iter().map(|s| s.ms).sum()
    }

    /// The least, median and largest noise σ of the grid's points (NaN points left out).
    pub fn noise_range(&self) -> Option<(f64, f64, f64)> {
        let mut sigmas: Vec<f64> =
            self.grid.iter().skip(NOISE).step_by(FIELDS).copied().filter(|s| s.is_finite()).collect();
        sigmas.sort_by(f64::total_cmp);
        let n = sigmas.len();
        (n > 0).then(|| (sigmas[0], sigmas[n / 2], sigmas[n - 1]))
    }

    /// The median background and noise of the grid's points (NaN points left out): the
    /// image's typical levels, for a picture's grey scale or a truth without a noise column.
    pub fn medians(&self) -> Option<(f64, f64)> {
        let median = |field: usize| {
            let mut values: Vec<f64> =
                self.grid.iter().skip(field).step_by(FIELDS).copied().filter(|v| v.is_finite()).collect();
            values.sort_by(f64::total_cmp);
            values.get(values.len() / 2).copied()
        };
        Some((median(BACKGROUND)?, median(NOISE)?))
    }

    /// Fits by what their flags say: (flag's name, islands), for the flags raised.
    pub fn flag_counts(&self) -> Vec<(&'static str, usize)> {
        Flags::NAMED
            .iter()
            .map(|&(flag, name)| (name, self.fits.iter().filter(|f| f.flags.contains(flag)).count()))
            .filter(|&(_, count)| count > 0)
            .collect()
    }
}

/// The count of NaN pixels of `image`, or an error for an infinite pixel or an image with no
/// finite one.
fn nan_pixels(image: &Image) -> GpuResult<usize> {
    let (nan, infinite) = super::blanks(image);
    if let Some(i) = infinite {
        return Err(super::infinite_at(image, i));
    }
    if nan == image.pixels.len() {
        return Err(super::all_blanked(nan));
    }
    Ok(nan)
}

/// The seeded islands of `snr_islands` (measured on the S/N image): those whose highest S/N
/// is above the seed level, of at least the least pixels, by index.
fn seeded(snr_islands: &[Source], settings: &Settings) -> Vec<usize> {
    let kept = |s: &Source| s.peak > settings.seed && s.pixels >= settings.min_pixels;
    (0..snr_islands.len()).filter(|&i| kept(&snr_islands[i])).collect()
}

/// The measures of the islands `keep` names (indices into `all`, as [`seeded`] gives them).
fn picked(all: &[Source], keep: &[usize]) -> Vec<Source> {
    keep.iter().map(|&i| all[i].clone()).collect()
}

/// `pixels` less `background`, in f32 as the GPU subtracts it (`saxpy` with a = −1: one rounding).
fn less_background(pixels: &[f32], background: &[f32]) -> Vec<f32> {
    pixels.par_iter().zip(background).map(|(p, b)| p - b).collect()
}

/// The grid points of `params` on a `width`-wide image of `pixels`, each axis's.
fn grid_shape(pixels: &[f32], width: usize, params: &Params) -> GpuResult<(usize, usize)> {
    Ok(background::Mapper::for_shape((pixels.len() / width.max(1), width), params)?.grid_shape())
}

/// Grid points along the rows and the columns on either side of a point that the second
/// pass's sky takes the least noise of: [`MASK_REACH`] boxes.
///
/// ```
/// use cuda_kernels::background::Params;
///
/// // A step of 10 pixels and boxes of 60: twelve points each way.
/// assert_eq!(radio::sources::local::mask_reach(&Params::new(10, 60)), (12, 12));
/// ```
pub fn mask_reach(params: &Params) -> (usize, usize) {
    let reach = |size: usize, step: usize| (MASK_REACH * size).div_ceil(step.max(1));
    (reach(params.box_size.0, params.step.0), reach(params.box_size.1, params.step.1))
}

/// Turns the S/N image `snr` into `pixels` with those whose S/N is above `level` made NaN, in
/// place (the GPU path does it in page-locked memory the S/N image came back into); returns how
/// many finite pixels were made NaN.
fn mask(pixels: &[f32], snr: &mut [f32], level: f64) -> usize {
    snr.par_iter_mut()
        .zip(pixels)
        .map(|(value, &pixel)| {
            let above = pixel.is_finite() && f64::from(*value) > level;
            *value = if above { f32::NAN } else { pixel };
            usize::from(above)
        })
        .sum()
}

/// How many finite pixels the box of each grid point of `params` holds on `pixels` (`width` a
/// row; the points row-major), from each row's counts within each grid column's box: what
/// `background_grid` counts on the GPU.
fn finite_counts(pixels: &[f32], width: usize, params: &Params) -> GpuResult<Vec<u32>> {
    let mapper = background::Mapper::for_shape((pixels.len() / width.max(1), width), params)?;
    let (rows, columns) = mapper.grid_shape();
    let spans: Vec<Range<usize>> = (0..columns).map(|c| mapper.box_of((0, c)).1).collect();
    let per_row: Vec<u32> = pixels
        .par_chunks(width)
        .flat_map_iter(|row| {
            let mut prefix = vec![0u32; width + 1];
            for x in 0..width {
                prefix[x + 1] = prefix[x] + u32::from(row[x].is_finite());
            }
            spans.iter().map(move |s| prefix[s.end] - prefix[s.start]).collect::<Vec<_>>()
        })
        .collect();
    Ok((0..rows * columns)
        .into_par_iter()
        .map(|p| mapper.box_of((p / columns, 0)).0.map(|y| per_row[y * columns + p % columns]).sum())
        .collect())
}

/// The maps of `pixels` from `grid`, on the CPU, every pixel as the interpolation kernel makes it.
fn interpolated(pixels: &[f32], width: usize, params: &Params, grid: &[f64]) -> GpuResult<Vec<[f32; 3]>> {
    (0..pixels.len()).into_par_iter().map(|i| background::cpu_pixel(pixels, width, params, grid, i)).collect()
}

/// The second background pass on the CPU from the first's `maps`: the pixels above the sky
/// masked (`background::least_noise`, [`mask`]), the grid of what is left, its crowded points
/// dropped and [`background::fill`]ed, interpolated over every pixel. Returns the maps and how
/// many pixels were left out.
fn second_pass(pixels: &[f32], width: usize, settings: &Settings, maps: &Maps) -> GpuResult<(Maps, usize)> {
    let params = &settings.params;
    let shape = grid_shape(pixels, width, params)?;
    let sky = background::least_noise(&maps.grid, shape, mask_reach(params));
    let mut masked: Vec<f32> = interpolated(pixels, width, params, &sky)?.into_iter().map(|m| m[2]).collect();
    let count = mask(pixels, &mut masked, MASK_LEVEL);
    let points: GpuResult<Vec<[f64; 2]>> = (0..shape.0 * shape.1)
        .into_par_iter()
        .map(|p| background::cpu_point(&masked, width, params, (p / shape.1, p % shape.1)))
        .collect();
    let mut grid: Vec<f64> = points?.into_iter().flatten().collect();
    let (before, after) = (finite_counts(pixels, width, params)?, finite_counts(&masked, width, params)?);
    background::drop_crowded(&mut grid, &before, &after, MASKED_AT_MOST);
    background::fill(&mut grid, &maps.grid, shape.1);
    let values = interpolated(pixels, width, params, &grid)?;
    let height = pixels.len() / width;
    let map = |k: usize| {
        Array2::from_shape_vec((height, width), values.iter().map(|m| m[k]).collect()).expect("a value per pixel")
    };
    Ok((Maps { grid_shape: shape, background: map(0), noise: map(1), snr: map(2), grid }, count))
}

/// Runs the three steps on `image` on the CPU, each family's `cpu_reference` in turn, the
/// background made as often as `settings.passes` says.
pub fn find(image: &Image, settings: &Settings) -> GpuResult<Found> {
    settings.check()?;
    super::check_shape(image)?;
    let (pixels, width) = (&image.pixels[..], image.width);
    let mut stages = Vec::new();
    let (nan, ms) = timed(|| nan_pixels(image));
    let nan_pixels = nan?;
    stages.push(Stage { name: "NaN count", ms });

    let (maps, ms) = timed(|| background::cpu_reference(pixels, width, &settings.params));
    let mut maps = maps?;
    stages.push(Stage { name: "background and noise (κσ clipping)", ms });
    let mut masked_pixels = None;
    if settings.passes == Passes::Two {
        let (second, ms) = timed(|| second_pass(pixels, width, settings, &maps));
        let (second, count) = second?;
        (maps, masked_pixels) = (second, Some(count));
        stages.push(Stage { name: "background pass 2 (sources masked)", ms });
    }

    let snr = maps.snr.as_slice().expect("maps are row-major");
    let ((labels, count, flooded_pixels), ms) = timed(|| {
        let mask = label::detect(snr, settings.flood);
        let flooded_pixels = mask.par_iter().filter(|&&set| set).count();
        let (labels, count) = label::cpu_reference(&mask, width, settings.connectivity);
        (labels, count, flooded_pixels)
    });
    stages.push(Stage { name: "flood labeling", ms });

    let background = maps.background.as_slice().expect("maps are row-major");
    let ((islands, measures, data), ms) = timed(|| {
        let on_snr = measure::cpu_reference(snr, width, &labels, count);
        let keep = seeded(&on_snr, settings);
        let data = less_background(pixels, background);
        let on_data = measure::cpu_reference(&data, width, &labels, count);
        (picked(&on_snr, &keep), picked(&on_data, &keep), data)
    });
    stages.push(Stage { name: "island measures", ms });

    let noise = maps.noise.as_slice().expect("maps are row-major");
    let boxes: Vec<fit::Island> = islands.iter().map(fit::Island::from).collect();
    let (fits, ms) = timed(|| fit::cpu_reference(&data, width, &labels, &boxes, Noise::Map(noise), &settings.fit()));
    let fits = fits?;
    stages.push(Stage { name: "Gaussian fits", ms });

    Ok(Found {
        nan_pixels,
        grid: maps.grid.clone(),
        masked_pixels,
        maps: Some(maps),
        flooded_pixels,
        flooded: count,
        islands,
        measures,
        fits,
        labels,
        stages,
    })
}

/// The noise σ at the pixel nearest (`x`, `y`), as the noise map has it; `None` outside the
/// image or where the pixel is blanked.
fn noise_at(image: &Image, params: &Params, grid: &[f64], x: f64, y: f64) -> Option<f64> {
    let (column, row) = (x.round(), y.round());
    let inside = column >= 0.0 && row >= 0.0 && (column as usize) < image.width && (row as usize) < image.height;
    if !inside {
        return None;
    }
    let i = row as usize * image.width + column as usize;
    let noise = background::cpu_pixel(&image.pixels, image.width, params, grid, i).ok()?[1];
    noise.is_finite().then_some(f64::from(noise))
}

/// `value ± error`, the error `None` unless it is a finite number.
fn measured(value: f64, error: f64) -> Measured {
    Measured { value, error: error.is_finite().then_some(error) }
}

/// The catalog's rows of what `found` found in `image` with `settings`: a row per fitted
/// component, its position, peak, integrated flux (through the beam where it is known, see
/// [`BeamWidth`]) and shape, with their errors, the noise at its centre, its island's measures
/// and its fit's flags ([`catalog::fit_flags`]). An island whose fit gave no component keeps a row
/// at its centroid, with its brightest pixel as the peak; a component only started (too few
/// pixels to fit) has its summit's place and value, with no shape or errors. Nothing is made up:
/// what a fit did not measure is absent. A fitted component whose peak ended at the fit's floor
/// ([`FLOOR_MARGIN`]) has no row. Returns the rows, and how many components were so left out.
pub fn rows(image: &Image, settings: &Settings, found: &Found) -> (Vec<Row>, usize) {
    let area = settings.beam.area();
    let floor = settings.floor();
    let noise = |x: f64, y: f64| noise_at(image, &settings.params, &found.grid, x, y);
    let islands: Vec<(Vec<Row>, usize)> = found
        .fits
        .par_iter()
        .zip(&found.measures)
        .map(|(fit, island)| {
            let measures = IslandMeasures {
                pixels: island.pixels,
                sum: island.flux,
                y_min: island.y_min,
                y_max: island.y_max,
                x_min: island.x_min,
                x_max: island.x_max,
            };
            let flags = catalog::fit_flags(fit.flags);
            if fit.components.is_empty() {
                let row = Row {
                    island: fit.label,
                    component: 0,
                    x: Measured::bare(island.x),
                    y: Measured::bare(island.y),
                    peak: Some(Measured::bare(island.peak)),
                    integrated: None,
                    rms: noise(island.x, island.y),
                    shape: None,
                    measures: Some(measures),
                    flags,
                };
                return (vec![row], 0);
            }
            let fitted = fit.iterations > 0;
            let mut floored = 0;
            let rows = fit
                .components
                .iter()
                .zip(0..)
                .filter_map(|(c, component)| {
                    let (p, e) = (&c.params, &c.errors);
                    let rms = noise(p.x, p.y);
                    if fitted && rms.is_some_and(|n| p.peak < floor * n) {
                        floored += 1;
                        return None;
                    }
                    let (shape, integrated) = if fitted {
                        let shape = Shape {
                            major: measured(FWHM * p.major, FWHM * e.major),
                            minor: measured(FWHM * p.minor, FWHM * e.minor),
                            angle: measured(p.theta.to_degrees(), e.theta.to_degrees()),
                        };
                        let flux = TAU * p.peak * p.major * p.minor / area;
                        let relative =
                            ((e.peak / p.peak).powi(2) + (e.major / p.major).powi(2) + (e.minor / p.minor).powi(2))
                                .sqrt();
                        (Some(shape), Some(measured(flux, flux * relative)))
                    } else {
                        (None, None)
                    };
                    Some(Row {
                        island: fit.label,
                        component,
                        x: measured(p.x, e.x),
                        y: measured(p.y, e.y),
                        peak: Some(measured(p.peak, e.peak)),
                        integrated,
                        rms,
                        shape,
                        measures: Some(measures),
                        flags,
                    })
                })
                .collect();
            (rows, floored)
        })
        .collect();
    let floored = islands.iter().map(|(_, floored)| floored).sum();
    (islands.into_iter().flat_map(|(rows, _)| rows).collect(), floored)
}

/// The components that were fitted (an island with iterations run), for the model.
fn fitted(fits: &[IslandFit]) -> impl Iterator<Item = &fit::Gaussian> {
    fits.iter().filter(|f| f.iterations > 0).flat_map(|f| f.components.iter().map(|c| &c.params))
}

/// How far from its centre a component's model is drawn, in σ of its major axis: past that it
/// is below e^-18 (2e-8) of its peak.
pub const MODEL_REACH: f64 = 6.0;

/// The fitted model of `fits` on a `width × height` image: every fitted component's Gaussian,
/// within [`MODEL_REACH`] σ of its centre.
pub fn model(width: usize, height: usize, fits: &[IslandFit]) -> Vec<f32> {
    let components: Vec<&fit::Gaussian> = fitted(fits).filter(|g| g.values().iter().all(|v| v.is_finite())).collect();
    let mut model = vec![0.0f64; width * height];
    for g in components {
        let reach = MODEL_REACH * g.major;
        let rows =
            (g.y - reach).floor().max(0.0) as usize..((g.y + reach).ceil() + 1.0).clamp(0.0, height as f64) as usize;
        let columns =
            (g.x - reach).floor().max(0.0) as usize..((g.x + reach).ceil() + 1.0).clamp(0.0, width as f64) as usize;
        let (sin, cos) = g.theta.sin_cos();
        for row in rows {
            for column in columns.clone() {
                let (dx, dy) = (column as f64 - g.x, row as f64 - g.y);
                let (along, across) = (dx * cos + dy * sin, dy * cos - dx * sin);
                let exponent = (along / g.major).powi(2) + (across / g.minor).powi(2);
                model[row * width + column] += g.peak * (-0.5 * exponent).exp();
            }
        }
    }
    model.into_iter().map(|v| v as f32).collect()
}

/// The image less the fitted model of `fits` ([`model`]): what the fits left (the background
/// stays in it, as Aegean's residual keeps it).
pub fn residual(image: &Image, fits: &[IslandFit]) -> Vec<f32> {
    let model = model(image.width, image.height, fits);
    image.pixels.par_iter().zip(&model).map(|(p, m)| p - m).collect()
}

/// An agreement of the GPU with the CPU from a family's [`Check`].
fn checked(what: &str, check: &Check, bar: &str) -> Agreement {
    let found = if check.passed {
        format!("worst {:.1e} of the bar", check.worst_error / check.tolerance)
    } else {
        format!("{} differ (worst {:.1e})", grouped(check.mismatches as u64), check.worst_error)
    };
    Agreement { what: what.into(), found, bar: bar.into(), passed: check.passed }
}

/// Compares every step of the GPU's result with the CPU's: NaN pixels; the pixels the second
/// background pass left out (the mask's S/N is the interpolation kernel's, the same to an f32
/// ulp, so only a pixel within an ulp of [`MASK_LEVEL`] could differ); the maps as the
/// background family holds them (the grid's medians and the background map exact, the noise
/// within 1e-12 on the grid and an f32 ulp on the maps), or the grid alone where the GPU's maps
/// stayed there; the flooded pixels and islands, the labels pixel by pixel where copied back;
/// the seeded islands' measures as the measure family holds them; the fits as the fit family
/// does (within 1e-4).
pub fn compare(gpu: &Found, cpu: &Found) -> Vec<Agreement> {
    let mut checks = Vec::new();
    let mut equal = |what: &str, g: String, c: String| {
        let passed = g == c;
        checks.push(Agreement { what: what.into(), found: format!("{g} / {c}"), bar: "equal".into(), passed });
    };
    equal("NaN pixels", gpu.nan_pixels.to_string(), cpu.nan_pixels.to_string());
    let masked = |f: &Found| f.masked_pixels.map_or("one pass".to_string(), |m| m.to_string());
    equal("pixels the second background pass left out", masked(gpu), masked(cpu));
    equal(
        "flooded pixels, islands",
        format!("{}, {}", gpu.flooded_pixels, gpu.flooded),
        format!("{}, {}", cpu.flooded_pixels, cpu.flooded),
    );
    equal("seeded islands", gpu.islands.len().to_string(), cpu.islands.len().to_string());
    let bar = "background exact, noise 1e-12 (grid), 1 ulp (maps)";
    checks.push(match (&gpu.maps, &cpu.maps) {
        (Some(g), Some(c)) => checked("background, noise and S/N maps", &background::compare(g, c), bar),
        _ => checked("background grid", &background::compare_grid(&gpu.grid, &cpu.grid), bar),
    });
    if !gpu.labels.is_empty() {
        let differ = gpu.labels.par_iter().zip(&cpu.labels).filter(|(g, c)| g != c).count();
        let differ = differ + gpu.labels.len().abs_diff(cpu.labels.len());
        let passed = differ == 0;
        checks.push(Agreement {
            what: "labels".into(),
            found: format!("{} pixels differ", grouped(differ as u64)),
            bar: "0".into(),
            passed,
        });
    }
    let measures = "pixels, boxes, peaks exact; sums 1e-5, centres 1e-4 px";
    checks.push(checked("islands on the S/N image", &measure::compare(&gpu.islands, &cpu.islands), measures));
    checks.push(checked(
        "islands on the image less background",
        &measure::compare(&gpu.measures, &cpu.measures),
        measures,
    ));
    checks.push(checked("Gaussian fits", &fit::compare(&gpu.fits, &cpu.fits), "flags exact, values 1e-4"));
    checks
}
