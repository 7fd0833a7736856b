//! The command line of the `histogram` family: its options and its registry entry.

pub use cuda_kernels::histogram::*;

use crate::check;
use crate::data::{random_in, random_normal};
use crate::gpu::{require, CudaContext, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::io;
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, Variant, Workload};
use crate::report::{Report, Work};
use cust::memory::DeviceBuffer;
use interface::histogram::DEFAULT_BINS;
use interface::DEFAULT_BLOCK;
use std::path::{Path, PathBuf};

/// The variant of `method` over `input`: its name and kernel.
fn variant(method: Method, input: Input) -> Variant {
    Variant::new(format!("{}-{}", method.name(), input.name()), method.kernel(input))
}

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Values.
    #[arg(long, default_value_t = 1 << 28)]
    pub n: usize,
    /// The values' type; an --input-file must hold this dtype.
    #[arg(long, value_parser = crate::registry::named::<Input>(), default_value_t = Input::U32)]
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
    #[arg(long, value_parser = crate::registry::named::<Data>(), default_value_t = Data::Uniform)]
    pub data: Data,
    /// Variants to run (all that fit when omitted).
    #[arg(long = "variant", value_parser = crate::registry::named::<Method>())]
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
        let config = LaunchConfig::grid_stride(gpu.sms(), BLOCKS_PER_SM, block, grid)?;
        // Whether a block's copy of the bins fits beside the kernel's own shared memory: the
        // launch check says so, with the numbers.
        let shared_check =
            gpu.validate(&Method::Shared.kernel(binning.input), &shaped_launch(config, Method::Shared, binning.bins));
        let (methods, skipped) = match (methods, shared_check) {
            ([], Ok(())) => (Method::ALL.to_vec(), None),
            ([], Err(GpuError::InvalidLaunch { reason, .. })) if reason.contains("shared memory") => (
                vec![Method::Global],
                Some(format!("global atomics only: {} bins in shared memory: {}", binning.bins, reason)),
            ),
            ([], Err(err)) => return Err(err),
            (chosen, _) => (chosen.to_vec(), None),
        };
        let variants: Vec<Variant> = methods.iter().map(|m| variant(*m, binning.input)).collect();
        for (variant, method) in variants.iter().zip(&methods) {
            gpu.validate(&variant.kernel, &shaped_launch(config, *method, binning.bins))?;
        }
        let device_values = match binning.input {
            Input::U32 => DeviceValues::U32(gpu.upload("histogram input", &values)?),
            Input::F32 => DeviceValues::F32(gpu.upload("histogram input", bytemuck::cast_slice::<u32, f32>(&values))?),
        };
        let counts = DeviceBuffer::<u32>::zeroed(binning.bins as usize).during("allocating bins")?;
        Ok(Self { binning, values, config, variants, skipped, output: None, expected: vec![], device_values, counts })
    }
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Histogram> = crate::registry::Entry::new();

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
        Ok(kernels.into_iter().map(|(k, m)| (k, shaped_launch(config, m, DEFAULT_BINS))).collect())
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
        Ok(methods.iter().map(|m| variant(*m, options.input)).collect())
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

    fn launch_cases(kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{shifted, vector_access, Args, Cases, LaunchCases};
        use cust::memory::DeviceSlice;
        let vector = vector_access(kernel);
        let mut refused: Vec<(String, Args)> = Vec::new();
        let (n, bins, grid, block) = (1000, 256, 4, 128);
        let counts = memory.u32s(bins as usize);
        let f32_input = kernel.ends_with("f32");
        let values = if f32_input {
            Values::F32 { values: memory.f32s(n), min: -4.0, max: 4.0 }
        } else {
            Values::U32(memory.u32s(n))
        };
        let with = |values: Values<'static>, bins: u32, counts: &'static DeviceSlice<u32>| -> Args {
            Box::new(HistogramArgs { values, bins, counts, grid, block })
        };
        refused.push(("counts short".into(), with(values, bins, memory.u32s(bins as usize - 1))));
        refused.push(("no bins".into(), with(values, 0, counts)));
        let other_type = if f32_input {
            Values::U32(memory.u32s(n))
        } else {
            Values::F32 { values: memory.f32s(n), min: -4.0, max: 4.0 }
        };
        refused.push(("the other value type".into(), with(other_type, bins, counts)));
        if let Values::F32 { values, .. } = values {
            refused.push(("empty range".into(), with(Values::F32 { values, min: 1.0, max: 1.0 }, bins, counts)));
            refused.push(("NaN range".into(), with(Values::F32 { values, min: f64::NAN, max: 4.0 }, bins, counts)));
            let narrow = Values::F32 { values, min: 0.0, max: 1e-300 };
            refused.push(("a range too narrow for its bins".into(), with(narrow, bins, counts)));
        }
        if vector {
            let misaligned = match values {
                Values::U32(values) => Values::U32(shifted(values)),
                Values::F32 { values, min, max } => Values::F32 { values: shifted(values), min, max },
            };
            refused.push(("values misaligned".into(), with(misaligned, bins, counts)));
        }
        LaunchCases::Cases(Cases { valid: with(values, bins, counts), refused })
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

    unsafe fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
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
