//! `host sky`: writes a synthetic radio image and its truth catalog.
//!
//! Without the options beyond the lesson's (`--survey`, `--noise-profile`, `--ellipses`,
//! `--pairs`) it draws the lesson's sky, the same pixels as ever for the same seed. `--survey`
//! draws the sky that source finders are measured on: for 4096² with constant and with varying
//! noise,
//!
//! ```text
//! host sky --side 4096 --blank --survey --out survey.fits
//! host sky --side 4096 --blank --survey --noise-profile constant --out survey-constant.fits
//! ```

use crate::gpu::{require, GpuResult};
use crate::io::{self, file_error, ImageKind};
use cuda_kernels::Named;
pub use radio::sky::*;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Pixels a side.
    #[arg(long, default_value_t = 2048)]
    pub side: usize,
    /// The image: .fits (BITPIX -32, with a radio header: sky coordinates, the beam, Jy/beam,
    /// the frequency) or .npy (f32, pixels only), by extension.
    #[arg(long)]
    pub out: PathBuf,
    /// The true components as CSV [default: `<out stem>-truth.csv` beside --out].
    #[arg(long)]
    pub truth: Option<PathBuf>,
    /// Standard deviation of the Gaussian noise, Jy/beam.
    #[arg(long, default_value_t = NOISE, allow_negative_numbers = true)]
    pub noise: f64,
    /// Point sources (besides the core and the shell) [default: 190; with --survey, 190 for
    /// each 2048² of area: 760 at 4096²].
    #[arg(long)]
    pub sources: Option<usize>,
    /// Pixels outside the primary beam (the circle touching the edges) are NaN, as radio
    /// images blank them; every source lies inside it.
    #[arg(long)]
    pub blank: bool,
    /// How the noise varies: `constant`, or `primary-beam`, --noise over a Gaussian primary
    /// beam (an image corrected for it): --noise at the centre, twice it on the circle touching
    /// the edges, four times in the corners [default: constant; primary-beam with --survey].
    #[arg(long, value_parser = crate::registry::named::<NoiseProfile>())]
    pub noise_profile: Option<NoiseProfile>,
    /// Resolved elliptical Gaussians, FWHM 5.9 to 14.1 pixels along the major axis, axis
    /// ratios up to 4 [default: 0; with --survey, a quarter as many as point sources].
    #[arg(long)]
    pub ellipses: Option<usize>,
    /// Close pairs of point sources, 1 to 3 beams apart [default: 0; with --survey, an eighth
    /// as many as point sources].
    #[arg(long)]
    pub pairs: Option<usize>,
    /// A sky to measure source finders on: point sources for the area, ellipses, pairs and
    /// noise rising towards the beam's edge (each as its option's default says; the options
    /// given win). Its truth adds major, minor, pa and the local noise to each line.
    #[arg(long)]
    pub survey: bool,
}

/// What `host sky` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub image: String,
    pub truth: String,
    pub side: usize,
    pub noise: f64,
    pub point_sources: usize,
    pub blanked_pixels: usize,
    /// What the sky has beyond the lesson's, if anything.
    #[serde(flatten)]
    pub beyond_lesson: Option<BeyondLesson>,
}

/// The ellipses, pairs and the noise's profile of a sky beyond the lesson's.
#[derive(Debug, Clone, Serialize)]
pub struct BeyondLesson {
    pub ellipses: usize,
    pub pairs: usize,
    pub noise_profile: &'static str,
    /// The noise σ on the circle touching the edges, Jy/beam.
    pub noise_at_beam_edge: f64,
}

impl Summary {
    pub fn print(&self) {
        let (profile, extra, columns) = match &self.beyond_lesson {
            None => (String::new(), String::new(), TRUTH_COLUMNS.join(",")),
            Some(b) => (
                if b.noise_profile == NoiseProfile::Constant.name() {
                    String::new()
                } else {
                    format!(" at the centre, {} at the beam's edge ({})", b.noise_at_beam_edge, b.noise_profile)
                },
                format!(", {} ellipses, {} close pairs", b.ellipses, b.pairs),
                format!("{},{}", TRUTH_COLUMNS.join(","), SURVEY_COLUMNS.join(",")),
            ),
        };
        println!(
            "wrote {}: {}x{} f32, noise σ {} Jy/beam{}, {} point sources{}, a core and a shell{}",
            self.image,
            self.side,
            self.side,
            self.noise,
            profile,
            self.point_sources,
            extra,
            if self.blanked_pixels > 0 {
                format!(", {} pixels blanked (NaN)", self.blanked_pixels)
            } else {
                String::new()
            }
        );
        println!("wrote {}: {} of each component", self.truth, columns);
    }
}

