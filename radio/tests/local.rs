//! The local mode of the source finder: on the CPU, a survey sky's sources found and fitted
//! where they are, the catalog's rows made of the fits, the residual flat where the fits are;
//! on the GPU (where there is one), every step equal to the CPU's.

use cuda_kernels::background;
use cuda_kernels::fit::Flags;
use radio::io::Image;
use radio::sky::{Kind, Noise, NoiseProfile, Population, Sky};
use radio::sources::local::{self, gpu::CopyBack, gpu::Pipeline, BeamWidth, Passes, Settings};
use radio::sources::{catalog, Connectivity};

/// A `side`² survey sky (points, ellipses, pairs) of `profile` noise, its components too.
fn survey(side: usize, points: usize, profile: NoiseProfile, seed: u64) -> (Image, Vec<radio::sky::Component>) {
    let sky = Sky {
        side,
        population: Population::survey(points),
        noise: Noise { sigma: radio::sky::NOISE, profile },
        blank: false,
    };
    let components = sky.components(seed).expect("a sky");
    let (pixels, _) = sky.render(&components, seed ^ 1);
    (Image { width: side, height: side, pixels }, components)
}

/// The defaults of `host sources` for an image without a beam in its header.
fn settings() -> Settings {
    let beam = local::beam_width(None, None).expect("the default beam");
    Settings {
        seed: local::SEED,
        flood: local::FLOOD,
        connectivity: Connectivity::Four,
        params: local::grid(&beam, None, None, 3.0).expect("BANE's grid"),
        passes: Passes::Two,
        min_pixels: local::min_pixels(&beam),
        beam,
    }
}

#[test]
fn bright_sources_are_found_where_they_are_with_their_flux() {
    let (image, components) = survey(512, 12, NoiseProfile::PrimaryBeam, 3);
    let settings = settings();
    let found = local::find(&image, &settings).expect("the local mode");
    let (rows, floored) = local::rows(&image, &settings, &found);
    assert_eq!(found.fits.len(), found.islands.len());
    assert!(found.islands.iter().all(|i| i.peak > settings.seed), "every island has a seed");
    let names: Vec<&str> = found.stages.iter().map(|s| s.name).collect();
    assert_eq!(names[0], "NaN count");
    assert_eq!(names[names.len() - 1], "Gaussian fits");
    // Each point source far above the noise is a component within 0.1 pixel of it, its peak
    // within 3% and its flux (a sum of pixels: no beam) within 5%; the residual (the image less
    // the model) is flat around it.
    let noise = Noise { sigma: radio::sky::NOISE, profile: NoiseProfile::PrimaryBeam };
    let bright: Vec<_> =
        components.iter().filter(|c| c.kind == Kind::Point && c.peak / noise.at(512, c.x, c.y) > 30.0).collect();
    assert!(bright.len() >= 3, "{} bright points", bright.len());
    let residual = local::residual(&image, &found.fits);
    let model = local::model(image.width, image.height, &found.fits);
    assert!(residual.iter().zip(&image.pixels).zip(&model).all(|((r, p), m)| *r == p - m));
    for c in bright {
        let distance = |r: &catalog::Row| (r.x.value - c.x).hypot(r.y.value - c.y);
        let row = rows.iter().min_by(|a, b| distance(a).total_cmp(&distance(b))).expect("rows");
        let peak = row.peak.expect("a peak").value;
        let flux = row.integrated.expect("a fitted flux").value;
        assert!(distance(row) < 0.1, "{c:?}: {row:?}");
        assert!((peak / c.peak - 1.0).abs() < 0.03, "{c:?}: {row:?}");
        assert!((flux / c.flux - 1.0).abs() < 0.05, "{c:?}: {row:?}");
        let shape = row.shape.expect("a fitted shape");
        assert!((shape.major.value / (local::FWHM * c.sigma) - 1.0).abs() < 0.1, "{c:?}: {row:?}");
        assert!(row.x.error.is_some_and(|e| e > 0.0 && e < 0.1) && row.rms.is_some(), "{row:?}");
        assert!(row.snr().is_some_and(|s| s > 30.0), "{row:?}");
        let (x, y) = (c.x.round() as usize, c.y.round() as usize);
        let left = (y - 2..=y + 2)
            .flat_map(|r| (x - 2..=x + 2).map(move |col| r * 512 + col))
            .map(|i| f64::from(residual[i]).abs())
            .fold(0.0, f64::max);
        assert!(left < 0.1 * c.peak, "{c:?}: {left} left of the peak");
    }
    // A row per component, or one for an island without, less those at the peak's floor; each
    // row has its island's flags, shifted past OFF_SKY.
    let expected: usize = found.fits.iter().map(|f| f.components.len().max(1)).sum();
    assert_eq!(rows.len() + floored, expected);
    for row in &rows {
        let fit = found.fits.iter().find(|f| f.label == row.island).expect("the row's island");
        assert_eq!(row.flags, catalog::fit_flags(fit.flags));
        assert!(fit.components.len() > row.component as usize || (fit.components.is_empty() && row.component == 0));
    }
    // Every fitted component left in the catalog stands above the floor.
    let floor = settings.floor();
    assert!(rows.iter().filter(|r| r.shape.is_some()).all(|r| r.peak.unwrap().value >= floor * r.rms.unwrap()));
}

