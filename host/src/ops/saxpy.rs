//! Host side of `kernels::grid_stride::saxpy`: a grid sized to the GPU, not to the data.

use crate::check;
use crate::data::{random_f32, timed};
use crate::gpu::{arg, CudaContext, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::report::{Report, Work};
use cust::memory::{CopyDestination, DeviceBuffer};
use ndarray::ArrayView1;

pub const A: f32 = 2.5;

pub fn cpu_reference(a: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    (&ArrayView1::from(x) * a + &ArrayView1::from(y)).to_vec()
}

/// `grid` blocks of `block` threads; `grid` = 0 picks 4 blocks per SM, independent of `n`.
pub fn launch_config(gpu: &Gpu, block: u32, grid: u32) -> GpuResult<LaunchConfig> {
    let grid = if grid == 0 { 4 * gpu.info.multiprocessors as u32 } else { grid };
    Ok(LaunchConfig { grid: (grid, 1, 1), ..LaunchConfig::linear(1, block)? })
}

/// Inputs on the GPU, ready to launch. `y` is updated in place, so every launch after the
/// first works on changed values (the same work, for timing).
pub struct Saxpy {
    pub n: usize,
    pub config: LaunchConfig,
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    dx: DeviceBuffer<f32>,
    dy: DeviceBuffer<f32>,
}

impl Saxpy {
    pub fn new(gpu: &Gpu, n: usize, block: u32, grid: u32, seed: u64) -> GpuResult<Self> {
        if n == 0 {
            return Err(GpuError::InvalidInput("saxpy needs n >= 1".into()));
        }
        let config = launch_config(gpu, block, grid)?;
        gpu.validate("saxpy", &config)?;
        gpu.ensure_fits("saxpy's two buffers", 2 * 4 * n as u64)?;
        let (x, y) = (random_f32(n, seed), random_f32(n, seed ^ 1));
        let (dx, dy) = (gpu.upload("x", &x)?, gpu.upload("y", &y)?);
        Ok(Self { n, config, x, y, dx, dy })
    }

    pub fn work(&self) -> Work {
        Work::Bytes(3 * 4 * self.n as u64)
    }

    pub fn launch(&self, gpu: &Gpu) -> GpuResult<()> {
        let (px, py, n) = (self.dx.as_device_ptr(), self.dy.as_device_ptr(), self.n);
        gpu.launch("saxpy", &self.config, &[arg(&A), arg(&px), arg(&n), arg(&py)])
    }

    pub fn result(&self) -> GpuResult<Vec<f32>> {
        let mut y = vec![0.0f32; self.n];
        self.dy.copy_to(&mut y).during("copying y back")?;
        Ok(y)
    }
}

pub fn run(gpu: &Gpu, n: usize, block: u32, grid: u32, iters: usize, seed: u64) -> GpuResult<Report> {
    let saxpy = Saxpy::new(gpu, n, block, grid, seed)?;
    saxpy.launch(gpu)?;
    gpu.synchronize("saxpy")?;
    let (reference, cpu_ms) = timed(|| cpu_reference(A, &saxpy.x, &saxpy.y));
    // The GPU may fuse the multiply-add (one rounding instead of two): |a·x| + |y| <= 3.5,
    // so the two differ by at most one rounding of that size.
    let check = check::close(&saxpy.result()?, &reference, 3.5 * f32::EPSILON as f64);
    let gpu_ms = gpu.time_ms("saxpy", iters, || Ok(()), || saxpy.launch(gpu))?;
    Ok(Report::new(
        &gpu.info,
        "saxpy",
        "gridstride",
        format!("n={} grid={}x{}", n, saxpy.config.grid.0, block),
        gpu_ms,
        saxpy.work(),
        Some(cpu_ms),
        check,
    ))
}
