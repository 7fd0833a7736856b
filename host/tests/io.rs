//! Real data in and out through the GPU: a PNG filtered with every named filter and a filter
//! file, float images (`.npy`, FITS) filtered into float files, `.npy` round trips through
//! matmul, vector add, histogram and conv1d (with the user's taps), and bad files rejected
//! with clear errors. Without a GPU each test reports that it skipped, like
//! tests/gpu.rs.

mod common;

use common::{assert_passed, gpu, SEED};
use host::gpu::{Cache, Gpu};
use host::io;
use host::ops::conv1d;
use host::ops::conv2d::{cpu_reference, Named};
use host::registry::{self, Timer};
use host::report::Report;
use ndarray::{ArrayView1, ArrayView2};
use std::path::{Path, PathBuf};

/// A fresh directory for `test` under cargo's scratch directory for integration tests.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("io").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// Prepares and runs `family` with `args`, each one argument (paths may hold spaces).
fn run_args(gpu: &Gpu, family: &str, args: &[&str]) -> anyhow::Result<Vec<Report>> {
    let family = host::ops::family(family).expect("a registered family");
    let matches = family.command().try_get_matches_from([&[family.name()], args].concat())?;
    let mut workload = family.prepare(gpu, &matches, SEED)?;
    Ok(registry::run(gpu, family.name(), workload.as_mut(), Timer { launches: 1, cache: Cache::Warm })?)
}

fn run_ok(gpu: &Gpu, family: &str, args: &[&str]) -> Vec<Report> {
    let reports = run_args(gpu, family, args).unwrap_or_else(|e| panic!("{} {:?}: {:#}", family, args, e));
    assert_passed(&reports);
    reports
}

fn expect_error(gpu: &Gpu, family: &str, args: &[&str], needle: &str) {
    match run_args(gpu, family, args) {
        Ok(_) => panic!("`{} {:?}` was accepted; expected an error mentioning {:?}", family, args, needle),
        Err(err) => assert!(format!("{:#}", err).contains(needle), "{:?} not in {:#}", needle, err),
    }
}

fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 scratch path")
}

#[test]
fn png_is_filtered_with_every_named_filter_and_a_filter_file() {
    let Some(gpu) = gpu("png_is_filtered_with_every_named_filter_and_a_filter_file") else { return };
    let dir = scratch("png");
    // Odd sizes, a gradient with a bright square: edges for sobel-x, ramps for the blurs.
    let (width, height) = (67, 45);
    let pixels: Vec<f32> = (0..width * height)
        .map(|i| {
            let (x, y) = (i % width, i / width);
            if (20..40).contains(&x) && (10..30).contains(&y) {
                1.0
            } else {
                x as f32 / width as f32 * 0.6
            }
        })
        .collect();
    let input = dir.join("in.png");
    io::write_png(&input, width, height, &pixels).unwrap();
    let image = io::read_png(&input).unwrap();
    let edge = dir.join("edge 7x7.txt");
    std::fs::write(&edge, "0 0 0 1 0 0 0\n".repeat(3) + "1 1 1 -8 1 1 1\n" + &"0 0 0 1 0 0 0\n".repeat(3)).unwrap();

    let mut filters: Vec<(String, usize, Vec<f32>)> =
        Named::ALL.iter().map(|n| (n.name().to_string(), n.taps().0, n.taps().1)).collect();
    let (side, taps) = io::read_filter(&edge).unwrap();
    filters.push((text(&edge).to_string(), side, taps));
    for (i, (filter, side, taps)) in filters.into_iter().enumerate() {
        let out = dir.join(format!("out {}.png", i));
        let reports = run_ok(&gpu, "conv2d", &["--image", text(&input), "--filter", &filter, "--out", text(&out)]);
        assert!(reports[0].shape.starts_with("67x45 filter"), "{}", reports[0].shape);
        let written = io::read_png(&out).unwrap_or_else(|e| panic!("{}: {}", filter, e));
        assert_eq!((written.width, written.height), (width, height), "{}", filter);
        // The PNG holds the result, clamped (sobel-x: its magnitude) and rounded to 8 bits.
        let expected = cpu_reference(
            ArrayView2::from_shape((height, width), &image.pixels).unwrap(),
            ArrayView2::from_shape((side, side), &taps).unwrap(),
        );
        let magnitude = filter == "sobel-x";
        for (i, (&got, &want)) in written.pixels.iter().zip(expected.iter()).enumerate() {
            let want = if magnitude { want.abs() } else { want }.clamp(0.0, 1.0);
            assert!((got - want).abs() <= 0.5 / 255.0 + 1e-4, "{} pixel {}: {} vs {}", filter, i, got, want);
        }
    }
}