#[test]
fn settings_and_images_are_checked() {
    let image = Image { width: 40, height: 30, pixels: vec![0.0; 1200] };
    let message = |result: Result<local::Found, cuda_kernels::GpuError>| result.unwrap_err().to_string();
    let low = Settings { flood: 6.0, ..settings() };
    assert!(message(local::find(&image, &low)).contains("--flood (6) must not be above --seed-snr (5)"));
    let nan = Settings { seed: f64::NAN, ..settings() };
    assert!(message(local::find(&image, &nan)).contains("--seed-snr must be a positive S/N (got NaN)"));
    let mut blank = image.clone();
    blank.pixels.iter_mut().for_each(|p| *p = f32::NAN);
    assert!(message(local::find(&blank, &settings())).contains("all 1200 pixels are NaN"));
    let mut infinite = image.clone();
    infinite.pixels[45] = f32::INFINITY;
    assert!(message(local::find(&infinite, &settings())).contains("pixel (row 1, column 5) is inf"));
    assert!(local::beam_width(None, Some(0.0)).unwrap_err().to_string().contains("--beam must be a positive"));
    // A flat image: no noise, no islands, an empty catalog.
    let found = local::find(&image, &settings()).expect("a flat image");
    assert_eq!((found.flooded, found.islands.len(), found.fits.len()), (0, 0, 0));
}

#[test]
fn the_beam_sets_the_grid_and_the_integrated_flux() {
    // No beam: BANE's 16 and 96, fluxes as sums of pixels (area 1).
    let assumed = local::beam_width(None, None).unwrap();
    assert_eq!((assumed.known, assumed.area()), (false, 1.0));
    let p = local::grid(&assumed, None, None, 3.0).unwrap();
    assert_eq!((p.step, p.box_size), ((16, 16), (96, 96)));
    // A 5-pixel beam: a step of 20, a box of 120, fluxes in Jy through 2π σ² pixels.
    let given = BeamWidth { fwhm: 5.0, known: true };
    let p = local::grid(&given, None, None, 3.0).unwrap();
    assert_eq!((p.step, p.box_size), ((20, 20), (120, 120)));
    assert!((given.area() - std::f64::consts::TAU * (5.0 / local::FWHM).powi(2)).abs() < 1e-12);
    // A wide beam's box is cut to what the kernel sorts; a given one is kept.
    let wide = local::grid(&BeamWidth { fwhm: 20.0, known: true }, None, None, 3.0).unwrap();
    assert_eq!((wide.step, wide.box_size), ((80, 80), (202, 202)));
    assert_eq!(local::grid(&given, Some(7), Some(50), 2.5).unwrap().box_size, (50, 50));
}

/// A `side`² image of white noise σ `noise` (a fixed generator) with a round Gaussian of
/// `peak` and σ `sigma` pixels at its centre.
fn blob(side: usize, noise: f64, peak: f64, sigma: f64) -> Image {
    let normal = cuda_kernels::data::random_normal(side * side, 7);
    let centre = (side as f64 - 1.0) / 2.0;
    let pixels = normal
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let (x, y) = ((i % side) as f64 - centre, (i / side) as f64 - centre);
            (noise * f64::from(n) + peak * (-(x * x + y * y) / (2.0 * sigma * sigma)).exp()) as f32
        })
        .collect();
    Image { width: side, height: side, pixels }
}

