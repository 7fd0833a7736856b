//! `host sky` and `host sources` as a user runs them (no GPU needed): the image and the truth
//! that sky writes, the same pixels for the same seed; the sources found in it, their catalog
//! and overlay; bad options and images as an error message with a non-zero exit, never a panic.

use host::{fits, io, sky};
use radio::wcs::Coordinates;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh directory for `test` under cargo's scratch directory for integration tests.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sky").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn host(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_host")).args(args).output().expect("the host binary runs")
}

fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 scratch path")
}

#[test]
fn sky_writes_an_image_and_its_truth() {
    let dir = scratch("write");
    let (fits_path, npy_path) = (dir.join("sky.fits"), dir.join("sky.npy"));
    let args = ["sky", "--side", "300", "--sources", "12", "--seed", "4", "--out"];
    let output = host(&[&args[..], &[text(&fits_path)]].concat());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("sky.fits: 300x300 f32, noise σ 0.0133 Jy/beam, 12 point sources"), "{}", stdout);

    let (image, header) = fits::read_image_and_header(&fits_path, None).unwrap();
    assert_eq!((image.width, image.height), (300, 300));
    // The radio header: the image's centre at the pointing, the beam the narrowest point
    // source's, as a source finder reads them.
    let Ok(Coordinates::Sky(wcs)) = Coordinates::from_header(&header) else { panic!("a celestial WCS") };
    let (ra, dec) = wcs.pixel_to_sky(149.5, 149.5).unwrap();
    assert!((ra - sky::POINTING.0).abs() < 1e-12 && (dec - sky::POINTING.1).abs() < 1e-12, "{} {}", ra, dec);
    let beam = sky::FWHM * sky::POINT_SIGMA.0 * sky::PIXEL_ARCSEC / 3600.0;
    assert_eq!(header.real("BMAJ"), Ok(Some(beam)));
    assert_eq!(header.real("BMIN"), Ok(Some(beam)));
    assert_eq!(header.real("RESTFRQ"), Ok(Some(sky::FREQUENCY_HZ)));
    assert!(image.pixels.iter().all(|v| v.is_finite()));
    let truth = std::fs::read_to_string(dir.join("sky-truth.csv")).unwrap();
    assert_eq!(truth.lines().count(), 1 + 2 + 12);
    assert_eq!(truth.lines().filter(|l| l.ends_with(",point")).count(), 12);

    // The same seed draws the same sky, whichever format it is written in.
    let output = host(&[&args[..], &[text(&npy_path), "--truth", text(&dir.join("again.csv"))]].concat());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(io::read_matrix::<f32>(&npy_path).unwrap(), ((300, 300), image.pixels));
    assert_eq!(std::fs::read_to_string(dir.join("again.csv")).unwrap(), truth);

    let blank = dir.join("blank.fits");
    let output = host(&["sky", "--side", "300", "--sources", "12", "--blank", "--json", "--out", text(&blank)]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    let nan = fits::read_image(&blank).unwrap().pixels.iter().filter(|v| v.is_nan()).count();
    assert_eq!(summary["blanked_pixels"], nan);
    assert!(nan > 0);
}

#[test]
fn bad_sky_options_exit_with_a_message() {
    let dir = scratch("bad");
    let out = dir.join("sky.fits");
    let cases: &[(&[&str], &str)] = &[
        (&["--side", "8"], "--side must be 16 to 32768 pixels (got 8)"),
        (&["--side", "70000"], "(got 70000)"),
        (&["--noise", "0"], "--noise must be a positive number"),
        (&["--noise", "-0.1"], "--noise must be a positive number"),
        (&["--sources", "200000"], "--sources must be at most 100000"),
        (&["--side", "64", "--sources", "80"], "placed only"),
        (&["--side", "ten"], "invalid value 'ten'"),
    ];
    for (options, needle) in cases {
        let output = host(&[&["sky", "--out", text(&out)], *options].concat());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{:?} succeeded", options);
        assert!(stderr.contains(needle) && !stderr.contains("panicked"), "{:?}: {}", options, stderr);
    }
    let output = host(&["sky", "--side", "64", "--out", text(&dir.join("sky.png"))]);
    assert!(String::from_utf8_lossy(&output.stderr).contains("sky.png: the sky is written as .fits or .npy"));
    assert!(!out.exists(), "nothing is written when the options are bad");
}

