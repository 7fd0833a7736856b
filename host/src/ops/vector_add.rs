//! The command line of the `vector_add` family: its options and its registry entry.

pub use cuda_kernels::vector_add::*;

use crate::check;
use crate::data::random_f32;
use crate::gpu::{require, Gpu, GpuResult, LaunchConfig};
use crate::io;
use crate::multi::{self, Done, Share, SplitReport};
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, Variant, Workload};
use crate::report::{Report, Work};
use cust::memory::DeviceBuffer;
use interface::DEFAULT_BLOCK;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Elements.
    #[arg(long, default_value_t = 1 << 28)]
    pub n: usize,
    /// Threads per block.
    #[arg(long, default_value_t = DEFAULT_BLOCK)]
    pub block: u32,
    /// Variants to run (all when omitted).
    #[arg(long = "variant", value_parser = crate::registry::named::<Method>())]
    pub variants: Vec<Method>,
    /// A 1-D f32 .npy file for a (with --b); replaces the random data and --n.
    #[arg(long, requires = "b", conflicts_with = "n")]
    pub a: Option<PathBuf>,
    /// A 1-D f32 .npy file for b, as long as a.
    #[arg(long, requires = "a")]
    pub b: Option<PathBuf>,
    /// Writes c (the GPU's result) to this .npy file.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Divides the elements among this many GPUs (the vec4 kernel, one context and stream
    /// each, copies in parallel), checks the joined result and reports the speed-up over one.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), conflicts_with_all = ["variants", "output"])]
    pub gpus: Option<u64>,
}

/// a and b from their files: finite f32 vectors of one length.
fn read_inputs(a: &Path, b: &Path) -> GpuResult<(Vec<f32>, Vec<f32>)> {
    let (va, vb) = (io::read_vector::<f32>(a)?, io::read_vector::<f32>(b)?);
    io::require_finite(a, &va)?;
    io::require_finite(b, &vb)?;
    require(va.len() == vb.len(), || {
        let (a, b, na, nb) = (a.display(), b.display(), va.len(), vb.len());
        format!("{a} has {na} elements and {b} has {nb}: a and b must be as long")
    })?;
    Ok((va, vb))
}

/// a and b from the files the options name, if they name any.
fn inputs_from_files(options: &Options) -> GpuResult<Option<(Vec<f32>, Vec<f32>)>> {
    match (&options.a, &options.b) {
        (Some(a), Some(b)) => read_inputs(a, b).map(Some),
        _ => Ok(None),
    }
}

/// Inputs on the GPU, ready to launch.
pub struct VectorAdd {
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    block: u32,
    variants: Vec<Variant>,
    output: Option<PathBuf>,
    expected: Vec<f32>,
    da: DeviceBuffer<f32>,
    db: DeviceBuffer<f32>,
    dc: DeviceBuffer<f32>,
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<VectorAdd> = crate::registry::Entry::new();

impl Kernel for VectorAdd {
    const NAME: &'static str = "vector-add";
    const ABOUT: &'static str = "c = a + b, one thread per element";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        Method::ALL.iter().map(|m| Ok((m.kernel(), m.config(1 << 28, DEFAULT_BLOCK)?))).collect()
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        match purpose {
            Purpose::Check => {
                ["--n 1", "--n 1000", "--n 1048579 --block 1024", "--n 10000019 --block 97", "--n 5 --block 1"]
                    .map(String::from)
                    .to_vec()
            }
            _ => one_per_element_sizes(purpose),
        }
    }

    fn split(options: &Options, seed: u64, iters: usize) -> Option<GpuResult<SplitReport>> {
        options.gpus.map(|gpus| split(options, gpus as usize, seed, iters))
    }

    fn variants_for(options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(crate::registry::variants(&options.variants))
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let files = inputs_from_files(options)?;
        let n = files.as_ref().map_or(options.n, |(a, _)| a.len());
        require(n >= 1, || "vector-add needs n >= 1".into())?;
        let methods = Method::chosen(&options.variants);
        for &method in methods {
            gpu.validate(method.kernel(), &method.config(n, options.block)?)?;
        }
        gpu.ensure_fits("vector-add's three buffers", 3 * 4 * n as u64)?;
        let (a, b) = files.unwrap_or_else(|| (random_f32(n, seed), random_f32(n, seed ^ 1)));
        let (da, db) = (gpu.upload("a", &a)?, gpu.upload("b", &b)?);
        let dc = gpu.poisoned::<f32>("c", n)?;
        let variants = Self::variants_for(options)?;
        let output = options.output.clone();
        Ok(Self { a, b, block: options.block, variants, output, expected: vec![], da, db, dc })
    }

