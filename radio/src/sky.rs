//! `host sky`: a synthetic radio image with known sources, so that finding sources needs no
//! download. It imitates the image of the Galactic Centre that the source-finding lesson
//! uses: Gaussian noise (σ = 0.0133 Jy/beam by default), Gaussian point sources about a beam
//! wide, a bright extended core at the centre and a shell. The image is written as FITS
//! (BITPIX -32, with the radio header of [`Sky::header`]: its sky coordinates and beam) or
//! `.npy` (f32), by extension; the true components as CSV beside it.
//!
//! Pixel (row, column) holds the sky at x = column, y = row, 0-based, as NumPy indexes it
//! (`image[y, x]`). The CSV has a line per component, `x,y,peak,flux,sigma,radius,kind`:
//! its centre (pixels); its peak, the amplitude of its Gaussian profile (Jy/beam); its flux,
//! the sum of its noise-free pixels; its profile's σ (pixels: the blob's, or the shell's
//! cross-section's, or an ellipse's along its major axis); the shell's radius (0 for a blob);
//! and `core`, `shell`, `point`, `ellipse` or `pair`.
//!
//! The point sources lie apart from one another and from the core and the shell, so that
//! each is an island of its own above any threshold and a catalogue matches them one to one.
//!
//! Beyond the lesson's sky, to measure a source finder against ([`Sky`]):
//! - noise that rises towards the primary beam's edge ([`NoiseProfile::PrimaryBeam`]): σ / PB(r),
//!   as in an image corrected for the primary beam;
//! - resolved elliptical Gaussians ([`Kind::Ellipse`]);
//! - close pairs of point sources 1 to 3 beams apart ([`Kind::Pair`]), each member a line.
//!
//! A sky with any of them has four more columns in its CSV ([`SURVEY_COLUMNS`]): the FWHM along
//! the major and minor axes (pixels), the position angle (degrees, see [`Component::pa`]), and
//! the noise σ at the centre (Jy/beam), so that a catalog's S/N can be binned. The lesson's sky
//! keeps its seven columns and is drawn as before: the same seed gives the same pixels.

use crate::fits::{Card, Value};
use crate::io::Image;
use cuda_kernels::data::random_normal;
use cuda_kernels::gpu::{GpuError, GpuResult};
use cuda_kernels::Named;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::f64::consts::PI;
use std::fmt::Write;
use std::ops::Range;

pub const MIN_SIDE: usize = 16;
/// 32768² f32 is 4 GiB, the size of the largest survey images (ASKAP, MeerKAT) that the source
/// finder takes on one GPU; the labels still number every pixel (u32).
pub const MAX_SIDE: usize = 32768;
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

pub use interface::fit::FWHM;
/// The FITS header's pixel size (arcseconds), pointing (RA, Dec in degrees, ICRS) and
/// frequency (Hz; PyBDSF asks for one): see [`Sky::header`].
pub const PIXEL_ARCSEC: f64 = 1.0;
pub const POINTING: (f64, f64) = (150.0, -30.0);
pub const FREQUENCY_HZ: f64 = 1.4e9;
/// Elliptical sources' σ along the major axis in pixels, uniform: 5.9 to 14.1 pixels FWHM,
/// resolved against the widest point source (σ 2.5). Their peaks are drawn as point sources'.
pub const ELLIPSE_MAJOR: (f64, f64) = (2.5, 6.0);
/// Their σ along the minor axis is uniform from this to the major axis' σ: axis ratios up to 4.
pub const ELLIPSE_MINOR_LEAST: f64 = 1.5;
/// Close pairs' separation in beams (the FWHM of the σ both members share), uniform. From 1 beam,
/// just past the 2σ at which two equal Gaussians' sum gets a dip between them, to 3.
pub const PAIR_SEPARATION: (f64, f64) = (1.0, 3.0);
/// The survey preset's sources for each 2048² of area: as many point sources as the lesson's
/// sky has, a quarter as many ellipses and an eighth as many pairs.
pub const SURVEY_AREA: usize = 2048 * 2048;
pub const SURVEY_ELLIPSES_PER_POINT: usize = 4;
pub const SURVEY_POINTS_PER_PAIR: usize = 8;

/// The truth's columns: the lesson's seven, and those a sky beyond the lesson's adds.
pub const TRUTH_COLUMNS: [&str; 7] = ["x", "y", "peak", "flux", "sigma", "radius", "kind"];
pub const SURVEY_COLUMNS: [&str; 4] = ["major", "minor", "pa", "noise"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Core,
    Shell,
    Point,
    /// A resolved elliptical Gaussian.
    Ellipse,
    /// One of a close pair of point sources.
    Pair,
}

