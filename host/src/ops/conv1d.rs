//! The command line of the `conv1d` family: its options and its registry entry.

pub use cuda_kernels::conv1d::*;

use crate::check::{self, product_scale};
use crate::data::random_f32;
use crate::gpu::{require, Gpu, GpuResult, LaunchConfig};
use crate::io;
use crate::ops::conv2d::{radius, set_filter};
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, Variant, Workload};
use crate::report::{Report, Work};
use cust::memory::DeviceBuffer;
use ndarray::ArrayView1;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Elements.
    #[arg(long, default_value_t = 1 << 26)]
    pub n: usize,
    /// Filter length: 3, 5 or 7 random taps.
    #[arg(long, default_value_t = 7)]
    pub filter: usize,
    /// The filter's taps: a text file of 3, 5 or 7 numbers (separated by spaces, commas or
    /// line breaks) or a 1-D f32 .npy; replaces the random taps and --filter.
    #[arg(long, conflicts_with = "filter")]
    pub taps: Option<PathBuf>,
    /// Variants to run (all when omitted).
    #[arg(long = "variant", value_parser = crate::registry::named::<Method>())]
    pub variants: Vec<Method>,
    /// A 1-D f32 .npy file of the signal; replaces the random data and --n.
    #[arg(long, conflicts_with = "n")]
    pub signal: Option<PathBuf>,
    /// Writes the GPU's result to this 1-D f32 .npy file.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

/// Signal on the GPU, filter in constant memory, output poisoned.
pub struct Conv1d {
    pub filter: usize,
    /// The taps' file name, for the reports; `None` for random taps.
    taps_file: Option<String>,
    pub signal: Vec<f32>,
    pub taps: Vec<f32>,
    variants: Vec<Variant>,
    /// The tolerance's `max(1, max|x|·max|f|)`.
    scale: f64,
    /// Where `--output` writes.
    output_path: Option<PathBuf>,
    expected: Vec<f32>,
    input: DeviceBuffer<f32>,
    output: DeviceBuffer<f32>,
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Conv1d> = crate::registry::Entry::new();

impl Kernel for Conv1d {
    const NAME: &'static str = "conv1d";
    const ABOUT: &'static str = "1D convolution with a shared-memory tile and halo";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        Method::ALL.iter().map(|m| Ok((m.kernel(), m.config(1 << 26)?))).collect()
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        match purpose {
            Purpose::Check => {
                let mut sizes = Vec::new();
                for n in [1, 255, 257, 1_000_003] {
                    sizes.extend([3, 5, 7].map(|f| format!("--n {n} --filter {f}")));
                }
                sizes
            }
            _ => one_per_element_sizes(purpose),
        }
    }

    fn variants_for(options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(crate::registry::variants(&options.variants))
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let taps = match &options.taps {
            Some(path) => io::read_taps(path)?,
            None => {
                radius(options.filter)?;
                random_f32(options.filter, seed ^ 1)
            }
        };
        let filter = taps.len();
        let file = match &options.signal {
            Some(path) => {
                let signal = io::read_vector::<f32>(path)?;
                io::require_finite(path, &signal)?;
                Some(signal)
            }
            None => None,
        };
        let n = file.as_ref().map_or(options.n, Vec::len);
        require(n >= 1, || "conv1d needs n >= 1".into())?;
        let methods = Method::chosen(&options.variants);
        for method in methods {
            gpu.validate(method.kernel(), &method.config(n)?)?;
        }
        gpu.ensure_fits("conv1d's input and output", 2 * 4 * n as u64)?;
        let signal = file.unwrap_or_else(|| random_f32(n, seed));
        set_filter(gpu, &taps)?;
        let input = gpu.upload("the signal", &signal)?;
        let output = gpu.poisoned::<f32>("the output", n)?;
        let variants = Self::variants_for(options)?;
        let (scale, output_path) = (product_scale(&signal, &taps), options.output.clone());
        let taps_file = options.taps.as_deref().map(io::file_name);
        let expected = vec![];
        Ok(Self { filter, taps_file, signal, taps, variants, scale, output_path, expected, input, output })
    }

    fn launch_cases(kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{shifted, vector_access, Args, Cases, LaunchCases};
        let vector = vector_access(kernel);
        let mut refused: Vec<(String, Args)> = Vec::new();
        let n = 1001;
        let (input, output) = (memory.f32s(n), memory.f32s(n));
        let with = |input, output, radius| -> Args { Box::new(Conv1dArgs { input, output, radius }) };
        refused.push(("output short".into(), with(input, memory.f32s(n - 1), 3)));
        refused.push(("output is input".into(), with(input, input, 3)));
        refused.push(("radius past the shared halo".into(), with(input, output, 4)));
        if vector {
            refused.push(("input misaligned".into(), with(shifted(input), output, 3)));
        }
        LaunchCases::Cases(Cases { valid: with(input, output, 3), refused })
    }
}

impl Workload for Conv1d {
    fn shape(&self) -> String {
        match &self.taps_file {
            None => format!("n={} filter {}", self.signal.len(), self.filter),
            Some(name) => format!("n={} filter {} {}", self.signal.len(), self.filter, name),
        }
    }

    fn size(&self) -> u64 {
        self.signal.len() as u64
    }

    fn peer(&self) -> Option<String> {
        Some(format!("conv1d_{}_f32", self.filter))
    }

    fn work(&self) -> Work {
        Work::Bytes(2 * 4 * self.signal.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    unsafe fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        gpu.launch(&variant.kernel, &Conv1dArgs { input: &self.input, output: &self.output, radius: self.filter / 2 })
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("the output", &self.output)
    }

    fn compute_reference(&mut self) {
        self.expected = cpu_reference(ArrayView1::from(&self.signal), ArrayView1::from(&self.taps)).to_vec();
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let tolerance = 4.0 * self.filter as f64 * f32::EPSILON as f64 * self.scale;
        Ok(check::close(&gpu.download("the output", &self.output, self.signal.len())?, &self.expected, tolerance)
            .into())
    }

    fn finish(&self, gpu: &Gpu, _reports: &mut [Report]) -> GpuResult<()> {
        let Some(path) = &self.output_path else { return Ok(()) };
        io::write_vector(path, &gpu.download("the output", &self.output, self.signal.len())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn reference_matches_hand_computed_values() {
        let out = cpu_reference(array![1.0f32, 2.0, 3.0, 4.0].view(), array![1.0f32, 10.0, 100.0].view());
        assert_eq!(out.to_vec(), vec![210.0, 321.0, 432.0, 43.0]);
    }

    #[test]
    fn taps_replace_the_random_filter_but_not_both() {
        let command = <Options as clap::Args>::augment_args(clap::Command::new("conv1d"));
        let parse = |args: &[&str]| command.clone().try_get_matches_from([&["conv1d"], args].concat());
        let matches = parse(&["--signal", "x.npy", "--taps", "taps.txt"]).unwrap();
        let options = <Options as clap::FromArgMatches>::from_arg_matches(&matches).unwrap();
        assert_eq!(options.taps, Some(PathBuf::from("taps.txt")));
        let both = parse(&["--taps", "taps.txt", "--filter", "5"]).unwrap_err().to_string();
        assert!(both.contains("cannot be used with"), "{}", both);
    }
}
