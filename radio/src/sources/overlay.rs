//! A picture of what was found: the image on an asinh scale (linear within the noise,
//! logarithmic for the bright sources), each source marked, as a PNG: a fitted source by its
//! ellipse (amber where its island's fit did not converge or is singular), any other by a circle
//! clear of its island. Row 0 is at the top, as NumPy and
//! matplotlib show `image[y, x]` (a FITS viewer shows it at the bottom), so a catalog's (x, y)
//! is the PNG's pixel (x, y).

use super::catalog::{self, Row};
use super::clip::Background;
use super::measure::Source;
use crate::io::{file_error, Image};
use cuda_kernels::fit::Flags;
use cuda_kernels::gpu::GpuResult;
use image::{ImageFormat, RgbImage};
use rayon::prelude::*;
use std::path::Path;

/// The marks' colour: red-orange, apart from every grey.
pub const MARK: [u8; 3] = [255, 72, 40];
/// The ellipses of fits that did not converge or are singular: amber, apart from the marks'
/// colour and the greys.
pub const FLAGGED: [u8; 3] = [255, 200, 0];
/// Blanked (NaN) pixels: a dark blue, apart from the noise's greys.
pub const BLANK: [u8; 3] = [28, 38, 72];

/// The grey scale's anchors: the background's level and the noise σ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub median: f64,
    pub sigma: f64,
}

impl From<&Background> for Scale {
    fn from(background: &Background) -> Self {
        Scale { median: background.median, sigma: background.sigma }
    }
}

/// How a source is marked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mark {
    /// A circle clear of a box of half-side `half` (pixels) around (x, y).
    Circle { x: f64, y: f64, half: f64 },
    /// A fitted ellipse: its axes' full widths at half maximum (pixels), the major axis's
    /// angle in degrees from +x towards +y, and whether its island's fit did not converge or
    /// is singular (drawn in [`FLAGGED`]).
    Ellipse { x: f64, y: f64, major: f64, minor: f64, angle: f64, flagged: bool },
}

/// The circle of each island of the lesson.
pub fn circles(sources: &[Source]) -> Vec<Mark> {
    sources
        .iter()
        .map(|s| Mark::Circle { x: s.x, y: s.y, half: (s.y_max - s.y_min).max(s.x_max - s.x_min) as f64 / 2.0 })
        .collect()
}

/// The mark of each catalog row: its ellipse where it has a shape (flagged where its island's
/// fit did not converge or is singular), else a circle clear of its island's box (of no size
/// without one).
pub fn marks(rows: &[Row]) -> Vec<Mark> {
    let unsettled = catalog::fit_flags(Flags::NOT_CONVERGED) | catalog::fit_flags(Flags::SINGULAR);
    rows.iter()
        .map(|r| {
            let (x, y) = (r.x.value, r.y.value);
            match (r.shape, r.measures) {
                (Some(s), _) => Mark::Ellipse {
                    x,
                    y,
                    major: s.major.value,
                    minor: s.minor.value,
                    angle: s.angle.value,
                    flagged: r.flags & unsettled != 0,
                },
                (None, Some(m)) => Mark::Circle { x, y, half: (m.y_max - m.y_min).max(m.x_max - m.x_min) as f64 / 2.0 },
                (None, None) => Mark::Circle { x, y, half: 0.0 },
            }
        })
        .collect()
}

/// Grey levels in [0, 1]: asinh((v − low)/σ) over its value at the brightest pixel, with low
/// two σ under the median, so the noise shows as texture and the brightest source as white.
fn stretch(pixels: &[f32], scale: Scale) -> impl Fn(f32) -> f64 + Sync {
    let sigma = scale.sigma;
    let low = scale.median - 2.0 * sigma;
    let brightest = pixels.par_iter().copied().filter(|v| v.is_finite()).reduce(|| f32::NEG_INFINITY, f32::max);
    let span = ((f64::from(brightest) - low) / sigma).max(1.0).asinh();
    move |v| ((f64::from(v) - low) / sigma).asinh().clamp(0.0, span) / span
}

/// A mark's outline: its centre, its semi-axes (pixels), its angle (radians), for a line of
/// `thickness`. A circle clears its box by 3 pixels and the line; an ellipse has the fitted
/// shape, its semi-axes half the FWHM, scaled up where needed so that the line clears the
/// source's brightest pixels (a semi-minor axis of at least 2 pixels and the line); an ellipse
/// whose angle is lost (NaN) is the circle of its major axis.
fn outline(mark: &Mark, thickness: f64) -> (f64, f64, f64, f64, f64) {
    match *mark {
        Mark::Circle { x, y, half } => {
            let r = half + 3.0 + thickness;
            (x, y, r, r, 0.0)
        }
        Mark::Ellipse { x, y, major, angle, flagged, .. } if angle.is_nan() => {
            outline(&Mark::Ellipse { x, y, major, minor: major, angle: 0.0, flagged }, thickness)
        }
        Mark::Ellipse { x, y, major, minor, angle, .. } => {
            let (a, b) = (major.max(minor) / 2.0, major.min(minor) / 2.0);
            let scale = if b > 0.0 { ((2.0 + thickness) / b).max(1.0) } else { 1.0 };
            (x, y, a * scale, b * scale, angle.to_radians())
        }
    }
}