impl Named for Kind {
    const ALL: &'static [Self] = &[Kind::Core, Kind::Shell, Kind::Point, Kind::Ellipse, Kind::Pair];

    fn name(self) -> &'static str {
        match self {
            Kind::Core => "core",
            Kind::Shell => "shell",
            Kind::Point => "point",
            Kind::Ellipse => "ellipse",
            Kind::Pair => "pair",
        }
    }
}

/// One component of the sky: a Gaussian blob (elliptical for [`Kind::Ellipse`]), or a ring
/// with a Gaussian cross-section.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    pub kind: Kind,
    pub x: f64,
    pub y: f64,
    pub peak: f64,
    /// The profile's σ (pixels); an ellipse's along its major axis.
    pub sigma: f64,
    /// An ellipse's σ along its minor axis; `sigma` for any other kind.
    pub sigma_minor: f64,
    /// An ellipse's position angle, degrees in [0, 180): its major axis points along
    /// (x, y) = (-sin pa, cos pa), east of north on an image whose north is +y and east -x (a
    /// FITS image's usual orientation, right ascension growing to the left). 0 for other kinds.
    pub pa: f64,
    /// The ring's radius; 0 for a blob.
    pub radius: f64,
    /// The sum of its noise-free pixels in the image (before any blanking).
    pub flux: f64,
}

impl Component {
    fn new(kind: Kind, (x, y): (f64, f64), peak: f64, sigma: f64, radius: f64) -> Self {
        Self { kind, x, y, peak, sigma, sigma_minor: sigma, pa: 0.0, radius, flux: 0.0 }
    }

    fn ellipse((x, y): (f64, f64), peak: f64, (major, minor): (f64, f64), pa: f64) -> Self {
        Self { sigma_minor: minor, pa, ..Self::new(Kind::Ellipse, (x, y), peak, major, 0.0) }
    }

    /// Its brightness at (x, y).
    pub fn value(&self, x: f64, y: f64) -> f64 {
        let distance = if self.kind == Kind::Ellipse {
            let (sin, cos) = self.pa.to_radians().sin_cos();
            let (dx, dy) = (x - self.x, y - self.y);
            // Along the major axis, and across it scaled to the major axis' σ.
            let (along, across) = (dy * cos - dx * sin, (dx * cos + dy * sin) * self.sigma / self.sigma_minor);
            along * along + across * across
        } else {
            let squared = (x - self.x).powi(2) + (y - self.y).powi(2);
            if self.radius == 0.0 {
                squared
            } else {
                (squared.sqrt() - self.radius).powi(2)
            }
        };
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

/// The primary beam's response at (x, y) of a `side`² sky: a Gaussian of 1 at the centre and
/// 1/2 on the circle touching the edges (1/4 in the corners).
pub fn primary_beam(side: usize, x: f64, y: f64) -> f64 {
    let ((cx, cy), radius) = beam(side);
    0.5f64.powf(((x - cx).powi(2) + (y - cy).powi(2)) / (radius * radius))
}

/// How the noise's σ varies across the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoiseProfile {
    /// The same everywhere, as in the lesson's image.
    Constant,
    /// σ / [`primary_beam`]: twice the centre's on the circle touching the edges, four times
    /// in the corners, as in an image corrected for the primary beam.
    PrimaryBeam,
}

impl Named for NoiseProfile {
    const ALL: &'static [Self] = &[NoiseProfile::Constant, NoiseProfile::PrimaryBeam];

    fn name(self) -> &'static str {
        match self {
            NoiseProfile::Constant => "constant",
            NoiseProfile::PrimaryBeam => "primary-beam",
        }
    }
}

/// The noise: its σ (Jy/beam) at the centre, and how it varies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    pub sigma: f64,
    pub profile: NoiseProfile,
}

impl Noise {
    pub fn constant(sigma: f64) -> Self {
        Self { sigma, profile: NoiseProfile::Constant }
    }

    /// Its σ at (x, y) of a `side`² sky.
    pub fn at(&self, side: usize, x: f64, y: f64) -> f64 {
        match self.profile {
            NoiseProfile::Constant => self.sigma,
            NoiseProfile::PrimaryBeam => self.sigma / primary_beam(side, x, y),
        }
    }
}

/// How many sources of each kind besides the core and the shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Population {
    pub points: usize,
    pub ellipses: usize,
    /// Pairs, two components each.
    pub pairs: usize,
}

impl Population {
    /// Point sources only, as the lesson's sky has.
    pub fn lesson(points: usize) -> Self {
        Self { points, ellipses: 0, pairs: 0 }
    }

    /// The survey preset's point sources on a `side`² sky: the lesson's per 2048² of area.
    pub fn survey_points(side: usize) -> usize {
        POINT_SOURCES * side * side / SURVEY_AREA
    }

