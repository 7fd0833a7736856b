//! The command line of the `counter` family: its options and its registry entry.

pub use cuda_kernels::counter::*;

use crate::check;
use crate::gpu::{require, CudaContext, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::registry::{Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::DeviceBuffer;
use interface::DEFAULT_BLOCK;

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Threads, each adding 1.
    #[arg(long, default_value_t = 1 << 20)]
    pub threads: usize,
    /// Threads per block.
    #[arg(long, default_value_t = DEFAULT_BLOCK)]
    pub block: u32,
}

/// A zeroed counter and the launch shape.
pub struct Counter {
    pub threads: u32,
    config: LaunchConfig,
    variants: Vec<Variant>,
    counter: DeviceBuffer<u32>,
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Counter> = crate::registry::Entry::new();

impl Kernel for Counter {
    const NAME: &'static str = "counter";
    const ABOUT: &'static str = "every thread adds 1 to one counter: racy load-add-store vs atomic add";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let config = LaunchConfig::linear(1 << 20, DEFAULT_BLOCK)?;
        Ok(vec![("counter_racy", config), ("counter_atomic", config)])
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        match purpose {
            Purpose::Default => vec![String::new()],
            Purpose::Check => ["--threads 1", "--threads 999", "--threads 1048576"].map(String::from).to_vec(),
            Purpose::Quick | Purpose::Full => vec!["--threads 1048576".into()],
            Purpose::Criterion => ["--threads 1024", "--threads 65536", "--threads 1048576"].map(String::from).to_vec(),
        }
    }

    fn variants_for(_options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(vec![Variant::new("racy", "counter_racy"), Variant::new("atomic", "counter_atomic")])
    }

    fn prepare(gpu: &Gpu, options: &Options, _seed: u64) -> GpuResult<Self> {
        require(options.threads >= 1, || "counter needs at least 1 thread".into())?;
        let threads = u32::try_from(options.threads)
            .map_err(|_| GpuError::InvalidInput(format!("{} threads overflow a u32 counter", options.threads)))?;
        let config = LaunchConfig::linear(options.threads, options.block)?;
        let variants = Self::variants_for(options)?;
        for variant in &variants {
            gpu.validate(&variant.kernel, &config)?;
        }
        let counter = DeviceBuffer::<u32>::zeroed(1).during("allocating the counter")?;
        Ok(Self { threads, config, variants, counter })
    }

    fn launch_cases(_kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{Args, Cases, LaunchCases};
        let mut refused: Vec<(String, Args)> = Vec::new();
        let counter = memory.u32s(1);
        refused
            .push(("no counter".into(), Box::new(CounterArgs { counter: memory.u32s(0), threads: 1000, block: 256 })));
        LaunchCases::Cases(Cases { valid: Box::new(CounterArgs { counter, threads: 1000, block: 256 }), refused })
    }
}

impl Workload for Counter {
    fn shape(&self) -> String {
        format!("threads={}", self.threads)
    }

    fn size(&self) -> u64 {
        self.threads as u64
    }

    fn work(&self) -> Work {
        Work::Launches
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    unsafe fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        let block = self.config.block.0;
        gpu.launch(&variant.kernel, &CounterArgs { counter: &self.counter, threads: self.threads, block })
    }

    fn reset(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.zero("the counter", &self.counter)
    }

    fn before_check(&self, _gpu: &Gpu) -> GpuResult<()> {
        Ok(())
    }

    fn compute_reference(&mut self) {}

    /// The racy count is reported as what it lost (its verdict says so); the atomic one must
    /// be exact.
    fn check(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<Checked> {
        let count = gpu.download("the counter", &self.counter, 1)?[0];
        Ok(match variant.name.as_str() {
            "racy" => check::racy(count as u64, self.threads as u64),
            _ => check::exact(&[count], &[self.threads]),
        }
        .into())
    }
}
