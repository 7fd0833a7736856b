//! The command line of the `scan` family: its options and its registry entry.

pub use cuda_kernels::scan::*;

use crate::check;
use crate::data::random_in;
use crate::gpu::{require, Gpu, GpuResult, LaunchConfig};
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::DeviceBuffer;
use interface::scan::tiles;

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Values.
    #[arg(long, default_value_t = 1 << 28)]
    pub n: usize,
    /// The values' type: u32 (random in [0, 16), exact) or f32 (uniform in [-1, 1)).
    #[arg(long, value_parser = crate::registry::named::<Input>(), default_value_t = Input::F32)]
    pub input: Input,
}

/// The values, the output and the expected result, of one type.
enum Data {
    U32 { values: DeviceBuffer<u32>, output: DeviceBuffer<u32>, host: Vec<u32>, expected: (Vec<u32>, u32) },
    F32 { values: DeviceBuffer<f32>, output: DeviceBuffer<f32>, host: Vec<f32>, expected: (Vec<f32>, f32, f64) },
}

/// Random values on the GPU and a scanner, ready to launch.
pub struct Scan {
    n: usize,
    input: Input,
    variants: Vec<Variant>,
    scanner: Scanner,
    data: Data,
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Scan> = crate::registry::Entry::new();

impl Kernel for Scan {
    const NAME: &'static str = "scan";
    const ABOUT: &'static str = "Exclusive prefix sum of u32 or f32 in one pass, with decoupled look-back";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        [Input::U32, Input::F32].iter().map(|i| Ok((kernel(*i), tile_config(kernel(*i), 1 << 28)?))).collect()
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        let sizes = match purpose {
            Purpose::Check => {
                ["--n 1", "--n 1000", "--n 4096", "--n 4097", "--n 65537", "--n 1000003"].map(String::from).to_vec()
            }
            _ => one_per_element_sizes(purpose),
        };
        sizes.into_iter().flat_map(|s| [format!("{s} --input u32"), format!("{s} --input f32")]).collect()
    }

    fn variants_for(options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(vec![Variant::new(options.input.name(), kernel(options.input))])
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let n = options.n;
        require(n >= 1, || "scan needs n >= 1".into())?;
        gpu.validate(kernel(options.input), &tile_config(kernel(options.input), n)?)?;
        gpu.ensure_fits("the scan's input and output", 8 * n as u64)?;
        let scanner = Scanner::new(gpu, n)?;
        let data = match options.input {
            Input::U32 => {
                let host = random_in(n, seed, 0u32, 16);
                let values = gpu.upload("scan input", &host)?;
                Data::U32 { values, output: gpu.poisoned("scan output", n)?, host, expected: (vec![], 0) }
            }
            Input::F32 => {
                let host = random_in(n, seed, -1.0f32, 1.0);
                let values = gpu.upload("scan input", &host)?;
                Data::F32 { values, output: gpu.poisoned("scan output", n)?, host, expected: (vec![], 0.0, 0.0) }
            }
        };
        Ok(Self { n, input: options.input, variants: Self::variants_for(options)?, scanner, data })
    }

    fn launch_cases(_kernel: &str, _memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        crate::launch_cases::LaunchCases::BuiltByLibrary
    }
}

impl Workload for Scan {
    fn shape(&self) -> String {
        format!("n={} {} tiles={}", self.n, self.input.name(), tiles(self.n))
    }

    fn size(&self) -> u64 {
        self.n as u64
    }

    fn peer(&self) -> Option<String> {
        Some(format!("scan_{}", self.input.name()))
    }

    fn work(&self) -> Work {
        Work::Bytes(8 * self.n as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    /// The scratch's reset and the kernel: what a caller of [`Scanner`] pays.
    unsafe fn launch(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<()> {
        match &self.data {
            Data::U32 { values, output, .. } => self.scanner.exclusive_sum_u32(gpu, values, output),
            Data::F32 { values, output, .. } => self.scanner.exclusive_sum_f32(gpu, values, output),
        }
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        match &self.data {
            Data::U32 { output, .. } => gpu.poison("scan output", output),
            Data::F32 { output, .. } => gpu.poison("scan output", output),
        }
    }

    fn compute_reference(&mut self) {
        match &mut self.data {
            Data::U32 { host, expected, .. } => *expected = cpu_reference_u32(host),
            Data::F32 { host, expected, .. } => *expected = cpu_reference_f32(host),
        }
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let n = self.n;
        match &self.data {
            Data::U32 { output, expected: (want, total), .. } => {
                let mut got = gpu.download("scan output", output, n)?;
                let got_total = gpu.download("scan total", self.scanner.total_u32(), 1)?[0];
                // The total is checked as one more element.
                got.push(got_total);
                let want: Vec<u32> = want.iter().copied().chain([*total]).collect();
                Ok(Checked { check: check::exact(&got, &want), note: Some(format!("total {got_total}")) })
            }
            Data::F32 { output, expected: (want, total, tolerance), .. } => {
                let mut got = gpu.download("scan output", output, n)?;
                let got_total = gpu.download("scan total", self.scanner.total_f32(), 1)?[0];
                got.push(got_total);
                let want: Vec<f32> = want.iter().copied().chain([*total]).collect();
                let check = check::close(&got, &want, *tolerance);
                Ok(Checked { check, note: Some(format!("total {got_total} (CPU {total})")) })
            }
        }
    }
}
