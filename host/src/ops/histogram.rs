//! Host side of `kernels::histogram`: any number of bins over u32 values or over f32 values in
//! [min, max] (NumPy's bins exactly); global atomics vs shared-memory privatization, scalar and 16-byte loads. The CPU
//! reference bins with the kernels' own rule (`interface::histogram`), so every value lands in
//! the same bin. The values are random or read from a `.npy` file (`--input-file`); `--output`
//! writes the counts as `.npy`.

use crate::check;
use crate::data::{random_in, random_normal};
use crate::gpu::{
    refuse, require, require_aligned, require_disjoint, require_len, CudaContext, Gpu, GpuError, GpuResult, KernelArgs,
    LaunchConfig, Params,
};
use crate::io;
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, Variant, Workload};
use crate::report::{Report, Work};
use cust::memory::{DeviceBuffer, DeviceCopy, DeviceSlice};
use interface::histogram::{BinRule, F32Bins, U32Bins, DEFAULT_BINS};
use interface::DEFAULT_BLOCK;
use std::path::{Path, PathBuf};

/// Blocks per SM when the grid is left to the host.
const BLOCKS_PER_SM: u32 = 8;

pub use crate::data::Input;

/// How the random f32 input is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Data {
    /// Uniform over the range widened by 1/16 on each side, so some values fall outside.
    Uniform,
    /// Standard normal samples.
    Normal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    /// One global atomic per value.
    Global,
    /// Per-block bins in shared memory, merged at the end.
    Shared,
    /// Shared-memory bins, four values per 16-byte load.
    SharedVec4,
}

impl Method {
    pub const ALL: [Method; 3] = [Method::Global, Method::Shared, Method::SharedVec4];

    fn name(self) -> &'static str {
        match self {
            Method::Global => "global",
            Method::Shared => "shared",
            Method::SharedVec4 => "shared_vec4",
        }
    }

    fn uses_shared_bins(self) -> bool {
        self != Method::Global
    }

    fn kernel(self, input: Input) -> String {
        format!("histogram_{}_{}", self.name(), input.name())
    }

    fn variant(self, input: Input) -> Variant {
        Variant::new(format!("{}-{}", self.name(), input.name()), self.kernel(input))
    }
}

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Values.
    #[arg(long, default_value_t = 1 << 28)]
    pub n: usize,
    /// The values' type; an --input-file must hold this dtype.
    #[arg(long, value_enum, default_value_t = Input::U32)]
    pub input: Input,
    /// Bins. The shared-memory variants need 4 bytes per bin in a block's shared memory (the
    /// device's opt-in limit: about 58 000 bins on an H100); beyond that only global atomics run.
    #[arg(long, default_value_t = DEFAULT_BINS)]
    pub bins: u32,
    /// Lower edge of the f32 range: `range=(min, max)` of `np.histogram`.
    #[arg(long, default_value_t = -4.0, allow_negative_numbers = true)]
    pub min: f64,
    /// Upper edge of the f32 range, inside the last bin as in NumPy.
    #[arg(long, default_value_t = 4.0, allow_negative_numbers = true)]
    pub max: f64,
    /// How random f32 input is drawn.
    #[arg(long, value_enum, default_value_t = Data::Uniform)]
    pub data: Data,
    /// Variants to run (all that fit when omitted).
    #[arg(long = "variant", value_enum)]
    pub variants: Vec<Method>,
    /// Threads per block.
    #[arg(long, default_value_t = DEFAULT_BLOCK)]
    pub block: u32,
    /// Blocks in the grid (0: 8 per SM).
    #[arg(long, default_value_t = 0)]
    pub grid: u32,
    /// A 1-D .npy file of the values (u32 or f32, as --input says); replaces the random data
    /// and --n.
    #[arg(long, conflicts_with_all = ["n", "data"])]
    pub input_file: Option<PathBuf>,
    /// Writes the counts (the GPU's result) to this 1-D u32 .npy file.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