/// Asserts that `got` is within conv2d's and conv1d's tolerance of `want`, for `taps` taps and
/// inputs whose products are at most `scale`.
fn assert_close(what: &str, got: &[f32], want: &[f32], taps: usize, scale: f32) {
    assert_eq!(got.len(), want.len(), "{}", what);
    let tolerance = 4.0 * taps as f32 * f32::EPSILON * scale.max(1.0);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tolerance, "{} element {}: {} vs {} (tolerance {})", what, i, g, w, tolerance);
    }
}

#[test]
fn float_images_are_filtered_into_float_files() {
    let Some(gpu) = gpu("float_images_are_filtered_into_float_files") else { return };
    let dir = scratch("float");
    let path = |name: &str| dir.join(name);
    let arg = |name: &str| text(&dir.join(name)).to_string();
    // A sky-like image beyond [0, 1]: a slope from -0.5 with a bright square of 40.
    let (width, height) = (67, 45);
    let pixels: Vec<f32> = (0..width * height)
        .map(|i| {
            let (x, y) = (i % width, i / width);
            if (20..40).contains(&x) && (10..30).contains(&y) {
                40.0
            } else {
                x as f32 * 0.03 - 0.5
            }
        })
        .collect();
    io::write_image(&path("in.npy"), width, height, &pixels).unwrap();
    io::write_image(&path("in.fits"), width, height, &pixels).unwrap();
    let (side, taps) = Named::SobelX.taps();
    let expected = cpu_reference(
        ArrayView2::from_shape((height, width), &pixels).unwrap(),
        ArrayView2::from_shape((side, side), &taps).unwrap(),
    );
    let expected = expected.as_slice().unwrap();
    for (input, output) in [("in.npy", "out.npy"), ("in.fits", "out.fits"), ("in.fits", "out-fits.npy")] {
        let reports = run_ok(&gpu, "conv2d", &["--image", &arg(input), "--filter", "sobel-x", "--out", &arg(output)]);
        assert!(reports[0].shape.starts_with("67x45 filter 3x3 sobel-x"), "{}", reports[0].shape);
        let written = io::read_image(&path(output)).unwrap();
        assert_eq!((written.width, written.height), (width, height), "{}", output);
        // Signed values, not the PNG's |v| clamped to [0, 1].
        assert!(written.pixels.iter().any(|&v| v < -1.0), "{}", output);
        assert_close(output, &written.pixels, expected, side * side, 40.0 * 2.0);
    }
    // A float image into a PNG: clamped to [0, 1] as before.
    run_ok(&gpu, "conv2d", &["--image", &arg("in.fits"), "--filter", "box", "--out", &arg("out.png")]);
    let png = io::read_png(&path("out.png")).unwrap();
    assert_eq!((png.width, png.height), (width, height));
    assert_eq!((png.pixels[0], png.pixels[20 * width + 30]), (0.0, 1.0));

    // A blanked pixel is refused, naming the file.
    let mut blanked = pixels.clone();
    blanked[3] = f32::NAN;
    io::write_image(&path("blank.fits"), width, height, &blanked).unwrap();
    expect_error(&gpu, "conv2d", &["--image", &arg("blank.fits")], "blank.fits: element 3 is NaN");
}