/// The overlay as RGB bytes, row by row: `image` on the grey scale of `scale`, each of `marks`
/// drawn.
pub fn render_marks(image: &Image, scale: Scale, marks: &[Mark]) -> Vec<u8> {
    let (width, height) = (image.width, image.height);
    let grey = stretch(&image.pixels, scale);
    let mut rgb: Vec<u8> = image
        .pixels
        .par_iter()
        .flat_map_iter(|&v| match v.is_nan() {
            true => BLANK,
            false => [(grey(v) * 255.0).round() as u8; 3],
        })
        .collect();
    // Lines a pixel wide up to 1024 pixels a side, thicker above, so they show when a large
    // image is viewed whole.
    let thickness = (width.max(height) as f64 / 1024.0).max(1.0);
    for mark in marks {
        let (x, y, a, b, angle) = outline(mark, thickness);
        if !(x.is_finite() && y.is_finite() && a.is_finite() && b > 0.0 && angle.is_finite()) {
            continue;
        }
        let colour = match mark {
            Mark::Ellipse { flagged: true, .. } => FLAGGED,
            _ => MARK,
        };
        let (sin, cos) = angle.sin_cos();
        let reach = a + thickness;
        let rows =
            (y - reach).floor().max(0.0) as usize..((y + reach).ceil().max(-1.0) + 1.0).min(height as f64) as usize;
        let cols =
            (x - reach).floor().max(0.0) as usize..((x + reach).ceil().max(-1.0) + 1.0).min(width as f64) as usize;
        for row in rows {
            for col in cols.clone() {
                let (dx, dy) = (col as f64 - x, row as f64 - y);
                let (along, across) = (dx * cos + dy * sin, dy * cos - dx * sin);
                let (distance, r) = (along.hypot(across), (along / a).hypot(across / b));
                // Along the ray from the centre, the outline lies at distance / r.
                if r > 0.0 && (distance - distance / r).abs() <= thickness / 2.0 {
                    let i = 3 * (row * width + col);
                    rgb[i..i + 3].copy_from_slice(&colour);
                }
            }
        }
    }
    rgb
}

/// The overlay of the lesson's `sources` on `image` as RGB bytes, each circled.
pub fn render(image: &Image, background: &Background, sources: &[Source]) -> Vec<u8> {
    render_marks(image, background.into(), &circles(sources))
}

/// Writes the overlay of `marks` on `image` to `path` as an RGB PNG.
pub fn write_marks(path: &Path, image: &Image, scale: Scale, marks: &[Mark]) -> GpuResult<()> {
    let cannot = |reason: String| file_error(path, format!("cannot write: {}", reason));
    let (Ok(width), Ok(height)) = (u32::try_from(image.width), u32::try_from(image.height)) else {
        return Err(cannot(format!("{}x{} is too large for a PNG", image.width, image.height)));
    };
    let picture = RgbImage::from_raw(width, height, render_marks(image, scale, marks))
        .ok_or_else(|| cannot(format!("the pixels do not make a {}x{} image", width, height)))?;
    picture.save_with_format(path, ImageFormat::Png).map_err(|e| cannot(e.to_string()))
}

