//! Host side of `kernels::atomics`: `threads` threads each add 1 to one counter.

use crate::check;
use crate::gpu::{arg, CudaContext, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::report::{Report, Work};
use cust::memory::{CopyDestination, DeviceBuffer};

/// Runs both counters. The atomic count must equal `threads`. The racy one is a
/// demonstration: it passes as long as it is a possible outcome (1 ..= threads), and the
/// note says how many increments were lost.
pub fn run(gpu: &Gpu, threads: usize, block: u32, iters: usize) -> GpuResult<Vec<Report>> {
    if threads == 0 {
        return Err(GpuError::InvalidInput("counter needs at least 1 thread".into()));
    }
    let expected = u32::try_from(threads)
        .map_err(|_| GpuError::InvalidInput(format!("{} threads overflow a u32 counter", threads)))?;
    let config = LaunchConfig::linear(threads, block)?;
    let mut reports = Vec::new();
    for (kernel, variant) in [("counter_racy", "racy"), ("counter_atomic", "atomic")] {
        gpu.validate(kernel, &config)?;
        let mut counter = DeviceBuffer::<u32>::zeroed(1).during("allocating the counter")?;
        let ptr = counter.as_device_ptr();
        let launch = || gpu.launch(kernel, &config, &[arg(&ptr), arg(&expected)]);
        launch()?;
        gpu.synchronize(kernel)?;
        let mut count = [0u32];
        counter.copy_to(&mut count[..]).during("reading the counter")?;
        let count = count[0];
        let mut check = check::exact(&[count], &[expected]);
        if variant == "racy" {
            check.passed = (1..=expected).contains(&count);
        }
        let gpu_ms = gpu.time_ms(kernel, iters, || gpu.zero("the counter", &mut counter), launch)?;
        let lost = expected - count.min(expected);
        let note = format!(
            "count {} of {} ({} increments lost, {:.1}%)",
            count,
            expected,
            lost,
            100.0 * lost as f64 / expected as f64
        );
        reports.push(
            Report::new(&gpu.info, "counter", variant, format!("threads={}", threads), gpu_ms, Work::Launches, None, check)
                .with_note(note),
        );
    }
    Ok(reports)
}