    /// The survey preset with `points` point sources: ellipses and pairs in proportion.
    pub fn survey(points: usize) -> Self {
        Self { points, ellipses: points / SURVEY_ELLIPSES_PER_POINT, pairs: points / SURVEY_POINTS_PER_PAIR }
    }
}

/// A sky to draw: its side, sources, noise and whether it is blanked outside the beam.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sky {
    pub side: usize,
    pub population: Population,
    pub noise: Noise,
    /// Pixels outside the primary beam (the circle touching the edges) are NaN.
    pub blank: bool,
}

impl Sky {
    /// Whether this is the lesson's sky (constant noise, point sources only), whose truth has
    /// the lesson's seven columns.
    pub fn is_lesson(&self) -> bool {
        self.noise.profile == NoiseProfile::Constant && self.population == Population::lesson(self.population.points)
    }

    /// The components: the core, the shell, then the point sources, the ellipses and the pairs
    /// (a pair's members one after the other), each kind in raster order (by row, then column;
    /// a pair by its midpoint), each with its flux. The point sources are those of the lesson's
    /// sky of the same seed: the ellipses and pairs are drawn after them, from seeds of their own.
    pub fn components(&self, seed: u64) -> GpuResult<Vec<Component>> {
        let Sky { side, population, blank, .. } = *self;
        let extended = extended(side);
        let mut points = place_points(side, population.points, blank, &extended, seed)?;
        points.sort_by(raster);
        let mut placer = Placer::new(side, blank, &extended, &points);
        let ellipses = placer.ellipses(population.ellipses, seed ^ 2)?;
        let pairs = placer.pairs(population.pairs, seed ^ 3)?;
        let mut all: Vec<Component> = extended.into_iter().chain(points).chain(ellipses).chain(pairs).collect();
        all.par_iter_mut().for_each(|c| c.flux = c.pixel_sum(side));
        Ok(all)
    }

    /// The noise σ on the circle touching the edges (the primary beam's half-power circle).
    pub fn noise_at_beam_edge(&self) -> f64 {
        let ((cx, cy), radius) = beam(self.side);
        self.noise.at(self.side, cx + radius, cy)
    }

    /// The radio header of the sky's FITS image, so that source finders read its beam and sky
    /// coordinates from it as from a real image's: a SIN projection centred on [`POINTING`]
    /// with [`PIXEL_ARCSEC`] pixels (RA growing to the left), the restoring beam (round, the
    /// narrowest point source's: σ [`POINT_SIGMA`]`.0`), Jy/beam, and [`FREQUENCY_HZ`].
    ///
    /// ```
    /// use radio::fits::Header;
    /// use radio::sky::{Noise, Population, Sky, FWHM, NOISE, POINT_SOURCES};
    ///
    /// let (population, noise) = (Population::lesson(POINT_SOURCES), Noise::constant(NOISE));
    /// let sky = Sky { side: 512, population, noise, blank: false };
    /// let header = Header { cards: sky.header() };
    /// // FITS counts pixels from 1: the centre of 512 pixels is at 256.5.
    /// assert_eq!(header.real("CRPIX1"), Ok(Some(256.5)));
    /// assert_eq!(header.real("BMAJ"), Ok(Some(FWHM / 3600.0)));
    /// ```
    pub fn header(&self) -> Vec<Card> {
        let degrees = PIXEL_ARCSEC / 3600.0;
        let beam = FWHM * POINT_SIGMA.0 * degrees;
        // FITS counts pixels from 1 at a pixel's centre: the image's centre is at side/2 + 1/2.
        let centre = self.side as f64 / 2.0 + 0.5;
        let text = |t: &str| Value::Text(t.into());
        [
            ("CTYPE1", text("RA---SIN")),
            ("CTYPE2", text("DEC--SIN")),
            ("CRPIX1", Value::Real(centre)),
            ("CRPIX2", Value::Real(centre)),
            ("CRVAL1", Value::Real(POINTING.0)),
            ("CRVAL2", Value::Real(POINTING.1)),
            ("CDELT1", Value::Real(-degrees)),
            ("CDELT2", Value::Real(degrees)),
            ("CUNIT1", text("deg")),
            ("CUNIT2", text("deg")),
            ("RADESYS", text("ICRS")),
            ("EQUINOX", Value::Real(2000.0)),
            ("BMAJ", Value::Real(beam)),
            ("BMIN", Value::Real(beam)),
            ("BPA", Value::Real(0.0)),
            ("BUNIT", text("JY/BEAM")),
            ("RESTFRQ", Value::Real(FREQUENCY_HZ)),
        ]
        .into_iter()
        .map(|(keyword, value)| Card { keyword: keyword.into(), value: Some(value) })
        .collect()
    }

