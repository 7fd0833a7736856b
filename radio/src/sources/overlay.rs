//! A picture of what was found: the image on an asinh scale (linear within the noise,
//! logarithmic for the bright sources), each source circled, as a PNG. Row 0 is at the top,
//! as NumPy and matplotlib show `image[y, x]` (a FITS viewer shows it at the bottom), so a
//! catalog's (x, y) is the PNG's pixel (x, y).

use super::clip::Background;
use super::measure::Source;
use crate::io::{file_error, Image};
use cuda_kernels::gpu::GpuResult;
use image::{ImageFormat, RgbImage};
use rayon::prelude::*;
use std::path::Path;

/// The circles' colour: red-orange, apart from every grey.
pub const MARK: [u8; 3] = [255, 72, 40];
/// Blanked (NaN) pixels: a dark blue, apart from the noise's greys.
pub const BLANK: [u8; 3] = [28, 38, 72];

/// Grey levels in [0, 1]: asinh((v − low)/σ) over its value at the brightest pixel, with low
/// two σ under the median, so the noise shows as texture and the brightest source as white.
fn stretch(pixels: &[f32], background: &Background) -> impl Fn(f32) -> f64 + Sync {
    let sigma = background.sigma;
    let low = background.median - 2.0 * sigma;
    let brightest = pixels.par_iter().copied().filter(|v| v.is_finite()).reduce(|| f32::NEG_INFINITY, f32::max);
    let span = ((f64::from(brightest) - low) / sigma).max(1.0).asinh();
    move |v| ((f64::from(v) - low) / sigma).asinh().clamp(0.0, span) / span
}

/// How far from a source's centre its circle is drawn: clear of its bounding box.
fn radius(source: &Source, thickness: f64) -> f64 {
    let half = (source.y_max - source.y_min).max(source.x_max - source.x_min) as f64 / 2.0;
    half + 3.0 + thickness
}

/// The overlay as RGB bytes, row by row.
pub fn render(image: &Image, background: &Background, sources: &[Source]) -> Vec<u8> {
    let (width, height) = (image.width, image.height);
    let grey = stretch(&image.pixels, background);
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
    for source in sources {
        let r = radius(source, thickness);
        let reach = r + thickness;
        let rows = (source.y - reach).floor().max(0.0) as usize..((source.y + reach).ceil() as usize + 1).min(height);
        let cols = (source.x - reach).floor().max(0.0) as usize..((source.x + reach).ceil() as usize + 1).min(width);
        for row in rows {
            for col in cols.clone() {
                let distance = (row as f64 - source.y).hypot(col as f64 - source.x);
                if (distance - r).abs() <= thickness / 2.0 {
                    let i = 3 * (row * width + col);
                    rgb[i..i + 3].copy_from_slice(&MARK);
                }
            }
        }
    }
    rgb
}

/// Writes the overlay of `sources` on `image` to `path` as an RGB PNG.
pub fn write(path: &Path, image: &Image, background: &Background, sources: &[Source]) -> GpuResult<()> {
    let cannot = |reason: String| file_error(path, format!("cannot write: {}", reason));
    let (Ok(width), Ok(height)) = (u32::try_from(image.width), u32::try_from(image.height)) else {
        return Err(cannot(format!("{}x{} is too large for a PNG", image.width, image.height)));
    };
    let picture = RgbImage::from_raw(width, height, render(image, background, sources))
        .ok_or_else(|| cannot(format!("the pixels do not make a {}x{} image", width, height)))?;
    picture.save_with_format(path, ImageFormat::Png).map_err(|e| cannot(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
