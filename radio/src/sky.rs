//! `host sky`: a synthetic radio image with known sources, so that finding sources needs no
//! download. It imitates the image of the Galactic Centre that the source-finding lesson
//! uses: Gaussian noise (σ = 0.0133 Jy/beam by default), Gaussian point sources about a beam
//! wide, a bright extended core at the centre and a shell. The image is written as FITS
//! (BITPIX -32) or `.npy` (f32), by extension; the true components as CSV beside it.
//!
//! Pixel (row, column) holds the sky at x = column, y = row, 0-based, as NumPy indexes it
//! (`image[y, x]`). The CSV has a line per component, `x,y,peak,flux,sigma,radius,kind`:
//! its centre (pixels); its peak, the amplitude of its Gaussian profile (Jy/beam); its flux,
//! the sum of its noise-free pixels; its profile's σ (pixels: the blob's, or the shell's
//! cross-section's); the shell's radius (0 for a blob); and `core`, `shell` or `point`.
//!
//! The point sources lie apart from one another and from the core and the shell, so that
//! each is an island of its own above any threshold and a catalogue matches them one to one.

use crate::io::Image;
use cuda_kernels::data::random_normal;
use cuda_kernels::gpu::{GpuError, GpuResult};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::fmt::Write;
use std::ops::Range;

pub const MIN_SIDE: usize = 16;
/// 16384² f32 is 1 GiB; the source-finding pipeline's largest case is 8192².
pub const MAX_SIDE: usize = 16384;
pub const MAX_SOURCES: usize = 100_000;
/// A component is drawn within this many σ of its profile; past that a pixel would get less
/// than e^-18 (2e-8) of the peak, far below the noise.
pub const REACH: f64 = 6.0;
/// Point sources' σ in pixels, uniform: a beam of 2.4 to 6 pixels FWHM.
pub const POINT_SIGMA: (f64, f64) = (1.0, 2.5);
/// Point sources' peaks in Jy/beam, log-uniform: 7.5 to 300 times the default noise, so each
/// clears a 5σ threshold.
pub const POINT_PEAK: (f64, f64) = (0.1, 4.0);
/// Least distance between point sources: the brightest, widest pair stays two islands above
/// 3σ of the default noise (each reaches 7.6 pixels there).
pub const SEPARATION: f64 = 24.0;
/// Point sources keep this many σ of the core's or shell's profile away from it (their
/// brightness there is below 0.05σ of the default noise).
pub const CLEARANCE: f64 = 4.0;

/// The lesson's image: its noise, Jy/beam, and about as many point sources.
pub const NOISE: f64 = 0.0133;
pub const POINT_SOURCES: usize = 190;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Core,
    Shell,
    Point,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Core => "core",
            Kind::Shell => "shell",
            Kind::Point => "point",
        }
    }
}

/// One component of the sky: a Gaussian blob, or a ring with a Gaussian cross-section.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    pub kind: Kind,
    pub x: f64,
    pub y: f64,
    pub peak: f64,
    pub sigma: f64,
    /// The ring's radius; 0 for a blob.
    pub radius: f64,
    /// The sum of its noise-free pixels in the image (before any blanking).
    pub flux: f64,
}

impl Component {
    fn new(kind: Kind, (x, y): (f64, f64), peak: f64, sigma: f64, radius: f64) -> Self {
        Self { kind, x, y, peak, sigma, radius, flux: 0.0 }
    }

    /// Its brightness at (x, y).
    pub fn value(&self, x: f64, y: f64) -> f64 {
        let squared = (x - self.x).powi(2) + (y - self.y).powi(2);
        let distance = if self.radius == 0.0 { squared } else { (squared.sqrt() - self.radius).powi(2) };
        self.peak * (-distance / (2.0 * self.sigma * self.sigma)).exp()
    }

    /// How far from its centre it is drawn.
    pub fn extent(&self) -> f64 {
        self.radius + REACH * self.sigma
    }

    /// The rows or columns of a `side`-pixel image within its extent of `centre`.
    pub fn span(&self, centre: f64, side: usize) -> Range<usize> {
        let low = (centre - self.extent()).ceil().max(0.0) as usize;
        let high = ((centre + self.extent()).floor() + 1.0).clamp(0.0, side as f64) as usize;
        low.min(high)..high
    }

    /// The sum of its pixels in a `side`-pixel image.
    fn pixel_sum(&self, side: usize) -> f64 {
        let columns = self.span(self.x, side);
        self.span(self.y, side)
            .flat_map(|row| columns.clone().map(move |col| (col as f64, row as f64)))
            .map(|(x, y)| self.value(x, y))
            .sum()
    }
}

/// Rounds to `digits` decimals, so that the CSV holds exactly the values the image was drawn from.
fn rounded(value: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (value * scale).round() / scale
}

/// Where the image's centre is, and the radius of the primary beam: the circle touching the edges.
fn beam(side: usize) -> ((f64, f64), f64) {
    let centre = (side as f64 - 1.0) / 2.0;
    ((centre, centre), side as f64 / 2.0)
}

/// The core at the centre and the shell, scaled with the side so the sky looks alike at any size.
fn extended(side: usize) -> [Component; 2] {
    let s = side as f64;
    let core = Component::new(Kind::Core, beam(side).0, 2.0, rounded((s / 96.0).max(2.0), 3), 0.0);
    let centre = (rounded(0.68 * s, 3), rounded(0.34 * s, 3));
    let shell = Component::new(Kind::Shell, centre, 0.25, rounded((s / 512.0).max(1.0), 3), rounded(s / 14.0, 3));
    [core, shell]
}