    /// The image of `components` and the noise seeded by `seed` (see [`render`]).
    pub fn render(&self, components: &[Component], seed: u64) -> (Vec<f32>, usize) {
        render_noise(self.side, components, &self.noise, self.blank, seed)
    }

    /// The truth as CSV: the lesson's columns for the lesson's sky, else those and
    /// [`SURVEY_COLUMNS`].
    pub fn truth_csv(&self, components: &[Component]) -> String {
        if self.is_lesson() {
            return truth_csv(components);
        }
        let mut text = format!("{},{}\n", TRUTH_COLUMNS.join(","), SURVEY_COLUMNS.join(","));
        for c in components {
            let _ = writeln!(
                text,
                "{},{},{},{},{},{},{},{},{},{},{}",
                c.x,
                c.y,
                c.peak,
                c.flux,
                c.sigma,
                c.radius,
                c.kind.name(),
                FWHM * c.sigma,
                FWHM * c.sigma_minor,
                c.pa,
                self.noise.at(self.side, c.x, c.y)
            );
        }
        text
    }
}

fn raster(a: &Component, b: &Component) -> std::cmp::Ordering {
    a.y.total_cmp(&b.y).then(a.x.total_cmp(&b.x))
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
    let mut points = Vec::with_capacity(count);
    for _ in 0..50 * count + 1000 {
        if points.len() == count {
            break;
        }
        let sigma = rounded(rng.random_range(POINT_SIGMA.0..POINT_SIGMA.1), 3);
        let peak = log_uniform_peak(&mut rng);
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
        return Err(too_crowded(side, blank, points.len(), count, "point sources", "--sources"));
    }
    Ok(points)
}

fn too_crowded(side: usize, blank: bool, placed: usize, count: usize, what: &str, option: &str) -> GpuError {
    let within = if blank { "inside the beam of" } else { "on" };
    GpuError::InvalidInput(format!(
        "placed only {} of {} {} {} pixels apart {} a {}x{} sky, clear of the core and the shell; ask for fewer {} or a larger --side",
        placed, count, what, SEPARATION, within, side, side, option
    ))
}

/// How far from its centre a source keeps every other: a point source's `SEPARATION` / 2 (so
/// two stay `SEPARATION` apart), scaled up with an ellipse's major axis past the widest point
/// source's; a pair's half separation more, so each member keeps a point source's distance.
fn keep_out(kind: Kind, sigma: f64, separation: f64) -> f64 {
    let point = SEPARATION / 2.0;
    match kind {
        Kind::Ellipse => point * (sigma / POINT_SIGMA.1).max(1.0),
        Kind::Pair => point + separation / 2.0,
        _ => point,
    }
}

/// The most any source keeps out: an ellipse's of the widest major axis, or the widest pair's.
fn widest_keep_out() -> f64 {
    let pair = PAIR_SEPARATION.1 * FWHM * POINT_SIGMA.1;
    keep_out(Kind::Ellipse, ELLIPSE_MAJOR.1, 0.0).max(keep_out(Kind::Pair, POINT_SIGMA.1, pair))
}

/// Places ellipses and pairs among the point sources: each source keeps [`keep_out`] of its
/// centre, and no two such discs overlap.
struct Placer<'a> {
    side: usize,
    blank: bool,
    extended: &'a [Component],
    /// Placed discs, (x, y, radius), by cell of twice the widest radius: a disc that overlaps
    /// one is in the 3×3 cells around it.
    grid: Vec<Vec<(f64, f64, f64)>>,
    cells: usize,
    cell: f64,
}

impl<'a> Placer<'a> {
    fn new(side: usize, blank: bool, extended: &'a [Component], points: &[Component]) -> Self {
        let cell = 2.0 * widest_keep_out();
        let cells = (side as f64 / cell).ceil() as usize;
        let mut placer = Self { side, blank, extended, grid: vec![Vec::new(); cells * cells], cells, cell };
        for p in points {
            placer.insert(p.x, p.y, keep_out(Kind::Point, p.sigma, 0.0));
        }
        placer
    }

    fn index(&self, v: f64) -> usize {
        ((v / self.cell) as usize).min(self.cells - 1)
    }

    fn insert(&mut self, x: f64, y: f64, radius: f64) {
        let i = self.index(y) * self.cells + self.index(x);
        self.grid[i].push((x, y, radius));
    }

    /// Whether a source drawn `margin` around (x, y) lies inside the image (and the beam).
    fn inside(&self, x: f64, y: f64, margin: f64) -> bool {
        let high = self.side as f64 - 1.0 - margin;
        let ((cx, cy), beam_radius) = beam(self.side);
        (margin..=high).contains(&x)
            && (margin..=high).contains(&y)
            && (!self.blank || (x - cx).hypot(y - cy) <= beam_radius - margin)
    }

