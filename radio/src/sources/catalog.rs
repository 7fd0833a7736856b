//! The catalog: one line per source as CSV, and the same with the run's settings and
//! background as JSON.

use super::measure::Source;
use crate::io::file_error;
use cuda_kernels::gpu::GpuResult;
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;

/// The CSV's first line; the columns are [`Source`]'s fields.
pub const HEADER: &str = "label,y,x,flux,peak,pixels,y_min,y_max,x_min,x_max";

/// The catalog as CSV: a header, then a line per source (only the header when there are none).
/// Numbers are written in full (Rust's shortest text that reads back to the same f64).
pub fn csv(sources: &[Source]) -> String {
    let mut text = format!("{}\n", HEADER);
    for s in sources {
        let _ = writeln!(
            text,
            "{},{},{},{},{},{},{},{},{},{}",
            s.label, s.y, s.x, s.flux, s.peak, s.pixels, s.y_min, s.y_max, s.x_min, s.x_max
        );
    }
    text
}

/// Writes `text` to `path`, an error naming it if that fails.
fn write(path: &Path, text: &str) -> GpuResult<()> {
    std::fs::write(path, text).map_err(|e| file_error(path, format!("cannot write: {}", e)))
}

pub fn write_csv(path: &Path, sources: &[Source]) -> GpuResult<()> {
    write(path, &csv(sources))
}

/// Writes `catalog` (anything serializable, with its sources) as pretty-printed JSON.
pub fn write_json(path: &Path, catalog: &impl Serialize) -> GpuResult<()> {
    let text = serde_json::to_string_pretty(catalog).map_err(|e| file_error(path, format!("cannot write: {}", e)))?;
    write(path, &(text + "\n"))
}

/// Writes the label image as SciPy returns it: a 2-D int32 array, `height` rows of `width`.
pub fn write_labels(path: &Path, width: usize, height: usize, labels: &[u32]) -> GpuResult<()> {
    let labels: Vec<i32> = labels
        .iter()
        .map(|&l| i32::try_from(l))
        .collect::<Result<_, _>>()
        .map_err(|_| file_error(path, "more labels than an int32 array can hold"))?;
    crate::io::write_matrix(path, (height, width), &labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_csv_has_a_line_per_source_with_its_numbers_in_full() {
        let source = Source {
            label: 1,
            y: 10.25,
            x: 1.0 / 3.0,
            flux: 0.1,
            peak: 2.5,
            pixels: 7,
            y_min: 9,
            y_max: 11,
            x_min: 0,
            x_max: 1,
        };
        let text = csv(&[source.clone(), Source { label: 2, ..source }]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [HEADER, "1,10.25,0.3333333333333333,0.1,2.5,7,9,11,0,1", "2,10.25,0.3333333333333333,0.1,2.5,7,9,11,0,1"]
        );
        let x: f64 = lines[1].split(',').nth(2).unwrap().parse().unwrap();
        assert_eq!(x, 1.0 / 3.0, "reads back exactly");
        assert_eq!(csv(&[]), format!("{}\n", HEADER));
    }
}
