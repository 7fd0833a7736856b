//! Host side of `kernels::matmul`: C = A × B, f32, row-major, any m, n, k.
//!
//! Tolerance: inputs are uniform in [-1, 1), so a product term has magnitude at most 1 and
//! a length-k dot product rounded in any order is typically within about k·ε/3 of the exact
//! value (ε = f32::EPSILON). GPU and CPU sum in different orders, so each element may differ
//! by up to `4·k·ε`, about 12 times the typical error.

use crate::check;
use crate::data::{random_f32, timed};
use crate::gpu::{arg, CudaContext, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::report::{Report, Work};
use cust::memory::CopyDestination;
use ndarray::ArrayView2;

/// Must match `kernels::matmul::BLOCKED_THREADS` and the 128×128 tile of the blocked kernel.
const BLOCKED_THREADS: u32 = 256;
const BLOCKED_TILE: usize = 128;
const BLOCKED_SHARED_BYTES: u32 = (2 * 8 * 128 * 4) as u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ArgEnum)]
pub enum Variant {
    Naive,
    Tiled16,
    Tiled32,
    Blocked,
}

impl Variant {
    pub const ALL: [Variant; 4] = [Variant::Naive, Variant::Tiled16, Variant::Tiled32, Variant::Blocked];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Naive => "naive",
            Variant::Tiled16 => "tiled16",
            Variant::Tiled32 => "tiled32",
            Variant::Blocked => "blocked",
        }
    }

    fn kernel(self) -> &'static str {
        match self {
            Variant::Naive => "matmul_naive",
            Variant::Tiled16 => "matmul_tiled_16",
            Variant::Tiled32 => "matmul_tiled_32",
            Variant::Blocked => "matmul_blocked_128x128",
        }
    }

    fn launch_config(self, m: usize, n: usize) -> GpuResult<LaunchConfig> {
        let blocks = |extent: usize, tile: usize| {
            u32::try_from((extent + tile - 1) / tile)
                .map_err(|_| GpuError::InvalidInput(format!("{} does not fit a grid of {}-wide tiles", extent, tile)))
        };
        let square = |tile: usize, shared: u32| -> GpuResult<LaunchConfig> {
            Ok(LaunchConfig {
                grid: (blocks(n, tile)?, blocks(m, tile)?, 1),
                block: (tile as u32, tile as u32, 1),
                shared_bytes: shared,
            })
        };
        match self {
            Variant::Naive => square(16, 0),
            Variant::Tiled16 => square(16, 2 * 16 * 16 * 4),
            Variant::Tiled32 => square(32, 2 * 32 * 32 * 4),
            Variant::Blocked => Ok(LaunchConfig {
                grid: (blocks(n, BLOCKED_TILE)?, blocks(m, BLOCKED_TILE)?, 1),
                block: (BLOCKED_THREADS, 1, 1),
                shared_bytes: BLOCKED_SHARED_BYTES,
            }),
        }
    }
}

pub fn cpu_reference(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let a = ArrayView2::from_shape((m, k), a).expect("a is m×k");
    let b = ArrayView2::from_shape((k, n), b).expect("b is k×n");
    a.dot(&b).into_raw_vec()
}

pub fn tolerance(k: usize) -> f64 {
    4.0 * k as f64 * f32::EPSILON as f64
}

pub fn run(
    gpu: &Gpu,
    (m, n, k): (usize, usize, usize),
    variants: &[Variant],
    iters: usize,
    seed: u64,
) -> GpuResult<Vec<Report>> {
    if m == 0 || n == 0 || k == 0 {
        return Err(GpuError::InvalidInput(format!("matmul needs m, n, k >= 1 (got {}x{}x{})", m, n, k)));
    }
    let configs = variants.iter().map(|v| v.launch_config(m, n)).collect::<GpuResult<Vec<_>>>()?;
    for (variant, config) in variants.iter().zip(&configs) {
        gpu.validate(variant.kernel(), config)?;
    }
    gpu.ensure_fits("matmul's A, B and C", 4 * (m * k + k * n + m * n) as u64)?;
    let (a, b) = (random_f32(m * k, seed), random_f32(k * n, seed ^ 1));
    let (da, db) = (gpu.upload("A", &a)?, gpu.upload("B", &b)?);
    let mut dc = gpu.poisoned::<f32>("C", m * n)?;
    let (pa, pb, pc) = (da.as_device_ptr(), db.as_device_ptr(), dc.as_device_ptr());
    let (a_len, b_len) = (a.len(), b.len());
    let (reference, cpu_ms) = timed(|| cpu_reference(&a, &b, m, n, k));

    let mut reports = Vec::new();
    for (variant, config) in variants.iter().zip(&configs) {
        let args = [arg(&pa), arg(&a_len), arg(&pb), arg(&b_len), arg(&pc), arg(&m), arg(&n), arg(&k)];
        let launch = || gpu.launch(variant.kernel(), config, &args);
        let mut c = vec![0.0f32; m * n];
        dc.set_8(0xFF).during("poisoning C")?;
        launch()?;
        gpu.synchronize(variant.kernel())?;
        dc.copy_to(&mut c).during("copying C back")?;
        let check = check::close(&c, &reference, tolerance(k));
        let gpu_ms = gpu.time_ms(variant.kernel(), iters, || Ok(()), launch)?;
        reports.push(Report::new(
            &gpu.info,
            "matmul",
            variant.name(),
            format!("{}x{}x{}", m, n, k),
            gpu_ms,
            Work::Flops(2 * (m * n * k) as u64),
            Some(cpu_ms),
            check,
        ));
    }
    Ok(reports)
}
