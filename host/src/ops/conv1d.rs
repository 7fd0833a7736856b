//! Host side of `kernels::conv1d`: same-size output, zero padding, 3 to 7 taps in constant
//! memory (the `FILTER` that `conv2d` also uses). The signal is random or read from a `.npy`
//! file (`--signal`); the taps are random (`--filter` of them) or read from a file (`--taps`),
//! since a user's signal filtered with random taps means nothing; `--output` writes the
//! result as `.npy`.
//!
//! Tolerance: as for `conv2d`, `4·taps·ε·max(1, max|x|·max|f|)`.

use crate::check::{self, product_scale};
use crate::data::random_f32;
use crate::gpu::{
    blocks, refuse, require, require_aligned, require_disjoint, require_len, Gpu, GpuResult, KernelArgs, LaunchConfig,
    Params,
};
use crate::io;
use crate::ops::conv2d::{radius, set_filter};
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, Variant, Workload};
use crate::report::{Report, Work};
use cust::memory::{DeviceBuffer, DeviceSlice};
use interface::conv::{CONV1D_BLOCK, CONV1D_VEC4_SPAN, MAX_RADIUS};
use ndarray::{s, Array1, ArrayView1, Zip};
use std::path::PathBuf;

crate::variants! {
    pub enum Method {
        /// One output per thread, a block's inputs staged in shared memory.
        Tiled => ("tiled", "conv1d"),
        /// Sixteen outputs per thread, staged with 16-byte loads.
        Vec4 => ("vec4", "conv1d_vec4"),
    }
}

impl Method {
    fn config(self, n: usize) -> GpuResult<LaunchConfig> {
        let per_block = match self {
            Method::Tiled => CONV1D_BLOCK,
            Method::Vec4 => CONV1D_VEC4_SPAN,
        };
        Ok(LaunchConfig { grid: (blocks(n, per_block)?, 1, 1), ..LaunchConfig::linear(1, CONV1D_BLOCK as u32)? })
    }
}

/// The arguments of `conv1d` and `conv1d_vec4`: `output` is as long as `input`, and the filter
/// in constant memory is `2·radius + 1` taps long.
pub struct Conv1dArgs<'a> {
    pub input: &'a DeviceSlice<f32>,
    pub output: &'a DeviceSlice<f32>,
    pub radius: usize,
}

// SAFETY: the kernels read `input` and write `output[..input.len()]`, checked to exist and not
// to overlap; their shared tiles hold a block's span plus `2·MAX_RADIUS` halo elements and they
// read `2·radius + 1` taps of `FILTER`, so `radius <= MAX_RADIUS` is checked; `conv1d_vec4`
// loads quads of the input, checked 16-byte aligned. The shape is the block of CONV1D_BLOCK
// threads their indexing assumes. The parameters are `input: &[f32], output: *mut f32, radius: usize`.
unsafe impl KernelArgs for Conv1dArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let method = Method::named(kernel)?;
        let n = self.input.len();
        require_len(kernel, "the output", self.output, n)?;
        require_disjoint(kernel, ("the output", self.output, n), ("the input", self.input, n))?;
        if self.radius > MAX_RADIUS {
            return Err(refuse(kernel, format!("radius {} exceeds {MAX_RADIUS}", self.radius)));
        }
        if method == Method::Vec4 {
            require_aligned(kernel, "the input", self.input, 16)?;
        }
        method.config(n)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.input).pointer(self.output).value(self.radius)
    }
}

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
    #[arg(long = "variant", value_enum)]
    pub variants: Vec<Method>,
    /// A 1-D f32 .npy file of the signal; replaces the random data and --n.
    #[arg(long, conflicts_with = "n")]
    pub signal: Option<PathBuf>,
    /// Writes the GPU's result to this 1-D f32 .npy file.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

pub fn cpu_reference(signal: ArrayView1<f32>, filter: ArrayView1<f32>) -> Array1<f32> {
    let r = filter.len() / 2;
    let mut padded = Array1::<f32>::zeros(signal.len() + 2 * r);
    padded.slice_mut(s![r..r + signal.len()]).assign(&signal);
    let mut out = Array1::<f32>::zeros(signal.len());
    Zip::from(&mut out).and(padded.windows(filter.len())).par_for_each(|o, window| {
        *o = window.iter().zip(filter.iter()).map(|(x, f)| x * f).sum();
    });
    out
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
        Ok(Method::variants(&options.variants))
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

    fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
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