/// The rows of a CSV file after its header, split at commas.
fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).expect("a CSV file");
    text.lines().skip(1).map(|line| line.split(',').map(str::to_string).collect()).collect()
}

#[test]
fn sources_finds_every_point_source_of_the_sky() {
    let dir = scratch("sources");
    let sky = dir.join("sky.fits");
    let output = host(&["sky", "--side", "256", "--sources", "6", "--blank", "--json", "--out", text(&sky)]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let blanked = serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()["blanked_pixels"].clone();

    let overlay = dir.join("found.png");
    // On the CPU here (the GPU pipeline's own tests are in gpu.rs).
    let output = host(&["sources", "--cpu", "--image", text(&sky), "--overlay", text(&overlay)]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("sky.fits (256x256), on the CPU"), "{}", stdout);
    for needle in ["κσ clipping", "labeling", "NaN pixels ignored", "clipping rounds at κ 3", "above 5σ", "4-connected"]
    {
        assert!(stdout.contains(needle), "{}: {}", needle, stdout);
    }
    assert!(overlay.exists());
    // Each true point source has a source within half a pixel (columns label,y,x,…).
    let found: Vec<(f64, f64)> =
        csv_rows(&dir.join("sky-sources.csv")).iter().map(|r| (r[2].parse().unwrap(), r[1].parse().unwrap())).collect();
    let points: Vec<(f64, f64)> = csv_rows(&dir.join("sky-truth.csv"))
        .iter()
        .filter(|r| r[6] == "point")
        .map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap()))
        .collect();
    assert_eq!(points.len(), 6);
    for (x, y) in points {
        assert!(found.iter().any(|&(fx, fy)| (fx - x).hypot(fy - y) < 0.5), "({}, {}) not in {:?}", x, y, found);
    }

    let output = host(&["sources", "--cpu", "--image", text(&sky), "--connectivity", "8", "--json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(summary["settings"]["connectivity"], 8);
    assert_eq!(summary["nan_pixels"], blanked);
    let catalog: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sky-sources.json")).unwrap()).unwrap();
    assert_eq!(
        catalog["sources"].as_array().map(Vec::len).map(serde_json::Value::from),
        Some(summary["sources"].clone())
    );
}

#[test]
fn bad_sources_options_and_images_exit_with_a_message() {
    let dir = scratch("bad-sources");
    let sky = dir.join("sky.npy");
    assert!(host(&["sky", "--side", "64", "--sources", "1", "--out", text(&sky)]).status.success());
    let blank = dir.join("blank.npy");
    io::write_matrix(&blank, (4, 4), &[f32::NAN; 16]).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--kappa", "0"], "--kappa must be a positive number (got 0)"),
        (&["--kappa", "-2"], "(got -2)"),
        (&["--threshold", "NaN"], "--threshold must be a positive number of σ (got NaN)"),
        (&["--threshold", "five"], "invalid value 'five'"),
        (&["--connectivity", "6"], "invalid value '6'"),
        (&["--overlay", "out.jpg.npy"], "the overlay is written as a PNG"),
        (&["--labels", "labels.png"], "the labels are written as a .npy array"),
        (&["--runs", "0"], "invalid value '0'"),
    ];
    for (options, needle) in cases {
        let output = host(&[&["sources", "--cpu", "--image", text(&sky)], *options].concat());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{:?} succeeded", options);
        assert!(stderr.contains(needle) && !stderr.contains("panicked"), "{:?}: {}", options, stderr);
    }
    for (image, needle) in [(&blank, "blank.npy: all 16 pixels are NaN"), (&dir.join("none.fits"), "no such file")] {
        let output = host(&["sources", "--cpu", "--image", text(image)]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(needle) && !stderr.contains("panicked"), "{}", stderr);
    }
    let help = host(&["sources", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("on the GPU"));
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    // The PTX is megabytes: far more than a pipe holds, so the host is still writing when the
    // reader goes away, as with `host ptx | head`.
    let mut child = Command::new(env!("CARGO_BIN_EXE_host"))
        .arg("ptx")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the host binary runs");
    let mut start = [0u8; 64];
    child.stdout.take().expect("its stdout").read_exact(&mut start).expect("the PTX's first bytes");
    let mut stderr = String::new();
    child.stderr.take().expect("its stderr").read_to_string(&mut stderr).expect("its stderr");
    child.wait().expect("the host ends");
    assert!(String::from_utf8_lossy(&start).contains("NVVM"), "{}", String::from_utf8_lossy(&start));
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn score_scores_another_finder_s_catalog_against_the_truth() {
    let dir = scratch("score");
    let sky = dir.join("sky.npy");
    assert!(host(&["sky", "--side", "256", "--sources", "6", "--out", text(&sky)]).status.success());
    // A perfect finder: each point source where the truth has it, and one false detection.
    let truth = dir.join("sky-truth.csv");
    let mut catalog = String::from("x,y,peak,flux\n");
    for row in csv_rows(&truth).iter().filter(|r| r[6] == "point") {
        catalog += &format!("{},{},{},{}\n", row[0], row[1], row[2], row[3]);
    }
    catalog += "3,3,0.1,1\n";
    let path = dir.join("finder.csv");
    std::fs::write(&path, catalog).unwrap();
    let output = host(&["score", "--catalog", text(&path), "--truth", text(&truth), "--noise", "0.0133", "--json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let score: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!((&score["completeness"]["count"], &score["completeness"]["of"]), (&6.into(), &6.into()));
    assert_eq!((&score["reliability"]["count"], &score["reliability"]["of"]), (&6.into(), &7.into()));

    // The lesson's truth has no noise column: without --noise that is a clear error, as is a
    // catalog that is not there.
    let output = host(&["score", "--catalog", text(&path), "--truth", text(&truth)]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("the truth has no `noise` column"));
    let output = host(&["score", "--catalog", text(&dir.join("absent.csv")), "--truth", text(&truth), "--noise", "1"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("absent.csv"));
}

#[test]
fn bad_survey_paths_exit_with_a_message() {
    let dir = scratch("survey");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.csv"), "x\n").unwrap();
    let absent = dir.join("absent.fits");
    let twins = dir.join("twins");
    std::fs::create_dir_all(&twins).unwrap();
    io::write_matrix(&twins.join("a.npy"), (2, 2), &[0.0f32; 4]).unwrap();
    fits::write_image(&twins.join("a.fits"), 2, 2, &[0.0f32; 4]).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&[], "the following required arguments were not provided"),
        (&[text(&absent)], "absent.fits: no such image or directory"),
        (&[text(&empty)], "holds no FITS or .npy image"),
        (&[text(&twins)], "a.npy would both write"),
    ];
    for (args, needle) in cases {
        let output = host(&[&["survey"], *args].concat());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(needle), "{:?}: {}", args, stderr);
        assert!(!stderr.contains("panicked"), "{}", stderr);
    }
}

#[test]
fn a_survey_takes_each_image_once_in_order() {
    let dir = scratch("survey-list");
    for name in ["b.npy", "a.fits"] {
        let path = dir.join(name);
        if name.ends_with(".npy") {
            io::write_matrix(&path, (2, 2), &[0.0f32; 4]).unwrap();
        } else {
            fits::write_image(&path, 2, 2, &[0.0f32; 4]).unwrap();
        }
    }
    std::fs::write(dir.join("notes.csv"), "x\n").unwrap();
    let (a, b) = (dir.join("a.fits"), dir.join("b.npy"));
    // A directory gives its images by name; one named again, directly or through it, is kept once.
    let images = host::survey::images(&[b.clone(), dir.clone(), a.clone()]).unwrap();
    assert_eq!(images, [b, a]);
}