/// The values in `path` as the kernels take them: u32, or f32 as their bits. NaN and
/// infinities are fine: they fall outside every bin.
fn read_values(path: &Path, input: Input) -> GpuResult<Vec<u32>> {
    match input {
        Input::U32 => io::read_vector::<u32>(path),
        Input::F32 => Ok(io::read_vector::<f32>(path)?.into_iter().map(f32::to_bits).collect()),
    }
}

/// Bins of `values` by `rule`: the CPU reference.
pub fn cpu_reference<R: BinRule>(values: impl IntoIterator<Item = R::Value>, rule: R) -> Vec<u32> {
    let mut bins = vec![0u32; rule.bins() as usize];
    for v in values {
        if let Some(b) = rule.bin(v) {
            bins[b as usize] += 1;
        }
    }
    bins
}

/// Bins at most: the f32 rule's estimate, up to `bins · (1 + 2^-22)`, must fit a u32.
pub const MAX_BINS: u32 = 1 << 31;

/// Whether `[min, max]` can hold `bins` f32 bins: finite, `min < max` still apart once rounded
/// to f32 (NumPy's outer edges), and a finite f32 bins-per-unit for the rule's estimate.
pub fn f32_range_holds(min: f64, max: f64, bins: u32) -> bool {
    min.is_finite()
        && max.is_finite()
        && (min as f32) < (max as f32)
        && ((bins as f64 / (max - min)) as f32).is_finite()
}

/// The binning of one histogram: input type, bin count, f32 range.
#[derive(Debug, Clone, Copy)]
pub struct Binning {
    pub input: Input,
    pub bins: u32,
    pub range: (f64, f64),
}

impl Binning {
    fn validate(&self) -> GpuResult<()> {
        require(self.bins >= 1, || "a histogram needs at least 1 bin".into())?;
        require(self.bins <= MAX_BINS, || format!("at most {} bins (got {})", MAX_BINS, self.bins))?;
        let (min, max) = self.range;
        require(self.input == Input::U32 || f32_range_holds(min, max, self.bins), || {
            format!(
                "the f32 range [{}, {}] cannot hold {} bins: it needs finite min < max, apart as f32",
                min, max, self.bins
            )
        })
    }

    fn f32_rule(&self) -> F32Bins {
        F32Bins::new(self.range.0, self.range.1, self.bins)
    }
}

/// The values of a histogram as its kernels take them.
#[derive(Clone, Copy)]
pub enum Values<'a> {
    U32(&'a DeviceSlice<u32>),
    /// f32 values, counted over `[min, max]` with NumPy's edges.
    F32 {
        values: &'a DeviceSlice<f32>,
        min: f64,
        max: f64,
    },
}

/// The arguments of the histogram kernels: `values` counted into `bins` bins of `counts` by a
/// one-dimensional grid of `grid` blocks of `block` threads (any sizes: the loops are
/// grid-stride; the shared-memory kernels get their bins' shared memory from
/// [`Histogram::shaped`]).
pub struct HistogramArgs<'a> {
    pub values: Values<'a>,
    pub bins: u32,
    pub counts: &'a DeviceSlice<u32>,
    pub grid: u32,
    pub block: u32,
}

