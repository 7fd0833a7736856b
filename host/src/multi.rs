//! One job divided among several GPUs (the CUDA tutorial's exercise): a host thread per
//! device, each with its own context, module and stream, so that copies and kernels on
//! different GPUs run at the same time.
//!
//! A family says how to set up its part of the job on one GPU (untimed: pinned host copies,
//! device buffers) and which steps to time. Each step is timed across all GPUs together, from
//! a common start until the last GPU is done, by the wall clock: CUDA events time one context
//! only. The same job is run on one GPU first, so the speed-up is measured, not assumed.

use crate::check::Check;
use crate::gpu::{self, Cache, CudaContext, Gpu, GpuError, GpuResult, Timing};
use crate::report::Work;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use cust::memory::{AsyncCopyDestination, DeviceBuffer, LockedBuffer};
use serde::Serialize;
use std::ops::Range;
use std::sync::Barrier;
use std::time::Instant;

/// `wanted` GPUs, if the machine has them.
pub fn require_gpus(wanted: usize) -> GpuResult<usize> {
    let present = gpu::device_count()?;
    if wanted == 0 || wanted > present {
        return Err(GpuError::InvalidInput(format!(
            "--gpus {wanted}: this machine has {present} GPU{}",
            if present == 1 { "" } else { "s" }
        )));
    }
    Ok(wanted)
}

/// Part `i` of `0..len` divided into `parts` nearly equal ranges.
pub fn part(len: usize, parts: usize, i: usize) -> Range<usize> {
    len * i / parts..len * (i + 1) / parts
}

/// One GPU's share of a divided job: its slices of the inputs and its slice of the output,
/// in pinned host memory (so that the copies are asynchronous) and on the GPU.
pub struct Share {
    /// Which rows or elements of the output.
    pub range: Range<usize>,
    pub kernel: &'static str,
    inputs: Vec<(LockedBuffer<f32>, DeviceBuffer<f32>)>,
    output: (LockedBuffer<f32>, DeviceBuffer<f32>),
}

impl Share {
    /// Pins and uploads `inputs`; the output is poisoned (NaN) so what a kernel misses fails.
    pub fn new(
        gpu: &Gpu,
        range: Range<usize>,
        kernel: &'static str,
        inputs: &[(&str, &[f32])],
        output_len: usize,
    ) -> GpuResult<Self> {
        let elements: usize = inputs.iter().map(|(_, data)| data.len()).sum::<usize>() + output_len;
        gpu.ensure_fits("this GPU's share of the inputs and the output", 4 * elements as u64)?;
        let pinned = |data: &[f32]| LockedBuffer::from_slice(data).during("allocating pinned memory");
        let inputs = inputs
            .iter()
            .map(|(what, data)| Ok((pinned(data)?, gpu.upload(what, data)?)))
            .collect::<GpuResult<Vec<_>>>()?;
        let host_output = LockedBuffer::new(&f32::NAN, output_len).during("allocating pinned memory")?;
        let output = (host_output, gpu.poisoned("the output", output_len)?);
        Ok(Self { range, kernel, inputs, output })
    }

    /// The inputs and the output on the GPU, for the launch.
    pub fn device(&self) -> (Vec<&DeviceBuffer<f32>>, &DeviceBuffer<f32>) {
        (self.inputs.iter().map(|(_, d)| d).collect(), &self.output.1)
    }

    fn copy_in(&mut self, gpu: &Gpu) -> GpuResult<()> {
        for (host, device) in &mut self.inputs {
            // SAFETY: `host` is pinned and as long as `device` (both made from the same slice),
            // and both live in `self`, which `run` keeps until its stream is synchronized.
            unsafe { device.async_copy_from(&host[..], gpu.stream()) }.during("copying an input in")?;
        }
        Ok(())
    }

    fn copy_out(&mut self, gpu: &Gpu) -> GpuResult<()> {
        let (host, device) = &mut self.output;
        // SAFETY: as in `copy_in`: pinned, equally long, and alive until the stream is synchronized;
        // the host copy is read only after that.
        unsafe { device.async_copy_to(&mut host[..], gpu.stream()) }.during("copying the output back")
    }
}

/// A GPU's share once done: where it ran and what it computed.
pub struct Done {
    pub device: String,
    pub kernel: &'static str,
    pub range: Range<usize>,
    pub output: Vec<f32>,
}