#[test]
fn conv1d_filters_with_the_users_taps() {
    let Some(gpu) = gpu("conv1d_filters_with_the_users_taps") else { return };
    let dir = scratch("taps");
    let path = |name: &str| dir.join(name);
    let arg = |name: &str| text(&dir.join(name)).to_string();
    let signal: Vec<f32> = (0..1001).map(|i| (i as f32 * 0.05).sin() * 3.0).collect();
    io::write_vector(&path("s.npy"), &signal).unwrap();
    std::fs::write(path("smooth.txt"), "0.0625, 0.25,\n0.375 0.25 0.0625\n").unwrap();
    io::write_vector(&path("edge.npy"), &[-1.0f32, 0.0, 1.0]).unwrap();
    let cases = [("smooth.txt", vec![0.0625f32, 0.25, 0.375, 0.25, 0.0625]), ("edge.npy", vec![-1.0, 0.0, 1.0])];
    for (file, taps) in cases {
        let out = format!("{}.out.npy", file);
        let reports =
            run_ok(&gpu, "conv1d", &["--signal", &arg("s.npy"), "--taps", &arg(file), "--output", &arg(&out)]);
        assert_eq!(reports[0].shape, format!("n=1001 filter {} {}", taps.len(), file));
        let expected = conv1d::cpu_reference(ArrayView1::from(&signal), ArrayView1::from(&taps));
        let got = io::read_vector::<f32>(&path(&out)).unwrap();
        assert_close(file, &got, expected.as_slice().unwrap(), taps.len(), 3.0);
    }
    std::fs::write(path("four.txt"), "1 2 3 4").unwrap();
    expect_error(&gpu, "conv1d", &["--taps", &arg("four.txt")], "four.txt: holds 4 taps: a 1-D filter has 3, 5 or 7");
    std::fs::write(path("nan.txt"), "1 nan 1").unwrap();
    expect_error(&gpu, "conv1d", &["--taps", &arg("nan.txt")], "tap 2: `nan` is not a finite number");
    expect_error(&gpu, "conv1d", &["--taps", &arg("absent.txt")], "absent.txt: no such file");
}

#[test]
fn npy_round_trips_through_the_gpu() {
    let Some(gpu) = gpu("npy_round_trips_through_the_gpu") else { return };
    let dir = scratch("npy");
    let path = |name: &str| dir.join(name);
    let arg = |name: &str| text(&dir.join(name)).to_string();

    // matmul: A 3×4 and B 4×2 of small known values against a CPU product.
    let a: Vec<f32> = (0..12).map(|i| i as f32 - 5.5).collect();
    let b: Vec<f32> = (0..8).map(|i| (i as f32) * 0.25 + 1.0).collect();
    io::write_matrix(&path("a.npy"), (3, 4), &a).unwrap();
    io::write_matrix(&path("b.npy"), (4, 2), &b).unwrap();
    let reports = run_ok(&gpu, "matmul", &["--a", &arg("a.npy"), "--b", &arg("b.npy"), "--output", &arg("c.npy")]);
    assert_eq!(reports[0].shape, "3x2x4");
    let ((m, n), c) = io::read_matrix::<f32>(&path("c.npy")).unwrap();
    assert_eq!((m, n), (3, 2));
    for i in 0..3 {
        for j in 0..2 {
            let want: f32 = (0..4).map(|p| a[i * 4 + p] * b[p * 2 + j]).sum();
            assert!((c[i * 2 + j] - want).abs() <= 1e-4, "C[{}][{}] = {}, expected {}", i, j, c[i * 2 + j], want);
        }
    }

    // vector add: one IEEE addition, so exactly the CPU's sums.
    let (x, y) = ([1.5f32, -2.0, 1e-3, 7.0, 0.1], [0.25f32, 2.0, 1e3, -7.5, 0.2]);
    io::write_vector(&path("x.npy"), &x).unwrap();
    io::write_vector(&path("y.npy"), &y).unwrap();
    run_ok(&gpu, "vector-add", &["--a", &arg("x.npy"), "--b", &arg("y.npy"), "--output", &arg("z.npy")]);
    let sums: Vec<f32> = x.iter().zip(&y).map(|(p, q)| p + q).collect();
    assert_eq!(io::read_vector::<f32>(&path("z.npy")).unwrap(), sums);

    // histogram: u32 values into 4 bins (7 is past the last), then f32 values over [0, 2).
    io::write_vector(&path("u.npy"), &[0u32, 1, 1, 3, 3, 3, 7]).unwrap();
    run_ok(&gpu, "histogram", &["--input-file", &arg("u.npy"), "--bins", "4", "--output", &arg("uc.npy")]);
    assert_eq!(io::read_vector::<u32>(&path("uc.npy")).unwrap(), vec![1, 2, 0, 3]);
    io::write_vector(&path("f.npy"), &[0.1f32, 0.6, 1.9, f32::NAN, 2.0, -0.1]).unwrap();
    let (f, fc) = (arg("f.npy"), arg("fc.npy"));
    let options = ["--input", "f32", "--input-file", &f, "--bins", "2", "--min", "0", "--max", "2", "--output", &fc];
    run_ok(&gpu, "histogram", &options);
    // As `np.histogram`: the last bin holds the upper edge 2.0; NaN and -0.1 are outside.
    assert_eq!(io::read_vector::<u32>(&path("fc.npy")).unwrap(), vec![2, 2], "NaN and -0.1 are outside, 2 inside");

    // conv1d: the taps are random, so check the run passed and the length came back.
    let signal: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.01).sin()).collect();
    io::write_vector(&path("s.npy"), &signal).unwrap();
    run_ok(&gpu, "conv1d", &["--signal", &arg("s.npy"), "--filter", "5", "--output", &arg("t.npy")]);
    assert_eq!(io::read_vector::<f32>(&path("t.npy")).unwrap().len(), 1000);
}

