//! Finding the sources in a radio image, in one of two modes ([`Mode`]): the local background,
//! flooded islands and Gaussian fits of Aegean and BANE ([`local`], the default of `host
//! sources`), or the CuPy lesson's global pipeline, here, in four steps:
//!
//! 1. κσ clipping ([`clip`]): the median and standard deviation of the pixels (`cuda_kernels::stats`),
//!    those strictly inside median ± κσ kept, repeated until nothing more is clipped; the
//!    last round's σ is the noise.
//! 2. A threshold: pixels strictly above threshold·σ, relative to zero as in the lesson
//!    (`data > 5 * stddev_`).
//! 3. Connected components (`cuda_kernels::label`), numbered as `scipy.ndimage.label` numbers them.
//! 4. Per source (`cuda_kernels::measure`): its pixels, `sum_labels`, `center_of_mass` and bounding box.
//!
//! NaN pixels (radio images blank the area outside the primary beam) are left out of the
//! statistics, as `nanmedian` and `nanstd` leave them, counted, and never detected. The steps
//! run on the GPU ([`gpu`]), each checked against the CPU's definitions here, which follow
//! NumPy's and SciPy's; `--cpu` runs only those.

pub mod catalog;
pub mod clip;
pub mod gpu;
pub mod local;
pub mod overlay;
pub mod score;

use crate::io::Image;
use cuda_kernels::data::timed;
use cuda_kernels::gpu::{require, GpuError, GpuResult};
pub use cuda_kernels::{label, measure};

use clip::Background;
use cuda_kernels::check::grouped;

pub use label::Connectivity;
pub use local::Mode;
use measure::Source;
use rayon::prelude::*;
use serde::Serialize;

/// Centroids agree with the CPU's within this many pixels…
pub const CENTROID_TOLERANCE: f64 = 1e-4;
/// …fluxes within this relative error, and σ within this one: what the GPU's other order of
/// f64 additions may change, far above what it does.
pub const FLUX_TOLERANCE: f64 = 1e-5;
pub const SIGMA_TOLERANCE: f64 = 1e-6;

/// What the pipeline is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Settings {
    pub kappa: f64,
    pub threshold: f64,
    #[serde(serialize_with = "neighbours")]
    pub connectivity: Connectivity,
}

fn neighbours<S: serde::Serializer>(connectivity: &Connectivity, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u32(connectivity.neighbours())
}

impl Settings {
    /// The lesson's: κ 3, a 5σ threshold, SciPy's default 4-connectivity.
    pub const LESSON: Settings = Settings { kappa: 3.0, threshold: 5.0, connectivity: Connectivity::Four };

    pub fn check(&self) -> GpuResult<()> {
        require(self.kappa.is_finite() && self.kappa > 0.0, || {
            format!("--kappa must be a positive number (got {})", self.kappa)
        })?;
        require(self.threshold.is_finite() && self.threshold > 0.0, || {
            format!("--threshold must be a positive number of σ (got {})", self.threshold)
        })
    }
}

/// How long a stage took, wall clock.
#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    pub name: &'static str,
    pub ms: f64,
}

/// What the pipeline found in an image.
#[derive(Debug, Clone)]
pub struct Found {
    /// NaN pixels, left out of everything.
    pub nan_pixels: usize,
    pub background: Background,
    /// threshold·σ: what a pixel must exceed to be part of a source.
    pub level: f64,
    pub detected_pixels: usize,
    /// Each pixel's label, row by row: 0 for the background, else its source's.
    pub labels: Vec<u32>,
    pub sources: Vec<Source>,
    pub stages: Vec<Stage>,
}

impl Found {
    /// The stages' time together, wall clock.
    pub fn total_ms(&self) -> f64 {
        self.stages.iter().map(|s| s.ms).sum()
    }
}

/// An error unless `image` is a usable image: its pixels make its shape, and the labels (u32,
/// as SciPy's are int32) can number them.
pub fn check_shape(image: &Image) -> GpuResult<()> {
    let pixels = image.pixels.len();
    require(image.width > 0 && image.width.checked_mul(image.height) == Some(pixels), || {
        format!("{} pixels do not make a {}x{} image", pixels, image.width, image.height)
    })?;
    require(pixels < u32::MAX as usize, || {
        format!("{}x{} pixels are more than the labels can number", image.width, image.height)
    })
}

