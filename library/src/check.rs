//! Comparing a GPU result with its CPU reference, element by element.

use rayon::prelude::*;
use serde::Serialize;

/// The verdict of a GPU result against its CPU reference.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Check {
    /// Whether the lengths match and every element is within the tolerance.
    pub passed: bool,
    /// Largest |gpu - cpu| over all elements (infinite where the GPU gave NaN).
    pub worst_error: f64,
    /// The largest error that passes, in the units of `worst_error`.
    pub tolerance: f64,
    /// How many elements are beyond the tolerance (NaN errors included).
    pub mismatches: usize,
    /// The index of the first of them, if any.
    pub first_mismatch: Option<usize>,
    /// Set by [`racy`]: the result is a race shown on purpose, and this is what it lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub race: Option<Race>,
}

/// What a racy count lost: `of` increments were made, `counted` survived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Race {
    /// The count the racing increments left.
    pub counted: u64,
    /// The increments lost: `of - counted` (0 when the count is above `of`).
    pub lost: u64,
    /// The increments made.
    pub of: u64,
}

impl Check {
    /// What a table's check column says: PASS or FAIL, or `racy` for a race that passed.
    pub fn label(&self) -> &'static str {
        match (self.passed, self.race) {
            (false, _) => "FAIL",
            (true, Some(_)) => "racy",
            (true, None) => "PASS",
        }
    }

    /// The verdict on `errors` against `tolerance` (NaN fails), and on the lengths (`len_ok`).
    pub(crate) fn from_errors(errors: impl Iterator<Item = f64>, tolerance: f64, len_ok: bool) -> Self {
        let (mut worst, mut mismatches, mut first) = (0.0f64, 0usize, None);
        for (i, error) in errors.enumerate() {
            // NaN compares false: an error that is NaN is a mismatch.
            if error.partial_cmp(&tolerance).is_none_or(|o| o == std::cmp::Ordering::Greater) {
                mismatches += 1;
                first.get_or_insert(i);
            }
            worst = worst.max(if error.is_nan() { f64::INFINITY } else { error });
        }
        let passed = len_ok && mismatches == 0;
        Self { passed, worst_error: worst, tolerance, mismatches, first_mismatch: first, race: None }
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

/// A count of `of` racing increments: any count from 1 to `of` is a possible outcome (each
/// lost update overwrites others, but the last store holds at least one), so it passes when it
/// lies there; the error is its distance from that range.
pub fn racy(counted: u64, of: u64) -> Check {
    let worst = if counted == 0 { 1 } else { counted.saturating_sub(of) };
    let race = Race { counted, lost: of.saturating_sub(counted), of };
    Check { race: Some(race), ..Check::from_errors(std::iter::once(worst as f64), 0.0, of >= 1) }
}

/// `1048576` as `1,048,576`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
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

    #[test]
    fn a_race_passes_with_any_possible_count() {
        let most_lost = racy(1, 1 << 20);
        assert!(most_lost.passed && most_lost.mismatches == 0);
        assert_eq!(most_lost.race, Some(Race { counted: 1, lost: (1 << 20) - 1, of: 1 << 20 }));
        assert!(racy(1000, 1000).passed, "no update lost is possible too");
        for impossible in [racy(0, 1000), racy(1001, 1000)] {
            assert!(!impossible.passed);
            assert_eq!(impossible.worst_error, 1.0);
        }
    }
}