    fn launch_cases(kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{shifted, vector_access, Args, Cases, LaunchCases};
        let vector = vector_access(kernel);
        let mut refused: Vec<(String, Args)> = Vec::new();
        let n = 1000;
        let (a, b, c) = (memory.f32s(n), memory.f32s(n), memory.f32s(n));
        refused.push(("b short".into(), Box::new(AddArgs { a, b: memory.f32s(n - 1), c, block: 256 })));
        refused.push(("c short".into(), Box::new(AddArgs { a, b, c: memory.f32s(n - 1), block: 256 })));
        refused.push(("c is a".into(), Box::new(AddArgs { a, b, c: a, block: 256 })));
        if vector {
            refused.push(("a misaligned".into(), Box::new(AddArgs { a: shifted(a), b, c, block: 256 })));
        }
        LaunchCases::Cases(Cases { valid: Box::new(AddArgs { a, b, c, block: 256 }), refused })
    }
}

impl Workload for VectorAdd {
    fn shape(&self) -> String {
        format!("n={} block={}", self.a.len(), self.block)
    }

    fn size(&self) -> u64 {
        self.a.len() as u64
    }

    fn peer(&self) -> Option<String> {
        Some("vector_add_f32".into())
    }

    fn work(&self) -> Work {
        Work::Bytes(3 * 4 * self.a.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    unsafe fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        gpu.launch(&variant.kernel, &AddArgs { a: &self.da, b: &self.db, c: &self.dc, block: self.block })
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("c", &self.dc)
    }

    fn compute_reference(&mut self) {
        self.expected = cpu_reference(&self.a, &self.b);
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        Ok(check::close(&gpu.download("c", &self.dc, self.a.len())?, &self.expected, 0.0).into())
    }

    fn finish(&self, gpu: &Gpu, _reports: &mut [Report]) -> GpuResult<()> {
        let Some(path) = &self.output else { return Ok(()) };
        io::write_vector(path, &gpu.download("c", &self.dc, self.a.len())?)
    }
}

/// `vector-add --gpus N`: the elements divided among N GPUs, after the same job on one GPU.
pub fn split(options: &Options, gpus: usize, seed: u64, iters: usize) -> GpuResult<SplitReport> {
    let count = multi::require_gpus(gpus)?;
    let (a, b) = match inputs_from_files(options)? {
        Some(files) => files,
        None => (random_f32(options.n, seed), random_f32(options.n, seed ^ 1)),
    };
    let n = a.len();
    require(n >= count, || format!("{n} elements cannot be divided among {count} GPUs"))?;
    let expected = cpu_reference(&a, &b);
    let (method, block) = (Method::Vec4, options.block);
    let job = multi::Job {
        family: VectorAdd::NAME,
        shape: format!("n={n} block={block}"),
        work: Work::Bytes(3 * 4 * n as u64),
        checked: "all of c".into(),
    };
    let setup = |gpus: usize, i: usize, gpu: &Gpu| {
        let range = multi::part(n, gpus, i);
        gpu.validate(method.kernel(), &method.config(range.len(), block)?)?;
        let inputs = [("a", &a[range.clone()]), ("b", &b[range.clone()])];
        Share::new(gpu, range.clone(), method.kernel(), &inputs, range.len())
    };
    let launch = |gpu: &Gpu, share: &Share| {
        let (inputs, c) = share.device();
        // SAFETY: the share's buffers live until `multi` has synchronized its GPU.
        unsafe { gpu.launch(method.kernel(), &AddArgs { a: inputs[0], b: inputs[1], c, block }) }
    };
    let check = |done: &[Done]| {
        let joined: Vec<f32> = done.iter().flat_map(|d| d.output.iter().copied()).collect();
        check::close(&joined, &expected, 0.0)
    };
    multi::measure(job, count, iters, &setup, &launch, &check)
}