/// The NaN pixels of `image`, counted, and the first infinite one, in one pass over it.
fn blanks(image: &Image) -> (usize, Option<usize>) {
    const CHUNK: usize = 1 << 16;
    let first = |a: Option<usize>, b: Option<usize>| a.into_iter().chain(b).min();
    image
        .pixels
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            // On the bits, so that the loop vectorises: NaN and ±∞ without their sign.
            let (mut nan, mut infinite) = (0, false);
            for v in chunk {
                let magnitude = v.to_bits() & 0x7fff_ffff;
                nan += usize::from(magnitude > 0x7f80_0000);
                infinite |= magnitude == 0x7f80_0000;
            }
            let at = if infinite { chunk.iter().position(|v| v.is_infinite()) } else { None };
            (nan, at.map(|i| c * CHUNK + i))
        })
        .reduce(|| (0, None), |a, b| (a.0 + b.0, first(a.1, b.1)))
}

/// The error for pixel `i` of `image`, an infinite one: only NaN blanks a pixel.
fn infinite_at(image: &Image, i: usize) -> GpuError {
    GpuError::InvalidInput(format!(
        "pixel (row {}, column {}) is {}: only NaN marks a blanked pixel",
        i / image.width,
        i % image.width,
        image.pixels[i]
    ))
}

/// The error for the first infinite pixel of `image`, if it has one.
fn infinite_pixel(image: &Image) -> Option<GpuError> {
    blanks(image).1.map(|i| infinite_at(image, i))
}

fn all_blanked(pixels: usize) -> GpuError {
    GpuError::InvalidInput(format!("all {} pixels are NaN (blanked): there is no background to measure", pixels))
}

/// Runs the four steps on `image` on `gpu`: the image goes up once, and only the answers of
/// each step and the catalog come back ([`gpu::Pipeline`], which can also run them again on the
/// same image, and copy the label image back). The result equals [`find`]'s, the CPU's, within
/// the tolerances above; its `labels` are left empty (the pipeline keeps them on the GPU).
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use radio::sources::{compare, find, find_on_gpu, Settings};
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// // A small sky: ten point sources on noise.
/// let components = radio::sky::components(256, 10, false, 7)?;
/// let (pixels, _) = radio::sky::render(256, &components, radio::sky::NOISE, false, 8);
/// let image = radio::io::Image { width: 256, height: 256, pixels };
/// let (on_gpu, on_cpu) = (find_on_gpu(&gpu, &image, &Settings::LESSON)?, find(&image, &Settings::LESSON)?);
/// // The background, the level and every source agree within the tolerances above.
/// assert!(compare(&on_gpu, &on_cpu).iter().all(|step| step.passed));
/// assert_eq!(on_gpu.sources.len(), on_cpu.sources.len());
/// # Ok(())
/// # }
/// ```
pub fn find_on_gpu(gpu: &cuda_kernels::Gpu, image: &Image, settings: &Settings) -> GpuResult<Found> {
    gpu::Pipeline::new(gpu, image)?.find(image, settings)
}

/// Runs the four steps on `image` on the CPU. An error is about the settings or the image's
/// pixels.
pub fn find(image: &Image, settings: &Settings) -> GpuResult<Found> {
    settings.check()?;
    check_shape(image)?;
    let pixels = &image.pixels;
    let mut stages = Vec::new();
    let mut stage = |name, ms| stages.push(Stage { name, ms });

    let (infinite, ms_check) = timed(|| infinite_pixel(image));
    if let Some(error) = infinite {
        return Err(error);
    }
    let ((values, nan_pixels), ms) = timed(|| cuda_kernels::stats::without_nan(pixels));
    stage("NaN compaction", ms_check + ms);
    if values.is_empty() {
        return Err(all_blanked(pixels.len()));
    }

    let (background, ms) = timed(|| clip::kappa_sigma(&mut clip::Values(values), settings.kappa));
    let background = background?;
    stage("κσ clipping", ms);

    let level = settings.threshold * background.sigma;
    let ((mask, detected_pixels), ms) = timed(|| {
        let mask = label::detect(pixels, level);
        let detected = mask.par_iter().filter(|&&set| set).count();
        (mask, detected)
    });
    stage("threshold", ms);

    let ((labels, count), ms) = timed(|| label::cpu_reference(&mask, image.width, settings.connectivity));
    stage("labeling", ms);

    let (sources, ms) = timed(|| measure::cpu_reference(pixels, image.width, &labels, count));
    stage("measures", ms);

    Ok(Found { nan_pixels, background, level, detected_pixels, labels, sources, stages })
}

