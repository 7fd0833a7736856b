//! `host sources`: finds the sources of an image on the GPU (Aegean's and BANE's local
//! background, flooded islands and Gaussian fits, or the CuPy lesson's global pipeline), checks
//! them against the CPU where asked, and reports both.

use crate::data::timed;
use crate::fits;
use crate::gpu::{require, Gpu, GpuError, GpuResult};
use crate::io::{self, file_error, Image, ImageKind};
pub use radio::sources::*;

use catalog::Catalog;
use clip::Background;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use cuda_kernels::check::grouped;
pub use label::Connectivity;
use radio::wcs::Coordinates;
use rayon::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Options {
    /// The image: FITS (.fits, .fit, .fts) or a 2-D f32 .npy, by extension; NaN pixels are
    /// blanked and ignored.
    #[arg(long)]
    pub image: PathBuf,
    /// The FITS HDU holding the image, by index (0 is the primary) or EXTNAME [default: the
    /// first 2-D image].
    #[arg(long)]
    pub hdu: Option<fits::Hdu>,
    /// How to find the sources: `local` (BANE's background and noise maps, islands seeded at
    /// --seed-snr and flooded to --flood in local S/N, an elliptical Gaussian fitted per summit)
    /// or `lesson` (the CuPy lesson's global κσ clip and --threshold, islands measured).
    #[arg(long, value_parser = crate::registry::named::<Mode>(), default_value_t = Mode::Local)]
    pub mode: Mode,
    /// κ of the κσ clipping: each round keeps the pixels strictly inside median ± κσ (of the
    /// whole image in the lesson's mode, of each box of the background's grid in the local one).
    #[arg(long, default_value_t = 3.0, allow_negative_numbers = true)]
    pub kappa: f64,
    /// The lesson's mode: sources are pixels strictly above threshold·σ of the clipped
    /// background.
    #[arg(long, default_value_t = 5.0, allow_negative_numbers = true)]
    pub threshold: f64,
    /// The local mode: an island holds at least one pixel whose local S/N is above this (the
    /// seed; `--seed` is the random seed of every command).
    #[arg(long, default_value_t = local::SEED, allow_negative_numbers = true)]
    pub seed_snr: f64,
    /// The local mode: islands grow to every connected pixel whose local S/N is above this.
    #[arg(long, default_value_t = local::FLOOD, allow_negative_numbers = true)]
    pub flood: f64,
    /// The local mode: islands of fewer pixels are left out [default: a third of the beam's
    /// area, PyBDSF's `minpix_isl`].
    #[arg(long)]
    pub min_pixels: Option<usize>,
    /// The local mode: the background and noise maps once (BANE's), or again with the islands
    /// of the first left out, so that sources wider than the box stay out of the background.
    #[arg(long, value_parser = crate::registry::named::<local::Passes>(), default_value_t = local::Passes::Two)]
    pub background_passes: local::Passes,
    /// The local mode: the beam's FWHM in pixels, over BMAJ and BMIN in the header [default:
    /// the header's; without one, 2.35 pixels (σ 1) for the fits, and integrated fluxes as sums
    /// of pixels].
    #[arg(long, allow_negative_numbers = true)]
    pub beam: Option<f64>,
    /// The local mode: pixels between the background's grid points [default: 4 beams, or 16
    /// without a beam in the header, as BANE].
    #[arg(long)]
    pub step: Option<usize>,
    /// The local mode: pixels a side of each grid point's box [default: 6 steps].
    #[arg(long = "box")]
    pub box_size: Option<usize>,
    /// Pixels touching at an edge (4, SciPy's default) or also at a corner (8) are one source
    /// (one island in the local mode).
    #[arg(long, value_parser = crate::registry::named::<Connectivity>(), default_value_t = Connectivity::Four)]
    pub connectivity: Connectivity,
    /// The catalog as CSV [default: `<image stem>-sources.csv` beside the image]; with --json
    /// also as JSON beside it (`.json`).
    #[arg(long)]
    pub catalog: Option<PathBuf>,
    /// The catalog as a VOTable 1.4 (astropy, TOPCAT), with the same columns as the CSV.
    #[arg(long)]
    pub votable: Option<PathBuf>,
    /// The sources as a ds9 region file: in the image's sky frame (fk5, icrs, galactic, …)
    /// where its header has a celestial WCS, else in image coordinates.
    #[arg(long)]
    pub regions: Option<PathBuf>,
    /// A PNG of the image (asinh scale, row 0 at the top) with each fitted source's ellipse,
    /// and every other source circled.
    #[arg(long)]
    pub overlay: Option<PathBuf>,
    /// The label image as a 2-D int32 .npy (`scipy.ndimage.label`'s output; in the local
    /// mode, every island above the flood).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// The local mode: the image less the fitted Gaussians, as an image (FITS, .npy or PNG, by
    /// extension).
    #[arg(long)]
    pub residual: Option<PathBuf>,
    /// The local mode: the background map, as an image.
    #[arg(long)]
    pub background_map: Option<PathBuf>,
    /// The local mode: the noise map, as an image.
    #[arg(long)]
    pub noise_map: Option<PathBuf>,
    /// Runs on the CPU only (no GPU needed): the definitions the GPU is checked against.
    #[arg(long)]
    pub cpu: bool,
    /// Runs the GPU pipeline this many times on the uploaded image; each stage's time is the
    /// median.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Checks the GPU's results against the CPU's [the lesson's mode's default; the local
    /// mode's CPU reference takes seconds on a survey image, so it runs when asked].
    #[arg(long, conflicts_with = "no_check")]
    pub check: bool,
    /// Skips checking the GPU's results against the CPU's.
    #[arg(long)]
    pub no_check: bool,
    /// Scores the catalog against a `host sky` truth CSV: completeness, reliability and
    /// position and flux errors per S/N bin.
    #[arg(long)]
    pub truth: Option<PathBuf>,
}

impl Options {
    /// Whether the GPU's results are checked against the CPU's: `--check`, `--no-check`, else
    /// the mode's default (the lesson's checks, the local mode does not); never with `--cpu`.
    pub fn checks(&self) -> bool {
        !self.cpu && (self.check || (!self.no_check && self.mode == Mode::Lesson))
    }
}

/// What the local mode used and found, beside the summary's common facts.
#[derive(Debug, Clone, Serialize)]
pub struct LocalSummary {
    pub settings: local::Settings,
    /// Where the beam came from.
    pub beam: String,
    /// The grid's noise σ: least, median, largest.
    pub noise: Option<(f64, f64, f64)>,
    /// Islands above the flood level, and those with a seed.
    pub flooded: usize,
    pub seeded: usize,
    /// Components fitted…
    pub components: usize,
    /// …of which so many ended at the fit's floor and were left out of the catalog.
    pub floored: usize,
    /// Islands by the flags of their fits.
    pub flags: Vec<(&'static str, usize)>,
}

/// What `host sources` did and found (`--json` prints it; the JSON catalog adds the sources).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub image: String,
    pub width: usize,
    pub height: usize,
    /// "CPU", or the GPU's name.
    pub device: String,
    pub mode: Mode,
    pub settings: Settings,
    pub nan_pixels: usize,
    /// The lesson's mode: the clipped background, and the level a pixel of a source exceeds.
    pub background: Option<Background>,
    pub level: Option<f64>,
    /// The local mode's settings and findings.
    pub local: Option<LocalSummary>,
    /// Pixels of the sources' islands (above the threshold, or the flood).
    pub detected_pixels: usize,
    /// The catalog's rows: islands in the lesson's mode, fitted components (and the islands no
    /// fit gave one) in the local one.
    pub sources: usize,
    /// Each stage's wall time, reading and writing included; on the GPU the median of `runs`.
    pub stages: Vec<Stage>,
    pub runs: u32,
    /// On the GPU, from the first step to the last: the median over `runs` of the pipeline's
    /// own time, the image already on the GPU (what the lesson times of CuPy).
    pub pipeline_ms: Option<f64>,
    /// From the file to the catalog written: the sum of the stages up to the catalog's (on the
    /// GPU, the pipeline's the medians of `runs`), less the copies back (for the checks and the
    /// labels' file) and the CPU reference. Opening the GPU (its context, the kernels' module)
    /// is not in it: a survey opens it once for all its images.
    pub file_to_catalog_ms: f64,
    /// The GPU's results against the CPU's (empty when not checked).
    pub checks: Vec<Agreement>,
    /// Why the GPU's results were not checked against the CPU's, when they were not.
    pub unchecked: Option<String>,
    /// Where the positions come from: the WCS's frame and projection, or why they are pixels.
    pub coordinates: String,
    pub catalog: String,
    pub catalog_json: Option<String>,
    pub votable: Option<String>,
    pub regions: Option<String>,
    pub overlay: Option<String>,
    pub labels: Option<String>,
    pub residual: Option<String>,
    pub background_map: Option<String>,
    pub noise_map: Option<String>,
    /// The catalog against `--truth`, where given.
    pub score: Option<score::Score>,
}

