//! The product of two `.npy` matrices in BF16 on the tensor cores, checked against the CPU.
//!
//! ```sh
//! cargo run --release -p cuda-kernels --example gemm_npy -- a.npy b.npy c.npy
//! cargo run --release -p cuda-kernels --example gemm_npy   # writes and multiplies two random ones
//! ```
//!
//! A and B are f32 matrices (m×k and k×n); C = A × B is written as an f32 `.npy`. The GPU reads
//! A and B rounded to bf16 and sums in f32; the check is against f64 sums of the same rounded
//! values, within the tolerance of an f32 accumulation over k terms.

use cuda_kernels::matmul::{gemm_array, hopper, rounded_reference, Dtype};
use ndarray::Array2;
use ndarray_npy::{read_npy, write_npy};
use std::error::Error;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn Error>> {
    let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let (a_path, b_path, c_path) = match args.as_slice() {
        [a, b, c] => (a.clone(), b.clone(), c.clone()),
        [] => {
            let dir = std::env::temp_dir().join(format!("gemm-npy-{}", std::process::id()));
            std::fs::create_dir_all(&dir)?;
            let value = |i: usize, j: usize, salt: usize| ((i * 31 + j * 17 + salt) % 97) as f32 / 48.0 - 1.0;
            write_npy(dir.join("a.npy"), &Array2::from_shape_fn((1000, 777), |(i, j)| value(i, j, 1)))?;
            write_npy(dir.join("b.npy"), &Array2::from_shape_fn((777, 1234), |(i, j)| value(i, j, 2)))?;
            (dir.join("a.npy"), dir.join("b.npy"), dir.join("c.npy"))
        }
        _ => return Err("usage: gemm_npy [A.npy B.npy C.npy]".into()),
    };
    let a: Array2<f32> = read_npy(&a_path).map_err(|e| format!("{}: {e}", a_path.display()))?;
    let b: Array2<f32> = read_npy(&b_path).map_err(|e| format!("{}: {e}", b_path.display()))?;
    let ((m, k), n) = (a.dim(), b.ncols());

    let c = gemm_array(&gpu, a.view(), b.view(), Dtype::Bf16)?;
    write_npy(&c_path, &c)?;

    let (a, b) = (a.as_standard_layout(), b.as_standard_layout());
    let expected = rounded_reference(Dtype::Bf16, a.as_slice().unwrap(), b.as_slice().unwrap(), m, n, k);
    // Σ|a·b| of any element is at most k·max|a|·max|b|.
    let largest = |x: &ndarray::ArrayView2<f32>| x.iter().fold(0f64, |m, v| m.max(v.abs() as f64));
    let tolerance = hopper::tolerance(k, k as f64 * largest(&a.view()) * largest(&b.view()));
    let worst = c.iter().zip(&expected).map(|(g, w)| (g - w).abs() as f64).fold(0.0, f64::max);
    println!(
        "C = A × B in bf16: {m}×{k} · {k}×{n} on {} -> {}; largest error {worst:.2e} (tolerance {tolerance:.2e}): {}",
        gpu.info().name,
        c_path.display(),
        if worst <= tolerance { "OK" } else { "WRONG" }
    );
    if worst > tolerance {
        return Err("the GPU's product differs from the CPU's".into());
    }
    Ok(())
}