    /// Whether a disc of `radius` at (x, y) is clear of the core, the shell and every placed disc.
    fn clear(&self, x: f64, y: f64, radius: f64) -> bool {
        let distance = |a: f64, b: f64| (x - a).hypot(y - b);
        let (col, row) = (self.index(x), self.index(y));
        self.extended.iter().all(|c| (distance(c.x, c.y) - c.radius).abs() >= CLEARANCE * c.sigma + radius)
            && (row.saturating_sub(1)..(row + 2).min(self.cells))
                .flat_map(|r| (col.saturating_sub(1)..(col + 2).min(self.cells)).map(move |c| r * self.cells + c))
                .flat_map(|i| &self.grid[i])
                .all(|&(a, b, r)| distance(a, b) >= r + radius)
    }

    /// A position for a source drawn `margin` around it, from `rng`.
    fn position(&self, rng: &mut SmallRng, margin: f64) -> Option<(f64, f64)> {
        let high = self.side as f64 - 1.0 - margin;
        (margin < high)
            .then(|| (rounded(rng.random_range(margin..high), 3), rounded(rng.random_range(margin..high), 3)))
    }

    /// `count` ellipses from `seed`, in raster order.
    fn ellipses(&mut self, count: usize, seed: u64) -> GpuResult<Vec<Component>> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut ellipses = Vec::with_capacity(count);
        for _ in 0..50 * count + 1000 {
            if ellipses.len() == count {
                break;
            }
            let major = rounded(rng.random_range(ELLIPSE_MAJOR.0..ELLIPSE_MAJOR.1), 3);
            let minor = rounded(rng.random_range(ELLIPSE_MINOR_LEAST..major), 3);
            let pa = rounded(rng.random_range(0.0..180.0), 2) % 180.0;
            let peak = log_uniform_peak(&mut rng);
            let margin = REACH * major;
            let radius = keep_out(Kind::Ellipse, major, 0.0);
            match self.position(&mut rng, margin) {
                Some((x, y)) if self.inside(x, y, margin) && self.clear(x, y, radius) => {
                    self.insert(x, y, radius);
                    ellipses.push(Component::ellipse((x, y), peak, (major, minor), pa));
                }
                _ => {}
            }
        }
        if ellipses.len() < count {
            return Err(too_crowded(self.side, self.blank, ellipses.len(), count, "ellipses", "--ellipses"));
        }
        ellipses.sort_by(raster);
        Ok(ellipses)
    }

    /// `count` pairs from `seed`: two point sources of one σ, 1 to 3 of its beams apart, at a
    /// random angle, with peaks drawn apart. In raster order of their midpoints.
    fn pairs(&mut self, count: usize, seed: u64) -> GpuResult<Vec<Component>> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut pairs: Vec<(f64, f64, [Component; 2])> = Vec::with_capacity(count);
        for _ in 0..50 * count + 1000 {
            if pairs.len() == count {
                break;
            }
            let sigma = rounded(rng.random_range(POINT_SIGMA.0..POINT_SIGMA.1), 3);
            let separation = rng.random_range(PAIR_SEPARATION.0..PAIR_SEPARATION.1) * FWHM * sigma;
            let (sin, cos) = rng.random_range(0.0..PI).sin_cos();
            let peaks = [log_uniform_peak(&mut rng), log_uniform_peak(&mut rng)];
            let margin = REACH * sigma;
            let radius = keep_out(Kind::Pair, sigma, separation);
            let Some((x, y)) = self.position(&mut rng, margin + separation / 2.0) else { continue };
            let member = |side: f64, peak: f64| {
                let at = (rounded(x + side * cos * separation / 2.0, 3), rounded(y + side * sin * separation / 2.0, 3));
                Component::new(Kind::Pair, at, peak, sigma, 0.0)
            };
            let members = [member(-1.0, peaks[0]), member(1.0, peaks[1])];
            if members.iter().all(|m| self.inside(m.x, m.y, margin)) && self.clear(x, y, radius) {
                self.insert(x, y, radius);
                pairs.push((y, x, members));
            }
        }
        if pairs.len() < count {
            return Err(too_crowded(self.side, self.blank, pairs.len(), count, "pairs", "--pairs"));
        }
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        Ok(pairs.into_iter().flat_map(|(_, _, members)| members).collect())
    }
}

/// A peak drawn as point sources' are: log-uniform over [`POINT_PEAK`], to 4 decimals.
fn log_uniform_peak(rng: &mut SmallRng) -> f64 {
    rounded(rng.random_range(POINT_PEAK.0.ln()..POINT_PEAK.1.ln()).exp(), 4)
}

