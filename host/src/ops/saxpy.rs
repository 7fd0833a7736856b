//! Host side of `kernels::saxpy`: a grid-stride loop over a grid sized to the GPU, not to the
//! data.
//!
//! Tolerance: the GPU may fuse the multiply-add (one rounding instead of two). With x and y in
//! [-1, 1) and a = 2.5, |a·x| + |y| <= 3.5, so the two differ by at most one rounding of that
//! size: 3.5·ε.

use crate::check;
use crate::data::random_f32;
use crate::gpu::{
    require, require_aligned, require_disjoint, require_len, CudaContext, Gpu, GpuResult, KernelArgs, LaunchConfig,
    Params,
};
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::{CopyDestination, DeviceBuffer, DeviceSlice};
use interface::DEFAULT_BLOCK;

pub const A: f32 = 2.5;
/// Blocks per SM when the grid is left to the host: with 256 threads, a full SM.
const BLOCKS_PER_SM: u32 = 8;

crate::variants! {
    pub enum Method {
        /// One element per pass of the loop.
        Gridstride => ("gridstride", "saxpy"),
        /// Four elements per pass, with 16-byte loads and stores.
        Vec4 => ("vec4", "saxpy_vec4"),
    }
}

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Elements.
    #[arg(long, default_value_t = 1 << 28)]
    pub n: usize,
    /// Threads per block.
    #[arg(long, default_value_t = DEFAULT_BLOCK)]
    pub block: u32,
    /// Blocks in the grid (0: 8 per SM).
    #[arg(long, default_value_t = 0)]
    pub grid: u32,
    /// Variants to run (all when omitted).
    #[arg(long = "variant", value_enum)]
    pub variants: Vec<Method>,
}

pub fn cpu_reference(a: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter().zip(y).map(|(x, y)| a * x + y).collect()
}

/// The arguments of `saxpy` and `saxpy_vec4`: `y = a·x + y` over `x.len()` elements, by a
/// one-dimensional grid of `grid` blocks of `block` threads (any sizes: the loop is grid-stride).
pub struct SaxpyArgs<'a> {
    pub a: f32,
    pub x: &'a DeviceSlice<f32>,
    pub y: &'a DeviceSlice<f32>,
    pub grid: u32,
    pub block: u32,
}

// SAFETY: the kernels read `x[..n]` and read and write `y[..n]`, n = x.len(), with y checked to
// be that long and not to overlap x; `saxpy_vec4` moves quads of both, checked 16-byte aligned.
// A grid-stride loop is correct on any one-dimensional grid (with a second dimension, two
// threads would share an index and race on `y`), which is the only shape built here. The
// parameters are `a: f32, x: &[f32], y: *mut f32`.
unsafe impl KernelArgs for SaxpyArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let method = Method::named(kernel)?;
        let n = self.x.len();
        require_len(kernel, "y", self.y, n)?;
        require_disjoint(kernel, ("y", self.y, n), ("x", self.x, n))?;
        if method == Method::Vec4 {
            require_aligned(kernel, "x", self.x, 16)?;
            require_aligned(kernel, "y", self.y, 16)?;
        }
        LaunchConfig::grid_stride(0, 0, self.block, self.grid)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().value(self.a).slice(self.x).pointer(self.y)
    }
}

/// Inputs on the GPU, ready to launch. `y` is updated in place, so every launch after the
/// first works on changed values (the same work, for timing); the check restores it first.
pub struct Saxpy {
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    pub config: LaunchConfig,
    variants: Vec<Variant>,
    expected: Vec<f32>,
    dx: DeviceBuffer<f32>,
    dy: DeviceBuffer<f32>,
}

impl Kernel for Saxpy {
    const NAME: &'static str = "saxpy";
    const ABOUT: &'static str = "y = a·x + y with a grid-stride loop over a grid sized to the GPU";
    type Options = Options;

    fn launches(sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let config = LaunchConfig::grid_stride(sms, BLOCKS_PER_SM, DEFAULT_BLOCK, 0)?;
        Ok(Method::ALL.iter().map(|m| (m.kernel(), config)).collect())
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        match purpose {
            Purpose::Check => {
                ["--n 1", "--n 999983 --block 128 --grid 1", "--n 16777217 --grid 7", "--n 4099 --block 32"]
                    .map(String::from)
                    .to_vec()
            }
            _ => one_per_element_sizes(purpose),
        }
    }

    fn variants_for(options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(Method::variants(&options.variants))
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let n = options.n;
        require(n >= 1, || "saxpy needs n >= 1".into())?;
        let config =
            LaunchConfig::grid_stride(gpu.info.multiprocessors as u32, BLOCKS_PER_SM, options.block, options.grid)?;
        let methods = Method::chosen(&options.variants);
        for method in methods {
            gpu.validate(method.kernel(), &config)?;
        }
        gpu.ensure_fits("saxpy's two buffers", 2 * 4 * n as u64)?;
        let (x, y) = (random_f32(n, seed), random_f32(n, seed ^ 1));
        let (dx, dy) = (gpu.upload("x", &x)?, gpu.upload("y", &y)?);
        let variants = Self::variants_for(options)?;
        Ok(Self { x, y, config, variants, expected: vec![], dx, dy })
    }
}

impl Workload for Saxpy {
    fn shape(&self) -> String {
        format!("n={} grid={}x{}", self.x.len(), self.config.grid.0, self.config.block.0)
    }

    fn size(&self) -> u64 {
        self.x.len() as u64
    }

    fn peer(&self) -> Option<String> {
        Some("copy_f32".into())
    }

    fn work(&self) -> Work {
        Work::Bytes(3 * 4 * self.x.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        gpu.launch(
            &variant.kernel,
            &SaxpyArgs { a: A, x: &self.dx, y: &self.dy, grid: self.config.grid.0, block: self.config.block.0 },
        )
    }

    fn before_check(&self, _gpu: &Gpu) -> GpuResult<()> {
        self.dy.index(..).copy_from(&self.y[..]).during("restoring y")
    }

    fn compute_reference(&mut self) {
        self.expected = cpu_reference(A, &self.x, &self.y);
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let tolerance = 3.5 * f32::EPSILON as f64;
        Ok(check::close(&gpu.download("y", &self.dy, self.y.len())?, &self.expected, tolerance).into())
    }
}