/// Point sources where they fit: inside the image (or the beam), `SEPARATION` apart, clear of
/// `extended`. Positions are tried at random; failing `count` of them is an error.
fn place_points(
    side: usize,
    count: usize,
    blank: bool,
    extended: &[Component],
    seed: u64,
) -> GpuResult<Vec<Component>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    // Accepted centres by cell of SEPARATION pixels: a neighbour too close is in the 3×3 cells around.
    let cells = (side as f64 / SEPARATION).ceil() as usize;
    let mut grid: Vec<Vec<(f64, f64)>> = vec![Vec::new(); cells * cells];
    let cell = |v: f64| ((v / SEPARATION) as usize).min(cells - 1);
    let ((cx, cy), beam_radius) = beam(side);
    let (log_low, log_high) = (POINT_PEAK.0.ln(), POINT_PEAK.1.ln());
    let mut points = Vec::with_capacity(count);
    for _ in 0..50 * count + 1000 {
        if points.len() == count {
            break;
        }
        let sigma = rounded(rng.random_range(POINT_SIGMA.0..POINT_SIGMA.1), 3);
        let peak = rounded(rng.random_range(log_low..log_high).exp(), 4);
        let margin = REACH * sigma;
        if side as f64 - 1.0 <= 2.0 * margin {
            continue;
        }
        let x = rounded(rng.random_range(margin..side as f64 - 1.0 - margin), 3);
        let y = rounded(rng.random_range(margin..side as f64 - 1.0 - margin), 3);
        let distance = |a: f64, b: f64| ((x - a).powi(2) + (y - b).powi(2)).sqrt();
        if blank && distance(cx, cy) > beam_radius - margin {
            continue;
        }
        let clear = |c: &Component| (distance(c.x, c.y) - c.radius).abs() >= CLEARANCE * c.sigma + SEPARATION / 2.0;
        if !extended.iter().all(clear) {
            continue;
        }
        let (col, row) = (cell(x), cell(y));
        let near = (row.saturating_sub(1)..(row + 2).min(cells))
            .flat_map(|r| (col.saturating_sub(1)..(col + 2).min(cells)).map(move |c| r * cells + c))
            .flat_map(|i| &grid[i])
            .any(|&(a, b)| distance(a, b) < SEPARATION);
        if near {
            continue;
        }
        grid[row * cells + col].push((x, y));
        points.push(Component::new(Kind::Point, (x, y), peak, sigma, 0.0));
    }
    if points.len() < count {
        let within = if blank { "inside the beam of" } else { "on" };
        return Err(GpuError::InvalidInput(format!(
            "placed only {} of {} point sources {} pixels apart {} a {}x{} sky, clear of the core and the shell; ask for fewer --sources or a larger --side",
            points.len(),
            count,
            SEPARATION,
            within,
            side,
            side
        )));
    }
    Ok(points)
}

/// The components of the sky: the core, the shell, then the point sources in raster order
/// (by row, then column), each with its flux.
pub fn components(side: usize, sources: usize, blank: bool, seed: u64) -> GpuResult<Vec<Component>> {
    let extended = extended(side);
    let mut points = place_points(side, sources, blank, &extended, seed)?;
    points.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.x.total_cmp(&b.x)));
    let mut all: Vec<Component> = extended.into_iter().chain(points).collect();
    all.par_iter_mut().for_each(|c| c.flux = c.pixel_sum(side));
    Ok(all)
}

/// Rows per band in [`render`]'s lists of which components reach which rows.
const BAND: usize = 64;

/// The `side`² image, row by row: unit normal noise (seeded by `seed`) times `noise`, plus the
/// components, NaN outside the beam when `blank`. Returns it and how many pixels are NaN.
pub fn render(side: usize, components: &[Component], noise: f64, blank: bool, seed: u64) -> (Vec<f32>, usize) {
    // Each row adds only the components whose extent reaches its band.
    let mut bands = vec![Vec::new(); side.div_ceil(BAND)];
    for component in components {
        let rows = component.span(component.y, side);
        for band in &mut bands[rows.start / BAND..rows.end.div_ceil(BAND)] {
            band.push(component);
        }
    }
    let ((cx, cy), beam_radius) = beam(side);
    let mut image = random_normal(side * side, seed);
    let blanked = image
        .par_chunks_mut(side)
        .enumerate()
        .map(|(row, pixels)| {
            pixels.iter_mut().for_each(|v| *v *= noise as f32);
            let y = row as f64;
            for component in bands[row / BAND].iter().filter(|c| c.span(c.y, side).contains(&row)) {
                for col in component.span(component.x, side) {
                    pixels[col] += component.value(col as f64, y) as f32;
                }
            }
            if !blank {
                return 0;
            }
            let outside = |col: usize| (col as f64 - cx).powi(2) + (y - cy).powi(2) > beam_radius * beam_radius;
            pixels.iter_mut().enumerate().filter(|&(col, _)| outside(col)).map(|(_, v)| *v = f32::NAN).count()
        })
        .sum();
    (image, blanked)
}

/// The sky `host sky --side side [--blank]` writes with its defaults, in memory.
pub fn default_sky(side: usize, blank: bool, seed: u64) -> GpuResult<Image> {
    let components = components(side, POINT_SOURCES, blank, seed)?;
    let (pixels, _) = render(side, &components, NOISE, blank, seed ^ 1);
    Ok(Image { width: side, height: side, pixels })
}

/// The CSV of the components (see the module's documentation).
pub fn truth_csv(components: &[Component]) -> String {
    let mut text = String::from("x,y,peak,flux,sigma,radius,kind\n");
    for c in components {
        let _ = writeln!(text, "{},{},{},{},{},{},{}", c.x, c.y, c.peak, c.flux, c.sigma, c.radius, c.kind.name());
    }
    text
}
