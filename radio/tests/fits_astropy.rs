//! The FITS reader against astropy. `scripts/fits-fixtures` had astropy write each layout from
//! arrays it defines (every BITPIX, scaled and blanked, length-1 axes, images behind other
//! HDUs, a gzipped file, Rice, GZIP and PLIO tile compression of integers, and of quantized
//! floats with each dither), and saved beside each file what astropy reads from it, as float32.
//! Every pixel read here must be astropy's to the bit, NaN where astropy has NaN.
//! `manifest.json` lists the cases, and the files that must be refused with the words their
//! error must hold.

use radio::fits::{self, Hdu};
use radio::io::{self, ImageKind};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
struct Manifest {
    images: Vec<Case>,
    refused: Vec<Refusal>,
}

#[derive(Deserialize)]
struct Case {
    file: String,
    /// The HDU to read: null for the reader's own choice, else an index or an EXTNAME.
    hdu: serde_json::Value,
    reference: String,
}

#[derive(Deserialize)]
struct Refusal {
    file: String,
    error: String,
}

fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fits")
}

fn manifest() -> Manifest {
    let text = std::fs::read_to_string(folder().join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn hdu(value: &serde_json::Value) -> Option<Hdu> {
    match value {
        serde_json::Value::Null => None,
        serde_json::Value::Number(n) => Some(Hdu::Index(n.as_u64().unwrap() as usize)),
        serde_json::Value::String(name) => Some(Hdu::Name(name.clone())),
        other => panic!("an HDU is an index or a name, not {other}"),
    }
}

/// Where `got` differs from `expected` (NaN matching NaN, every other value by its bits).
fn differences(got: &[f32], expected: &[f32]) -> Vec<String> {
    let same = |a: f32, b: f32| (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits();
    got.iter()
        .zip(expected)
        .enumerate()
        .filter(|&(_, (&a, &b))| !same(a, b))
        .map(|(i, (a, b))| {
            format!("pixel {i}: {a:e} (bits {:08x}), astropy {b:e} (bits {:08x})", a.to_bits(), b.to_bits())
        })
        .collect()
}

#[test]
fn every_layout_reads_as_astropy_reads_it() {
    let manifest = manifest();
    let mut failures = Vec::new();
    for case in &manifest.images {
        let path = folder().join(&case.file);
        let hdu = hdu(&case.hdu);
        let ((rows, cols), expected) = io::read_matrix::<f32>(&folder().join(&case.reference)).unwrap();
        let name = format!("{} (HDU {:?})", case.file, hdu);
        let image = match fits::read_image_hdu(&path, hdu.as_ref()) {
            Ok(image) => image,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        if (image.height, image.width) != (rows, cols) {
            failures.push(format!("{name}: {}x{}, astropy {cols}x{rows}", image.width, image.height));
            continue;
        }
        let wrong = differences(&image.pixels, &expected);
        if !wrong.is_empty() {
            failures.push(format!("{name}: {} of {} pixels differ, first {}", wrong.len(), expected.len(), wrong[0]));
        }
        // The bytes in memory, and the images by their names (`.fits.gz` included), read the same.
        let bytes = std::fs::read(&path).unwrap();
        let in_memory = fits::read_image_hdu_bytes(&path, &bytes, hdu.as_ref()).unwrap();
        assert!(differences(&in_memory.pixels, &image.pixels).is_empty(), "{name}");
        if hdu.is_none() {
            assert_eq!(ImageKind::of(&path), ImageKind::Fits, "{name}");
            assert!(differences(&io::read_image(&path).unwrap().pixels, &image.pixels).is_empty(), "{name}");
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from astropy:\n{}",
        failures.len(),
        manifest.images.len(),
        failures.join("\n")
    );
}

#[test]
fn the_manifest_covers_every_fixture() {
    let manifest = manifest();
    let listed: Vec<&str> = manifest
        .images
        .iter()
        .map(|c| c.file.as_str())
        .chain(manifest.refused.iter().map(|r| r.file.as_str()))
        .collect();
    let references: Vec<&str> = manifest.images.iter().map(|c| c.reference.as_str()).collect();
    for entry in std::fs::read_dir(folder()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let covered = listed.contains(&name.as_str()) || references.contains(&name.as_str()) || name == "manifest.json";
        assert!(covered, "{name} is in the fixture folder but not in its manifest");
    }
    // Each BITPIX, the gzipped file, each tile compression read and each dither are there.
    for needed in ["u8", "i16", "i32", "i64", "f32", "f64", "gz", "rice", "gzip1", "gzip2", "plio", "sd1", "sd2"] {
        assert!(listed.iter().any(|f| f.contains(needed)), "no fixture for {needed}");
    }
}

#[test]
fn what_is_not_read_is_refused_by_name() {
    for refusal in manifest().refused {
        let path = folder().join(&refusal.file);
        let error = fits::read_image(&path).unwrap_err().to_string();
        assert!(error.contains(&refusal.file), "{error}");
        assert!(error.contains(&refusal.error), "{}: {error:?} does not say {:?}", refusal.file, refusal.error);
    }
}

#[test]
fn fits_names_are_told_gzipped_or_not() {
    for name in ["sky.fits", "a/sky.FITS", "sky.fit", "sky.fts", "sky.fits.gz", "SKY.FIT.GZ", "sky.fz"] {
        assert_eq!(ImageKind::of(Path::new(name)), ImageKind::Fits, "{name}");
    }
    for name in ["photo.png", "photo.png.gz", "sky.gz", "photo"] {
        assert_eq!(ImageKind::of(Path::new(name)), ImageKind::Png, "{name}");
    }
}