// SAFETY: the kernels read all of `values` and add to `counts[..bins]`, checked to exist and
// not to overlap the values. A value's bin is below `bins` by the binning rule: `bins >= 1` is
// checked (the rule clamps to `bins - 1`), and for f32 a range that [`f32_range_holds`], so
// the rule's float-to-int conversion always sees an estimate in `[0, bins · (1 + 2^-22)]`. The
// shared-memory kernels keep `bins` counters in the dynamic shared memory that `shaped` sizes,
// and the vec4 ones load quads of values, checked 16-byte aligned. A grid-stride loop is correct
// on any grid. The parameters are `values: &[u32], bins: u32, counts: *mut u32`, or
// `values: &[f32], lo: f64, hi: f64, bins: u32, counts: *mut u32`.
unsafe impl KernelArgs for HistogramArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let input = match self.values {
            Values::U32(_) => Input::U32,
            Values::F32 { .. } => Input::F32,
        };
        let method = Method::ALL
            .into_iter()
            .find(|m| m.kernel(input) == kernel)
            .ok_or_else(|| refuse(kernel, format!("it is not a histogram kernel of {} values", input.name())))?;
        if self.bins == 0 {
            return Err(refuse(kernel, "a histogram needs at least 1 bin"));
        }
        let bins = self.bins as usize;
        require_len(kernel, "the counts", self.counts, bins)?;
        match self.values {
            Values::U32(values) => self.check_values(kernel, method, values)?,
            Values::F32 { values, min, max } => {
                if !f32_range_holds(min, max, self.bins) || self.bins > MAX_BINS {
                    return Err(refuse(kernel, format!("[{min}, {max}] cannot hold {} bins", self.bins)));
                }
                self.check_values(kernel, method, values)?
            }
        }
        // One-dimensional: with a second dimension, threads sharing an index would zero and
        // merge a block's bins twice.
        Ok(Histogram::shaped(LaunchConfig::grid_stride(0, 0, self.block, self.grid)?, method, self.bins))
    }

    fn params(&self, _kernel: &str) -> Params {
        match self.values {
            Values::U32(values) => Params::new().slice(values).value(self.bins).pointer(self.counts),
            Values::F32 { values, min, max } => {
                Params::new().slice(values).value(min).value(max).value(self.bins).pointer(self.counts)
            }
        }
    }
}

impl HistogramArgs<'_> {
    /// The values must not overlap the counts, and the vec4 kernels load them as quads.
    fn check_values<T: DeviceCopy>(&self, kernel: &str, method: Method, values: &DeviceSlice<T>) -> GpuResult<()> {
        require_disjoint(
            kernel,
            ("the counts", self.counts, self.bins as usize),
            ("the values", values, values.len()),
        )?;
        if method == Method::SharedVec4 {
            require_aligned(kernel, "the values", values, 16)?;
        }
        Ok(())
    }
}

/// The values on the GPU, typed as the kernels take them.
enum DeviceValues {
    U32(DeviceBuffer<u32>),
    F32(DeviceBuffer<f32>),
}

/// Values on the GPU and zeroed bins, ready to launch.
pub struct Histogram {
    binning: Binning,
    values: Vec<u32>,
    pub config: LaunchConfig,
    variants: Vec<Variant>,
    /// Why some variants were left out, for the report.
    skipped: Option<String>,
    output: Option<PathBuf>,
    expected: Vec<u32>,
    device_values: DeviceValues,
    counts: DeviceBuffer<u32>,
}

impl Histogram {
    /// `values` (f32 input as bits) binned by `binning`. Without `methods`, every variant whose
    /// bins fit in shared memory.
    pub fn with_values(
        gpu: &Gpu,
        binning: Binning,
        values: Vec<u32>,
        methods: &[Method],
        block: u32,
        grid: u32,
    ) -> GpuResult<Self> {
        require(!values.is_empty(), || "histogram needs n >= 1".into())?;
        binning.validate()?;
        let config = LaunchConfig::grid_stride(gpu.info.multiprocessors as u32, BLOCKS_PER_SM, block, grid)?;
        // Whether a block's copy of the bins fits beside the kernel's own shared memory: the
        // launch check says so, with the numbers.
        let shared_check =
            gpu.validate(&Method::Shared.kernel(binning.input), &Self::shaped(config, Method::Shared, binning.bins));
        let (methods, skipped) = match (methods, shared_check) {
            ([], Ok(())) => (Method::ALL.to_vec(), None),
            ([], Err(GpuError::InvalidLaunch { reason, .. })) if reason.contains("shared memory") => (
                vec![Method::Global],
                Some(format!("global atomics only: {} bins in shared memory: {}", binning.bins, reason)),
            ),
            ([], Err(err)) => return Err(err),
            (chosen, _) => (chosen.to_vec(), None),
        };
        let variants: Vec<Variant> = methods.iter().map(|m| m.variant(binning.input)).collect();
        for (variant, method) in variants.iter().zip(&methods) {
            gpu.validate(&variant.kernel, &Self::shaped(config, *method, binning.bins))?;
        }
        let device_values = match binning.input {
            Input::U32 => DeviceValues::U32(gpu.upload("histogram input", &values)?),
            Input::F32 => DeviceValues::F32(gpu.upload("histogram input", bytemuck::cast_slice::<u32, f32>(&values))?),
        };
        let counts = DeviceBuffer::<u32>::zeroed(binning.bins as usize).during("allocating bins")?;
        Ok(Self { binning, values, config, variants, skipped, output: None, expected: vec![], device_values, counts })
    }

