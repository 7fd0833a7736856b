//! C = A × B on the GPU: the SGEMM ladder (`launch`), the tensor cores' conversions and
//! mma.sync steps (`tensor`) and Hopper's wgmma steps (`hopper`, `split` for split k, `fp8` for
//! e4m3 inputs), with their CPU references.
//!
//! Tolerance: random inputs are uniform in [-1, 1), so a product term has magnitude at most 1
//! and a length-k dot product rounded in any order is typically within about k·ε/3 of the
//! exact value (ε = f32::EPSILON). GPU and CPU sum in different orders, so each element may
//! differ by up to `4·k·ε`, about 12 times the typical error. Inputs from files scale that by
//! `max(1, max|a|·max|b|)`, the bound of a product term.

pub mod fp8;
mod gemm;
pub mod hopper;
pub mod launch;
mod rounding;
pub mod split;
pub mod tensor;

pub use gemm::{f32_default, gemm, gemm_array, gemm_on_slices, gemm_with, hopper_precision, GemmKernel};
pub use launch::{launch_config, product_launch, tile_label, tile_launch, tile_of, SgemmArgs, Step, TensorStep};
pub use rounding::{round_bf16, round_f16, round_tf32};
pub use tensor::{ConvertArgs, ConvertTransposedArgs, Converted, Dtype, MmaArgs, TensorInput, CONVERT_TRANSPOSED};

use ndarray::{Array2, ArrayView2};

/// `A × B` for row-major A (m × k) and B (k × n), in f32 by `ndarray`'s `dot`: C, m × n
/// row-major.
pub fn cpu_reference(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let a = ArrayView2::from_shape((m, k), a).expect("a is m×k");
    let b = ArrayView2::from_shape((k, n), b).expect("b is k×n");
    a.dot(&b).into_raw_vec_and_offset().0
}

/// How far an f32 product's element may be from [`cpu_reference`]'s for inputs in [-1, 1):
/// `4·k·ε` (the module's doc says why).
pub fn tolerance(k: usize) -> f64 {
    4.0 * k as f64 * f32::EPSILON as f64
}

/// The reference of the tensor-core steps: f64 products and sums of A and B as rounded to
/// `dtype`, so that it differs from the GPU's result by the GPU's accumulation alone.
pub fn rounded_reference(dtype: Dtype, a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let a = Array2::from_shape_fn((m, k), |(i, j)| dtype.round(a[i * k + j]) as f64);
    let b = Array2::from_shape_fn((k, n), |(i, j)| dtype.round(b[i * n + j]) as f64);
    a.dot(&b).iter().map(|&x| x as f32).collect()
}