/// One timed step on one GPU: work queued on its stream, which the caller then waits for.
type Step<'a> = &'a (dyn Fn(&Gpu, &mut Share) -> GpuResult<()> + Sync);

/// Runs on `count` GPUs, a thread each: `setup(i, gpu)` builds GPU `i`'s share, then two
/// steps are timed `iters` times each on all GPUs at once: the kernels alone (`launch`), and
/// copying the inputs in, the kernels and copying the output back. Returns the shares, done,
/// in device order, and the median wall-clock ms of both steps.
pub fn run(
    count: usize,
    iters: usize,
    setup: &(dyn Fn(usize, &Gpu) -> GpuResult<Share> + Sync),
    launch: &(dyn Fn(&Gpu, &Share) -> GpuResult<()> + Sync),
) -> GpuResult<(Vec<Done>, f64, f64)> {
    let kernels = |gpu: &Gpu, share: &mut Share| launch(gpu, share);
    let everything = |gpu: &Gpu, share: &mut Share| {
        share.copy_in(gpu)?;
        launch(gpu, share)?;
        share.copy_out(gpu)
    };
    let steps: [Step<'_>; 2] = [&kernels, &everything];
    // The main thread and every GPU's thread meet before and after each timed step.
    let barrier = Barrier::new(count + 1);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..count)
            .map(|i| {
                let (barrier, steps) = (&barrier, &steps);
                scope.spawn(move || {
                    let mut state = Gpu::on(i).and_then(|gpu| setup(i, &gpu).map(|share| (gpu, share)));
                    barrier.wait();
                    for step in steps {
                        for _ in 0..iters {
                            barrier.wait();
                            // A GPU that failed keeps meeting the others, so nobody waits forever.
                            if let Ok((gpu, share)) = &mut state {
                                if let Err(e) = step(gpu, share).and_then(|()| gpu.synchronize("a step on one GPU")) {
                                    state = Err(e);
                                }
                            }
                            barrier.wait();
                        }
                    }
                    state.map(|(gpu, share)| Done {
                        device: gpu.info().name.clone(),
                        kernel: share.kernel,
                        output: share.output.0.to_vec(),
                        range: share.range,
                    })
                })
            })
            .collect();
        barrier.wait();
        let [kernel_ms, total_ms] = steps.map(|_| {
            let samples = (0..iters)
                .map(|_| {
                    barrier.wait();
                    let start = Instant::now();
                    barrier.wait();
                    start.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            // Nothing flushes L2 between the steps.
            Timing::from_samples(samples, Cache::Warm).median_ms
        });
        let done = threads
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|_| Err(GpuError::InvalidInput("a GPU's thread panicked".into()))))
            .collect::<GpuResult<Vec<Done>>>()?;
        Ok((done, kernel_ms, total_ms))
    })
}

/// One run's GPUs, kernels, and median ms of the kernels alone and with the copies.
type Run = (usize, String, f64, f64);

/// What a divided job reports besides the timings.
pub struct Job {
    pub family: &'static str,
    pub shape: String,
    pub work: Work,
    /// What `check` compares, for the report.
    pub checked: String,
}

/// Runs `job` on one GPU, then divided among `count` (when more than one): `setup(gpus, i,
/// gpu)` builds GPU `i`'s share out of `gpus`, `launch` runs its kernel, and `check` compares
/// the shares' outputs with the CPU. The report's check is the worst of the runs.
pub fn measure(
    job: Job,
    count: usize,
    iters: usize,
    setup: &(dyn Fn(usize, usize, &Gpu) -> GpuResult<Share> + Sync),
    launch: &(dyn Fn(&Gpu, &Share) -> GpuResult<()> + Sync),
    check: &dyn Fn(&[Done]) -> Check,
) -> GpuResult<SplitReport> {
    let mut runs: Vec<Run> = vec![];
    let (mut devices, mut worst): (Vec<String>, Option<Check>) = (vec![], None);
    for gpus in if count == 1 { vec![1] } else { vec![1, count] } {
        let (done, kernel_ms, total_ms) = run(gpus, iters, &|i, gpu| setup(gpus, i, gpu), launch)?;
        let mut kernels: Vec<&str> = done.iter().map(|d| d.kernel).collect();
        kernels.dedup();
        runs.push((gpus, kernels.join(", "), kernel_ms, total_ms));
        devices = done.iter().enumerate().map(|(i, d)| format!("{i}: {}", d.device)).collect();
        let result = check(&done);
        if worst.is_none_or(|w| !result.passed || (w.passed && result.worst_error > w.worst_error)) {
            worst = Some(result);
        }
    }
    let by = if count > 1 { format!("1 and by {count} GPUs") } else { "1 GPU".into() };
    Ok(SplitReport {
        family: job.family,
        shape: job.shape,
        devices,
        work: job.work,
        rows: SplitReport::rows(&runs),
        check: worst.expect("at least one run"),
        checked: format!("{}, as computed by {}", job.checked, by),
    })
}