#[test]
fn bad_files_are_clear_errors() {
    let Some(gpu) = gpu("bad_files_are_clear_errors") else { return };
    let dir = scratch("bad");
    let path = |name: &str| text(&dir.join(name)).to_string();
    let (a, b, v3, v4, nan) = (path("a.npy"), path("b.npy"), path("v3.npy"), path("v4.npy"), path("nan.npy"));
    let (notes, wide, missing) = (path("notes.txt"), path("wide.txt"), path("missing.npy"));
    io::write_matrix(Path::new(&a), (3, 4), &[1.0f32; 12]).unwrap();
    io::write_matrix(Path::new(&b), (3, 2), &[1.0f32; 6]).unwrap();
    io::write_vector(Path::new(&v3), &[1.0f32; 3]).unwrap();
    io::write_vector(Path::new(&v4), &[1.0f32; 4]).unwrap();
    io::write_vector(Path::new(&nan), &[1.0f32, f32::NAN]).unwrap();
    std::fs::write(&notes, "not an array").unwrap();
    std::fs::write(&wide, "1 2 3\n4 5 6\n").unwrap();

    expect_error(&gpu, "matmul", &["--a", &a, "--b", &b], "A's columns (4) must equal B's rows (3)");
    expect_error(&gpu, "matmul", &["--a", &v3, "--b", &b], "is 1-D (shape 3), expected a 2-D array");
    expect_error(&gpu, "matmul", &["--a", &a, "--b", &missing], "missing.npy: no such file");
    expect_error(&gpu, "matmul", &["--a", &a], "--b");
    expect_error(&gpu, "vector-add", &["--a", &v3, "--b", &v4], "a and b must be as long");
    expect_error(&gpu, "vector-add", &["--a", &notes, "--b", &v3], "notes.txt: not a .npy file");
    expect_error(&gpu, "vector-add", &["--a", &nan, "--b", &v3], "element 1 is NaN");
    expect_error(&gpu, "histogram", &["--input-file", &v3], "holds f32 ('<f4') values, expected u32 ('<u4')");
    expect_error(&gpu, "conv1d", &["--signal", &a], "expected a 1-D array");
    expect_error(&gpu, "conv2d", &["--image", &v3], "is 1-D (shape 3), expected a 2-D array");
    expect_error(&gpu, "conv2d", &["--image", &notes], "not a PNG file (images are read from .png, .npy or .fits");
    let fits_text = path("text.fits");
    std::fs::write(&fits_text, "not an image").unwrap();
    expect_error(&gpu, "conv2d", &["--image", &fits_text], "text.fits: not a FITS file");
    expect_error(&gpu, "conv2d", &["--image", &missing], "no such file");
    expect_error(&gpu, "conv2d", &["--width", "8", "--height", "8", "--filter", &wide], "must be square");
    expect_error(&gpu, "conv2d", &["--filter", "gausian"], "nor an existing filter file");
    let unwritable = path("no-such-dir/c.npy");
    expect_error(&gpu, "vector-add", &["--n", "10", "--output", &unwritable], "cannot write");
}

