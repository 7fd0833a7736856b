//! The command line of the `saxpy` family: its options and its registry entry.

pub use cuda_kernels::saxpy::*;

use crate::check;
use crate::data::random_f32;
use crate::gpu::{require, CudaContext, Gpu, GpuResult, LaunchConfig};
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::{CopyDestination, DeviceBuffer};
use interface::DEFAULT_BLOCK;

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
    #[arg(long = "variant", value_parser = crate::registry::named::<Method>())]
    pub variants: Vec<Method>,
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

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Saxpy> = crate::registry::Entry::new();

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
        Ok(crate::registry::variants(&options.variants))
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let n = options.n;
        require(n >= 1, || "saxpy needs n >= 1".into())?;
        let config =
            LaunchConfig::grid_stride(gpu.sms(), BLOCKS_PER_SM, options.block, options.grid)?;
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

    fn launch_cases(kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{shifted, vector_access, Args, Cases, LaunchCases};
        let vector = vector_access(kernel);
        let mut refused: Vec<(String, Args)> = Vec::new();
        let n = 1000;
        let (x, y, grid, block) = (memory.f32s(n), memory.f32s(n), 4, 128);
        refused.push(("y short".into(), Box::new(SaxpyArgs { a: 2.0, x, y: memory.f32s(n - 1), grid, block })));
        refused.push(("y is x".into(), Box::new(SaxpyArgs { a: 2.0, x, y: x, grid, block })));
        if vector {
            let y = shifted(memory.f32s(n + 1));
            refused.push(("y misaligned".into(), Box::new(SaxpyArgs { a: 2.0, x: shifted(x), y, grid, block })));
        }
        LaunchCases::Cases(Cases { valid: Box::new(SaxpyArgs { a: 2.0, x, y, grid, block }), refused })
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

    unsafe fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
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