/// One line of a split run: the job on `gpus` GPUs.
#[derive(Debug, Clone, Serialize)]
pub struct SplitRow {
    pub gpus: usize,
    /// The kernel each GPU ran.
    pub kernel: String,
    /// Median ms of the kernels alone (inputs already on the GPUs).
    pub kernel_ms: f64,
    /// Median ms of copying the inputs in, the kernels, and copying the result out.
    pub total_ms: f64,
    /// Over the one-GPU row.
    pub kernel_speedup: f64,
    pub total_speedup: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SplitReport {
    pub family: &'static str,
    pub shape: String,
    pub devices: Vec<String>,
    pub work: Work,
    pub rows: Vec<SplitRow>,
    /// The worst of the runs' results against the CPU reference.
    pub check: Check,
    /// What the check compared (all of the result, or which rows).
    pub checked: String,
}

impl SplitReport {
    /// Rows from `(gpus, kernel, kernel_ms, total_ms)`; the first is the one-GPU baseline.
    pub fn rows(runs: &[Run]) -> Vec<SplitRow> {
        let (base_kernel, base_total) = (runs[0].2, runs[0].3);
        runs.iter()
            .map(|(gpus, kernel, kernel_ms, total_ms)| SplitRow {
                gpus: *gpus,
                kernel: kernel.clone(),
                kernel_ms: *kernel_ms,
                total_ms: *total_ms,
                kernel_speedup: base_kernel / kernel_ms,
                total_speedup: base_total / total_ms,
            })
            .collect()
    }

    pub fn print(&self) {
        println!("{} {} split across: {}", self.family, self.shape, self.devices.join(", "));
        if self.rows.len() == 1 {
            println!("one GPU: the job runs on it whole, there is no split to compare");
        }
        let rate = |ms: f64| match self.work {
            Work::Flops(flops) => format!("{:.1} TFLOP/s", flops as f64 / ms / 1e9),
            Work::Bytes(bytes) => format!("{:.0} GB/s", bytes as f64 / ms / 1e6),
            Work::Launches => String::new(),
        };
        let mut table = Table::new();
        table.load_preset(UTF8_FULL_CONDENSED).set_header([
            "GPUs",
            "kernel",
            "kernels ms",
            "kernels rate",
            "speed-up",
            "with copies ms",
            "speed-up",
        ]);
        for r in &self.rows {
            table.add_row([
                r.gpus.to_string(),
                r.kernel.clone(),
                format!("{:.3}", r.kernel_ms),
                rate(r.kernel_ms),
                format!("{:.2}x", r.kernel_speedup),
                format!("{:.3}", r.total_ms),
                format!("{:.2}x", r.total_speedup),
            ]);
        }
        println!("{table}");
        let c = &self.check;
        println!(
            "{}: {} against the CPU, worst error {:.3e} (tolerance {:.3e}), {} mismatches",
            if c.passed { "PASS" } else { "FAIL" },
            self.checked,
            c.worst_error,
            c.tolerance,
            c.mismatches
        );
    }
}

#[cfg(test)]
mod tests {
    use super::part;

    #[test]
    fn parts_cover_the_range_once() {
        for (len, parts) in [(10, 3), (16384, 2), (7, 7), (1000, 8)] {
            let ranges: Vec<_> = (0..parts).map(|i| part(len, parts, i)).collect();
            assert_eq!(ranges[0].start, 0);
            assert_eq!(ranges[parts - 1].end, len);
            assert!(ranges.windows(2).all(|w| w[0].end == w[1].start && !w[0].is_empty()));
        }
    }
}
