//! Per label, what `scipy.ndimage` measures of the image under it: the pixel count, the summed
//! flux (`sum_labels`), the flux-weighted centre (`center_of_mass`), the brightest pixel
//! (`maximum`) and the bounding box (`find_objects`).
//!
//! SciPy adds each label's values with `np.bincount(labels, weights)`, one pixel after another
//! in raster order, in f64, and weighs the centre by `data * row` and `data * column` in f64
//! (exact: an f32 times an integer below 2^24). One sequential pass here adds in that same
//! order, so the sums are NumPy's to the last bit; it reads the image once, a few
//! milliseconds at 2048².

use serde::Serialize;

/// One source: a connected component of the detection mask.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    /// Its label, 1..n in raster order of its first pixel, as `scipy.ndimage.label` numbers it.
    pub label: u32,
    /// `center_of_mass(data, labels, label)`, which SciPy returns as (row, column): the
    /// flux-weighted mean row…
    pub y: f64,
    /// …and column, 0-based, a pixel's centre at whole numbers.
    pub x: f64,
    /// `sum_labels(data, labels, label)`: the sum of its pixels.
    pub flux: f64,
    /// `maximum(data, labels, label)`: its brightest pixel.
    pub peak: f64,
    /// How many pixels it has (`np.bincount(labels)[label]`).
    pub pixels: usize,
    /// Its bounding box, inclusive: `find_objects(labels)[label - 1]` is
    /// `(slice(y_min, y_max + 1), slice(x_min, x_max + 1))`.
    pub y_min: usize,
    pub y_max: usize,
    pub x_min: usize,
    pub x_max: usize,
}

/// The sums of one label so far.
#[derive(Clone)]
struct Sums {
    pixels: usize,
    flux: f64,
    flux_y: f64,
    flux_x: f64,
    peak: f32,
    rows: (usize, usize),
    cols: (usize, usize),
}

/// The sources of `count` labels (1..=count, each on at least one pixel; 0 is the background)
/// over `pixels`, `width` a row.
pub fn measure(pixels: &[f32], width: usize, labels: &[u32], count: usize) -> Vec<Source> {
    let empty = Sums {
        pixels: 0,
        flux: 0.0,
        flux_y: 0.0,
        flux_x: 0.0,
        peak: f32::NEG_INFINITY,
        rows: (usize::MAX, 0),
        cols: (usize::MAX, 0),
    };
    let mut sums = vec![empty; count + 1];
    for (row, (labels, values)) in labels.chunks(width).zip(pixels.chunks(width)).enumerate() {
        for (col, (&label, &value)) in labels.iter().zip(values).enumerate() {
            if label == 0 {
                continue;
            }
            let s = &mut sums[label as usize];
            let v = f64::from(value);
            s.pixels += 1;
            s.flux += v;
            s.flux_y += v * row as f64;
            s.flux_x += v * col as f64;
            s.peak = s.peak.max(value);
            s.rows = (s.rows.0.min(row), s.rows.1.max(row));
            s.cols = (s.cols.0.min(col), s.cols.1.max(col));
        }
    }
    sums.iter()
        .enumerate()
        .skip(1)
        .map(|(label, s)| Source {
            label: label as u32,
            y: s.flux_y / s.flux,
            x: s.flux_x / s.flux,
            flux: s.flux,
            peak: f64::from(s.peak),
            pixels: s.pixels,
            y_min: s.rows.0,
            y_max: s.rows.1,
            x_min: s.cols.0,
            x_max: s.cols.1,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_centres_and_boxes_are_weighted_by_flux() {
        // Label 1: 1 at (0, 0), 3 at (0, 1) and 4 at (1, 1). Label 2: 2 and 6 on row 2,
        // columns 2 and 3. The background's 9s are not counted.
        #[rustfmt::skip]
        let pixels = [
            1.0, 3.0, 9.0, 9.0,
            9.0, 4.0, 9.0, 9.0,
            9.0, 9.0, 2.0, 6.0,
        ];
        #[rustfmt::skip]
        let labels = [
            1, 1, 0, 0,
            0, 1, 0, 0,
            0, 0, 2, 2,
        ];
        let sources = measure(&pixels, 4, &labels, 2);
        // Label 1: flux 8; rows weighted (0·1 + 0·3 + 1·4)/8 = 0.5; columns (0·1 + 1·3 + 1·4)/8.
        // Not the mean of the pixels' positions (1/3, 2/3): that would be unweighted.
        let one = Source {
            label: 1,
            y: 0.5,
            x: 7.0 / 8.0,
            flux: 8.0,
            peak: 4.0,
            pixels: 3,
            y_min: 0,
            y_max: 1,
            x_min: 0,
            x_max: 1,
        };
        // Label 2: flux 8; row 2; columns (2·2 + 3·6)/8 = 2.75.
        let two = Source {
            label: 2,
            y: 2.0,
            x: 2.75,
            flux: 8.0,
            peak: 6.0,
            pixels: 2,
            y_min: 2,
            y_max: 2,
            x_min: 2,
            x_max: 3,
        };
        assert_eq!(sources, vec![one, two]);
        assert_eq!(measure(&pixels, 4, &[0; 12], 0), vec![]);
    }

    #[test]
    fn sums_are_in_f64() {
        // 2^24 + 1 is not an f32, but 2^24 and 1 are: summed in f32 the 1 would be lost.
        let pixels = [16_777_216.0f32, 1.0];
        let source = &measure(&pixels, 2, &[1, 1], 1)[0];
        assert_eq!(source.flux, 16_777_217.0);
        assert_eq!(source.x, 1.0 / 16_777_217.0);
    }
}