    /// The launch of `method`: the shared-memory kernels get one counter per bin.
    fn shaped(config: LaunchConfig, method: Method, bins: u32) -> LaunchConfig {
        // Saturating: bins past 2^30 ask for more shared memory than any launch gets, an error.
        let shared_bytes = if method.uses_shared_bins() { bins.saturating_mul(4) } else { 0 };
        LaunchConfig { shared_bytes, ..config }
    }
}

impl Kernel for Histogram {
    const NAME: &'static str = "histogram";
    const ABOUT: &'static str =
        "Histogram of any bin count: global atomics, shared-memory privatization, 16-byte loads";
    type Options = Options;

    fn launches(sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let config = LaunchConfig::grid_stride(sms, BLOCKS_PER_SM, DEFAULT_BLOCK, 0)?;
        let kernels = [
            ("histogram_global_u32", Method::Global),
            ("histogram_global_f32", Method::Global),
            ("histogram_shared_u32", Method::Shared),
            ("histogram_shared_f32", Method::Shared),
            ("histogram_shared_vec4_u32", Method::SharedVec4),
            ("histogram_shared_vec4_f32", Method::SharedVec4),
        ];
        Ok(kernels.into_iter().map(|(k, m)| (k, Self::shaped(config, m, DEFAULT_BINS))).collect())
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        let sizes = match purpose {
            Purpose::Check => vec![
                "--n 1".into(),
                "--n 1021 --block 96 --grid 3".into(),
                "--n 4194311".into(),
                "--n 100003 --bins 150 --data normal".into(),
                "--n 100003 --bins 1".into(),
                "--n 300007 --bins 12000".into(),
                "--n 300007 --bins 20000".into(),
                "--n 1000003 --bins 20000 --data normal".into(),
            ],
            _ => one_per_element_sizes(purpose),
        };
        sizes.into_iter().flat_map(|s| [format!("{} --input u32", s), format!("{} --input f32", s)]).collect()
    }

    fn variants_for(options: &Options) -> GpuResult<Vec<Variant>> {
        let methods = if options.variants.is_empty() { &Method::ALL[..] } else { &options.variants };
        Ok(methods.iter().map(|m| m.variant(options.input)).collect())
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let file = options.input_file.as_deref().map(|path| read_values(path, options.input)).transpose()?;
        let n = file.as_ref().map_or(options.n, Vec::len);
        require(n >= 1, || "histogram needs n >= 1".into())?;
        let binning = Binning { input: options.input, bins: options.bins, range: (options.min, options.max) };
        binning.validate()?;
        gpu.ensure_fits("histogram input", 4 * n as u64)?;
        let values = match (file, options.input, options.data) {
            (Some(values), _, _) => values,
            // About 15% of the values fall past the last bin.
            (None, Input::U32, _) => {
                random_in(n, seed, 0u32, binning.bins.saturating_add(binning.bins * 3 / 17).max(2))
            }
            (None, Input::F32, Data::Uniform) => {
                let margin = (options.max - options.min) / 16.0;
                let (low, high) = ((options.min - margin) as f32, (options.max + margin) as f32);
                random_in(n, seed, low, high).into_iter().map(f32::to_bits).collect()
            }
            (None, Input::F32, Data::Normal) => random_normal(n, seed).into_iter().map(f32::to_bits).collect(),
        };
        let mut histogram = Self::with_values(gpu, binning, values, &options.variants, options.block, options.grid)?;
        histogram.output = options.output.clone();
        Ok(histogram)
    }
}

