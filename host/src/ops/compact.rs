//! The command line of the `compact` family: its options and its registry entry.

pub use cuda_kernels::compact::*;

use crate::check;
use crate::data::random_in;
use crate::gpu::{require, Gpu, GpuResult, LaunchConfig};
use crate::ops::scan::{tile_config, Scanner};
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::DeviceBuffer;
use interface::scan::tiles;
use interface::window::Window;

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Values (uniform in [-1, 1)).
    #[arg(long, default_value_t = 1 << 28)]
    pub n: usize,
    /// The window's lower bound (excluded).
    #[arg(long, default_value_t = -0.25, allow_negative_numbers = true)]
    pub low: f64,
    /// The window's upper bound (excluded).
    #[arg(long, default_value_t = 0.25, allow_negative_numbers = true)]
    pub high: f64,
    /// Salts the values with NaN, infinities and the bounds themselves, one in 16.
    #[arg(long)]
    pub salt: bool,
}

/// Random values on the GPU and a scanner, ready to launch.
pub struct Compact {
    values: Vec<f32>,
    window: Window,
    variants: Vec<Variant>,
    scanner: Scanner,
    input: DeviceBuffer<f32>,
    output: DeviceBuffer<f32>,
    expected: Vec<f32>,
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Compact> = crate::registry::Entry::new();

impl Kernel for Compact {
    const NAME: &'static str = "compact";
    const ABOUT: &'static str = "Stream compaction: the f32 values inside a window, in order, in one pass";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        Ok(vec![(KERNEL, tile_config(KERNEL, 1 << 28)?)])
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        match purpose {
            Purpose::Check => [
                "--n 1",
                "--n 1 --low -2 --high 2",
                "--n 1000 --salt",
                "--n 4097",
                "--n 65537 --low 0.5 --high 0.25",
                "--n 1000003 --salt",
                "--n 1000003 --low -2 --high 2",
            ]
            .map(String::from)
            .to_vec(),
            _ => one_per_element_sizes(purpose),
        }
    }

    fn variants_for(_options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(vec![Variant::new("window", KERNEL)])
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let n = options.n;
        require(n >= 1 && n <= u32::MAX as usize, || format!("compact needs 1 <= n < 2^32 (got {n})"))?;
        let window = Window::new(options.low, options.high);
        require(!window.low.is_nan() && !window.high.is_nan(), || "the window's bounds must not be NaN".into())?;
        gpu.validate(KERNEL, &tile_config(KERNEL, n)?)?;
        gpu.ensure_fits("the compaction's input and output", 8 * n as u64)?;
        let mut values = random_in(n, seed, -1.0f32, 1.0);
        if options.salt {
            let salt = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, window.low as f32, window.high as f32];
            for (i, v) in values.iter_mut().enumerate().filter(|(i, _)| i % 16 == 3) {
                *v = salt[(i / 16) % salt.len()];
            }
        }
        let scanner = Scanner::new(gpu, n)?;
        let input = gpu.upload("compaction input", &values)?;
        let output = gpu.poisoned("compaction output", n)?;
        let variants = Self::variants_for(options)?;
        Ok(Self { values, window, variants, scanner, input, output, expected: vec![] })
    }

    fn launch_cases(_kernel: &str, _memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        crate::launch_cases::LaunchCases::BuiltByLibrary
    }
}

impl Workload for Compact {
    fn shape(&self) -> String {
        let n = self.values.len();
        format!("n={} window ({}, {}) tiles={}", n, self.window.low, self.window.high, tiles(n))
    }

    fn size(&self) -> u64 {
        self.values.len() as u64
    }

    fn peer(&self) -> Option<String> {
        Some("select_if_f32".into())
    }

    /// The values read, and the kept ones written.
    fn work(&self) -> Work {
        Work::Bytes(4 * (self.values.len() + self.expected.len()) as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    /// The scratch's reset and the kernel, without reading the count back.
    unsafe fn launch(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<()> {
        self.scanner.compact_async(gpu, &self.input, self.window, &self.output)
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("compaction output", &self.output)
    }

    fn compute_reference(&mut self) {
        self.expected = cpu_reference(&self.values, self.window);
    }

    /// Every kept value bit for bit, the count, and the rest of the output still poisoned.
    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let n = self.values.len();
        let count = gpu.download("compaction count", self.scanner.count(), 1)?[0];
        let output = gpu.download("compaction output", &self.output, n)?;
        // The count is checked as one more element; past the kept values the poison remains.
        let got: Vec<u32> = output.iter().map(|v| v.to_bits()).chain([count]).collect();
        let mut want: Vec<u32> = self.expected.iter().map(|v| v.to_bits()).collect();
        want.resize(n, u32::MAX);
        want.push(self.expected.len() as u32);
        let note = format!("kept {} of {} ({:.1}%)", count, n, 100.0 * count as f64 / n as f64);
        Ok(Checked { check: check::exact(&got, &want), note: Some(note) })
    }
}