/// The JSON catalog of the lesson's mode: the summary's facts and every island.
#[derive(Serialize)]
struct CatalogJson<'a> {
    image: &'a str,
    width: usize,
    height: usize,
    settings: &'a Settings,
    nan_pixels: usize,
    background: &'a Background,
    level: f64,
    sources: Vec<catalog::JsonItem>,
}

/// The JSON catalog of the local mode: its settings and every row of the catalog.
#[derive(Serialize)]
struct LocalCatalogJson<'a> {
    image: &'a str,
    width: usize,
    height: usize,
    mode: Mode,
    settings: &'a local::Settings,
    nan_pixels: usize,
    sources: Vec<catalog::JsonItem>,
}

fn right(text: String) -> Cell {
    Cell::new(text).set_alignment(CellAlignment::Right)
}

impl Summary {
    /// The checks that failed, by name; `None` when all passed.
    pub fn failed(&self) -> Option<String> {
        let failed: Vec<&str> = self.checks.iter().filter(|c| !c.passed).map(|c| c.what.as_str()).collect();
        (!failed.is_empty()).then(|| failed.join(", "))
    }

    pub fn print(&self) {
        println!(
            "sources in {} ({}x{}), on the {}, {} mode",
            self.image, self.width, self.height, self.device, self.mode
        );
        let mut table = Table::new();
        let header = if self.runs > 1 { format!("ms (median of {})", self.runs) } else { "ms".into() };
        table.load_preset(UTF8_FULL_CONDENSED).set_header(["stage".to_string(), header]);
        for stage in &self.stages {
            table.add_row([Cell::new(stage.name), right(format!("{:.3}", stage.ms))]);
        }
        if let Some(ms) = self.pipeline_ms {
            table.add_row([Cell::new("GPU pipeline, first step to last"), right(format!("{:.3}", ms))]);
        }
        table.add_row([Cell::new("file to catalog"), right(format!("{:.3}", self.file_to_catalog_ms))]);
        println!("{}", table);
        println!("NaN pixels ignored: {}", grouped(self.nan_pixels as u64));
        if let (Some(b), Some(level)) = (&self.background, self.level) {
            println!(
                "background: median {:.5e}, σ {:.5e} after {} clipping rounds at κ {} ({} pixels kept)",
                b.median,
                b.sigma,
                b.rounds,
                self.settings.kappa,
                grouped(b.kept as u64)
            );
            println!(
                "detection: {} pixels above {}σ = {:.5e}, {}-connected",
                grouped(self.detected_pixels as u64),
                self.settings.threshold,
                level,
                self.settings.connectivity.neighbours()
            );
        }
        if let Some(local) = &self.local {
            let s = &local.settings;
            let p = &s.params;
            println!(
                "background: σ-clipped median and σ in {}×{}-pixel boxes every {}×{} pixels, up to {} clipping rounds at κ {}; beam {:.3} pixels FWHM ({})",
                p.box_size.1, p.box_size.0, p.step.1, p.step.0, p.rounds, p.kappa, s.beam.fwhm, local.beam
            );
            if let Some((least, median, most)) = local.noise {
                println!("noise σ: {:.5e} to {:.5e}, median {:.5e}", least, most, median);
            }
            println!(
                "detection: {} pixels above the flood, {}σ local, in {} islands; {} with a seed above {}σ, {}-connected",
                grouped(self.detected_pixels as u64),
                s.flood,
                grouped(local.flooded as u64),
                grouped(local.seeded as u64),
                s.seed,
                s.connectivity.neighbours()
            );
            let flags: Vec<String> = local.flags.iter().map(|(name, n)| format!("{} {}", name, n)).collect();
            println!(
                "fits: {} components in {} islands, {} at the peak's floor left out; islands flagged: {}",
                grouped(local.components as u64),
                grouped(local.seeded as u64),
                grouped(local.floored as u64),
                if flags.is_empty() { "none".to_string() } else { flags.join(", ") }
            );
        }
        println!("{} source{}", grouped(self.sources as u64), if self.sources == 1 { "" } else { "s" });
        println!("coordinates: {}", self.coordinates);
        if let Some(why) = &self.unchecked {
            println!("{}", why);
        }
        if !self.checks.is_empty() {
            let mut table = Table::new();
            table.load_preset(UTF8_FULL_CONDENSED).set_header(["GPU vs CPU", "GPU / CPU or worst", "bar", "check"]);
            for c in &self.checks {
                let label = if c.passed { "PASS" } else { "FAIL" };
                table.add_row([Cell::new(&c.what), right(c.found.clone()), right(c.bar.clone()), Cell::new(label)]);
            }
            println!("{}", table);
        }
        let written = [
            Some(&self.catalog),
            self.catalog_json.as_ref(),
            self.votable.as_ref(),
            self.regions.as_ref(),
            self.overlay.as_ref(),
            self.labels.as_ref(),
            self.residual.as_ref(),
            self.background_map.as_ref(),
            self.noise_map.as_ref(),
        ];
        for path in written.into_iter().flatten() {
            println!("wrote {}", path);
        }
        if let Some(score) = &self.score {
            println!("{}", score);
        }
    }
}