/// Writes the overlay of the lesson's `sources` on `image` to `path` as an RGB PNG.
pub fn write(path: &Path, image: &Image, background: &Background, sources: &[Source]) -> GpuResult<()> {
    write_marks(path, image, background.into(), &circles(sources))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::catalog::{Measured, Shape};
    use test_support::scratch;

    #[test]
    fn the_overlay_stretches_the_image_and_circles_each_source() {
        // 40x30 of noise-free background 0 with σ 1, a NaN corner, one bright pixel at
        // (row 10, column 20) that is its own source.
        let (width, height) = (40, 30);
        let mut pixels = vec![0.0f32; width * height];
        pixels[0] = f32::NAN;
        pixels[10 * width + 20] = 100.0;
        let image = Image { width, height, pixels };
        let background = Background { median: 0.0, sigma: 1.0, rounds: 1, kept: width * height - 2 };
        let source = Source {
            label: 1,
            y: 10.0,
            x: 20.0,
            flux: 100.0,
            peak: 100.0,
            pixels: 1,
            y_min: 10,
            y_max: 10,
            x_min: 20,
            x_max: 20,
        };
        let rgb = render(&image, &background, std::slice::from_ref(&source));
        let at = |row: usize, col: usize| -> [u8; 3] { rgb[3 * (row * width + col)..][..3].try_into().unwrap() };
        assert_eq!(rgb.len(), 3 * width * height);
        assert_eq!(at(0, 0), BLANK);
        assert_eq!(at(10, 20), [255; 3], "the brightest pixel is white");
        // The background, 2σ above the low end: asinh(2)/asinh(102) of full scale, about 27%.
        let level = (2.0f64.asinh() / 102.0f64.asinh() * 255.0).round() as u8;
        assert_eq!(at(25, 5), [level; 3]);
        // A one-pixel box gets a circle of radius 0 + 3 + 1 = 4: above, below, left and right
        // of the centre at distance 4, never inside it.
        for (row, col) in [(6, 20), (14, 20), (10, 16), (10, 24)] {
            assert_eq!(at(row, col), MARK, "({}, {})", row, col);
        }
        assert_eq!(at(8, 20), [level; 3]);
        let marked = rgb.chunks(3).filter(|p| *p == MARK).count();
        // A ring of radius 4, a pixel wide: about 2π·4 pixels.
        assert!((20..=36).contains(&marked), "{}", marked);

        let dir = scratch("overlay", "write");
        write(&dir.join("o.png"), &image, &background, &[source]).unwrap();
        let read = image::open(dir.join("o.png")).unwrap().to_rgb8();
        assert_eq!((read.width(), read.height()), (40, 30));
        assert_eq!(read.into_raw(), rgb);
        let unwritable = test_support::error_of(write(&dir.join("no-dir").join("o.png"), &image, &background, &[]));
        assert!(unwritable.contains("cannot write"), "{}", unwritable);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_ellipses_of_fits_that_did_not_settle_are_flagged() {
        let m = Measured::bare;
        let row = |flags: u32| Row {
            island: 1,
            component: 0,
            x: m(3.0),
            y: m(4.0),
            peak: None,
            integrated: None,
            rms: None,
            shape: Some(Shape { major: m(6.0), minor: m(3.0), angle: m(30.0) }),
            measures: None,
            flags,
        };
        let flagged = |flags: u32| matches!(marks(&[row(flags)])[0], Mark::Ellipse { flagged: true, .. });
        assert!(!flagged(0) && !flagged(catalog::fit_flags(Flags::AT_EDGE)));
        assert!(flagged(catalog::fit_flags(Flags::NOT_CONVERGED)));
        assert!(flagged(catalog::fit_flags(Flags::SINGULAR) | catalog::fit_flags(Flags::AT_EDGE)));
    }

    #[test]
    fn a_fitted_source_is_drawn_as_its_ellipse() {
        // A 60x40 flat image; an ellipse of FWHM 16 x 8 along +x at (30, 20), and one turned by
        // 90°: the first reaches 8 pixels along x and 4 along y, the second the other way.
        let (width, height) = (60, 40);
        let image = Image { width, height, pixels: vec![0.0; width * height] };
        let scale = Scale { median: 0.0, sigma: 1.0 };
        let ellipse = |x: f64, major: f64, minor: f64, angle: f64| Mark::Ellipse {
            x,
            y: 20.0,
            major,
            minor,
            angle,
            flagged: false,
        };
        let along = ellipse(30.0, 16.0, 8.0, 0.0);
        let rgb = render_marks(&image, scale, &[along]);
        let at =
            |rgb: &[u8], row: usize, col: usize| -> [u8; 3] { rgb[3 * (row * width + col)..][..3].try_into().unwrap() };
        for (row, col) in [(20, 38), (20, 22), (16, 30), (24, 30)] {
            assert_eq!(at(&rgb, row, col), MARK, "({row}, {col})");
        }
        assert_ne!(at(&rgb, 12, 30), MARK, "not a circle of the major axis");
        assert_ne!(at(&rgb, 20, 30), MARK, "not at the centre");
        let turned = render_marks(&image, scale, &[ellipse(30.0, 16.0, 8.0, 90.0)]);
        for (row, col) in [(12, 30), (28, 30), (20, 26), (20, 34)] {
            assert_eq!(at(&turned, row, col), MARK, "turned: ({row}, {col})");
        }
        assert_ne!(at(&turned, 20, 38), MARK);
        // A narrow ellipse is scaled up to clear its centre by 2 pixels and the line, keeping its
        // axis ratio: FWHM 2 x 1 draws semi-axes 6 and 3.
        let small = render_marks(&image, scale, &[ellipse(30.0, 2.0, 1.0, 0.0)]);
        assert_eq!((at(&small, 20, 36), at(&small, 23, 30)), (MARK, MARK));
        // An ellipse whose angle is lost is the circle of its major axis.
        let lost = render_marks(&image, scale, &[ellipse(30.0, 16.0, 8.0, f64::NAN)]);
        for (row, col) in [(20, 38), (20, 22), (12, 30), (28, 30)] {
            assert_eq!(at(&lost, row, col), MARK, "lost angle: ({row}, {col})");
        }
        // A flagged fit's ellipse is the same outline in amber.
        let flagged_along = Mark::Ellipse { x: 30.0, y: 20.0, major: 16.0, minor: 8.0, angle: 0.0, flagged: true };
        let flagged = render_marks(&image, scale, &[flagged_along]);
        let marked = |rgb: &[u8], colour: [u8; 3]| rgb.chunks(3).filter(|p| *p == colour).count();
        assert_eq!((marked(&flagged, FLAGGED), marked(&flagged, MARK)), (marked(&rgb, MARK), 0));
        // A non-finite mark is left out, not drawn.
        let none = render_marks(&image, scale, &[ellipse(f64::NAN, 16.0, 8.0, 0.0)]);
        assert!(none.chunks(3).all(|p| p != MARK));
    }
}