/// One comparison of the GPU's result with the CPU's.
#[derive(Debug, Clone, Serialize)]
pub struct Agreement {
    pub what: String,
    /// The largest difference found (0 for an exact match), or the GPU's and CPU's values.
    pub found: String,
    pub bar: String,
    pub passed: bool,
}

/// Compares every step of the GPU's result with the CPU's.
pub fn compare(gpu: &Found, cpu: &Found) -> Vec<Agreement> {
    let mut checks = Vec::new();
    let mut add = |what: &str, found: String, bar: &str, passed: bool| {
        checks.push(Agreement { what: what.into(), found, bar: bar.into(), passed })
    };
    add("NaN pixels", format!("{} / {}", gpu.nan_pixels, cpu.nan_pixels), "equal", gpu.nan_pixels == cpu.nan_pixels);
    let (g, c) = (&gpu.background, &cpu.background);
    add(
        "clipping: rounds, pixels kept",
        format!("{}, {} / {}, {}", g.rounds, g.kept, c.rounds, c.kept),
        "equal",
        (g.rounds, g.kept) == (c.rounds, c.kept),
    );
    add("median", format!("{:e} / {:e}", g.median, c.median), "equal", g.median == c.median);
    let sigma = (g.sigma / c.sigma - 1.0).abs();
    add("σ, relative", format!("{:.1e}", sigma), &format!("<= {:.0e}", SIGMA_TOLERANCE), sigma <= SIGMA_TOLERANCE);
    add(
        "sources",
        format!("{} / {}", gpu.sources.len(), cpu.sources.len()),
        "equal",
        gpu.sources.len() == cpu.sources.len(),
    );
    if !gpu.labels.is_empty() {
        let differ = gpu.labels.par_iter().zip(&cpu.labels).filter(|(g, c)| g != c).count();
        let differ = differ + gpu.labels.len().abs_diff(cpu.labels.len());
        add("labels", format!("{} pixels differ", grouped(differ as u64)), "0", differ == 0);
    }
    let pairs = || gpu.sources.iter().zip(&cpu.sources);
    let same_pixels = pairs().all(|(g, c)| {
        (g.label, g.pixels, g.peak, g.y_min, g.y_max, g.x_min, g.x_max)
            == (c.label, c.pixels, c.peak, c.y_min, c.y_max, c.x_min, c.x_max)
    });
    add("pixels, peaks, boxes", (if same_pixels { "equal" } else { "differ" }).into(), "equal", same_pixels);
    let centroid = pairs().map(|(g, c)| (g.x - c.x).abs().max((g.y - c.y).abs())).fold(0.0, f64::max);
    let flux = pairs().map(|(g, c)| ((g.flux - c.flux) / c.flux).abs()).fold(0.0, f64::max);
    add(
        "centroids, pixels",
        format!("{:.1e}", centroid),
        &format!("<= {:.0e}", CENTROID_TOLERANCE),
        centroid <= CENTROID_TOLERANCE,
    );
    add("fluxes, relative", format!("{:.1e}", flux), &format!("<= {:.0e}", FLUX_TOLERANCE), flux <= FLUX_TOLERANCE);
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanks_count_nan_and_find_the_first_infinite_pixel_across_chunks() {
        let (width, height) = (1000, 200);
        let mut pixels = vec![1.0f32; width * height];
        let image = |pixels: &[f32]| Image { width, height, pixels: pixels.to_vec() };
        assert_eq!(blanks(&image(&pixels)), (0, None));
        // NaN of both signs and other payloads, on each side of a chunk's edge (65536).
        for (i, nan) in [(0, f32::NAN), (65535, -f32::NAN), (65536, f32::from_bits(0x7fc0_0001)), (199_999, f32::NAN)] {
            pixels[i] = nan;
        }
        assert_eq!(blanks(&image(&pixels)), (4, None));
        // The first infinite pixel, by position, whichever chunk finds it first.
        pixels[150_001] = f32::INFINITY;
        pixels[70_000] = f32::NEG_INFINITY;
        assert_eq!(blanks(&image(&pixels)), (4, Some(70_000)));
        let error = infinite_pixel(&image(&pixels)).expect("an infinite pixel").to_string();
        assert!(error.contains("pixel (row 70, column 0) is -inf: only NaN marks a blanked pixel"), "{error}");
    }
}
