//! Host side of `kernels::histogram`: 256 bins over u32 values or over f32 values in
//! [min, max); global atomics vs shared-memory privatization.

use crate::check;
use crate::data::{random_in, timed};
use crate::gpu::{arg, CudaContext, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::report::{Report, Work};
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy};

pub const NUM_BINS: usize = 256;
/// The f32 input is drawn from [-4.5, 4.5) and binned over [-4, 4), so some values fall
/// outside the range, as the u32 input draws from [0, 300) for 256 bins.
pub const F32_RANGE: (f32, f32) = (-4.0, 4.0);

/// The kernels' rule (`kernels::histogram::U32Bins`): value v counts in bin v if v < 256.
pub fn bin_u32(value: u32) -> Option<usize> {
    Some(value as usize).filter(|&v| v < NUM_BINS)
}

/// The kernels' rule (`kernels::histogram::F32Bins`), the same f32 operations in the same
/// order so that every value lands in the same bin: NaN and values outside [min, max) count
/// nowhere; the top edge clamps to the last bin.
pub fn bin_f32(value: f32, min: f32, max: f32) -> Option<usize> {
    if !(value >= min && value < max) {
        return None;
    }
    let bins_per_unit = NUM_BINS as f32 / (max - min);
    Some((((value - min) * bins_per_unit) as usize).min(NUM_BINS - 1))
}

pub fn cpu_reference<T: Copy>(values: &[T], bin: impl Fn(T) -> Option<usize>) -> Vec<u32> {
    let mut bins = vec![0u32; NUM_BINS];
    for &v in values {
        if let Some(b) = bin(v) {
            bins[b] += 1;
        }
    }
    bins
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ArgEnum)]
pub enum Input {
    U32,
    F32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ArgEnum)]
pub enum Variant {
    Global,
    Shared,
}

impl Variant {
    pub const ALL: [Variant; 2] = [Variant::Global, Variant::Shared];
    fn name(self) -> &'static str {
        match self {
            Variant::Global => "global",
            Variant::Shared => "shared",
        }
    }
}

/// Runs each variant over one input. `grid` = 0 picks 8 blocks per SM.
pub fn run(
    gpu: &Gpu,
    input: Input,
    n: usize,
    variants: &[Variant],
    block: u32,
    grid: u32,
    iters: usize,
    seed: u64,
) -> GpuResult<Vec<Report>> {
    if n == 0 {
        return Err(GpuError::InvalidInput("histogram needs n >= 1".into()));
    }
    match input {
        Input::U32 => {
            let values = random_in(n, seed, 0u32, 300);
            let (reference, cpu_ms) = timed(|| cpu_reference(&values, bin_u32));
            run_variants(gpu, "u32", &values, &[], &reference, cpu_ms, variants, block, grid, iters)
        }
        Input::F32 => {
            let values = random_in(n, seed, -4.5f32, 4.5);
            let (min, max) = F32_RANGE;
            let (reference, cpu_ms) = timed(|| cpu_reference(&values, |v| bin_f32(v, min, max)));
            run_variants(gpu, "f32", &values, &[min, max], &reference, cpu_ms, variants, block, grid, iters)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run_variants<T: DeviceCopy>(
    gpu: &Gpu,
    type_name: &str,
    values: &[T],
    range: &[f32],
    reference: &[u32],
    cpu_ms: f64,
    variants: &[Variant],
    block: u32,
    grid: u32,
    iters: usize,
) -> GpuResult<Vec<Report>> {
    let n = values.len();
    let grid = if grid == 0 { 8 * gpu.info.multiprocessors as u32 } else { grid };
    let config = LaunchConfig { grid: (grid, 1, 1), ..LaunchConfig::linear(1, block)? };
    let device_values = gpu.upload("histogram input", values)?;
    let mut bins = DeviceBuffer::<u32>::zeroed(NUM_BINS).during("allocating bins")?;
    let (pv, pb) = (device_values.as_device_ptr(), bins.as_device_ptr());
    let mut reports = Vec::new();
    for &variant in variants {
        let kernel = format!("histogram_{}_{}", variant.name(), type_name);
        gpu.validate(&kernel, &config)?;
        let mut args = vec![arg(&pv), arg(&n)];
        args.extend(range.iter().map(arg));
        args.push(arg(&pb));
        let launch = || gpu.launch(&kernel, &config, &args);

        gpu.zero("bins", &mut bins)?;
        launch()?;
        gpu.synchronize(&kernel)?;
        let mut result = vec![0u32; NUM_BINS];
        bins.copy_to(&mut result[..]).during("copying bins back")?;
        let check = check::exact(&result, reference);
        let gpu_ms = gpu.time_ms(&kernel, iters, || gpu.zero("bins", &mut bins), launch)?;
        let counted: u64 = reference.iter().map(|&c| c as u64).sum();
        reports.push(
            Report::new(
                &gpu.info,
                "histogram",
                &format!("{}-{}", variant.name(), type_name),
                format!("n={} grid={}x{}", n, grid, block),
                gpu_ms,
                Work::Bytes(4 * n as u64),
                Some(cpu_ms),
                check,
            )
            .with_note(format!("{} of {} values in range", counted, n)),
        );
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_rule_handles_edges_nan_and_infinity() {
        let (min, max) = (-4.0, 4.0);
        assert_eq!(bin_f32(-4.0, min, max), Some(0));
        assert_eq!(bin_f32(0.0, min, max), Some(128));
        assert_eq!(bin_f32(-3.97, min, max), Some(0), "(−3.97+4)·32 = 0.96");
        assert_eq!(bin_f32(3.99, min, max), Some(255));
        assert_eq!(bin_f32(4.0, min, max), None, "the range is half-open");
        assert_eq!(bin_f32(f32::NAN, min, max), None);
        assert_eq!(bin_f32(f32::NEG_INFINITY, min, max), None);
        assert_eq!(bin_f32(f32::INFINITY, min, max), None);
        // The largest float below max must not round up into a 257th bin.
        let below_max = f32::from_bits(4.0f32.to_bits() - 1);
        assert_eq!(bin_f32(below_max, min, max), Some(255));
    }

    #[test]
    fn reference_counts_a_hand_made_input() {
        let bins = cpu_reference(&[0u32, 5, 5, 255, 256, 1000], bin_u32);
        assert_eq!((bins[0], bins[5], bins[255]), (1, 2, 1));
        assert_eq!(bins.iter().sum::<u32>(), 4, "256 and 1000 are out of range");
        let bins = cpu_reference(&[-4.0f32, -3.99, 3.99, 4.0, f32::NAN], |v| bin_f32(v, -4.0, 4.0));
        assert_eq!((bins[0], bins[255], bins.iter().sum::<u32>()), (2, 1, 3));
    }
}