/// Runs the `host` binary with `args`: cargo's build of it, or, where this test was packed
/// without its build tree (`scripts/gpu-pack`), the one packed beside it.
fn host_command(args: &[&str]) -> std::process::Output {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_host"));
    let binary = if built.exists() {
        built
    } else {
        std::env::current_exe().expect("the test's own path").with_file_name("host")
    };
    std::process::Command::new(&binary).args(args).output().expect("the host binary runs")
}

/// `host survey` over a directory and a file: each catalog the same as `host sources` writes for
/// its image; one merged catalog holding every row once where the catalogs share their columns,
/// and a clear error where one image has a celestial WCS and another not (a NumPy image has
/// none); more GPUs than present is a clear error.
#[test]
fn survey_writes_each_image_s_catalog_as_sources_does() {
    let Some(gpu) = gpu("survey_writes_each_image_s_catalog_as_sources_does") else { return };
    let dir = scratch("survey");
    let images = dir.join("images");
    std::fs::create_dir_all(&images).unwrap();
    let skies = [("a.fits", "509", "1"), ("b.npy", "300", "2"), ("c.fits", "777", "3")];
    for (name, side, seed) in skies {
        let out = images.join(name);
        let sky = ["sky", "--side", side, "--survey", "--seed", seed, "--out", out.to_str().unwrap()];
        assert!(host_command(&sky).status.success());
    }
    let other = dir.join("d.fits");
    assert!(host_command(&["sky", "--side", "255", "--survey", "--out", other.to_str().unwrap()]).status.success());
    let output = host_command(&["survey", images.to_str().unwrap(), other.to_str().unwrap(), "--json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!((summary["images"].as_u64(), summary["per_gpu"][0].as_u64()), (Some(4), Some(4)));

    let fits = ["images/a.fits", "images/c.fits", "d.fits"].map(|p| dir.join(p));
    let mut fits_rows = 0;
    for image in [dir.join("images/b.npy")].iter().chain(&fits) {
        let surveyed = image.with_file_name(format!("{}-sources.csv", image.file_stem().unwrap().to_string_lossy()));
        let alone = dir.join("alone.csv");
        let sources = ["sources", "--image", image.to_str().unwrap(), "--catalog", alone.to_str().unwrap()];
        let output = host_command(&[&sources[..], &["--no-check"]].concat());
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let (surveyed, alone) = (std::fs::read_to_string(surveyed).unwrap(), std::fs::read_to_string(alone).unwrap());
        assert_eq!(surveyed, alone, "{}", image.display());
        assert!(alone.lines().count() > 1, "{}: no sources", image.display());
        if fits.contains(image) {
            fits_rows += alone.lines().count() - 1;
        }
    }
    let merged = dir.join("all.csv");
    let paths = fits.each_ref().map(|p| p.to_str().unwrap());
    let output = host_command(&[&["survey"][..], &paths, &["--merged", merged.to_str().unwrap(), "--json"]].concat());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    let merged = std::fs::read_to_string(&merged).unwrap();
    assert!(merged.starts_with("image,"));
    assert_eq!(merged.lines().count(), 1 + fits_rows);
    assert_eq!(summary["sources"].as_u64(), Some(fits_rows as u64));
    let mixed = dir.join("mixed.csv");
    let args = ["survey", images.to_str().unwrap(), other.to_str().unwrap(), "--merged", mixed.to_str().unwrap()];
    let output = host_command(&args);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("has other columns than"));

    let too_many = (host::gpu::device_count().unwrap() + 1).to_string();
    let output = host_command(&["survey", images.to_str().unwrap(), "--gpus", &too_many]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains(&format!("--gpus {too_many}: this machine has")));
    drop(gpu);
}