/// The median of `values` (not empty).
fn median_of(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The stages of `runs` (each with the same stages), each the median of its times.
fn median_stages(runs: &[Vec<Stage>]) -> Vec<Stage> {
    runs.first()
        .map(|first| {
            let at = |i: usize| median_of(runs.iter().map(|r| r[i].ms).collect());
            first.iter().enumerate().map(|(i, stage)| Stage { name: stage.name, ms: at(i) }).collect()
        })
        .unwrap_or_default()
}

/// Runs the pipeline on the GPU `runs` times; the result of the last, each stage's time the
/// median, and the median total. Copies the labels back when `labels`.
fn run_on_gpu(image: &Image, settings: &Settings, runs: u32, labels: bool) -> GpuResult<(Found, String, f64)> {
    let gpu = Gpu::new()?;
    let (pipeline, upload_ms) = timed(|| gpu::Pipeline::new(&gpu, image));
    let pipeline = pipeline?;
    let mut found = pipeline.runs(image, settings, runs as usize)?;
    let totals = found.iter().map(Found::total_ms).collect();
    let mut stages = vec![Stage { name: "upload", ms: upload_ms }];
    stages.extend(median_stages(&found.iter().map(|f| f.stages.clone()).collect::<Vec<_>>()));
    let mut last = found.pop().ok_or_else(|| GpuError::InvalidInput("the pipeline needs at least 1 run".into()))?;
    if labels {
        let (copied, ms) = timed(|| pipeline.labels());
        last.labels = copied?;
        stages.push(Stage { name: "labels copied back", ms });
    }
    last.stages = stages;
    Ok((last, gpu.info().name.clone(), median_of(totals)))
}

/// The local mode on the GPU, `runs` times: the result of the last (with what `copy` asks
/// copied back), each stage's time the median, and the median total.
fn run_local_on_gpu(
    image: &Image,
    settings: &local::Settings,
    runs: u32,
    copy: local::gpu::CopyBack,
) -> GpuResult<(local::Found, String, f64)> {
    let gpu = Gpu::new()?;
    let (pipeline, upload_ms) = timed(|| local::gpu::Pipeline::new(&gpu, image));
    let pipeline = pipeline?;
    let mut found = pipeline.runs(image, settings, runs as usize, copy)?;
    // The copies back are the last run's alone, and not the pipeline's.
    let copied = |f: &local::Found| f.stages.iter().filter(|s| !s.name.ends_with("copied back")).cloned().collect();
    let pipelines: Vec<Vec<Stage>> = found.iter().map(copied).collect();
    let totals = pipelines.iter().map(|stages| stages.iter().map(|s| s.ms).sum()).collect();
    let mut last = found.pop().ok_or_else(|| GpuError::InvalidInput("the pipeline needs at least 1 run".into()))?;
    let mut stages = vec![Stage { name: "upload", ms: upload_ms }];
    stages.extend(median_stages(&pipelines));
    stages.extend(last.stages.iter().filter(|s| s.name.ends_with("copied back")).cloned());
    last.stages = stages;
    Ok((last, gpu.info().name.clone(), median_of(totals)))
}

/// Whether a stage is not on the way from the file to the catalog: a copy back (for the checks
/// or the labels' file), or the CPU reference.
fn off_the_catalogs_path(stage: &str) -> bool {
    stage.ends_with("copied back") || stage == CPU_REFERENCE
}

/// The stage of the CPU reference that the GPU's results are checked against.
const CPU_REFERENCE: &str = "CPU reference, for the checks";

/// `--catalog`, or `<image stem>-sources.csv` beside the image.
pub fn catalog_path(image: &Path, catalog: Option<&Path>) -> PathBuf {
    catalog.map(Path::to_path_buf).unwrap_or_else(|| {
        let stem = image.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        image.with_file_name(format!("{}-sources.csv", stem))
    })
}

/// The image at `path` and, for FITS, the header of the HDU it came from (`hdu`, or the first
/// 2-D image); `--hdu` on another format is an error.
fn read_image(path: &Path, hdu: Option<&fits::Hdu>) -> GpuResult<(Image, Option<fits::Header>)> {
    if ImageKind::of(path) == ImageKind::Fits {
        let (image, header) = fits::read_image_and_header(path, hdu)?;
        return Ok((image, Some(header)));
    }
    require(hdu.is_none(), || format!("--hdu names an HDU of a FITS file; {} is not one", path.display()))?;
    Ok((io::read_image(path)?, None))
}

/// Where the positions of `image` come from, and its unit (BUNIT): a FITS header's celestial
/// WCS, or pixels with the reason. A broken WCS is an error naming the image.
fn coordinates_of(image: &Path, header: Option<&fits::Header>) -> GpuResult<(Coordinates, Option<String>)> {
    let Some(header) = header else {
        return Ok((Coordinates::Pixels("the image has no header (not FITS)".into()), None));
    };
    let coordinates = Coordinates::from_header(header).map_err(|reason| file_error(image, reason))?;
    let unit = match header.value("BUNIT") {
        Some(fits::Value::Text(unit)) => Some(unit.clone()),
        _ => None,
    };
    Ok((coordinates, unit))
}

/// An error about the image's pixels names the image.
fn about(image: &Path, error: GpuError) -> GpuError {
    match error {
        GpuError::InvalidInput(reason) => file_error(image, reason),
        other => other,
    }
}

/// The local mode's settings for `options` and the image's `header`, and where the beam came
/// from.
fn local_settings(options: &Options, header: Option<&fits::Header>) -> GpuResult<(local::Settings, String)> {
    let beam = match header {
        Some(header) => local::beam_of(header).map_err(|reason| file_error(&options.image, reason))?,
        None => None,
    };
    let width = local::beam_width(beam.as_ref(), options.beam)?;
    let from = match (options.beam, beam) {
        (Some(_), _) => "given".to_string(),
        (None, Some(_)) => "BMAJ and BMIN".to_string(),
        (None, None) => "assumed: no beam in the header; integrated fluxes are sums of pixels".to_string(),
    };
    let params = local::grid(&width, options.step, options.box_size, options.kappa)?;
    let settings = local::Settings {
        seed: options.seed_snr,
        flood: options.flood,
        connectivity: options.connectivity,
        params,
        beam: width,
        passes: options.background_passes,
        min_pixels: options.min_pixels.unwrap_or_else(|| local::min_pixels(&width)),
    };
    settings.check()?;
    Ok((settings, from))
}

/// What one mode found, as the rest of the run needs it.
struct Outcome {
    device: String,
    pipeline_ms: Option<f64>,
    nan_pixels: usize,
    detected_pixels: usize,
    rows: Vec<catalog::Row>,
    checks: Vec<Agreement>,
    /// The noise σ of a truth without a noise column.
    noise: f64,
    /// What a row's integrated flux is multiplied by to be a sum of pixels, as the truth's.
    to_pixel_sums: f64,
    through_beam: bool,
    scale: overlay::Scale,
    marks: Vec<overlay::Mark>,
    findings: Findings,
    stages: Vec<Stage>,
}

/// What a mode found beyond the catalog's rows, for its JSON, its labels and its images.
enum Findings {
    Lesson(Found),
    Local(Box<local::Found>, LocalSummary),
}

/// The lesson's mode on `image`.
fn lesson(options: &Options, settings: &Settings, image: &Image) -> GpuResult<Outcome> {
    let about_image = |e| about(&options.image, e);
    let mut stages = Vec::new();
    let (found, device, pipeline_ms) = if options.cpu {
        (find(image, settings).map_err(about_image)?, "CPU".to_string(), None)
    } else {
        let labels = options.labels.is_some() || options.checks();
        let (found, device, total) = run_on_gpu(image, settings, options.runs, labels).map_err(about_image)?;
        (found, device, Some(total))
    };
    stages.extend(found.stages.iter().cloned());
    let checks = if options.checks() {
        let (cpu, ms) = timed(|| find(image, settings));
        stages.push(Stage { name: CPU_REFERENCE, ms });
        compare(&found, &cpu.map_err(about_image)?)
    } else {
        Vec::new()
    };
    let rows = catalog::rows(&found.sources, found.background.sigma);
    Ok(Outcome {
        device,
        pipeline_ms,
        nan_pixels: found.nan_pixels,
        detected_pixels: found.detected_pixels,
        rows,
        checks,
        noise: found.background.sigma,
        to_pixel_sums: 1.0,
        through_beam: true,
        scale: (&found.background).into(),
        marks: overlay::circles(&found.sources),
        findings: Findings::Lesson(found),
        stages,
    })
}

/// The local mode on `image` with `settings`.
fn local_mode(options: &Options, settings: &local::Settings, from: String, image: &Image) -> GpuResult<Outcome> {
    let about_image = |e| about(&options.image, e);
    let mut stages = Vec::new();
    let maps_wanted = options.background_map.is_some() || options.noise_map.is_some();
    let (found, device, pipeline_ms) = if options.cpu {
        (local::find(image, settings).map_err(about_image)?, "CPU".to_string(), None)
    } else {
        let copy = local::gpu::CopyBack {
            maps: maps_wanted || options.checks(),
            labels: options.labels.is_some() || options.checks(),
        };
        let (found, device, total) = run_local_on_gpu(image, settings, options.runs, copy).map_err(about_image)?;
        (found, device, Some(total))
    };
    stages.extend(found.stages.iter().cloned());
    let checks = if options.checks() {
        let (cpu, ms) = timed(|| local::find(image, settings));
        stages.push(Stage { name: CPU_REFERENCE, ms });
        local::compare(&found, &cpu.map_err(about_image)?)
    } else {
        Vec::new()
    };
    let ((rows, floored), ms) = timed(|| local::rows(image, settings, &found));
    stages.push(Stage { name: "catalog rows", ms });
    let (background, noise) = found.medians().unwrap_or((0.0, 1.0));
    let summary = LocalSummary {
        settings: *settings,
        beam: from,
        noise: found.noise_range(),
        flooded: found.flooded,
        seeded: found.islands.len(),
        components: found.fits.iter().map(|f| f.components.len()).sum(),
        floored,
        flags: found.flag_counts(),
    };
    Ok(Outcome {
        device,
        pipeline_ms,
        nan_pixels: found.nan_pixels,
        detected_pixels: found.flooded_pixels,
        marks: overlay::marks(&rows),
        rows,
        checks,
        noise,
        to_pixel_sums: settings.beam.area(),
        through_beam: settings.beam.known,
        scale: overlay::Scale { median: background, sigma: noise },
        findings: Findings::Local(Box::new(found), summary),
        stages,
    })
}

/// Checks `options`, reads the image and its WCS, finds its sources, and writes the catalog
/// (CSV; JSON when `json`; VOTable and ds9 regions when asked), the overlay and the maps.
pub fn run(options: &Options, json: bool) -> GpuResult<Summary> {
    let settings = Settings { kappa: options.kappa, threshold: options.threshold, connectivity: options.connectivity };
    settings.check()?;
    // The local mode's levels are checked whatever the mode, as the lesson's are.
    local::check_levels(options.seed_snr, options.flood)?;
    let catalog = catalog_path(&options.image, options.catalog.as_deref());
    let catalog_json = json.then(|| catalog.with_extension("json"));
    let local_outputs = [
        ("--residual", options.residual.as_deref()),
        ("--background-map", options.background_map.as_deref()),
        ("--noise-map", options.noise_map.as_deref()),
    ];
    if options.mode == Mode::Lesson {
        if let Some((name, _)) = local_outputs.iter().find(|(_, path)| path.is_some()) {
            return Err(GpuError::InvalidInput(format!(
                "{} is the local mode's (the lesson's mode has no maps and fits nothing)",
                name
            )));
        }
    }
    let outputs: Vec<(&str, &Path)> = [
        ("--catalog", Some(catalog.as_path())),
        ("the JSON catalog", catalog_json.as_deref()),
        ("--votable", options.votable.as_deref()),
        ("--regions", options.regions.as_deref()),
        ("--overlay", options.overlay.as_deref()),
        ("--labels", options.labels.as_deref()),
    ]
    .into_iter()
    .chain(local_outputs)
    .filter_map(|(name, path)| path.map(|p| (name, p)))
    .collect();
    for (i, &(name, path)) in outputs.iter().enumerate() {
        require(path != options.image, || format!("{} must not overwrite the image", name))?;
        if let Some(&(other, _)) = outputs[..i].iter().find(|(_, p)| *p == path) {
            return Err(GpuError::InvalidInput(format!("{} and {} name the same file", other, name)));
        }
    }
    if let Some(overlay) = &options.overlay {
        if ImageKind::of(overlay) != ImageKind::Png {
            return Err(file_error(overlay, "the overlay is written as a PNG (name it .png)"));
        }
    }
    if let Some(labels) = &options.labels {
        if labels.extension().is_none_or(|e| e != "npy") {
            return Err(file_error(labels, "the labels are written as a .npy array (name it .npy)"));
        }
    }

    let mut stages = Vec::new();
    let (read, ms) = timed(|| read_image(&options.image, options.hdu.as_ref()));
    let (image, header) = read?;
    stages.push(Stage { name: "read", ms });
    let (coordinates, ms) = timed(|| coordinates_of(&options.image, header.as_ref()));
    let (coordinates, unit) = coordinates?;
    stages.push(Stage { name: "WCS", ms });
    check_shape(&image).map_err(|e| about(&options.image, e))?;
    let outcome = match options.mode {
        Mode::Lesson => lesson(options, &settings, &image)?,
        Mode::Local => {
            let (local_settings, from) = local_settings(options, header.as_ref())?;
            local_mode(options, &local_settings, from, &image)?
        }
    };
    stages.extend(outcome.stages.iter().cloned());
    let image_name = options.image.display().to_string();
    let described = coordinates.describe();

    let score = match &options.truth {
        Some(path) => Some(score_against(path, &outcome.rows, outcome.noise, outcome.to_pixel_sums)?),
        None => None,
    };
    let rows = outcome.rows;
    let sources = rows.len();
    let (written, ms) = timed(|| -> GpuResult<()> {
        let mut table = Catalog::new(&image_name, coordinates, unit.as_deref(), rows);
        if !outcome.through_beam {
            table = table.in_pixel_sums();
        }
        let table = &table;
        let json = || -> GpuResult<()> {
            let Some(path) = &catalog_json else { return Ok(()) };
            match &outcome.findings {
                Findings::Lesson(found) => {
                    let document = CatalogJson {
                        image: &image_name,
                        width: image.width,
                        height: image.height,
                        settings: &settings,
                        nan_pixels: found.nan_pixels,
                        background: &found.background,
                        level: found.level,
                        sources: catalog::json_items(path, &found.sources)?,
                    };
                    catalog::write_json(path, &document)
                }
                Findings::Local(_, summary) => {
                    let document = LocalCatalogJson {
                        image: &image_name,
                        width: image.width,
                        height: image.height,
                        mode: Mode::Local,
                        settings: &summary.settings,
                        nan_pixels: outcome.nan_pixels,
                        sources: catalog::json_items(path, &table.rows)?,
                    };
                    catalog::write_json(path, &document)
                }
            }
        };
        let labels = || -> GpuResult<()> {
            let Some(path) = &options.labels else { return Ok(()) };
            let labels = match &outcome.findings {
                Findings::Lesson(found) => &found.labels,
                Findings::Local(found, _) => &found.labels,
            };
            catalog::write_labels(path, image.width, image.height, labels)
        };
        let optional = |path: &Option<PathBuf>, write: fn(&Catalog, &Path) -> GpuResult<()>| -> GpuResult<()> {
            path.as_deref().map_or(Ok(()), |path| write(table, path))
        };
        // The files at once: each is formatted on a thread of its own.
        let writes: [&(dyn Fn() -> GpuResult<()> + Sync); 5] = [
            &|| table.write_csv(&catalog),
            &|| optional(&options.votable, Catalog::write_votable),
            &|| optional(&options.regions, Catalog::write_regions),
            &json,
            &labels,
        ];
        writes.par_iter().map(|write| write()).collect::<GpuResult<Vec<()>>>()?;
        Ok(())
    });
    written?;
    stages.push(Stage { name: "catalog", ms });
    let file_to_catalog_ms = stages.iter().filter(|s| !off_the_catalogs_path(s.name)).map(|s| s.ms).sum();
    if let Findings::Local(found, _) = &outcome.findings {
        let (written, ms) = timed(|| write_local_images(options, &image, header.as_ref(), found));
        written?;
        if options.residual.is_some() || options.background_map.is_some() || options.noise_map.is_some() {
            stages.push(Stage { name: "residual and maps", ms });
        }
    }
    if let Some(path) = &options.overlay {
        let (written, ms) = timed(|| overlay::write_marks(path, &image, outcome.scale, &outcome.marks));
        written?;
        stages.push(Stage { name: "overlay", ms });
    }

    let unchecked = if options.cpu || options.checks() {
        None
    } else if options.no_check {
        Some("not checked against the CPU (--no-check)".to_string())
    } else {
        Some("not checked against the CPU: --check runs the CPU reference and compares".to_string())
    };
    let shown = |path: &Option<PathBuf>| path.as_ref().map(|p| p.display().to_string());
    let (background, level, local) = match outcome.findings {
        Findings::Lesson(found) => (Some(found.background), Some(found.level), None),
        Findings::Local(_, summary) => (None, None, Some(summary)),
    };
    Ok(Summary {
        image: image_name,
        width: image.width,
        height: image.height,
        device: outcome.device,
        mode: options.mode,
        settings,
        nan_pixels: outcome.nan_pixels,
        background,
        level,
        local,
        detected_pixels: outcome.detected_pixels,
        sources,
        stages,
        runs: if options.cpu { 1 } else { options.runs },
        pipeline_ms: outcome.pipeline_ms,
        file_to_catalog_ms,
        checks: outcome.checks,
        unchecked,
        coordinates: described,
        catalog: catalog.display().to_string(),
        catalog_json: catalog_json.map(|p| p.display().to_string()),
        votable: shown(&options.votable),
        regions: shown(&options.regions),
        overlay: shown(&options.overlay),
        labels: shown(&options.labels),
        residual: shown(&options.residual),
        background_map: shown(&options.background_map),
        noise_map: shown(&options.noise_map),
        score,
    })
}

impl Options {
    /// What `host sources --image image` runs with: every other option at its default (clap's,
    /// so that there is one place for them).
    pub fn defaults(image: &Path) -> GpuResult<Self> {
        use clap::{Args, FromArgMatches};
        let args = [std::ffi::OsStr::new("sources"), std::ffi::OsStr::new("--image"), image.as_os_str()];
        let matches = Self::augment_args(clap::Command::new("sources"))
            .try_get_matches_from(args)
            .map_err(|e| GpuError::InvalidInput(e.to_string()))?;
        Self::from_arg_matches(&matches).map_err(|e| GpuError::InvalidInput(e.to_string()))
    }
}

/// One image's catalog, as `host survey` writes it.
#[derive(Debug, Clone, Serialize)]
pub struct Cataloged {
    pub image: PathBuf,
    pub catalog: PathBuf,
    pub sources: usize,
    /// The catalog's CSV text, for a merged catalog.
    #[serde(skip)]
    pub csv: String,
    /// From reading the image to writing its catalog.
    pub ms: f64,
}

/// An image read for [`catalog_of`]: its pixels, its FITS header, and how long the read took.
pub struct ReadImage {
    image: Image,
    header: Option<fits::Header>,
    ms: f64,
}

/// Reads the image of `options` (and its header, where it is FITS) for [`catalog_of`]: `host
/// survey` reads an image while its GPU finds the sources of the one before.
pub fn read_for_catalog(options: &Options) -> GpuResult<ReadImage> {
    let start = std::time::Instant::now();
    let (image, header) = read_image(&options.image, options.hdu.as_ref())?;
    Ok(ReadImage { image, header, ms: start.elapsed().as_secs_f64() * 1e3 })
}

/// The local mode on the image `read` from `options.image`, with `gpu`, once and unchecked, its
/// catalog's CSV written (at `--catalog`, or beside the image): what `host survey` runs for each
/// image, with one `gpu` for many images. The other outputs of `host sources` are not written.
pub fn catalog_of(gpu: &Gpu, options: &Options, read: ReadImage) -> GpuResult<Cataloged> {
    let start = std::time::Instant::now();
    let ReadImage { image, header, ms: read_ms } = read;
    let (coordinates, unit) = coordinates_of(&options.image, header.as_ref())?;
    check_shape(&image).map_err(|e| about(&options.image, e))?;
    let (settings, _) = local_settings(options, header.as_ref())?;
    let found = local::gpu::Pipeline::new(gpu, &image)
        .and_then(|pipeline| pipeline.find(&image, &settings, local::gpu::CopyBack::default()))
        .map_err(|e| about(&options.image, e))?;
    let (rows, _) = local::rows(&image, &settings, &found);
    let sources = rows.len();
    let mut table = Catalog::new(&options.image.display().to_string(), coordinates, unit.as_deref(), rows);
    if !settings.beam.known {
        table = table.in_pixel_sums();
    }
    let csv = table.csv();
    let catalog = catalog_path(&options.image, options.catalog.as_deref());
    require(catalog != options.image, || "--catalog must not overwrite the image".to_string())?;
    io::write_text(&catalog, &csv)?;
    let ms = read_ms + start.elapsed().as_secs_f64() * 1e3;
    Ok(Cataloged { image: options.image.clone(), catalog, sources, csv, ms })
}

/// Writes the local mode's images that `options` asks for: the residual, the background and
/// the noise maps, each FITS one with the sky coordinates, beam and unit of the image's
/// `header`.
fn write_local_images(
    options: &Options,
    image: &Image,
    header: Option<&fits::Header>,
    found: &local::Found,
) -> GpuResult<()> {
    let cards = header.map(fits::Header::celestial_cards).unwrap_or_default();
    if let Some(path) = &options.residual {
        io::write_image_with(path, image.width, image.height, &local::residual(image, &found.fits), &cards)?;
    }
    let maps = [(&options.background_map, "background"), (&options.noise_map, "noise")];
    for (path, which) in maps {
        let Some(path) = path else { continue };
        let Some(maps) = &found.maps else {
            return Err(GpuError::InvalidInput(format!("the {} map was not copied back", which)));
        };
        let map = if which == "background" { &maps.background } else { &maps.noise };
        let pixels =
            map.as_slice().ok_or_else(|| GpuError::InvalidInput(format!("the {} map is not row-major", which)))?;
        io::write_image_with(path, image.width, image.height, pixels, &cards)?;
    }
    Ok(())
}

/// `rows` scored against the truth CSV at `path`. A lesson sky's truth has no noise column: its
/// σ is `sigma`. A row's flux is its integrated flux times `to_pixel_sums` (the beam's area,
/// in pixels, for a flux in Jy) where it has one, else its island's sum: the truth's fluxes are
/// sums of pixels.
fn score_against(path: &Path, rows: &[catalog::Row], sigma: f64, to_pixel_sums: f64) -> GpuResult<score::Score> {
    let truth = score::read_truth(path, Some(sigma))?;
    let detections: Vec<score::Detection> = rows
        .iter()
        .map(|row| score::Detection {
            x: row.x.value,
            y: row.y.value,
            peak: row.peak.map_or(f64::NAN, |p| p.value),
            flux: match (row.integrated, row.measures) {
                (Some(integrated), _) => integrated.value * to_pixel_sums,
                (None, Some(island)) => island.sum,
                (None, None) => f64::NAN,
            },
            snr: row.snr(),
        })
        .collect();
    score::score(&truth, &detections, &score::ScoreOptions::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sky::{self, Kind};
    use measure::Source;
    use test_support::{error_of, scratch};

    const NOISE: f64 = 0.0133;
    const DEFAULTS: Settings = Settings::LESSON;

    /// A `side`² synthetic sky with `points` point sources, as `host sky` draws it.
    fn synthetic(side: usize, points: usize, blank: bool, seed: u64) -> (Image, Vec<sky::Component>, usize) {
        let components = sky::components(side, points, blank, seed).unwrap();
        let (pixels, blanked) = sky::render(side, &components, NOISE, blank, seed ^ 1);
        (Image { width: side, height: side, pixels }, components, blanked)
    }

    #[test]
    fn finds_every_point_source_of_the_synthetic_sky() {
        for (blank, connectivity) in
            [(false, Connectivity::Four), (true, Connectivity::Four), (false, Connectivity::Eight)]
        {
            let (image, components, blanked) = synthetic(512, 12, blank, 7);
            let found = find(&image, &Settings { connectivity, ..DEFAULTS }).unwrap();
            let what = format!("blank {}, {:?}", blank, connectivity);
            assert_eq!(found.nan_pixels, blanked, "{}", what);
            assert_eq!(blanked > 0, blank);
            // Clipping at 3σ trims the noise's own tails too: σ comes out about 1.5% low.
            let sigma = found.background.sigma;
            assert!((sigma / NOISE - 1.0).abs() < 0.03, "{}: σ {}", what, sigma);
            assert!(found.background.median.abs() < 0.05 * NOISE, "{}: {:?}", what, found.background);
            assert_eq!(found.level, 5.0 * sigma);
            for point in components.iter().filter(|c| c.kind == Kind::Point) {
                let near: Vec<&Source> =
                    found.sources.iter().filter(|s| (s.x - point.x).hypot(s.y - point.y) < 0.5).collect();
                assert_eq!(near.len(), 1, "{}: {:?} among {:?}", what, point, found.sources);
                assert!(near[0].peak > found.level && near[0].flux > 0.0);
            }
            // The labels and the sources agree: every label is a source, with its pixels.
            let mut counts = vec![0usize; found.sources.len() + 1];
            found.labels.iter().for_each(|&l| counts[l as usize] += 1);
            let sizes: Vec<usize> = found.sources.iter().map(|s| s.pixels).collect();
            assert_eq!(counts[1..], sizes[..], "{}", what);
            assert_eq!(sizes.iter().sum::<usize>(), found.detected_pixels);
            let names: Vec<&str> = found.stages.iter().map(|s| s.name).collect();
            assert_eq!(names, ["NaN compaction", "κσ clipping", "threshold", "labeling", "measures"]);
        }
    }

    #[test]
    fn blanked_pixels_change_nothing_but_their_count() {
        // The same pixels with a NaN border added: the same background and sources, moved by
        // the border.
        let (image, _, _) = synthetic(256, 6, false, 3);
        let side = image.width + 2;
        let mut framed = vec![f32::NAN; side * side];
        for (row, values) in image.pixels.chunks(image.width).enumerate() {
            framed[(row + 1) * side + 1..][..image.width].copy_from_slice(values);
        }
        let plain = find(&image, &DEFAULTS).unwrap();
        let blanked = find(&Image { width: side, height: side, pixels: framed }, &DEFAULTS).unwrap();
        assert_eq!(blanked.nan_pixels, 4 * side - 4);
        assert_eq!(blanked.background, plain.background);
        assert_eq!(blanked.sources.len(), plain.sources.len());
        for (b, p) in blanked.sources.iter().zip(&plain.sources) {
            assert_eq!((b.label, b.flux, b.pixels), (p.label, p.flux, p.pixels));
            assert!((b.x - 1.0 - p.x).abs() < 1e-9 && (b.y - 1.0 - p.y).abs() < 1e-9);
        }
    }

    #[test]
    fn bad_images_and_settings_are_clear_errors() {
        let image = |pixels: Vec<f32>| Image { width: 4, height: pixels.len() / 4, pixels };
        let nan = error_of(find(&image(vec![f32::NAN; 8]), &DEFAULTS));
        assert!(nan.contains("all 8 pixels are NaN (blanked): there is no background to measure"), "{}", nan);
        let mut pixels = vec![0.5f32; 8];
        pixels[6] = f32::NEG_INFINITY;
        let infinite = error_of(find(&image(pixels), &DEFAULTS));
        assert!(infinite.contains("pixel (row 1, column 2) is -inf: only NaN marks a blanked pixel"), "{}", infinite);
        let flat = error_of(find(&image(vec![0.5; 8]), &DEFAULTS));
        assert!(flat.contains("σ is 0"), "{}", flat);
        let short = error_of(find(&Image { width: 4, height: 3, pixels: vec![0.0; 8] }, &DEFAULTS));
        assert!(short.contains("8 pixels do not make a 4x3 image"), "{}", short);
        let noise = image((0..16).map(|i| (i % 3) as f32).collect());
        for (settings, needle) in [
            (Settings { kappa: 0.0, ..DEFAULTS }, "--kappa must be a positive number (got 0)"),
            (Settings { kappa: -3.0, ..DEFAULTS }, "(got -3)"),
            (Settings { kappa: f64::NAN, ..DEFAULTS }, "(got NaN)"),
            (Settings { threshold: 0.0, ..DEFAULTS }, "--threshold must be a positive number of σ (got 0)"),
            (Settings { threshold: f64::INFINITY, ..DEFAULTS }, "(got inf)"),
        ] {
            let message = error_of(find(&noise, &settings));
            assert!(message.contains(needle), "{:?}: {}", settings, message);
        }
    }

    /// Options for `host sources` on `image` in the lesson's mode, writing into `dir`.
    fn options(image: &Path, dir: &Path) -> Options {
        Options {
            image: image.to_path_buf(),
            hdu: None,
            mode: Mode::Lesson,
            kappa: 3.0,
            threshold: 5.0,
            seed_snr: local::SEED,
            flood: local::FLOOD,
            min_pixels: None,
            background_passes: local::Passes::Two,
            beam: None,
            step: None,
            box_size: None,
            connectivity: Connectivity::Four,
            catalog: None,
            votable: None,
            regions: None,
            overlay: Some(dir.join("overlay.png")),
            labels: None,
            residual: None,
            background_map: None,
            noise_map: None,
            cpu: true,
            runs: 1,
            check: false,
            no_check: false,
            truth: None,
        }
    }

    #[test]
    fn scores_the_catalog_against_the_sky_s_truth() {
        let dir = scratch("sources", "truth");
        let (image, components, _) = synthetic(400, 8, false, 11);
        let (path, truth) = (dir.join("sky.npy"), dir.join("sky-truth.csv"));
        io::write_image(&path, 400, 400, &image.pixels).unwrap();
        std::fs::write(&truth, sky::truth_csv(&components)).unwrap();
        let summary = run(&Options { truth: Some(truth), ..options(&path, &dir) }, false).unwrap();
        let score = summary.score.expect("a score with --truth");
        // Every point source clears 5σ and is an island of its own: all are found, each by one
        // detection; the others lie on the core, on the shell or nowhere.
        let points = components.iter().filter(|c| c.kind == Kind::Point).count();
        assert_eq!((score.completeness.count, score.completeness.of), (points, points));
        assert_eq!(score.detections, summary.sources);
        assert_eq!(score.reliability.count, points, "{score}");
        assert_eq!(score.reliability.of + score.on_core + score.on_shell, score.detections, "{score}");
        let missing = Options { truth: Some(dir.join("absent.csv")), ..options(&path, &dir) };
        assert!(error_of(run(&missing, false)).contains("absent.csv"));
    }

    #[test]
    fn writes_the_catalog_as_csv_and_json_and_the_overlay() {
        let dir = scratch("sources", "write");
        let (image, components, _) = synthetic(200, 4, true, 5);
        let path = dir.join("sky.npy");
        io::write_image(&path, 200, 200, &image.pixels).unwrap();
        let summary = run(&options(&path, &dir), true).unwrap();
        assert_eq!(summary.catalog, dir.join("sky-sources.csv").display().to_string());
        assert_eq!(summary.catalog_json, Some(dir.join("sky-sources.json").display().to_string()));
        assert_eq!((summary.device.as_str(), summary.pipeline_ms, summary.checks.len()), ("CPU", None, 0));
        let names: Vec<&str> = summary.stages.iter().map(|s| s.name).collect();
        assert_eq!(names[..2], ["read", "WCS"]);
        assert_eq!(summary.coordinates, "positions in pixels: the image has no header (not FITS)");
        assert_eq!(names[names.len() - 2..], ["catalog", "overlay"]);
        // Every stage up to the catalog's, and not the overlay after it.
        let to_catalog: f64 = summary.stages[..summary.stages.len() - 1].iter().map(|s| s.ms).sum();
        assert!(summary.file_to_catalog_ms > 0.0 && summary.file_to_catalog_ms == to_catalog, "{:?}", summary.stages);

        let found = find(&image, &DEFAULTS).unwrap();
        assert_eq!(summary.sources, found.sources.len());
        assert!(summary.sources >= 4, "{:?}", components);
        let csv = std::fs::read_to_string(dir.join("sky-sources.csv")).unwrap();
        let rows = catalog::rows(&found.sources, found.background.sigma);
        let note = Coordinates::Pixels("the image has no header (not FITS)".into());
        assert_eq!(csv, Catalog::new("sky.npy", note, None, rows).csv());
        assert!(csv.starts_with(catalog::HEADER), "{}", csv);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("sky-sources.json")).unwrap()).unwrap();
        assert_eq!(json["sources"].as_array().map(Vec::len), Some(summary.sources));
        assert_eq!(json["sources"][0]["x"], found.sources[0].x);
        assert_eq!(json["background"]["sigma"], found.background.sigma);
        assert_eq!(json["settings"]["connectivity"], 4);
        let overlay = image::open(dir.join("overlay.png")).unwrap().to_rgb8();
        assert_eq!((overlay.width(), overlay.height()), (200, 200));
        assert_eq!(overlay.get_pixel(0, 0).0, overlay::BLANK);

        // Without --json: no JSON; --catalog names the CSV.
        // --labels: SciPy's label image, int32, as the CPU labelled it.
        let labelled = Options { labels: Some(dir.join("labels.npy")), overlay: None, ..options(&path, &dir) };
        assert_eq!(run(&labelled, false).unwrap().labels, Some(dir.join("labels.npy").display().to_string()));
        let labels: ndarray::Array2<i32> = ndarray_npy::read_npy(dir.join("labels.npy")).unwrap();
        assert_eq!(labels.dim(), (200, 200));
        assert!(labels.iter().zip(&found.labels).all(|(&read, &label)| read as u32 == label));
        assert!(found.labels.iter().any(|&l| l > 0));

        let named = Options { catalog: Some(dir.join("named.csv")), overlay: None, ..options(&path, &dir) };
        let summary = run(&named, false).unwrap();
        assert_eq!((summary.catalog_json, summary.overlay), (None, None));
        assert_eq!(std::fs::read_to_string(dir.join("named.csv")).unwrap(), csv);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_local_mode_fits_the_sources_and_writes_the_maps_and_the_residual() {
        let dir = scratch("sources", "local");
        let (image, components, _) = synthetic(400, 8, false, 11);
        let (path, truth) = (dir.join("sky.fits"), dir.join("sky-truth.csv"));
        crate::fits::write_image(&path, 400, 400, &image.pixels).unwrap();
        // A WCS and a third axis, but no beam.
        let placing = ["CTYPE1  = 'RA---TAN'", "CTYPE2  = 'DEC--TAN'", "CRVAL1  = 10.0", "CDELT2  = 0.001"];
        add_cards(&path, &[&placing[..], &["CTYPE3  = 'FREQ'", "BUNIT   = 'JY/BEAM'"]].concat());
        std::fs::write(&truth, sky::truth_csv(&components)).unwrap();
        let maps = ["residual.fits", "background.fits", "noise.npy"].map(|name| dir.join(name));
        let asked = Options {
            mode: Mode::Local,
            truth: Some(truth),
            residual: Some(maps[0].clone()),
            background_map: Some(maps[1].clone()),
            noise_map: Some(maps[2].clone()),
            regions: Some(dir.join("sky.reg")),
            ..options(&path, &dir)
        };
        let summary = run(&asked, true).unwrap();
        assert_eq!((summary.mode, summary.background, summary.level), (Mode::Local, None, None));
        let local = summary.local.as_ref().expect("the local mode's summary");
        assert_eq!(local.beam, "assumed: no beam in the header; integrated fluxes are sums of pixels");
        assert_eq!((local.settings.params.step, local.settings.params.box_size), ((16, 16), (96, 96)));
        assert!(summary.unchecked.is_none(), "--cpu has nothing to check");
        // Every point source is found (a component within a pixel), and each row is a component.
        let score = summary.score.as_ref().expect("a score");
        let points = components.iter().filter(|c| c.kind == Kind::Point).count();
        assert_eq!((score.completeness.count, score.completeness.of), (points, points), "{score}");
        assert_eq!(summary.sources, score.detections);
        assert!(local.components - local.floored <= summary.sources && local.seeded <= local.flooded, "{local:?}");
        let e = &score.errors_above;
        assert!(e.position.is_some_and(|p| p < 0.05) && e.peak.is_some_and(|p| p < 0.02), "{score}");
        assert!(e.flux.is_some_and(|f| f < 0.03), "{score}");

        // The catalog has the fits' columns; its integrated fluxes are sums of pixels here.
        let csv = std::fs::read_to_string(dir.join("sky-sources.csv")).unwrap();
        let names: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let first: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        for column in ["x_err", "peak_err", "integrated", "integrated_err", "major_px", "angle_px"] {
            let at = names.iter().position(|n| *n == column).unwrap();
            assert!(first[at].parse::<f64>().is_ok_and(f64::is_finite), "{column}: {csv}");
        }
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("sky-sources.json")).unwrap()).unwrap();
        assert_eq!(json["sources"].as_array().map(Vec::len), Some(summary.sources));
        assert_eq!(json["mode"], "local");
        assert!(std::fs::read_to_string(dir.join("sky.reg")).unwrap().contains("ellipse("));
        // The maps and the residual: images of the sky's size; the residual is the image less
        // the fitted model.
        let read = |path: &Path| io::read_image(path).unwrap();
        for map in &maps {
            assert_eq!((read(map).width, read(map).height), (400, 400));
        }
        let found = local::find(&image, &local.settings).unwrap();
        assert_eq!(read(&maps[0]).pixels, local::residual(&image, &found.fits));
        assert_eq!(read(&maps[1]).pixels, found.maps.as_ref().unwrap().background.as_slice().unwrap());
        // The FITS ones carry the image's WCS of its two axes, and its unit.
        for map in &maps[..2] {
            let keywords: Vec<String> = fits::read_image_and_header(map, None)
                .unwrap()
                .1
                .cards
                .into_iter()
                .skip(5)
                .map(|c| c.keyword)
                .collect();
            assert_eq!(keywords, ["CTYPE1", "CTYPE2", "CRVAL1", "CDELT2", "BUNIT"]);
        }

        // The lesson's mode has no maps; the levels are checked whatever the mode.
        let lesson = Options { residual: Some(maps[0].clone()), ..options(&path, &dir) };
        assert!(error_of(run(&lesson, false)).contains("--residual is the local mode's"));
        let flood = Options { flood: 6.0, ..options(&path, &dir) };
        assert!(error_of(run(&flood, false)).contains("--flood (6) must not be above --seed-snr (5)"));
        let same = Options { noise_map: Some(dir.join("sky-sources.csv")), ..asked };
        assert!(error_of(run(&same, false)).contains("--catalog and --noise-map name the same file"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_check_is_the_lesson_s_default_and_asked_for_in_the_local_mode() {
        let path = Path::new("sky.fits");
        let on_gpu = |mode, check, no_check| Options { mode, check, no_check, cpu: false, ..options(path, path) };
        assert!(on_gpu(Mode::Lesson, false, false).checks());
        assert!(!on_gpu(Mode::Lesson, false, true).checks());
        assert!(!on_gpu(Mode::Local, false, false).checks());
        assert!(on_gpu(Mode::Local, true, false).checks());
        assert!(!Options { cpu: true, ..on_gpu(Mode::Local, true, false) }.checks(), "--cpu: nothing to check");
    }

    #[test]
    fn an_image_without_sources_gives_an_empty_catalog() {
        let dir = scratch("sources", "empty");
        // -1 and 1 alternating: median 0, σ 1, nothing outside ±3σ, nothing above 5σ.
        let pixels: Vec<f32> = (0..64 * 48).map(|i| if (i + i / 64) % 2 == 0 { -1.0 } else { 1.0 }).collect();
        let path = dir.join("flat.fits");
        io::write_image(&path, 64, 48, &pixels).unwrap();
        let summary = run(&options(&path, &dir), true).unwrap();
        assert_eq!((summary.sources, summary.detected_pixels), (0, 0));
        let background = summary.background.expect("the lesson's background");
        assert_eq!((background.median, background.sigma, background.rounds), (0.0, 1.0, 1));
        let csv = std::fs::read_to_string(dir.join("flat-sources.csv")).unwrap();
        assert!(csv.starts_with(catalog::HEADER) && csv.lines().count() == 1, "{}", csv);
        assert_eq!(summary.coordinates, "positions in pixels: no celestial WCS (CTYPE1 absent, CTYPE2 absent)");
        let json = std::fs::read_to_string(dir.join("flat-sources.json")).unwrap();
        assert!(json.contains("\"sources\": []"), "{}", json);
        assert!(dir.join("overlay.png").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Puts `cards` before the END card of the FITS file at `path` (its header has room).
    fn add_cards(path: &Path, cards: &[&str]) {
        let mut bytes = std::fs::read(path).unwrap();
        let end = bytes.chunks(80).position(|card| card.starts_with(b"END     ")).unwrap() * 80;
        let text: String = cards.iter().chain(&["END"]).map(|c| format!("{:<80}", c)).collect();
        bytes[end..end + text.len()].copy_from_slice(text.as_bytes());
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn a_fits_image_with_a_wcs_gets_sky_positions_in_every_catalog() {
        let dir = scratch("sources", "wcs");
        let (image, _, _) = synthetic(200, 4, false, 5);
        let found = find(&image, &DEFAULTS).unwrap();
        let wcs_cards = [
            "CTYPE1  = 'RA---SIN'",
            "CTYPE2  = 'DEC--SIN'",
            "CRPIX1  = 100.5",
            "CRPIX2  = 100.5",
            "CRVAL1  = 187.7059",
            "CRVAL2  = 12.3911",
            "CDELT1  = -0.0005",
            "CDELT2  = 0.0005",
            "RADESYS = 'FK5'",
            "EQUINOX = 2000.0",
            "BUNIT   = 'JY/BEAM'",
        ];
        let fits_with = |name: &str, cards: &[&str]| {
            let path = dir.join(name);
            crate::fits::write_image(&path, 200, 200, &image.pixels).unwrap();
            add_cards(&path, cards);
            path
        };
        let path = fits_with("sky.fits", &wcs_cards);
        let (votable, regions) = (dir.join("sky.vot"), dir.join("sky.reg"));
        let asked = Options { votable: Some(votable.clone()), regions: Some(regions.clone()), ..options(&path, &dir) };
        let summary = run(&asked, false).unwrap();
        assert_eq!(summary.coordinates, "FK5 J2000, SIN projection");
        assert_eq!((summary.votable.as_deref(), summary.regions.as_deref()), (votable.to_str(), regions.to_str()));

        // Each source's RA and Dec are its pixel's through the header's WCS.
        let Coordinates::Sky(sky) =
            Coordinates::from_header(&fits::read_image_and_header(&path, None).unwrap().1).unwrap()
        else {
            panic!("no WCS")
        };
        let csv = std::fs::read_to_string(dir.join("sky-sources.csv")).unwrap();
        let names: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let cell = |cells: &[&str], name: &str| cells[names.iter().position(|n| *n == name).unwrap()].to_string();
        assert_eq!(csv.lines().count(), found.sources.len() + 1);
        for (line, source) in csv.lines().skip(1).zip(&found.sources) {
            let cells: Vec<&str> = line.split(',').collect();
            let (ra, dec) = sky.pixel_to_sky(source.x, source.y).unwrap();
            assert_eq!((cell(&cells, "ra").parse(), cell(&cells, "dec").parse()), (Ok(ra), Ok(dec)));
            assert_eq!(cell(&cells, "rms").parse(), Ok(found.background.sigma));
            // No position errors or shapes yet: absent, not invented.
            assert_eq!((cell(&cells, "ra_err"), cell(&cells, "major")), (String::new(), String::new()));
        }
        // The VOTable and the region file have the same sources.
        let xml = std::fs::read_to_string(&votable).unwrap();
        assert_eq!(xml.matches("<TR>").count(), found.sources.len());
        assert!(xml.contains("<COOSYS ID=\"sky\" system=\"eq_FK5\" equinox=\"J2000\"/>"), "{}", xml);
        assert!(xml.contains("<FIELD name=\"peak\" datatype=\"double\" unit=\"Jy/beam\""), "{}", xml);
        let reg = std::fs::read_to_string(&regions).unwrap();
        assert_eq!(reg.lines().nth(3), Some("fk5"));
        assert_eq!(reg.lines().filter(|l| l.starts_with("circle(")).count(), found.sources.len());

        // --hdu names the primary HDU by index or name; a missing one, or an .npy, is an error.
        for hdu in ["0", "PRIMARY"] {
            let named = Options { hdu: Some(hdu.parse().unwrap()), ..options(&path, &dir) };
            assert_eq!(run(&named, false).unwrap().coordinates, "FK5 J2000, SIN projection");
        }
        let missing = error_of(run(&Options { hdu: Some(fits::Hdu::Index(1)), ..options(&path, &dir) }, false));
        assert!(missing.contains("sky.fits") && missing.contains("HDU 1"), "{}", missing);
        let npy = dir.join("sky.npy");
        io::write_image(&npy, 200, 200, &image.pixels).unwrap();
        let not_fits = error_of(run(&Options { hdu: Some(fits::Hdu::Index(0)), ..options(&npy, &dir) }, false));
        assert!(not_fits.contains("--hdu names an HDU of a FITS file"), "{}", not_fits);

        // A projection not read: pixel positions, the note saying why, no sky columns.
        let ait: Vec<&str> = [&["CTYPE1  = 'RA---AIT'", "CTYPE2  = 'DEC--AIT'"], &wcs_cards[2..]].concat();
        let path = fits_with("ait.fits", &ait);
        let summary = run(&Options { regions: Some(regions.clone()), ..options(&path, &dir) }, false).unwrap();
        assert!(summary.coordinates.contains("the AIT projection is not read"), "{}", summary.coordinates);
        let csv = std::fs::read_to_string(dir.join("ait-sources.csv")).unwrap();
        assert!(csv.lines().next().unwrap().ends_with(",flags"), "{}", csv);
        assert_eq!(std::fs::read_to_string(&regions).unwrap().lines().nth(3), Some("image"));

        // A broken WCS: an error naming the image and the keyword.
        let broken: Vec<&str> = [&wcs_cards[..4], &["CRVAL1  = 'noon'"], &wcs_cards[5..]].concat();
        let path = fits_with("broken.fits", &broken);
        let message = error_of(run(&options(&path, &dir), false));
        assert!(message.contains("broken.fits: CRVAL1 = 'noon' is not a number"), "{}", message);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_files_and_outputs_are_errors_naming_them() {
        let dir = scratch("sources", "bad");
        let run_on = |path: &Path| error_of(run(&options(path, &dir), false));
        assert!(run_on(&dir.join("absent.fits")).contains("absent.fits: no such file"));

        // A FITS cube of two 4x3 planes: a 2-D image of 4x6 whose header says 4x3x2.
        let cube = dir.join("cube.fits");
        crate::fits::write_image(&cube, 4, 6, &[0.0; 24]).unwrap();
        let mut bytes = std::fs::read(&cube).unwrap();
        std::fs::write(dir.join("cut.fits"), &bytes[..2880 + 40]).unwrap();
        assert!(run_on(&dir.join("cut.fits")).contains("cut.fits: is truncated"));
        let card = |text: String| format!("{:<80}", text).into_bytes();
        bytes[160..240].copy_from_slice(&card(format!("NAXIS   = {:>20}", 3)));
        bytes[320..400].copy_from_slice(&card(format!("NAXIS2  = {:>20}", 3)));
        bytes[400..480].copy_from_slice(&card(format!("NAXIS3  = {:>20}", 2)));
        bytes[480..560].copy_from_slice(&card("END".into()));
        std::fs::write(&cube, &bytes).unwrap();
        let message = run_on(&cube);
        assert!(message.contains("cube.fits: is a 3-D cube (axes 4x3x2"), "{}", message);
        let npy = dir.join("cube.npy");
        ndarray_npy::write_npy(&npy, &ndarray::Array3::<f32>::zeros((2, 3, 4))).unwrap();
        assert!(run_on(&npy).contains("cube.npy: is 3-D (shape 2x3x4), expected a 2-D array"));

        // An image whose pixels cannot be used names the image.
        let blank = dir.join("blank.npy");
        io::write_image(&blank, 4, 4, &[f32::NAN; 16]).unwrap();
        assert!(run_on(&blank).contains("blank.npy: all 16 pixels are NaN"));

        let image = dir.join("sky.fits");
        let same = |catalog: Option<&str>, overlay: Option<&str>, json: bool| {
            let options = Options {
                catalog: catalog.map(|c| dir.join(c)),
                overlay: overlay.map(|o| dir.join(o)),
                ..options(&image, &dir)
            };
            error_of(run(&options, json))
        };
        assert!(same(Some("sky.fits"), None, false).contains("--catalog must not overwrite the image"));
        assert!(same(None, Some("sky-sources.csv"), false).contains("--catalog and --overlay name the same file"));
        assert!(same(Some("c.json"), None, true).contains("--catalog and the JSON catalog name the same file"));
        let votable = Options { votable: Some(dir.join("sky-sources.csv")), ..options(&image, &dir) };
        assert!(error_of(run(&votable, false)).contains("--catalog and --votable name the same file"));
        let regions = Options { regions: Some(image.clone()), ..options(&image, &dir) };
        assert!(error_of(run(&regions, false)).contains("--regions must not overwrite the image"));
        assert!(same(None, Some("o.fits"), false).contains("o.fits: the overlay is written as a PNG"));
        let labels = Options { labels: Some(dir.join("labels.png")), ..options(&image, &dir) };
        assert!(error_of(run(&labels, false)).contains("labels.png: the labels are written as a .npy array"));
        assert!(!image.exists(), "the options are checked before the image is read");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