impl Workload for Histogram {
    fn shape(&self) -> String {
        let range = match self.binning.input {
            Input::U32 => String::new(),
            Input::F32 => format!(" [{}, {}]", self.binning.range.0, self.binning.range.1),
        };
        format!(
            "n={} bins={}{} grid={}x{}",
            self.values.len(),
            self.binning.bins,
            range,
            self.config.grid.0,
            self.config.block.0
        )
    }

    fn size(&self) -> u64 {
        self.values.len() as u64
    }

    fn peer(&self) -> Option<String> {
        Some(format!("histogram{}_{}", self.binning.bins, self.binning.input.name()))
    }

    fn work(&self) -> Work {
        Work::Bytes(4 * self.values.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        let (min, max) = self.binning.range;
        let values = match &self.device_values {
            DeviceValues::U32(values) => Values::U32(values),
            DeviceValues::F32(values) => Values::F32 { values, min, max },
        };
        let (grid, block) = (self.config.grid.0, self.config.block.0);
        let args = HistogramArgs { values, bins: self.binning.bins, counts: &self.counts, grid, block };
        gpu.launch(&variant.kernel, &args)
    }

    /// Each launch adds to the bins.
    fn reset(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.zero("bins", &self.counts)
    }

    fn before_check(&self, _gpu: &Gpu) -> GpuResult<()> {
        Ok(())
    }

    fn compute_reference(&mut self) {
        let values = self.values.iter().copied();
        self.expected = match self.binning.input {
            Input::U32 => cpu_reference(values, U32Bins::new(self.binning.bins)),
            Input::F32 => cpu_reference(values.map(f32::from_bits), self.binning.f32_rule()),
        };
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let counted: u64 = self.expected.iter().map(|&c| c as u64).sum();
        let check = check::exact(&gpu.download("bins", &self.counts, self.binning.bins as usize)?, &self.expected);
        let mut note = format!("{} of {} values in range", counted, self.values.len());
        if let Some(skipped) = &self.skipped {
            note += &format!("; {}", skipped);
        }
        Ok(Checked { check, note: Some(note) })
    }

    fn finish(&self, gpu: &Gpu, _reports: &mut [Report]) -> GpuResult<()> {
        let Some(path) = &self.output else { return Ok(()) };
        io::write_vector(path, &gpu.download("bins", &self.counts, self.binning.bins as usize)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::random_normal;

    fn bin_f32(value: f32) -> Option<u32> {
        F32Bins::new(-4.0, 4.0, 256).bin(value)
    }

    #[test]
    fn f32_rule_handles_edges_nan_and_infinity() {
        assert_eq!(bin_f32(-4.0), Some(0));
        assert_eq!(bin_f32(0.0), Some(128));
        assert_eq!(bin_f32(-3.97), Some(0), "(−3.97+4)·32 = 0.96");
        assert_eq!(bin_f32(3.99), Some(255));
        assert_eq!(bin_f32(4.0), Some(255), "NumPy's last bin holds its upper edge");
        assert_eq!(bin_f32(f32::from_bits(4.0f32.to_bits() + 1)), None);
        assert_eq!(bin_f32(f32::from_bits((-4.0f32).to_bits() + 1)), None, "just below -4");
        assert_eq!(bin_f32(f32::NAN), None);
        assert_eq!(bin_f32(f32::NEG_INFINITY), None);
        assert_eq!(bin_f32(f32::INFINITY), None);
        assert_eq!(bin_f32(f32::from_bits(4.0f32.to_bits() - 1)), Some(255));
    }

    /// NumPy's bins, from its edges: `np.linspace(lo, hi, bins + 1)` in f64 (`b · step + lo`,
    /// the last edge `hi`) rounded to f32, each value in the last bin whose edge is at or
    /// below it, `hi` itself in the last bin.
    fn numpy_bins(values: &[f32], lo: f64, hi: f64, bins: u32) -> Vec<u32> {
        let step = (hi - lo) / bins as f64;
        let edges: Vec<f32> =
            (0..=bins).map(|b| if b == bins { hi as f32 } else { (b as f64 * step + lo) as f32 }).collect();
        let mut counts = vec![0u32; bins as usize];
        for &v in values {
            if v >= edges[0] && v <= edges[bins as usize] {
                let b = edges.partition_point(|&e| e <= v) - 1;
                counts[b.min(bins as usize - 1)] += 1;
            }
        }
        counts
    }

    #[test]
    fn f32_bins_equal_numpys_on_normal_values() {
        // The case: 3,000,000 normal values over [-4, 4]; an f32 index alone put 2262 of
        // them one bin off NumPy's at 20000 bins and 22 at 150.
        let values = random_normal(3_000_000, 11);
        for bins in [150, 256, 20000] {
            let rule = F32Bins::new(-4.0, 4.0, bins);
            assert_eq!(
                cpu_reference(values.iter().copied(), rule),
                numpy_bins(&values, -4.0, 4.0, bins),
                "{bins} bins"
            );
        }
    }

    #[test]
    fn f32_bins_equal_numpys_at_every_edge() {
        // Each edge, its f32 neighbours, and the midpoints, for ranges whose bounds are not
        // f32 numbers (0.7 rounds down, 0.1 up), far from zero, and with bins narrower than
        // an ulp of their edges.
        for (lo, hi, bins) in [
            (-4.0, 4.0, 20000),
            (0.7, 1.0, 3),
            (-0.1, 0.1, 7),
            (1000.0, 1001.0, 12345),
            (1e-3, 2e-3, 999),
            (-3e4, 5e4, 65535),
        ] {
            let rule = F32Bins::new(lo, hi, bins);
            let mut values = Vec::new();
            for b in 0..=bins {
                let edge = rule.edge(b);
                values.extend([edge, f32::from_bits(edge.to_bits() - 1), f32::from_bits(edge.to_bits() + 1)]);
                values.push((lo + (b as f64 + 0.5) * (hi - lo) / bins as f64) as f32);
            }
            let what = format!("[{lo}, {hi}] in {bins} bins");
            assert_eq!(cpu_reference(values.iter().copied(), rule), numpy_bins(&values, lo, hi, bins), "{what}");
        }
    }

    #[test]
    fn ranges_that_cannot_hold_the_bins_are_refused() {
        assert!(f32_range_holds(-4.0, 4.0, 256));
        assert!(!f32_range_holds(1.0, 1.0 + 1e-12, 4), "one f32 number");
        assert!(!f32_range_holds(4.0, -4.0, 4));
        assert!(!f32_range_holds(f64::NEG_INFINITY, 0.0, 4));
        let binning = Binning { input: Input::F32, bins: 4, range: (1.0, 1.0 + 1e-12) };
        let message = binning.validate().unwrap_err().to_string();
        assert!(message.contains("the f32 range [1, 1.000000000001] cannot hold 4 bins"), "{message}");
    }

    #[test]
    fn reference_counts_a_hand_made_input() {
        let bins = cpu_reference([0u32, 5, 5, 255, 256, 1000], U32Bins::new(256));
        assert_eq!((bins[0], bins[5], bins[255]), (1, 2, 1));
        assert_eq!(bins.iter().sum::<u32>(), 4, "256 and 1000 are out of range");
        let bins = cpu_reference([-4.0f32, -3.99, 3.99, 4.0, f32::NAN], F32Bins::new(-4.0, 4.0, 256));
        assert_eq!((bins[0], bins[255], bins.iter().sum::<u32>()), (2, 2, 4));
        // The tutorial's 150 bins over [-4, 4]: 0 is in bin 75, -4 in bin 0, 3.99 in bin 149.
        let bins = cpu_reference([0.0f32, -4.0, 3.99], F32Bins::new(-4.0, 4.0, 150));
        assert_eq!((bins.len(), bins[75], bins[0], bins[149]), (150, 1, 1, 1));
    }
}