#[test]
fn the_second_background_pass_finds_emission_wider_than_the_box() {
    // A blob of 150σ and σ 30 pixels (FWHM 71) in BANE's 96-pixel boxes: the first pass's
    // background and noise take it in, the second's leave it out and find it: an island
    // centred on it, larger than its half-maximum disc (π (1.18 σ)², 3,900 pixels).
    let (side, noise) = (384, 0.01);
    let image = blob(side, noise, 1.5, 30.0);
    let settings = settings();
    let centre = (side as f64 - 1.0) / 2.0;
    let on_it = |found: &local::Found| {
        found.islands.iter().any(|i| (i.x - centre).hypot(i.y - centre) < 3.0 && i.pixels > 3_900)
    };
    let one = local::find(&image, &Settings { passes: Passes::One, ..settings }).expect("one pass");
    assert_eq!(one.masked_pixels, None);
    assert!(!on_it(&one), "one pass: {:?}", one.islands);
    let two = local::find(&image, &settings).expect("two passes");
    assert!(on_it(&two), "two passes: {:?}", two.islands);
    let (rows, floored) = local::rows(&image, &settings, &two);
    assert_eq!(rows.len() + floored, two.fits.iter().map(|f| f.components.len().max(1)).sum::<usize>());
    // The mask holds more than the blob's half-maximum disc and at most its pixels above 4σ of
    // the sky (π (2.69 σ)², 20,600) with a few noise peaks; the sky's noise comes back.
    let masked = two.masked_pixels.expect("two passes");
    assert!((3_900..21_000).contains(&masked), "{masked} pixels masked");
    let (_, median) = two.medians().expect("maps");
    assert!((median / noise - 1.0).abs() < 0.05, "median noise {median}");
    let under = f64::from(two.maps.as_ref().expect("maps on the CPU").noise[[side / 2, side / 2]]);
    // Under it, the noise is filled from grid points whose boxes hold its wings, which keep it
    // above the sky's, but far below the first pass's.
    assert!((0.5 * noise..2.0 * noise).contains(&under), "two passes: noise {under} under the blob");
    let inflated = one.maps.as_ref().expect("maps on the CPU").noise[[side / 2, side / 2]];
    assert!(f64::from(inflated) > 5.0 * noise, "one pass: noise {inflated} under the blob");
}

#[test]
fn the_second_pass_fills_the_grid_points_it_left_out() {
    // A 3×4 grid of (background, noise); pass 2 left out (1, 1), (1, 2) and the whole first
    // row's noise; (2, 3) was NaN in the first pass too (a blanked box) and stays NaN.
    let columns = 4;
    let first: Vec<f64> = (0..12).flat_map(|p| [p as f64, 10.0 + p as f64]).collect();
    let mut first_blanked = first.clone();
    first_blanked[11 * 2..].fill(f64::NAN);
    let mut grid: Vec<f64> = (0..12).flat_map(|p| [100.0 + p as f64, 1.0]).collect();
    for p in [5, 6, 11] {
        grid[p * 2..p * 2 + 2].fill(f64::NAN);
    }
    for p in 0..4 {
        grid[p * 2 + 1] = f64::NAN;
    }
    background::fill(&mut grid, &first_blanked, columns);
    // (1, 1)'s backgrounds around it that had one: points 0, 1, 2, 4, 8, 9, 10 (6 was empty).
    let around = |points: &[usize]| points.iter().map(|&p| 100.0 + p as f64).sum::<f64>() / points.len() as f64;
    assert_eq!(grid[5 * 2], around(&[0, 1, 2, 4, 8, 9, 10]));
    assert_eq!(grid[6 * 2], around(&[1, 2, 3, 7, 9, 10]));
    // The first row's noise, and (1, 1)'s and (1, 2)'s, from the points below them.
    assert!(grid.iter().take(22).all(|v| v.is_finite()), "{grid:?}");
    assert_eq!(grid[1], 1.0);
    assert!(grid[22].is_nan() && grid[23].is_nan());
    // Nothing left to fill from: the first pass's values.
    let mut empty = vec![f64::NAN; 24];
    background::fill(&mut empty, &first, columns);
    assert_eq!(empty, first);
}

#[test]
fn an_island_too_small_to_fit_keeps_a_row_of_its_summit() {
    // One bright pixel on a flat field with a little noise: an island of one pixel, too few
    // to fit: its row has the summit's place and value, no shape, no made-up flux.
    let (width, height) = (64, 64);
    let pixels: Vec<f32> = (0..width * height)
        .map(|i| if i == 30 * width + 20 { 5.0 } else { 0.01 * (((i * 7919) % 13) as f32 - 6.0) })
        .collect();
    let image = Image { width, height, pixels };
    // By default an island of fewer pixels than a third of the beam's area is left out…
    assert!(local::find(&image, &settings()).expect("the local mode").fits.is_empty());
    // …and with no least size, it is fitted and flagged.
    let settings = Settings { min_pixels: 1, ..settings() };
    let found = local::find(&image, &settings).expect("the local mode");
    assert_eq!(found.fits.len(), 1);
    assert!(found.fits[0].flags.contains(Flags::FEW_PIXELS), "{:?}", found.fits[0]);
    let (rows, floored) = local::rows(&image, &settings, &found);
    assert_eq!((rows.len(), floored), (1, 0));
    let row = &rows[0];
    assert_eq!((row.x.value, row.y.value, row.x.error), (20.0, 30.0, None));
    assert_eq!((row.shape, row.integrated), (None, None));
    assert_eq!(row.flags, catalog::fit_flags(found.fits[0].flags));
    assert!(row.peak.is_some_and(|p| p.error.is_none() && p.value > 4.9));
}

