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
use cust::memory::{CopyDestination, DeviceBuffer};
use cust::stream::Stream;
use ndarray::ArrayView2;

/// Must match `kernels::matmul`: both register-blocked kernels use 256 threads on a 128×128
/// tile with BK = 8; `vec4` keeps two shared-memory stages.
const BLOCKED_THREADS: u32 = 256;
const BLOCKED_TILE: usize = 128;
const BLOCKED_SHARED_BYTES: u32 = (8 * (128 + 128) * 4) as u32;
const VEC4_SHARED_BYTES: u32 = 2 * BLOCKED_SHARED_BYTES;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ArgEnum)]
pub enum Variant {
    Naive,
    Tiled16,
    Tiled32,
    Blocked,
    Vec4,
}

impl Variant {
    pub const ALL: [Variant; 5] = [Variant::Naive, Variant::Tiled16, Variant::Tiled32, Variant::Blocked, Variant::Vec4];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Naive => "naive",
            Variant::Tiled16 => "tiled16",
            Variant::Tiled32 => "tiled32",
            Variant::Blocked => "blocked",
            Variant::Vec4 => "vec4",
        }
    }

    pub fn kernel(self) -> &'static str {
        match self {
            Variant::Naive => "matmul_naive",
            Variant::Tiled16 => "matmul_tiled_16",
            Variant::Tiled32 => "matmul_tiled_32",
            Variant::Blocked => "matmul_blocked_128x128",
            Variant::Vec4 => "matmul_vec4_128x128",
        }
    }

    pub fn launch_config(self, m: usize, n: usize) -> GpuResult<LaunchConfig> {
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
            Variant::Blocked | Variant::Vec4 => Ok(LaunchConfig {
                grid: (blocks(n, BLOCKED_TILE)?, blocks(m, BLOCKED_TILE)?, 1),
                block: (BLOCKED_THREADS, 1, 1),
                shared_bytes: if self == Variant::Blocked { BLOCKED_SHARED_BYTES } else { VEC4_SHARED_BYTES },
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

/// A and B on the GPU, C poisoned, ready to launch any variant.
pub struct Matmul {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    da: DeviceBuffer<f32>,
    db: DeviceBuffer<f32>,
    dc: DeviceBuffer<f32>,
}

impl Matmul {
    pub fn new(gpu: &Gpu, (m, n, k): (usize, usize, usize), seed: u64) -> GpuResult<Self> {
        if m == 0 || n == 0 || k == 0 {
            return Err(GpuError::InvalidInput(format!("matmul needs m, n, k >= 1 (got {}x{}x{})", m, n, k)));
        }
        for variant in Variant::ALL {
            gpu.validate(variant.kernel(), &variant.launch_config(m, n)?)?;
        }
        gpu.ensure_fits("matmul's A, B and C", 4 * (m * k + k * n + m * n) as u64)?;
        let (a, b) = (random_f32(m * k, seed), random_f32(k * n, seed ^ 1));
        let (da, db) = (gpu.upload("A", &a)?, gpu.upload("B", &b)?);
        let dc = gpu.poisoned::<f32>("C", m * n)?;
        Ok(Self { m, n, k, a, b, da, db, dc })
    }

    pub fn work(&self) -> Work {
        Work::Flops(2 * (self.m * self.n * self.k) as u64)
    }

    pub fn launch(&self, gpu: &Gpu, variant: Variant) -> GpuResult<()> {
        self.launch_on(gpu, &gpu.stream, variant)
    }

    pub fn launch_on(&self, gpu: &Gpu, stream: &Stream, variant: Variant) -> GpuResult<()> {
        let (pa, pb, pc) = (self.da.as_device_ptr(), self.db.as_device_ptr(), self.dc.as_device_ptr());
        let (m, n, k, a_len, b_len) = (self.m, self.n, self.k, self.a.len(), self.b.len());
        let args = [arg(&pa), arg(&a_len), arg(&pb), arg(&b_len), arg(&pc), arg(&m), arg(&n), arg(&k)];
        gpu.launch_on(stream, variant.kernel(), &variant.launch_config(m, n)?, &args)
    }

    /// C on the GPU, for kernels that consume it.
    pub fn c(&self) -> &DeviceBuffer<f32> {
        &self.dc
    }

    /// Fills C with NaN so that an element no kernel writes fails the check.
    pub fn poison(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("C", &self.dc)
    }

    pub fn result(&self) -> GpuResult<Vec<f32>> {
        let mut c = vec![0.0f32; self.m * self.n];
        self.dc.copy_to(&mut c).during("copying C back")?;
        Ok(c)
    }

    pub fn cpu_reference(&self) -> Vec<f32> {
        cpu_reference(&self.a, &self.b, self.m, self.n, self.k)
    }
}

pub fn run(gpu: &Gpu, shape: (usize, usize, usize), variants: &[Variant], iters: usize, seed: u64) -> GpuResult<Vec<Report>> {
    let matmul = Matmul::new(gpu, shape, seed)?;
    let (reference, cpu_ms) = timed(|| matmul.cpu_reference());
    let mut reports = Vec::new();
    for &variant in variants {
        matmul.poison(gpu)?;
        matmul.launch(gpu, variant)?;
        gpu.synchronize(variant.kernel())?;
        let check = check::close(&matmul.result()?, &reference, tolerance(matmul.k));
        let gpu_ms = gpu.time_ms(variant.kernel(), iters, || Ok(()), || matmul.launch(gpu, variant))?;
        reports.push(Report::new(
            &gpu.info,
            "matmul",
            variant.name(),
            format!("{}x{}x{}", matmul.m, matmul.n, matmul.k),
            gpu_ms,
            matmul.work(),
            Some(cpu_ms),
            check,
        ));
    }
    Ok(reports)
}