/// The components of the lesson's sky (see [`Sky::components`]) with `sources` point sources.
pub fn components(side: usize, sources: usize, blank: bool, seed: u64) -> GpuResult<Vec<Component>> {
    Sky { side, population: Population::lesson(sources), noise: Noise::constant(NOISE), blank }.components(seed)
}

/// Rows per band in [`render`]'s lists of which components reach which rows.
const BAND: usize = 64;

/// The `side`² image, row by row: unit normal noise (seeded by `seed`) times `noise`, plus the
/// components, NaN outside the beam when `blank`. Returns it and how many pixels are NaN.
pub fn render(side: usize, components: &[Component], noise: f64, blank: bool, seed: u64) -> (Vec<f32>, usize) {
    render_noise(side, components, &Noise::constant(noise), blank, seed)
}

/// [`render`] with noise of any [`Noise`]: unit normal noise times its σ at each pixel.
pub fn render_noise(side: usize, components: &[Component], noise: &Noise, blank: bool, seed: u64) -> (Vec<f32>, usize) {
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
            let y = row as f64;
            match noise.profile {
                NoiseProfile::Constant => pixels.iter_mut().for_each(|v| *v *= noise.sigma as f32),
                NoiseProfile::PrimaryBeam => pixels
                    .iter_mut()
                    .enumerate()
                    .for_each(|(col, v)| *v = (f64::from(*v) * noise.at(side, col as f64, y)) as f32),
            }
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

/// The CSV of the components with the lesson's columns (see the module's documentation).
pub fn truth_csv(components: &[Component]) -> String {
    let mut text = format!("{}\n", TRUTH_COLUMNS.join(","));
    for c in components {
        let _ = writeln!(text, "{},{},{},{},{},{},{}", c.x, c.y, c.peak, c.flux, c.sigma, c.radius, c.kind.name());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn survey(side: usize, population: Population, blank: bool) -> Sky {
        Sky { side, population, noise: Noise { sigma: NOISE, profile: NoiseProfile::PrimaryBeam }, blank }
    }

    fn of_kind(all: &[Component], kind: Kind) -> Vec<&Component> {
        all.iter().filter(|c| c.kind == kind).collect()
    }

    #[test]
    fn fwhm_is_two_root_two_ln_two() {
        assert!((FWHM - 2.0 * (2.0 * std::f64::consts::LN_2).sqrt()).abs() < 1e-15);
    }

    #[test]
    fn ellipses_and_pairs_leave_the_point_sources_where_they_were() {
        for blank in [false, true] {
            let sky = survey(1024, Population { points: 40, ellipses: 12, pairs: 6 }, blank);
            let all = sky.components(5).unwrap();
            assert_eq!(all[..42], components(1024, 40, blank, 5).unwrap()[..]);
            assert_eq!(all, sky.components(5).unwrap(), "seeded");
            let kinds: Vec<Kind> = all[42..].iter().map(|c| c.kind).collect();
            assert_eq!(kinds, [[Kind::Ellipse; 12].as_slice(), &[Kind::Pair; 12]].concat());
            assert!(
                !sky.is_lesson() && Sky { noise: Noise::constant(NOISE), ..sky }.population != Population::lesson(40)
            );
        }
    }

    #[test]
    fn each_ellipse_is_drawn_with_its_flux_axes_and_angle() {
        let side = 400;
        let sky = survey(side, Population { points: 0, ellipses: 16, pairs: 0 }, false);
        for e in of_kind(&sky.components(11).unwrap(), Kind::Ellipse) {
            assert!((ELLIPSE_MAJOR.0..=ELLIPSE_MAJOR.1).contains(&e.sigma), "{:?}", e);
            assert!((ELLIPSE_MINOR_LEAST..=e.sigma).contains(&e.sigma_minor) && (0.0..180.0).contains(&e.pa));
            // The ellipse alone, without noise: its pixels sum to its flux, the integral 2π σ σ' peak
            // (a sampled Gaussian sums to its integral).
            let (pixels, _) = render_noise(side, std::slice::from_ref(e), &Noise::constant(0.0), false, 1);
            let mut moments = [0.0f64; 6];
            for (i, &v) in pixels.iter().enumerate() {
                let (x, y, v) = ((i % side) as f64, (i / side) as f64, f64::from(v));
                for (m, term) in moments.iter_mut().zip([v, v * x, v * y, v * x * x, v * y * y, v * x * y]) {
                    *m += term;
                }
            }
            let [sum, sx, sy, sxx, syy, sxy] = moments;
            assert!((sum / e.flux - 1.0).abs() < 1e-6, "{:?}: {}", e, sum);
            let integral = std::f64::consts::TAU * e.sigma * e.sigma_minor * e.peak;
            // Less what lies past REACH σ along an axis, 2e-9 of it per axis.
            assert!((e.flux / integral - 1.0).abs() < 1e-8, "{:?}: {}", e, integral);
            // Its centre, and the axes and angle of its second moments.
            let (x, y) = (sx / sum, sy / sum);
            assert!((x - e.x).abs() < 1e-4 && (y - e.y).abs() < 1e-4, "{:?}: ({}, {})", e, x, y);
            let (cxx, cyy, cxy) = (sxx / sum - x * x, syy / sum - y * y, sxy / sum - x * y);
            let (mean, half) = ((cxx + cyy) / 2.0, ((cxx - cyy).powi(2) / 4.0 + cxy * cxy).sqrt());
            assert!(((mean + half).sqrt() / e.sigma - 1.0).abs() < 1e-4, "{:?}", e);
            assert!(((mean - half).sqrt() / e.sigma_minor - 1.0).abs() < 1e-4, "{:?}", e);
            if e.sigma - e.sigma_minor > 0.05 {
                // The major axis at θ from +x is (-sin pa, cos pa): pa = θ - 90°.
                let theta = 0.5 * (2.0 * cxy).atan2(cxx - cyy).to_degrees();
                let pa = (theta - 90.0).rem_euclid(180.0);
                let off = (pa - e.pa).abs();
                assert!(off.min(180.0 - off) < 0.05, "{:?}: pa {}", e, pa);
            }
        }
    }

    #[test]
    fn pairs_share_a_beam_and_lie_one_to_three_beams_apart() {
        let sky = survey(1024, Population { points: 30, ellipses: 0, pairs: 25 }, true);
        let all = sky.components(7).unwrap();
        let pairs = of_kind(&all, Kind::Pair);
        assert_eq!(pairs.len(), 50);
        let midpoints: Vec<(f64, f64)> =
            pairs.chunks(2).map(|p| ((p[0].y + p[1].y) / 2.0, (p[0].x + p[1].x) / 2.0)).collect();
        assert!(midpoints.windows(2).all(|m| m[0] <= m[1]), "raster order of midpoints");
        for p in pairs.chunks(2) {
            let (a, b) = (p[0], p[1]);
            assert_eq!(a.sigma, b.sigma);
            assert!((POINT_SIGMA.0..=POINT_SIGMA.1).contains(&a.sigma));
            // Positions are rounded to 1e-3 pixel: the separation to within 2e-3.
            let beams = (a.x - b.x).hypot(a.y - b.y) / (FWHM * a.sigma);
            let slack = 2e-3 / (FWHM * a.sigma);
            assert!(beams >= PAIR_SEPARATION.0 - slack && beams <= PAIR_SEPARATION.1 + slack, "{:?} {:?}", a, b);
            for m in [a, b] {
                assert!((m.flux / (std::f64::consts::TAU * m.sigma * m.sigma * m.peak) - 1.0).abs() < 1e-6);
                assert!((POINT_PEAK.0..=POINT_PEAK.1).contains(&m.peak));
            }
        }
    }

    #[test]
    fn every_source_keeps_its_distance_and_lies_inside_the_beam() {
        let side = 2048;
        let sky = survey(side, Population::survey(Population::survey_points(side)), true);
        assert_eq!(sky.population, Population { points: 190, ellipses: 47, pairs: 23 });
        let all = sky.components(3).unwrap();
        // A disc per point source, ellipse and pair (at its midpoint).
        let mut discs: Vec<(f64, f64, f64)> = Vec::new();
        for c in &all[2..] {
            match c.kind {
                Kind::Pair => {}
                kind => discs.push((c.x, c.y, keep_out(kind, c.sigma, 0.0))),
            }
        }
        for p in of_kind(&all, Kind::Pair).chunks(2) {
            let separation = (p[0].x - p[1].x).hypot(p[0].y - p[1].y);
            discs.push((
                (p[0].x + p[1].x) / 2.0,
                (p[0].y + p[1].y) / 2.0,
                keep_out(Kind::Pair, p[0].sigma, separation),
            ));
        }
        assert_eq!(discs.len(), 190 + 47 + 23);
        for (i, a) in discs.iter().enumerate() {
            for b in &discs[..i] {
                // The slack is a pair's midpoint moved by rounding its members.
                assert!((a.0 - b.0).hypot(a.1 - b.1) >= a.2 + b.2 - 2e-3, "{:?} and {:?}", a, b);
            }
            for c in &all[..2] {
                let d = (a.0 - c.x).hypot(a.1 - c.y);
                assert!((d - c.radius).abs() >= CLEARANCE * c.sigma + a.2 - 2e-3, "{:?} near {:?}", a, c);
            }
        }
        let ((cx, cy), radius) = beam(side);
        for c in &all[2..] {
            assert!((c.x - cx).hypot(c.y - cy) <= radius - c.extent() + 1e-9, "{:?} reaches past the beam", c);
        }
    }

    #[test]
    fn the_image_is_the_sum_of_its_components() {
        let side = 300;
        let sky = Sky {
            noise: Noise { sigma: 1e-9, profile: NoiseProfile::PrimaryBeam },
            ..survey(side, Population::survey(8), false)
        };
        let all = sky.components(2).unwrap();
        assert_eq!(all.len(), 2 + 8 + 2 + 2);
        let (quiet, _) = sky.render(&all, 1);
        for (i, &got) in quiet.iter().enumerate() {
            let (col, row) = (i % side, i / side);
            let reaches = |c: &&Component| c.span(c.x, side).contains(&col) && c.span(c.y, side).contains(&row);
            let want: f64 = all.iter().filter(reaches).map(|c| c.value(col as f64, row as f64)).sum();
            assert!((f64::from(got) - want).abs() <= 1e-6 * want.max(1.0), "({}, {}): {} vs {}", row, col, got, want);
        }
    }

    #[test]
    fn varying_noise_follows_the_primary_beam() {
        let side = 1024;
        let noise = Noise { sigma: 0.5, profile: NoiseProfile::PrimaryBeam };
        let (pixels, _) = render_noise(side, &[], &noise, false, 9);
        // By annulus 32 pixels wide: the pixels' σ against the model's (the root mean square of
        // σ(r) over the annulus), within 5 of the sample σ's standard errors, 1/√(2n).
        let ((cx, cy), beam_radius) = beam(side);
        let width = 32.0;
        let rings = ((side as f64 / std::f64::consts::SQRT_2) / width).ceil() as usize;
        let mut sums = vec![(0usize, 0.0f64, 0.0f64, 0.0f64); rings];
        for (i, &v) in pixels.iter().enumerate() {
            let (x, y) = ((i % side) as f64, (i / side) as f64);
            let ring = &mut sums[((x - cx).hypot(y - cy) / width) as usize];
            let sigma = noise.at(side, x, y);
            *ring = (ring.0 + 1, ring.1 + f64::from(v), ring.2 + f64::from(v).powi(2), ring.3 + sigma * sigma);
        }
        let mut checked = 0;
        for (ring, &(n, sum, squares, model)) in sums.iter().enumerate().filter(|(_, s)| s.0 >= 1000) {
            let n = n as f64;
            let measured = (squares / n - (sum / n).powi(2)).sqrt();
            let expected = (model / n).sqrt();
            let bar = 5.0 / (2.0 * n).sqrt();
            assert!((measured / expected - 1.0).abs() < bar, "ring {}: σ {} vs {}", ring, measured, expected);
            checked += 1;
        }
        assert!(checked >= 20, "{} rings", checked);
        // The model: σ at the centre, twice it on the beam's edge, four times in the corners.
        assert_eq!(noise.at(side, cx, cy), 0.5);
        assert!((noise.at(side, cx, cy + beam_radius) - 1.0).abs() < 1e-12);
        assert!((noise.at(side, cx + beam_radius, cy + beam_radius) - 2.0).abs() < 1e-12);
        assert!((survey(side, Population::lesson(0), false).noise_at_beam_edge() / NOISE - 2.0).abs() < 1e-12);
    }

    #[test]
    fn the_truth_has_the_lesson_columns_or_the_survey_ones() {
        let lesson = Sky { side: 256, population: Population::lesson(5), noise: Noise::constant(NOISE), blank: false };
        assert!(lesson.is_lesson());
        let all = lesson.components(4).unwrap();
        assert_eq!(lesson.truth_csv(&all), truth_csv(&all));
        assert_eq!(truth_csv(&all).lines().next(), Some("x,y,peak,flux,sigma,radius,kind"));
        let varying = Sky { noise: Noise { sigma: NOISE, profile: NoiseProfile::PrimaryBeam }, ..lesson };
        let text = varying.truth_csv(&all);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "x,y,peak,flux,sigma,radius,kind,major,minor,pa,noise");
        for (line, c) in lines[1..].iter().zip(&all) {
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields[..7].join(","), truth_csv(std::slice::from_ref(c)).lines().nth(1).unwrap());
            let numbers: Vec<f64> = fields[7..].iter().map(|f| f.parse().unwrap()).collect();
            assert_eq!(numbers, [FWHM * c.sigma, FWHM * c.sigma_minor, c.pa, varying.noise.at(256, c.x, c.y)]);
        }
    }
}
