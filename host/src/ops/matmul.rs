//! Host side of `kernels::matmul`: C = A × B, f32, row-major, any m, n, k. A and B are random
//! or read from `.npy` files (`--a`, `--b`); `--output` writes C as `.npy`.
//!
//! Tolerance: random inputs are uniform in [-1, 1), so a product term has magnitude at most 1
//! and a length-k dot product rounded in any order is typically within about k·ε/3 of the
//! exact value (ε = f32::EPSILON). GPU and CPU sum in different orders, so each element may
//! differ by up to `4·k·ε`, about 12 times the typical error. Inputs from files scale that by
//! `max(1, max|a|·max|b|)`, the bound of a product term.

use crate::check;
use crate::data::random_f32;
use crate::gpu::{arg, require, Gpu, GpuResult, LaunchConfig};
use crate::io;
use crate::ops::conv2d::product_scale;
use crate::registry::{Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::DeviceBuffer;
use cust::stream::Stream;
use interface::matmul::{
    tiled_shared_bytes, BLOCKED_SHARED_BYTES, BLOCKED_THREADS, BM, BN, LARGE_TILE, NAIVE_BLOCK, SMALL_TILE,
    VEC4_SHARED_BYTES,
};
use ndarray::ArrayView2;
use std::path::{Path, PathBuf};

crate::variants! {
    /// The steps of the tutorial, each faster than the one before.
    pub enum Step {
        Naive => ("naive", "matmul_naive"),
        Tiled16 => ("tiled16", "matmul_tiled_16"),
        Tiled32 => ("tiled32", "matmul_tiled_32"),
        Blocked => ("blocked", "matmul_blocked_128x128"),
        Vec4 => ("vec4", "matmul_vec4_128x128"),
    }
}

impl Step {
    pub fn launch_config(self, m: usize, n: usize) -> GpuResult<LaunchConfig> {
        let square =
            |tile: usize, shared: usize| LaunchConfig::tiles_2d(n, m, (tile, tile), (tile as u32, tile as u32), shared);
        let blocked = |shared: usize| LaunchConfig::tiles_2d(n, m, (BN, BM), (BLOCKED_THREADS as u32, 1), shared);
        match self {
            Step::Naive => square(NAIVE_BLOCK, 0),
            Step::Tiled16 => square(SMALL_TILE, tiled_shared_bytes(SMALL_TILE)),
            Step::Tiled32 => square(LARGE_TILE, tiled_shared_bytes(LARGE_TILE)),
            Step::Blocked => blocked(BLOCKED_SHARED_BYTES),
            Step::Vec4 => blocked(VEC4_SHARED_BYTES),
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct Options {
    #[arg(long, default_value_t = 4096)]
    pub m: usize,
    #[arg(long, default_value_t = 4096)]
    pub n: usize,
    #[arg(long, default_value_t = 4096)]
    pub k: usize,
    /// Variants to run (all when omitted).
    #[arg(long = "variant", value_enum)]
    pub variants: Vec<Step>,
    /// A 2-D f32 .npy file for A, m×k (with --b); replaces the random data, --m and --k.
    #[arg(long, requires = "b", conflicts_with_all = ["m", "k"])]
    pub a: Option<PathBuf>,
    /// A 2-D f32 .npy file for B, k×n; replaces --n.
    #[arg(long, requires = "a", conflicts_with = "n")]
    pub b: Option<PathBuf>,
    /// Writes C (the GPU's result, m×n) to this .npy file.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

/// m, n, k.
type Dims = (usize, usize, usize);

/// A and B from their files: finite f32 matrices whose inner dimensions agree.
fn read_inputs(a: &Path, b: &Path) -> GpuResult<(Dims, Vec<f32>, Vec<f32>)> {
    let (((m, k), va), ((kb, n), vb)) = (io::read_matrix::<f32>(a)?, io::read_matrix::<f32>(b)?);
    io::require_finite(a, &va)?;
    io::require_finite(b, &vb)?;
    require(k == kb, || {
        let (a, b) = (a.display(), b.display());
        format!("A ({a}) is {m}x{k} and B ({b}) is {kb}x{n}: A's columns ({k}) must equal B's rows ({kb})")
    })?;
    Ok(((m, n, k), va, vb))
}

pub fn cpu_reference(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let a = ArrayView2::from_shape((m, k), a).expect("a is m×k");
    let b = ArrayView2::from_shape((k, n), b).expect("b is k×n");
    a.dot(&b).into_raw_vec_and_offset().0
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
    variants: Vec<Variant>,
    /// The tolerance's `max(1, max|a|·max|b|)`.
    scale: f64,
    output: Option<PathBuf>,
    expected: Vec<f32>,
    da: DeviceBuffer<f32>,
    db: DeviceBuffer<f32>,
    dc: DeviceBuffer<f32>,
}

impl Matmul {
    /// Random A and B of shape `(m, n, k)`.
    pub fn new(gpu: &Gpu, shape: (usize, usize, usize), steps: &[Step], seed: u64) -> GpuResult<Self> {
        let (m, n, k) = shape;
        Self::with_inputs(gpu, shape, steps, || (random_f32(m * k, seed), random_f32(k * n, seed ^ 1)))
    }

    /// A and B from `inputs`, called once the shape is known to fit.
    fn with_inputs(
        gpu: &Gpu,
        (m, n, k): (usize, usize, usize),
        steps: &[Step],
        inputs: impl FnOnce() -> (Vec<f32>, Vec<f32>),
    ) -> GpuResult<Self> {
        require(m >= 1 && n >= 1 && k >= 1, || format!("matmul needs m, n, k >= 1 (got {}x{}x{})", m, n, k))?;
        let steps = Step::chosen(steps);
        for step in steps {
            gpu.validate(step.kernel(), &step.launch_config(m, n)?)?;
        }
        gpu.ensure_fits("matmul's A, B and C", 4 * (m * k + k * n + m * n) as u64)?;
        let (a, b) = inputs();
        let (da, db) = (gpu.upload("A", &a)?, gpu.upload("B", &b)?);
        let dc = gpu.poisoned::<f32>("C", m * n)?;
        let variants = steps.iter().map(|s| s.variant()).collect();
        let scale = product_scale(&a, &b);
        Ok(Self { m, n, k, a, b, variants, scale, output: None, expected: vec![], da, db, dc })
    }

    pub fn launch_on(&self, gpu: &Gpu, stream: &Stream, step: Step) -> GpuResult<()> {
        let (pa, pb, pc) = (self.da.as_device_ptr(), self.db.as_device_ptr(), self.dc.as_device_ptr());
        let (m, n, k, a_len, b_len) = (self.m, self.n, self.k, self.a.len(), self.b.len());
        let args = [arg(&pa), arg(&a_len), arg(&pb), arg(&b_len), arg(&pc), arg(&m), arg(&n), arg(&k)];
        gpu.launch_on(stream, step.kernel(), &step.launch_config(m, n)?, &args)
    }

    /// C on the GPU, for kernels that consume it.
    pub fn c(&self) -> &DeviceBuffer<f32> {
        &self.dc
    }

    pub fn result(&self, gpu: &Gpu) -> GpuResult<Vec<f32>> {
        gpu.download("C", &self.dc, self.m * self.n)
    }

    pub fn cpu_reference(&self) -> Vec<f32> {
        cpu_reference(&self.a, &self.b, self.m, self.n, self.k)
    }
}

impl Kernel for Matmul {
    const NAME: &'static str = "matmul";
    const ABOUT: &'static str = "C = A × B, f32 row-major: naive, tiled, register-blocked, vectorized";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        Step::ALL.iter().map(|s| Ok((s.kernel(), s.launch_config(4096, 4096)?))).collect()
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        let cube = |side: usize| format!("--m {side} --n {side} --k {side}");
        // The simple kernels alone would take most of a sweep at 8192.
        let fast = |side: usize| format!("{} --variant blocked --variant vec4", cube(side));
        match purpose {
            Purpose::Default => vec![String::new()],
            Purpose::Check => {
                [(1, 1, 1), (17, 31, 13), (127, 129, 65), (131, 257, 67), (1, 300, 1), (300, 1, 700), (1024, 768, 512)]
                    .iter()
                    .map(|(m, n, k)| format!("--m {m} --n {n} --k {k}"))
                    .collect()
            }
            Purpose::Quick => vec![cube(1024), cube(2048), cube(4096)],
            Purpose::Full => vec![cube(512), cube(1024), cube(2048), cube(4096), fast(8192)],
            Purpose::Criterion => vec![cube(256), cube(512), cube(1024)],
        }
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let mut matmul = match (&options.a, &options.b) {
            (Some(a), Some(b)) => {
                let (shape, a, b) = read_inputs(a, b)?;
                Self::with_inputs(gpu, shape, &options.variants, || (a, b))?
            }
            _ => Self::new(gpu, (options.m, options.n, options.k), &options.variants, seed)?,
        };
        matmul.output = options.output.clone();
        Ok(matmul)
    }
}

impl Workload for Matmul {
    fn shape(&self) -> String {
        format!("{}x{}x{}", self.m, self.n, self.k)
    }

    fn size(&self) -> u64 {
        self.m as u64
    }

    fn peer(&self) -> Option<String> {
        let cube = self.m == self.n && self.n == self.k;
        Some(if cube { format!("sgemm_f32_{}", self.m) } else { format!("sgemm_f32_{}x{}x{}", self.m, self.n, self.k) })
    }

    fn work(&self) -> Work {
        Work::Flops(2 * (self.m * self.n * self.k) as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        self.launch_on(gpu, &gpu.stream, Step::of(&variant.kernel))
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("C", &self.dc)
    }

    fn compute_reference(&mut self) {
        self.expected = self.cpu_reference();
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        Ok(check::close(&self.result(gpu)?, &self.expected, tolerance(self.k) * self.scale).into())
    }

    fn save_output(&self, gpu: &Gpu) -> GpuResult<()> {
        let Some(path) = &self.output else { return Ok(()) };
        io::write_matrix(path, (self.m, self.n), &self.result(gpu)?)
    }
}
