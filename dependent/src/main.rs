//! Uses `cuda-kernels` as a crate outside its workspace would: opens the GPU, sums values on
//! it with the reduction family and checks the sum against the CPU.
//!
//! Without a usable GPU it prints `SKIPPED: <reason>` and exits 0 (with `REQUIRE_GPU=1` set,
//! it fails instead); on an error or a wrong sum it exits 1.

use cuda_kernels::gpu::{Gpu, GpuError, GpuResult};
use cuda_kernels::reduce::{sum_tolerance, Reducer};
use std::process::ExitCode;

/// Odd on purpose: a multiple of no block, warp or vector width, so the tails run too.
const N: usize = 1_000_003;

/// Σ values on the GPU.
fn gpu_sum(gpu: &Gpu, values: &[f32]) -> GpuResult<f64> {
    let device = gpu.upload("the values", values)?;
    Reducer::new(gpu, values.len())?.sum(gpu, &device)
}

fn main() -> ExitCode {
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(GpuError::NoGpu(why)) if std::env::var_os("REQUIRE_GPU").is_none() => {
            println!("SKIPPED: {why}");
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };

    // Values in [-0.5, 1.5], of both signs.
    let values: Vec<f32> = (0..N).map(|i| (i % 2001) as f32 / 1000.0 - 0.5).collect();
    let cpu: f64 = values.iter().map(|&v| f64::from(v)).sum();
    let gpu_result = match gpu_sum(&gpu, &values) {
        Ok(sum) => sum,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };

    // The library's bound on the GPU sum's rounding, over Σ|values|.
    let tolerance = sum_tolerance(values.iter().map(|v| f64::from(v.abs())).sum());
    let error = (gpu_result - cpu).abs();
    let verdict = if error <= tolerance { "OK" } else { "WRONG" };
    println!("sum of {N} f32 on {}: gpu {gpu_result}, cpu {cpu}: {verdict}", gpu.info().name);
    if error <= tolerance {
        ExitCode::SUCCESS
    } else {
        eprintln!("|gpu - cpu| = {error:e} exceeds the tolerance {tolerance:e}");
        ExitCode::FAILURE
    }
}
