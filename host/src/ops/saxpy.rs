//! Host side of `kernels::grid_stride::saxpy`: a grid sized to the GPU, not to the data.

use crate::check;
use crate::data::{random_f32, timed};
use crate::gpu::{arg, CudaContext, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::report::{Report, Work};
use cust::memory::CopyDestination;
use ndarray::ArrayView1;

pub const A: f32 = 2.5;

pub fn cpu_reference(a: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    (&ArrayView1::from(x) * a + &ArrayView1::from(y)).to_vec()
}

/// `grid` = 0 picks 4 blocks per SM, independent of `n`.
pub fn run(gpu: &Gpu, n: usize, block: u32, grid: u32, iters: usize, seed: u64) -> GpuResult<Report> {
    if n == 0 {
        return Err(GpuError::InvalidInput("saxpy needs n >= 1".into()));
    }
    let grid = if grid == 0 { 4 * gpu.info.multiprocessors as u32 } else { grid };
    let config = LaunchConfig { grid: (grid, 1, 1), ..LaunchConfig::linear(1, block)? };
    gpu.validate("saxpy", &config)?;
    gpu.ensure_fits("saxpy's two buffers", 2 * 4 * n as u64)?;
    let (x, y) = (random_f32(n, seed), random_f32(n, seed ^ 1));
    let dx = gpu.upload("x", &x)?;
    let dy = gpu.upload("y", &y)?;
    let (px, py) = (dx.as_device_ptr(), dy.as_device_ptr());
    let launch = || gpu.launch("saxpy", &config, &[arg(&A), arg(&px), arg(&n), arg(&py)]);

    launch()?;
    gpu.synchronize("saxpy")?;
    let mut result = vec![0.0f32; n];
    dy.copy_to(&mut result).during("copying y back")?;
    let (reference, cpu_ms) = timed(|| cpu_reference(A, &x, &y));
    // The GPU may fuse the multiply-add (one rounding instead of two): |a·x| + |y| <= 3.5,
    // so the two differ by at most one rounding of that size.
    let check = check::close(&result, &reference, 3.5 * f32::EPSILON as f64);
    // y is updated in place: later runs time the same work on changed values.
    let gpu_ms = gpu.time_ms("saxpy", iters, || Ok(()), launch)?;
    Ok(Report::new(
        &gpu.info,
        "saxpy",
        "gridstride",
        format!("n={} grid={}x{}", n, grid, block),
        gpu_ms,
        Work::Bytes(3 * 4 * n as u64),
        Some(cpu_ms),
        check,
    ))
}