#[test]
fn a_component_at_the_fits_floor_is_left_out_of_the_catalog() {
    // A bright blob, fitted; beside it a second component is made up with its peak just under,
    // then just over, the floor at its centre: the first is left out and counted, the second
    // has its row.
    let image = blob(64, 0.01, 1.0, 1.5);
    let settings = settings();
    let mut found = local::find(&image, &settings).expect("the local mode");
    let (rows, floored) = local::rows(&image, &settings, &found);
    assert_eq!((rows.len(), floored), (1, 0), "{rows:?}");
    let fit = found.fits.iter().position(|f| !f.components.is_empty() && f.iterations > 0).expect("a fit");
    let mut beside = found.fits[fit].components[0];
    (beside.params.x, beside.params.y) = (beside.params.x.round() + 4.0, beside.params.y.round());
    let noise =
        found.maps.as_ref().expect("the CPU's maps").noise[[beside.params.y as usize, beside.params.x as usize]];
    let floor = settings.floor() * f64::from(noise);
    for (peak, expected) in [(floor * (1.0 - 1e-9), (1, 1)), (floor * (1.0 + 1e-9), (2, 0))] {
        beside.params.peak = peak;
        found.fits[fit].components.truncate(1);
        found.fits[fit].components.push(beside);
        let (rows, floored) = local::rows(&image, &settings, &found);
        assert_eq!((rows.len(), floored), expected, "peak {peak}, floor {floor}: {rows:?}");
    }
}

#[test]
fn the_gpu_finds_what_the_cpu_finds() {
    let gpu = match cuda_kernels::gpu::doctest_gpu() {
        Ok(Some(gpu)) => gpu,
        Ok(None) => {
            eprintln!("SKIPPED the_gpu_finds_what_the_cpu_finds: no usable GPU");
            return;
        }
        Err(e) => panic!("the_gpu_finds_what_the_cpu_finds: {e}"),
    };
    // Odd sizes, constant and rising noise, a blanked border, both connectivities.
    // Both background passes (the second's mask, fill and maps).
    let cases = [
        (509, NoiseProfile::PrimaryBeam, Connectivity::Four, false, Passes::One),
        (777, NoiseProfile::Constant, Connectivity::Eight, true, Passes::Two),
        (1024, NoiseProfile::PrimaryBeam, Connectivity::Four, true, Passes::Two),
    ];
    let mut added = 0;
    for (side, profile, connectivity, border, passes) in cases {
        let (mut image, _) = survey(side, side * side * 190 / (2048 * 2048) + 4, profile, 11);
        if border {
            for (i, p) in image.pixels.iter_mut().enumerate() {
                let (x, y) = (i % side, i / side);
                if x < 3 || y < 2 || x + 5 > side {
                    *p = f32::NAN;
                }
            }
        }
        let settings = Settings { connectivity, passes, ..settings() };
        let what = format!("{side}² {profile:?} {connectivity:?} border {border} {passes:?}");
        let cpu = local::find(&image, &settings).unwrap_or_else(|e| panic!("{what}: CPU: {e}"));
        assert_eq!(cpu.masked_pixels.is_some(), passes == Passes::Two, "{what}");
        added += cpu.fits.iter().map(|f| f.added).sum::<u32>();
        let pipeline = Pipeline::new(&gpu, &image).unwrap_or_else(|e| panic!("{what}: {e}"));
        // Twice on one upload: the labeling and the measures race differently each time.
        for run in 0..2 {
            let found = pipeline
                .find(&image, &settings, CopyBack { maps: true, labels: true })
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            for check in local::compare(&found, &cpu) {
                assert!(check.passed, "{what}, run {run}: {check:?}");
            }
            assert!(!cpu.fits.is_empty(), "{what}: a sky without sources tests little");
            let (gpu_rows, cpu_rows) = (local::rows(&image, &settings, &found), local::rows(&image, &settings, &cpu));
            assert_eq!((gpu_rows.0.len(), gpu_rows.1), (cpu_rows.0.len(), cpu_rows.1), "{what}");
        }
        // Without copies back: no maps or labels, and the same fits.
        let bare = pipeline.find(&image, &settings, CopyBack::default()).expect("a run");
        assert!(bare.maps.is_none() && bare.labels.is_empty());
        assert!(cuda_kernels::fit::compare(&bare.fits, &cpu.fits).passed, "{what}");
        let runs = pipeline.runs(&image, &settings, 3, CopyBack { maps: false, labels: true }).expect("runs");
        assert_eq!(runs.len(), 3);
        assert!(runs[0].labels.is_empty() && !runs[2].labels.is_empty());
    }
    // The skies' close pairs give the fits components from their residuals to agree on.
    assert!(added > 0, "no component from a residual");
}
