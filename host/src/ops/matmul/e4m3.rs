//! `host matmul --dtype fp8` (step H4, the library's `matmul::fp8`): A and B scaled and rounded
//! to e4m3 on the GPU once (B into Bᵀ, as FP8's wgmma reads it), then the product alone,
//! launched and timed as the other types' products are. C is checked against the f64 product
//! of the inputs as the CPU rounds them (`fp8::quantize`) with scales the CPU computes itself,
//! so that a wrong scale or rounding on the GPU fails the check too; each element must lie
//! within `fp8::tolerance` of its own magnitude `Σ|a·b|`, since FP8's accumulation keeps fewer
//! bits than f32 (the library's module doc says how many). Hopper only: on another GPU the
//! step is named with the reason, as the other wgmma steps are.

use super::options::Dims;
use crate::check::Check;
use crate::gpu::{refuse, Gpu, GpuResult};
use cuda_kernels::matmul::fp8::{self, E4m3Matrix, E4m3Product, Layout};
use cuda_kernels::matmul::hopper;
use cust::memory::DeviceSlice;
use cust::stream::Stream;
use rayon::prelude::*;

/// `--dtype`'s name for FP8 e4m3…
pub const NAME: &str = "fp8";
/// …and the other names it takes for it (those `bench/peers/sweep.py` looks for).
pub const ALIASES: [&str; 2] = ["e4m3", "fp8-e4m3"];

/// A and B in e4m3 on the GPU, the scales the CPU chose for the same inputs, and, once
/// computed, the reference of the checked rows.
pub(super) struct Fp8 {
    product: E4m3Product,
    /// A's and B's scales, from the f32 inputs on the CPU.
    scales: (f32, f32),
    /// Each checked element of C and its tolerance, row by row.
    reference: Vec<(f64, f64)>,
}

impl Fp8 {
    /// A (m × k) and B (k × n), f32 on the GPU (`da`, `db`) and on the host (`a`, `b`), scaled
    /// and rounded on the GPU. Finished on return.
    pub fn convert(
        gpu: &Gpu,
        (da, db): (&DeviceSlice<f32>, &DeviceSlice<f32>),
        (a, b): (&[f32], &[f32]),
        (m, n, k): Dims,
    ) -> GpuResult<Self> {
        let qa = E4m3Matrix::from_f32(gpu, da, (m, k), Layout::AsIs)?;
        let qb = E4m3Matrix::from_f32(gpu, db, (k, n), Layout::Transposed)?;
        let scales = (scale_of("A", a)?, scale_of("B", b)?);
        Ok(Self { product: E4m3Product::new(gpu, qa, qb)?, scales, reference: Vec::new() })
    }

    /// What the report says beside the product: the scales the GPU chose, and the splits of k.
    pub fn note(&self) -> String {
        let (a, b) = (self.product.a().scale(), self.product.b().scale());
        let split = match self.product.splits() {
            1 => String::new(),
            splits => format!("; {splits} splits of k"),
        };
        format!("per-tensor scales (amax / 448): A {a:.4e}, B {b:.4e}{split}")
    }

    /// Queues the product into `c` on `stream`; `kernel` must be [`fp8::GEMM`], the only one.
    ///
    /// # Safety
    /// Queued, not finished, on return: `self` and `c` must stay allocated until `stream` has
    /// run it.
    pub unsafe fn launch_on(&self, gpu: &Gpu, stream: &Stream, kernel: &str, c: &DeviceSlice<f32>) -> GpuResult<()> {
        if kernel != fp8::GEMM {
            return Err(refuse(kernel, format!("--dtype {NAME} runs {} alone", fp8::GEMM)));
        }
        // SAFETY: the caller keeps `self` and `c` until `stream` has run it.
        unsafe { self.product.launch_on(gpu, stream, c) }
    }

    /// The reference of `rows` of C from the f32 inputs A (m × k) and B (k × n).
    pub fn compute_reference(&mut self, inputs: (&[f32], &[f32]), rows: &[usize], (n, k): (usize, usize)) {
        self.reference = reference(inputs, self.scales, rows, (n, k));
    }

    /// `got`, the checked rows of C, against the reference.
    pub fn check(&self, got: &[f32]) -> Check {
        compare(got, &self.reference)
    }
}

