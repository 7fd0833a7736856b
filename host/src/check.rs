//! Comparing a GPU result with its CPU reference, element by element.

use rayon::prelude::*;
use serde::Serialize;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Check {
    pub passed: bool,
    /// Largest |gpu - cpu| over all elements (infinite where the GPU gave NaN).
    pub worst_error: f64,
    pub tolerance: f64,
    pub mismatches: usize,
    pub first_mismatch: Option<usize>,
}

impl Check {
    fn from_errors(errors: impl Iterator<Item = f64>, tolerance: f64, len_ok: bool) -> Self {
        let (mut worst, mut mismatches, mut first) = (0.0f64, 0usize, None);
        for (i, error) in errors.enumerate() {
            // NaN compares false: an error that is NaN is a mismatch.
            if error.partial_cmp(&tolerance).is_none_or(|o| o == std::cmp::Ordering::Greater) {
                mismatches += 1;
                first.get_or_insert(i);
            }
            worst = worst.max(if error.is_nan() { f64::INFINITY } else { error });
        }
        Self { passed: len_ok && mismatches == 0, worst_error: worst, tolerance, mismatches, first_mismatch: first }
    }
}

/// Integer results must match exactly.
pub fn exact(gpu: &[u32], cpu: &[u32]) -> Check {
    let errors = gpu.iter().zip(cpu).map(|(&g, &c)| (g as f64 - c as f64).abs());
    Check::from_errors(errors, 0.0, gpu.len() == cpu.len())
}

/// f32 results must lie within `tolerance` of the reference; NaN never passes, so an
/// element the kernel did not write (the output is poisoned with NaN) fails.
pub fn close(gpu: &[f32], cpu: &[f32], tolerance: f64) -> Check {
    let errors = gpu.iter().zip(cpu).map(|(&g, &c)| (g as f64 - c as f64).abs());
    Check::from_errors(errors, tolerance, gpu.len() == cpu.len())
}

/// `max(1, max|a|·max|b|)`: what bounds a product of an `a` and a `b`, at least 1; scales the
/// tolerances of conv2d, conv1d and matmul to inputs from files.
pub fn product_scale(a: &[f32], b: &[f32]) -> f64 {
    let largest = |v: &[f32]| v.par_iter().map(|x| x.abs()).reduce(|| 0.0, f32::max) as f64;
    (largest(a) * largest(b)).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_counts_mismatches() {
        let check = exact(&[1, 2, 3, 9], &[1, 2, 3, 4]);
        assert!(!check.passed);
        assert_eq!((check.mismatches, check.first_mismatch, check.worst_error), (1, Some(3), 5.0));
        assert!(exact(&[7, 8], &[7, 8]).passed);
        assert!(!exact(&[7], &[7, 8]).passed, "a short result never passes");
    }

    #[test]
    fn close_rejects_nan_and_out_of_tolerance() {
        assert!(close(&[1.0, 2.0005], &[1.0, 2.0], 1e-3).passed);
        assert!(!close(&[1.0, 2.01], &[1.0, 2.0], 1e-3).passed);
        let nan = close(&[f32::NAN], &[0.0], 1.0);
        assert!(!nan.passed);
        assert!(nan.worst_error.is_infinite());
    }
}
