//! The command line of the `transpose` family: its options and its registry entry.

pub use cuda_kernels::transpose::*;

use crate::check;
use crate::data::random_f32;
use crate::gpu::{require, Cache, CudaContext, Gpu, GpuResult, LaunchConfig};
use crate::registry::{Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::{AsyncCopyDestination, DeviceBuffer};
use std::cell::Cell;

#[derive(Debug, clap::Args)]
pub struct Options {
    #[arg(long, default_value_t = 8192)]
    pub rows: usize,
    #[arg(long, default_value_t = 8192)]
    pub cols: usize,
    /// Variants to run (all when omitted).
    #[arg(long = "variant", value_parser = crate::registry::named::<Method>())]
    pub variants: Vec<Method>,
}

/// The input on the GPU, the output poisoned.
pub struct Transpose {
    pub rows: usize,
    pub cols: usize,
    pub values: Vec<f32>,
    variants: Vec<Variant>,
    expected: Vec<f32>,
    /// Median ms of a device copy of the matrix, timed once.
    copy_ms: Cell<Option<f64>>,
    input: DeviceBuffer<f32>,
    output: DeviceBuffer<f32>,
}

impl Transpose {
    fn copy_ms(&self, gpu: &Gpu) -> GpuResult<f64> {
        if let Some(ms) = self.copy_ms.get() {
            return Ok(ms);
        }
        let copy = || {
            // SAFETY: both buffers belong to `self` and hold `rows·cols` elements, and `gpu.time`
            // waits for every copy before returning, so neither is freed or read while in flight.
            unsafe { self.output.index(..).async_copy_from(&self.input, gpu.stream()) }.during("copying on the GPU")
        };
        let ms = gpu.time(10, Cache::Flushed, || Ok(()), copy)?.median_ms;
        self.copy_ms.set(Some(ms));
        Ok(ms)
    }
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Transpose> = crate::registry::Entry::new();

impl Kernel for Transpose {
    const NAME: &'static str = "transpose";
    const ABOUT: &'static str = "Matrix transpose: naive, through shared memory, with a padded tile";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        Method::ALL.iter().map(|m| Ok((m.kernel(), m.config(8192, 8192)?))).collect()
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        let matrix = |rows: usize, cols: usize| format!("--rows {rows} --cols {cols}");
        match purpose {
            Purpose::Default => vec![String::new()],
            Purpose::Check => [(1, 1), (1, 1000), (1000, 1), (31, 33), (127, 257), (1031, 517), (4096, 4096)]
                .iter()
                .map(|&(r, c)| matrix(r, c))
                .collect(),
            Purpose::Quick => [1024, 4096, 8192].iter().map(|&s| matrix(s, s)).collect(),
            Purpose::Full => [512, 1024, 2048, 4096, 8192, 16384].iter().map(|&s| matrix(s, s)).collect(),
            Purpose::Criterion => [512, 1024, 2048].iter().map(|&s| matrix(s, s)).collect(),
        }
    }

    fn variants_for(options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(crate::registry::variants(&options.variants))
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let (rows, cols) = (options.rows, options.cols);
        require(rows >= 1 && cols >= 1, || format!("transpose needs a non-empty matrix (got {}x{})", rows, cols))?;
        let methods = Method::chosen(&options.variants);
        for method in methods {
            gpu.validate(method.kernel(), &method.config(rows, cols)?)?;
        }
        gpu.ensure_fits("transpose's input and output", 2 * 4 * (rows * cols) as u64)?;
        let values = random_f32(rows * cols, seed);
        let input = gpu.upload("the matrix", &values)?;
        let output = gpu.poisoned::<f32>("the transpose", rows * cols)?;
        let variants = Self::variants_for(options)?;
        Ok(Self { rows, cols, values, variants, expected: vec![], copy_ms: Cell::new(None), input, output })
    }

    fn launch_cases(_kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{Args, Cases, LaunchCases};
        let mut refused: Vec<(String, Args)> = Vec::new();
        let (rows, cols) = (37, 50);
        let (input, output) = (memory.f32s(rows * cols), memory.f32s(rows * cols));
        let with = |input, output, rows, cols| -> Args { Box::new(TransposeArgs { input, output, rows, cols }) };
        refused.push(("one row too many".into(), with(input, output, rows + 1, cols)));
        refused.push(("output short".into(), with(input, memory.f32s(rows * cols - 1), rows, cols)));
        refused.push(("output is input".into(), with(input, input, rows, cols)));
        refused.push(("dimensions overflow".into(), with(input, output, usize::MAX, 2)));
        LaunchCases::Cases(Cases { valid: with(input, output, rows, cols), refused })
    }
}

impl Workload for Transpose {
    fn shape(&self) -> String {
        format!("{}x{}", self.rows, self.cols)
    }

    fn size(&self) -> u64 {
        self.rows as u64
    }

    /// Read once, written once.
    fn work(&self) -> Work {
        Work::Bytes(2 * 4 * self.values.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    unsafe fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        let args = TransposeArgs { input: &self.input, output: &self.output, rows: self.rows, cols: self.cols };
        gpu.launch(&variant.kernel, &args)
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("the transpose", &self.output)
    }

    fn compute_reference(&mut self) {
        self.expected = cpu_reference(&self.values, self.rows, self.cols);
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let check = check::close(&gpu.download("the transpose", &self.output, self.values.len())?, &self.expected, 0.0);
        let copy_ms = self.copy_ms(gpu)?;
        let copy_gbs = 2.0 * 4.0 * self.values.len() as f64 / (copy_ms / 1e3) / 1e9;
        Ok(Checked {
            check,
            note: Some(format!("device copy of the same bytes: {:.4} ms, {:.1} GB/s", copy_ms, copy_gbs)),
        })
    }
}
