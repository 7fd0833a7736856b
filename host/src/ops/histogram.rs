//! Host side of `kernels::histogram`: 256 bins over u32 values or over f32 values in
//! [min, max); global atomics vs shared-memory privatization. The CPU reference bins with the
//! kernels' own rule (`interface::histogram`), so every value lands in the same bin.

use crate::check;
use crate::data::random_in;
use crate::gpu::{arg, require, CudaContext, Gpu, GpuResult, LaunchConfig};
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::DeviceBuffer;
use interface::histogram::{BinRule, F32Bins, U32Bins, NUM_BINS};
use interface::DEFAULT_BLOCK;

/// The f32 input is drawn from [-4.5, 4.5) and binned over [-4, 4), so some values fall
/// outside the range, as the u32 input draws from [0, 300) for 256 bins.
pub const F32_RANGE: (f32, f32) = (-4.0, 4.0);
/// Blocks per SM when the grid is left to the host.
const BLOCKS_PER_SM: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Input {
    U32,
    F32,
}

impl Input {
    fn name(self) -> &'static str {
        match self {
            Input::U32 => "u32",
            Input::F32 => "f32",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    /// One global atomic per value.
    Global,
    /// Per-block bins in shared memory, merged at the end.
    Shared,
}

impl Method {
    pub const ALL: [Method; 2] = [Method::Global, Method::Shared];

    fn name(self) -> &'static str {
        match self {
            Method::Global => "global",
            Method::Shared => "shared",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Values.
    #[arg(long, default_value_t = 1 << 28)]
    pub n: usize,
    #[arg(long, value_enum, default_value_t = Input::U32)]
    pub input: Input,
    /// Variants to run (all when omitted).
    #[arg(long = "variant", value_enum)]
    pub variants: Vec<Method>,
    /// Threads per block.
    #[arg(long, default_value_t = DEFAULT_BLOCK)]
    pub block: u32,
    /// Blocks in the grid (0: 8 per SM).
    #[arg(long, default_value_t = 0)]
    pub grid: u32,
}

/// Bins of `values` by `rule`: the CPU reference.
pub fn cpu_reference<R: BinRule>(values: impl IntoIterator<Item = R::Value>, rule: R) -> Vec<u32> {
    let mut bins = vec![0u32; NUM_BINS];
    for v in values {
        if let Some(b) = rule.bin(v) {
            bins[b as usize] += 1;
        }
    }
    bins
}

/// Values on the GPU (f32 values as their bits) and zeroed bins, ready to launch.
pub struct Histogram {
    input: Input,
    values: Vec<u32>,
    pub config: LaunchConfig,
    variants: Vec<Variant>,
    expected: Vec<u32>,
    device_values: DeviceBuffer<u32>,
    bins: DeviceBuffer<u32>,
}

impl Histogram {
    /// `values` (f32 input as bits) binned with `input`'s rule.
    pub fn with_values(
        gpu: &Gpu,
        input: Input,
        values: Vec<u32>,
        methods: &[Method],
        block: u32,
        grid: u32,
    ) -> GpuResult<Self> {
        require(!values.is_empty(), || "histogram needs n >= 1".into())?;
        let config = LaunchConfig::grid_stride(gpu.info.multiprocessors as u32, BLOCKS_PER_SM, block, grid)?;
        let methods = if methods.is_empty() { &Method::ALL[..] } else { methods };
        let variants: Vec<Variant> = methods
            .iter()
            .map(|m| {
                Variant::new(
                    format!("{}-{}", m.name(), input.name()),
                    format!("histogram_{}_{}", m.name(), input.name()),
                )
            })
            .collect();
        for variant in &variants {
            gpu.validate(&variant.kernel, &config)?;
        }
        let device_values = gpu.upload("histogram input", &values)?;
        let bins = DeviceBuffer::<u32>::zeroed(NUM_BINS).during("allocating bins")?;
        Ok(Self { input, values, config, variants, expected: vec![], device_values, bins })
    }
}

impl Kernel for Histogram {
    const NAME: &'static str = "histogram";
    const ABOUT: &'static str = "256-bin histogram with global atomics and with shared-memory privatization";
    type Options = Options;

