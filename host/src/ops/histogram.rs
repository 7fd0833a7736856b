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
    pub fn name(self) -> &'static str {
        match self {
            Variant::Global => "global",
            Variant::Shared => "shared",
        }
    }
}

/// A grid-stride launch: `grid` blocks (0: 8 per SM, enough to fill the GPU) of `block`.
pub fn launch_config(gpu: &Gpu, block: u32, grid: u32) -> GpuResult<LaunchConfig> {
    let grid = if grid == 0 { 8 * gpu.info.multiprocessors as u32 } else { grid };
    Ok(LaunchConfig { grid: (grid, 1, 1), ..LaunchConfig::linear(1, block)? })
}

/// Values on the GPU and zeroed bins, ready to launch either variant.
pub struct Histogram<T: DeviceCopy> {
    pub values: Vec<T>,
    /// `[min, max]` for f32 input, empty for u32.
    range: Vec<f32>,
    type_name: &'static str,
    pub config: LaunchConfig,
    device_values: DeviceBuffer<T>,
    bins: DeviceBuffer<u32>,
}

impl<T: DeviceCopy> Histogram<T> {
    fn new(gpu: &Gpu, values: Vec<T>, range: Vec<f32>, type_name: &'static str, block: u32, grid: u32) -> GpuResult<Self> {
        if values.is_empty() {
            return Err(GpuError::InvalidInput("histogram needs n >= 1".into()));
        }
        let config = launch_config(gpu, block, grid)?;
        for variant in Variant::ALL {
            gpu.validate(&Self::kernel_of(type_name, variant), &config)?;
        }
        let device_values = gpu.upload("histogram input", &values)?;
        let bins = DeviceBuffer::<u32>::zeroed(NUM_BINS).during("allocating bins")?;
        Ok(Self { values, range, type_name, config, device_values, bins })
    }

    fn kernel_of(type_name: &str, variant: Variant) -> String {
        format!("histogram_{}_{}", variant.name(), type_name)
    }

    pub fn work(&self) -> Work {
        Work::Bytes(4 * self.values.len() as u64)
    }

    /// Clears the bins (stream-ordered): each launch adds to them.
    pub fn reset(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.zero("bins", &self.bins)
    }

    pub fn launch(&self, gpu: &Gpu, variant: Variant) -> GpuResult<()> {
        let (pv, pb, n) = (self.device_values.as_device_ptr(), self.bins.as_device_ptr(), self.values.len());
        let mut args = vec![arg(&pv), arg(&n)];
        args.extend(self.range.iter().map(arg));
        args.push(arg(&pb));
        gpu.launch(&Self::kernel_of(self.type_name, variant), &self.config, &args)
    }

    pub fn result(&self) -> GpuResult<Vec<u32>> {
        let mut bins = vec![0u32; NUM_BINS];
        self.bins.copy_to(&mut bins[..]).during("copying bins back")?;
        Ok(bins)
    }
}

impl Histogram<u32> {
    /// `n` values drawn from [0, 300): about 15% fall outside the 256 bins.
    pub fn random_u32(gpu: &Gpu, n: usize, block: u32, grid: u32, seed: u64) -> GpuResult<Self> {
        Self::new(gpu, random_in(n, seed, 0u32, 300), vec![], "u32", block, grid)
    }

    pub fn cpu_reference(&self) -> Vec<u32> {
        cpu_reference(&self.values, bin_u32)
    }
}

impl Histogram<f32> {
    /// `values` binned over [`F32_RANGE`].
    pub fn f32_values(gpu: &Gpu, values: Vec<f32>, block: u32, grid: u32) -> GpuResult<Self> {
        let (min, max) = F32_RANGE;
        Self::new(gpu, values, vec![min, max], "f32", block, grid)
    }

    /// `n` values drawn from [-4.5, 4.5): about 11% fall outside [-4, 4).
    pub fn random_f32(gpu: &Gpu, n: usize, block: u32, grid: u32, seed: u64) -> GpuResult<Self> {
        Self::f32_values(gpu, random_in(n, seed, -4.5f32, 4.5), block, grid)
    }

    pub fn cpu_reference(&self) -> Vec<u32> {
        let (min, max) = F32_RANGE;
        cpu_reference(&self.values, |v| bin_f32(v, min, max))
    }
}

/// Runs each variant over one input.
#[allow(clippy::too_many_arguments)]
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
    match input {
        Input::U32 => {
            let histogram = Histogram::random_u32(gpu, n, block, grid, seed)?;
            let (reference, cpu_ms) = timed(|| histogram.cpu_reference());
            run_variants(gpu, histogram, &reference, cpu_ms, variants, iters)
        }
        Input::F32 => {
            let histogram = Histogram::random_f32(gpu, n, block, grid, seed)?;
            let (reference, cpu_ms) = timed(|| histogram.cpu_reference());
            run_variants(gpu, histogram, &reference, cpu_ms, variants, iters)
        }
    }
}

/// Runs the f32 kernels over given values (e.g. with NaN and infinities), binned over
/// [`F32_RANGE`], against the CPU reference.
pub fn run_f32_values(gpu: &Gpu, values: &[f32], variants: &[Variant], block: u32, grid: u32) -> GpuResult<Vec<Report>> {
    let histogram = Histogram::f32_values(gpu, values.to_vec(), block, grid)?;
    let (reference, cpu_ms) = timed(|| histogram.cpu_reference());
    run_variants(gpu, histogram, &reference, cpu_ms, variants, 1)
}

fn run_variants<T: DeviceCopy>(
    gpu: &Gpu,
    histogram: Histogram<T>,
    reference: &[u32],
    cpu_ms: f64,
    variants: &[Variant],
    iters: usize,
) -> GpuResult<Vec<Report>> {
    let mut reports = Vec::new();
    let counted: u64 = reference.iter().map(|&c| c as u64).sum();
    for &variant in variants {
        histogram.reset(gpu)?;
        histogram.launch(gpu, variant)?;
        gpu.synchronize("histogram")?;
        let check = check::exact(&histogram.result()?, reference);
        let gpu_ms = gpu.time_ms("histogram", iters, || histogram.reset(gpu), || histogram.launch(gpu, variant))?;
        reports.push(
            Report::new(
                &gpu.info,
                "histogram",
                &format!("{}-{}", variant.name(), histogram.type_name),
                format!("n={} grid={}x{}", histogram.values.len(), histogram.config.grid.0, histogram.config.block.0),
                gpu_ms,
                histogram.work(),
                Some(cpu_ms),
                check,
            )
            .with_note(format!("{} of {} values in range", counted, histogram.values.len())),
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
