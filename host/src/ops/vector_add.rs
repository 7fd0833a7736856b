//! Host side of `kernels::vector_add`: one thread per element.
//!
//! Tolerance: the GPU performs the same single IEEE addition as the CPU, so the result must be
//! bit-identical.

use crate::check;
use crate::data::random_f32;
use crate::gpu::{arg, require, Gpu, GpuResult, LaunchConfig};
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::DeviceBuffer;
use interface::DEFAULT_BLOCK;

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Elements.
    #[arg(long, default_value_t = 1 << 28)]
    pub n: usize,
    /// Threads per block.
    #[arg(long, default_value_t = DEFAULT_BLOCK)]
    pub block: u32,
}

pub fn cpu_reference(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// Inputs on the GPU, ready to launch.
pub struct VectorAdd {
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    block: u32,
    config: LaunchConfig,
    variants: [Variant; 1],
    expected: Vec<f32>,
    da: DeviceBuffer<f32>,
    db: DeviceBuffer<f32>,
    dc: DeviceBuffer<f32>,
}

impl Kernel for VectorAdd {
    const NAME: &'static str = "vector-add";
    const ABOUT: &'static str = "c = a + b, one thread per element";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        Ok(vec![("vector_add", LaunchConfig::linear(1 << 28, DEFAULT_BLOCK)?)])
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        match purpose {
            Purpose::Check => {
                ["--n 1", "--n 1000", "--n 1048579 --block 1024", "--n 10000019 --block 97", "--n 5 --block 1"]
                    .map(String::from)
                    .to_vec()
            }
            _ => one_per_element_sizes(purpose),
        }
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let n = options.n;
        require(n >= 1, || "vector-add needs n >= 1".into())?;
        let config = LaunchConfig::linear(n, options.block)?;
        gpu.validate("vector_add", &config)?;
        gpu.ensure_fits("vector-add's three buffers", 3 * 4 * n as u64)?;
        let (a, b) = (random_f32(n, seed), random_f32(n, seed ^ 1));
        let (da, db) = (gpu.upload("a", &a)?, gpu.upload("b", &b)?);
        let dc = gpu.poisoned::<f32>("c", n)?;
        let variants = [Variant::new("scalar", "vector_add")];
        Ok(Self { a, b, block: options.block, config, variants, expected: vec![], da, db, dc })
    }
}

impl Workload for VectorAdd {
    fn shape(&self) -> String {
        format!("n={} block={}", self.a.len(), self.block)
    }

    fn size(&self) -> u64 {
        self.a.len() as u64
    }

    fn peer(&self) -> Option<String> {
        Some("vector_add_f32".into())
    }

    fn work(&self) -> Work {
        Work::Bytes(3 * 4 * self.a.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        let (pa, pb, pc) = (self.da.as_device_ptr(), self.db.as_device_ptr(), self.dc.as_device_ptr());
        let n = self.a.len();
        gpu.launch(&variant.kernel, &self.config, &[arg(&pa), arg(&n), arg(&pb), arg(&n), arg(&pc)])
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("c", &self.dc)
    }

    fn compute_reference(&mut self) {
        self.expected = cpu_reference(&self.a, &self.b);
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        Ok(check::close(&gpu.download("c", &self.dc, self.a.len())?, &self.expected, 0.0).into())
    }
}