    fn launches(sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let config = LaunchConfig::grid_stride(sms, BLOCKS_PER_SM, DEFAULT_BLOCK, 0)?;
        let kernels = ["histogram_global_u32", "histogram_global_f32", "histogram_shared_u32", "histogram_shared_f32"];
        Ok(kernels.into_iter().map(|k| (k, config)).collect())
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        let sizes = match purpose {
            Purpose::Check => vec!["--n 1".into(), "--n 1021 --block 96 --grid 3".into(), "--n 4194311".into()],
            _ => one_per_element_sizes(purpose),
        };
        sizes.into_iter().flat_map(|s| [format!("{} --input u32", s), format!("{} --input f32", s)]).collect()
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        require(options.n >= 1, || "histogram needs n >= 1".into())?;
        gpu.ensure_fits("histogram input", 4 * options.n as u64)?;
        let values = match options.input {
            Input::U32 => random_in(options.n, seed, 0u32, 300),
            Input::F32 => random_in(options.n, seed, -4.5f32, 4.5).into_iter().map(f32::to_bits).collect(),
        };
        Self::with_values(gpu, options.input, values, &options.variants, options.block, options.grid)
    }
}

impl Workload for Histogram {
    fn shape(&self) -> String {
        format!("n={} grid={}x{}", self.values.len(), self.config.grid.0, self.config.block.0)
    }

    fn size(&self) -> u64 {
        self.values.len() as u64
    }

    fn peer(&self) -> Option<String> {
        Some(format!("histogram256_{}", self.input.name()))
    }

    fn work(&self) -> Work {
        Work::Bytes(4 * self.values.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        let (pv, pb, n) = (self.device_values.as_device_ptr(), self.bins.as_device_ptr(), self.values.len());
        let (min, max) = F32_RANGE;
        let args = match self.input {
            Input::U32 => vec![arg(&pv), arg(&n), arg(&pb)],
            Input::F32 => vec![arg(&pv), arg(&n), arg(&min), arg(&max), arg(&pb)],
        };
        gpu.launch(&variant.kernel, &self.config, &args)
    }

    /// Each launch adds to the bins.
    fn reset(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.zero("bins", &self.bins)
    }

    fn before_check(&self, _gpu: &Gpu) -> GpuResult<()> {
        Ok(())
    }

    fn compute_reference(&mut self) {
        self.expected = match self.input {
            Input::U32 => cpu_reference(self.values.iter().copied(), U32Bins),
            Input::F32 => cpu_reference(
                self.values.iter().map(|&bits| f32::from_bits(bits)),
                F32Bins::new(F32_RANGE.0, F32_RANGE.1),
            ),
        };
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let counted: u64 = self.expected.iter().map(|&c| c as u64).sum();
        let check = check::exact(&gpu.download("bins", &self.bins, NUM_BINS)?, &self.expected);
        Ok(Checked { check, note: Some(format!("{} of {} values in range", counted, self.values.len())) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin_f32(value: f32) -> Option<u32> {
        F32Bins::new(F32_RANGE.0, F32_RANGE.1).bin(value)
    }

    #[test]
    fn f32_rule_handles_edges_nan_and_infinity() {
        assert_eq!(bin_f32(-4.0), Some(0));
        assert_eq!(bin_f32(0.0), Some(128));
        assert_eq!(bin_f32(-3.97), Some(0), "(−3.97+4)·32 = 0.96");
        assert_eq!(bin_f32(3.99), Some(255));
        assert_eq!(bin_f32(4.0), None, "the range is half-open");
        assert_eq!(bin_f32(f32::NAN), None);
        assert_eq!(bin_f32(f32::NEG_INFINITY), None);
        assert_eq!(bin_f32(f32::INFINITY), None);
        // The largest float below max must not round up into a 257th bin.
        assert_eq!(bin_f32(f32::from_bits(4.0f32.to_bits() - 1)), Some(255));
    }

    #[test]
    fn reference_counts_a_hand_made_input() {
        let bins = cpu_reference([0u32, 5, 5, 255, 256, 1000], U32Bins);
        assert_eq!((bins[0], bins[5], bins[255]), (1, 2, 1));
        assert_eq!(bins.iter().sum::<u32>(), 4, "256 and 1000 are out of range");
        let bins = cpu_reference([-4.0f32, -3.99, 3.99, 4.0, f32::NAN], F32Bins::new(-4.0, 4.0));
        assert_eq!((bins[0], bins[255], bins.iter().sum::<u32>()), (2, 1, 3));
    }
}