/// `--truth`, or `<out stem>-truth.csv` beside `out`.
fn truth_path(out: &Path, truth: Option<&Path>) -> PathBuf {
    truth.map(Path::to_path_buf).unwrap_or_else(|| {
        let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        out.with_file_name(format!("{}-truth.csv", stem))
    })
}

/// The sky `options` ask for: the lesson's, or with --survey its preset, each given option
/// winning over it.
pub fn sky(options: &Options) -> Sky {
    let Options { side, noise, blank, survey, .. } = *options;
    let points = options.sources.unwrap_or(if survey { Population::survey_points(side) } else { POINT_SOURCES });
    let preset = if survey { Population::survey(points) } else { Population::lesson(points) };
    let population = Population {
        points,
        ellipses: options.ellipses.unwrap_or(preset.ellipses),
        pairs: options.pairs.unwrap_or(preset.pairs),
    };
    let default_profile = if survey { NoiseProfile::PrimaryBeam } else { NoiseProfile::Constant };
    let noise = Noise { sigma: noise, profile: options.noise_profile.unwrap_or(default_profile) };
    Sky { side, population, noise, blank }
}

/// Checks `options`, draws the sky from `seed`, and writes the image and the truth.
pub fn run(options: &Options, seed: u64) -> GpuResult<Summary> {
    let Options { side, noise, .. } = *options;
    require((MIN_SIDE..=MAX_SIDE).contains(&side), || {
        format!("--side must be {} to {} pixels (got {})", MIN_SIDE, MAX_SIDE, side)
    })?;
    require(noise.is_finite() && noise > 0.0, || {
        format!("--noise must be a positive number of Jy/beam (got {})", noise)
    })?;
    let sky = sky(options);
    let Population { points, ellipses, pairs } = sky.population;
    for (count, option) in [(points, "--sources"), (ellipses, "--ellipses"), (pairs, "--pairs")] {
        require(count <= MAX_SOURCES, || format!("{} must be at most {} (got {})", option, MAX_SOURCES, count))?;
    }
    if ImageKind::of(&options.out) == ImageKind::Png {
        return Err(file_error(&options.out, "the sky is written as .fits or .npy (by extension)"));
    }
    let truth = truth_path(&options.out, options.truth.as_deref());
    require(truth != options.out, || "--truth must differ from --out".into())?;
    let components = sky.components(seed)?;
    // The noise has a seed of its own, so that it does not shift with the placement's draws.
    let (image, blanked) = sky.render(&components, seed ^ 1);
    io::write_image_with(&options.out, side, side, &image, &sky.header())?;
    io::write_text(&truth, &sky.truth_csv(&components))?;
    Ok(Summary {
        image: options.out.display().to_string(),
        truth: truth.display().to_string(),
        side,
        noise,
        point_sources: points,
        blanked_pixels: blanked,
        beyond_lesson: (!sky.is_lesson()).then(|| BeyondLesson {
            ellipses,
            pairs,
            noise_profile: sky.noise.profile.name(),
            noise_at_beam_edge: sky.noise_at_beam_edge(),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_support::{error_of, scratch};

    fn options(side: usize, out: &Path, sources: usize) -> Options {
        Options {
            side,
            out: out.to_path_buf(),
            truth: None,
            noise: 0.0133,
            sources: Some(sources),
            blank: false,
            noise_profile: None,
            ellipses: None,
            pairs: None,
            survey: false,
        }
    }

    #[test]
    fn the_lesson_sky_is_the_default_and_its_options_left_at_theirs_change_nothing() {
        let dir = scratch("sky", "lesson");
        let plain = Options { sources: None, ..options(512, &dir.join("plain.npy"), 0) };
        assert_eq!(sky(&plain).population, Population::lesson(POINT_SOURCES));
        let spelled = Options {
            out: dir.join("spelled.npy"),
            noise_profile: Some(NoiseProfile::Constant),
            ellipses: Some(0),
            pairs: Some(0),
            ..options(512, &dir.join("plain.npy"), POINT_SOURCES)
        };
        let summaries = [run(&plain, 3).unwrap(), run(&spelled, 3).unwrap()];
        assert!(summaries.iter().all(|s| s.beyond_lesson.is_none() && s.point_sources == POINT_SOURCES));
        let json = serde_json::to_value(&summaries[0]).unwrap();
        // serde_json's map is sorted by key.
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["blanked_pixels", "image", "noise", "point_sources", "side", "truth"], "the lesson's JSON");
        let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
        assert_eq!(read("plain.npy"), read("spelled.npy"));
        assert_eq!(read("plain-truth.csv"), read("spelled-truth.csv"));
        let truth = String::from_utf8(read("plain-truth.csv")).unwrap();
        assert_eq!(truth, truth_csv(&components(512, POINT_SOURCES, false, 3).unwrap()));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_survey_preset_and_the_options_that_win_over_it() {
        let dir = scratch("sky", "survey");
        let survey = Options { survey: true, sources: None, blank: true, ..options(1024, &dir.join("s.fits"), 0) };
        let points = POINT_SOURCES * 1024 * 1024 / (2048 * 2048);
        let want = Population { points, ellipses: points / 4, pairs: points / 8 };
        assert_eq!(sky(&survey).population, want);
        assert_eq!(sky(&survey).noise, Noise { sigma: 0.0133, profile: NoiseProfile::PrimaryBeam });
        let summary = run(&survey, 5).unwrap();
        let beyond = summary.beyond_lesson.as_ref().unwrap();
        assert_eq!((summary.point_sources, beyond.ellipses, beyond.pairs), (want.points, want.ellipses, want.pairs));
        assert_eq!((beyond.noise_profile, beyond.noise_at_beam_edge), ("primary-beam", 2.0 * 0.0133));
        let truth = std::fs::read_to_string(dir.join("s-truth.csv")).unwrap();
        let lines: Vec<&str> = truth.lines().collect();
        assert_eq!(lines[0], format!("{},{}", TRUTH_COLUMNS.join(","), SURVEY_COLUMNS.join(",")));
        let count = |kind: &str| lines.iter().filter(|l| l.split(',').nth(6) == Some(kind)).count();
        assert_eq!(
            [count("core"), count("shell"), count("point"), count("ellipse"), count("pair")],
            [1, 1, want.points, want.ellipses, 2 * want.pairs]
        );
        // The image is as drawn: the same sky in memory.
        let image = crate::fits::read_image(&dir.join("s.fits")).unwrap();
        let drawn = sky(&survey);
        let bits = |pixels: &[f32]| pixels.iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
        let (pixels, _) = drawn.render(&drawn.components(5).unwrap(), 5 ^ 1);
        assert!(bits(&image.pixels) == bits(&pixels), "the image differs from the sky drawn in memory");

        // Options given win over the preset's.
        let constant = Options {
            sources: Some(20),
            noise_profile: Some(NoiseProfile::Constant),
            pairs: Some(0),
            ..Options { out: dir.join("c.fits"), ..survey }
        };
        let drawn = sky(&constant);
        assert_eq!(
            (drawn.population, drawn.noise.profile),
            (Population { points: 20, ellipses: 5, pairs: 0 }, NoiseProfile::Constant)
        );
        let beyond = run(&constant, 5).unwrap().beyond_lesson.unwrap();
        assert_eq!((beyond.ellipses, beyond.noise_profile, beyond.noise_at_beam_edge), (5, "constant", 0.0133));
        // Ellipses or pairs alone make a sky beyond the lesson's too.
        let pairs = Options { pairs: Some(2), ..options(256, &dir.join("p.npy"), 3) };
        assert_eq!(run(&pairs, 1).unwrap().beyond_lesson.map(|b| b.pairs), Some(2));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn components_are_seeded_apart_and_inside() {
        let side = 1024;
        let all = components(side, 120, false, 5).unwrap();
        assert_eq!(all, components(side, 120, false, 5).unwrap());
        assert_ne!(all, components(side, 120, false, 6).unwrap());
        assert_eq!(all.len(), 122);
        assert_eq!((all[0].kind, all[1].kind), (Kind::Core, Kind::Shell));
        let points = &all[2..];
        assert!(points.windows(2).all(|p| (p[0].y, p[0].x) <= (p[1].y, p[1].x)), "raster order");
        for (i, p) in points.iter().enumerate() {
            assert_eq!(p.kind, Kind::Point);
            assert!(
                (POINT_SIGMA.0..=POINT_SIGMA.1).contains(&p.sigma) && (POINT_PEAK.0..=POINT_PEAK.1).contains(&p.peak)
            );
            let margin = REACH * p.sigma;
            assert!(p.x >= margin - 1e-3 && p.x <= side as f64 - 1.0 - margin + 1e-3, "{:?}", p);
            for q in &points[..i] {
                assert!(((p.x - q.x).powi(2) + (p.y - q.y).powi(2)).sqrt() >= SEPARATION, "{:?} and {:?}", p, q);
            }
            for c in &all[..2] {
                let d = ((p.x - c.x).powi(2) + (p.y - c.y).powi(2)).sqrt();
                assert!((d - c.radius).abs() >= CLEARANCE * c.sigma + SEPARATION / 2.0, "{:?} near {:?}", p, c);
            }
            // The flux of a sampled Gaussian is its integral, 2πσ²·peak.
            let integral = std::f64::consts::TAU * p.sigma * p.sigma * p.peak;
            assert!((p.flux / integral - 1.0).abs() < 1e-6, "{:?}: {}", p, integral);
        }
        // The shell's flux: its ring integral, (2π)^(3/2)·R·σ·peak, for R much more than σ.
        let shell = &all[1];
        let ring = std::f64::consts::TAU.powf(1.5) * shell.radius * shell.sigma * shell.peak;
        assert!((shell.flux / ring - 1.0).abs() < 1e-3, "{} vs {}", shell.flux, ring);
    }

    #[test]
    fn the_image_holds_the_components_and_the_noise() {
        let side = 512;
        let all = components(side, 40, false, 3).unwrap();
        // Almost no noise: each pixel is the sum of the components that reach it.
        let (quiet, blanked) = render(side, &all, 1e-9, false, 1);
        assert_eq!((quiet.len(), blanked), (side * side, 0));
        let reaches = |c: &Component, col: usize, row: usize| {
            c.span(c.x, side).contains(&col) && c.span(c.y, side).contains(&row)
        };
        for (i, &got) in quiet.iter().enumerate() {
            let (col, row) = (i % side, i / side);
            let want: f64 = all.iter().filter(|c| reaches(c, col, row)).map(|c| c.value(col as f64, row as f64)).sum();
            assert!((got as f64 - want).abs() <= 1e-6 * want.max(1.0), "pixel ({}, {}): {} vs {}", row, col, got, want);
        }
        // A point source's flux-weighted centre is where the truth says.
        for p in &all[2..] {
            let (mut sum, mut sx, mut sy) = (0.0f64, 0.0f64, 0.0f64);
            for row in p.span(p.y, side) {
                for col in p.span(p.x, side) {
                    let v = p.value(col as f64, row as f64);
                    (sum, sx, sy) = (sum + v, sx + v * col as f64, sy + v * row as f64);
                }
            }
            assert!((sum / p.flux - 1.0).abs() < 1e-12, "{:?}: sum {}", p, sum);
            assert!(
                (sx / sum - p.x).abs() < 1e-6 && (sy / sum - p.y).abs() < 1e-6,
                "{:?}: {} {}",
                p,
                sx / sum,
                sy / sum
            );
        }
        // No components: the pixels are the noise, of the σ asked for.
        let (noise, _) = render(side, &[], 0.0133, false, 1);
        let mean = noise.iter().map(|&v| v as f64).sum::<f64>() / noise.len() as f64;
        let sd = (noise.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / noise.len() as f64).sqrt();
        assert!(mean.abs() < 1e-4 && (sd / 0.0133 - 1.0).abs() < 0.01, "mean {} σ {}", mean, sd);
        assert_eq!(noise, render(side, &[], 0.0133, false, 1).0, "seeded");
    }

    #[test]
    fn blanking_leaves_the_beam_and_its_sources() {
        let side = 256;
        let all = components(side, 20, true, 9).unwrap();
        let (image, blanked) = render(side, &all, 0.0133, true, 2);
        assert_eq!(blanked, image.iter().filter(|v| v.is_nan()).count());
        // Outside the inscribed circle: a quarter of the square less the circle, 1 - π/4.
        let share = blanked as f64 / (side * side) as f64;
        assert!((share - (1.0 - std::f64::consts::FRAC_PI_4)).abs() < 0.01, "{}", share);
        assert!(image[0].is_nan() && image[side * side - 1].is_nan());
        assert!(!image[side / 2 * side + side / 2].is_nan() && !image[side / 2 * side].is_nan());
        for p in &all[2..] {
            // A source's whole extent is inside the beam: no pixel within REACH·σ is blank.
            for row in p.span(p.y, side) {
                let near = |col: &usize| (*col as f64 - p.x).powi(2) + (row as f64 - p.y).powi(2) <= p.extent().powi(2);
                assert!(p.span(p.x, side).filter(near).all(|col| !image[row * side + col].is_nan()), "{:?}", p);
            }
        }
    }

    #[test]
    fn writes_the_image_and_the_truth() {
        let dir = scratch("sky", "write");
        let summary = run(&options(128, &dir.join("sky.fits"), 5), 11).unwrap();
        assert_eq!(summary.truth, dir.join("sky-truth.csv").display().to_string());
        let image = crate::fits::read_image(&dir.join("sky.fits")).unwrap();
        assert_eq!((image.width, image.height), (128, 128));
        let truth = std::fs::read_to_string(dir.join("sky-truth.csv")).unwrap();
        let lines: Vec<&str> = truth.lines().collect();
        assert_eq!(lines[0], "x,y,peak,flux,sigma,radius,kind");
        assert_eq!(lines.len(), 1 + 2 + 5);
        assert!(lines[1].starts_with("63.5,63.5,2,") && lines[1].ends_with(",0,core"), "{}", lines[1]);
        assert!(lines[2].ends_with(",shell") && lines[3].ends_with(",0,point"), "{}", lines[2]);
        // The brightest pixel near a point source is its peak, less the offset of its centre.
        let fields: Vec<f64> = lines[3].split(',').take(5).map(|f| f.parse().unwrap()).collect();
        let (x, y, peak, sigma) = (fields[0], fields[1], fields[2], fields[4]);
        let pixel = image.pixels[y.round() as usize * 128 + x.round() as usize] as f64;
        let offset = (x - x.round()).powi(2) + (y - y.round()).powi(2);
        let expected = peak * (-offset / (2.0 * sigma * sigma)).exp();
        assert!((pixel - expected).abs() < 6.0 * 0.0133, "{} vs {}", pixel, expected);

        // The same seed writes the same .npy as FITS; --truth names the CSV.
        let npy = Options { truth: Some(dir.join("true.csv")), ..options(128, &dir.join("sky.npy"), 5) };
        run(&npy, 11).unwrap();
        let ((rows, cols), pixels) = io::read_matrix::<f32>(&dir.join("sky.npy")).unwrap();
        assert_eq!(((rows, cols), pixels), ((128, 128), image.pixels));
        assert_eq!(std::fs::read_to_string(dir.join("true.csv")).unwrap(), truth);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_options_are_clear_errors() {
        let out = Path::new("sky.fits");
        assert!(error_of(run(&options(8, out, 0), 1)).contains("--side must be 16 to 32768 pixels (got 8)"));
        assert!(error_of(run(&options(100_000, out, 0), 1)).contains("(got 100000)"));
        let noise = |noise: f64| error_of(run(&Options { noise, ..options(64, out, 0) }, 1));
        assert!(noise(0.0).contains("--noise must be a positive number"));
        assert!(noise(-1.0).contains("(got -1)"));
        assert!(noise(f64::NAN).contains("(got NaN)"));
        assert!(error_of(run(&options(64, out, 1_000_000), 1)).contains("--sources must be at most 100000"));
        let many = Options { ellipses: Some(100_001), ..options(64, out, 0) };
        assert!(error_of(run(&many, 1)).contains("--ellipses must be at most 100000 (got 100001)"));
        let many = Options { pairs: Some(100_001), ..options(64, out, 0) };
        assert!(error_of(run(&many, 1)).contains("--pairs must be at most 100000 (got 100001)"));
        for (crowded, what) in [
            (Options { ellipses: Some(40), ..options(128, out, 0) }, "of 40 ellipses"),
            (Options { pairs: Some(40), ..options(128, out, 0) }, "of 40 pairs"),
        ] {
            let message = error_of(run(&crowded, 1));
            assert!(message.contains("placed only") && message.contains(what), "{}", message);
        }
        let crowded = error_of(run(&options(64, out, 50), 1));
        assert!(crowded.contains("placed only") && crowded.contains("of 50 point sources"), "{}", crowded);
        let png = error_of(run(&options(64, Path::new("sky.png"), 0), 1));
        assert!(png.contains("sky.png: the sky is written as .fits or .npy"), "{}", png);
        let same = Options { truth: Some(out.to_path_buf()), ..options(64, out, 0) };
        assert!(error_of(run(&same, 1)).contains("--truth must differ from --out"));
        let unwritable = error_of(run(&options(64, Path::new("/no-such-dir/sky.fits"), 0), 1));
        assert!(unwritable.contains("cannot write"), "{}", unwritable);
    }
}
