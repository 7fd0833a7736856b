//! Host side of `kernels::atomics`: `threads` threads each add 1 to one counter.

use crate::check;
use crate::gpu::{arg, CudaContext, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::report::{Report, Work};
use cust::memory::{CopyDestination, DeviceBuffer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Racy,
    Atomic,
}

impl Variant {
    pub const ALL: [Variant; 2] = [Variant::Racy, Variant::Atomic];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Racy => "racy",
            Variant::Atomic => "atomic",
        }
    }

    fn kernel(self) -> &'static str {
        match self {
            Variant::Racy => "counter_racy",
            Variant::Atomic => "counter_atomic",
        }
    }
}

/// A zeroed counter and the launch shape.
pub struct Counter {
    pub threads: u32,
    config: LaunchConfig,
    counter: DeviceBuffer<u32>,
}

impl Counter {
    pub fn new(gpu: &Gpu, threads: usize, block: u32) -> GpuResult<Self> {
        if threads == 0 {
            return Err(GpuError::InvalidInput("counter needs at least 1 thread".into()));
        }
        let threads = u32::try_from(threads)
            .map_err(|_| GpuError::InvalidInput(format!("{} threads overflow a u32 counter", threads)))?;
        let config = LaunchConfig::linear(threads as usize, block)?;
        for variant in Variant::ALL {
            gpu.validate(variant.kernel(), &config)?;
        }
        let counter = DeviceBuffer::<u32>::zeroed(1).during("allocating the counter")?;
        Ok(Self { threads, config, counter })
    }

    pub fn reset(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.zero("the counter", &self.counter)
    }

    pub fn launch(&self, gpu: &Gpu, variant: Variant) -> GpuResult<()> {
        let (ptr, threads) = (self.counter.as_device_ptr(), self.threads);
        gpu.launch(variant.kernel(), &self.config, &[arg(&ptr), arg(&threads)])
    }

    pub fn count(&self) -> GpuResult<u32> {
        let mut count = [0u32];
        self.counter.copy_to(&mut count[..]).during("reading the counter")?;
        Ok(count[0])
    }
}

/// Runs both counters. The atomic count must equal `threads`. The racy one is a
/// demonstration: it passes as long as it is a possible outcome (1 ..= threads), and the
/// note says how many increments were lost.
pub fn run(gpu: &Gpu, threads: usize, block: u32, iters: usize) -> GpuResult<Vec<Report>> {
    let counter = Counter::new(gpu, threads, block)?;
    let expected = counter.threads;
    let mut reports = Vec::new();
    for variant in Variant::ALL {
        counter.reset(gpu)?;
        counter.launch(gpu, variant)?;
        gpu.synchronize(variant.kernel())?;
        let count = counter.count()?;
        let mut check = check::exact(&[count], &[expected]);
        if variant == Variant::Racy {
            check.passed = (1..=expected).contains(&count);
        }
        let gpu_ms = gpu.time_ms(variant.kernel(), iters, || counter.reset(gpu), || counter.launch(gpu, variant))?;
        let lost = expected - count.min(expected);
        let note = format!(
            "count {} of {} ({} increments lost, {:.1}%)",
            count,
            expected,
            lost,
            100.0 * lost as f64 / expected as f64
        );
        reports.push(
            Report::new(&gpu.info, "counter", variant.name(), format!("threads={}", threads), gpu_ms, Work::Launches, None, check)
                .with_note(note),
        );
    }
    Ok(reports)
}