/// The scale of a tensor: its largest magnitude over 448 ([`fp8::scale_for`]).
fn scale_of(what: &str, values: &[f32]) -> GpuResult<f32> {
    fp8::scale_for(what, values.par_iter().map(|x| x.abs()).reduce(|| 0.0, f32::max))
}

/// `values` as the GPU rounds them with `scale`: the e4m3 values, before the scale.
fn rounded(values: &[f32], scale: f32) -> Vec<f32> {
    fp8::quantize(values, scale).into_iter().map(fp8::e4m3_value).collect()
}

/// Rows `rows` of C = A × B in f64 on A and B rounded to e4m3 with `scales`, each element with
/// its tolerance, [`fp8::tolerance`] of its terms' magnitude.
fn reference(
    (a, b): (&[f32], &[f32]),
    (scale_a, scale_b): (f32, f32),
    rows: &[usize],
    (n, k): (usize, usize),
) -> Vec<(f64, f64)> {
    // B row by row in parallel: at 16384² it is 2^28 roundings.
    let b: Vec<f32> = b.par_chunks(n).flat_map_iter(|row| rounded(row, scale_b)).collect();
    let scale = scale_a as f64 * scale_b as f64;
    let row = |&i: &usize| {
        let (sums, magnitudes) = hopper::reference_row(&rounded(&a[i * k..(i + 1) * k], scale_a), &b, n, k, 0);
        let elements = sums.into_iter().zip(magnitudes);
        elements.map(move |(sum, magnitude)| (scale * sum, fp8::tolerance(k, scale * magnitude)))
    };
    rows.par_iter().flat_map_iter(row).collect()
}

/// `got` against the reference's values, each within its own tolerance (NaN never passes).
/// The check's worst error is the largest, given with that element's tolerance.
fn compare(got: &[f32], reference: &[(f64, f64)]) -> Check {
    let mut check = Check {
        passed: got.len() == reference.len(),
        worst_error: 0.0,
        tolerance: 0.0,
        mismatches: 0,
        first_mismatch: None,
        race: None,
    };
    for (i, (&value, &(expected, tolerance))) in got.iter().zip(reference).enumerate() {
        let error = (value as f64 - expected).abs();
        let error = if error.is_nan() { f64::INFINITY } else { error };
        if error > tolerance {
            check.mismatches += 1;
            check.first_mismatch.get_or_insert(i);
        }
        if i == 0 || error > check.worst_error {
            (check.worst_error, check.tolerance) = (error, tolerance);
        }
    }
    check.passed &= check.mismatches == 0;
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_multiplies_the_inputs_as_rounded_and_scaled() {
        // A's largest magnitude 3.5 becomes 448 (a scale of 2^-7, exact); 0.3 rounds to
        // 38.4 → 40 (e4m3's step between 32 and 64 is 4), so to 40 / 128 = 0.3125.
        let (a, b) = ([3.5, 0.3], [-2.0, 1.0]);
        let scales = (scale_of("A", &a).unwrap(), scale_of("B", &b).unwrap());
        assert_eq!(scales.0, 2f32.powi(-7));
        let c = reference((&a, &b), scales, &[0], (1, 2));
        let (expected, tolerance) = c[0];
        // B's scale 2 / 448 is inexact in f32: -2 and 1 come back within a unit of it.
        let exact = 3.5 * -2.0 + 0.3125 * 1.0;
        assert!((expected - exact).abs() < 1e-6, "{expected} vs {exact}");
        assert!(tolerance > 0.0 && tolerance < 1e-3, "{tolerance}");
    }

    #[test]
    fn every_element_is_held_to_its_own_tolerance() {
        let reference = [(1.0, 0.1), (100.0, 10.0), (0.0, 0.01)];
        let passed = compare(&[1.05, 108.0, -0.005], &reference);
        assert!(passed.passed && passed.mismatches == 0);
        // The largest error is the second element's, reported with its tolerance.
        assert_eq!(passed.tolerance, 10.0);
        assert!((passed.worst_error - 8.0).abs() < 1e-9);
        // 0.05 off is within the first element's tolerance, not the third's.
        let failed = compare(&[1.0, 100.0, 0.05], &reference);
        assert_eq!((failed.passed, failed.mismatches, failed.first_mismatch), (false, 1, Some(2)));
        let nan = compare(&[f32::NAN, 100.0, 0.0], &reference);
        assert!(!nan.passed && nan.worst_error.is_infinite());
        assert!(!compare(&[1.0, 100.0], &reference).passed, "a short result never passes");
    }
}
