//! Host side of `kernels::matmul`: C = A × B, f32, row-major, any m, n, k. A and B are random
//! or read from `.npy` files (`--a`, `--b`); `--output` writes C as `.npy`. `--dtype` runs the
//! tensor-core step for TF32, BF16 or FP16 instead of the f32 ladder (`tensor`); on a Hopper
//! GPU, BF16 and FP16 also run the wgmma steps (`hopper`) on the same converted inputs, and
//! `--dtype fp8` runs the e4m3 product (`e4m3`).
//!
//! Tolerance: random inputs are uniform in [-1, 1), so a product term has magnitude at most 1
//! and a length-k dot product rounded in any order is typically within about k·ε/3 of the
//! exact value (ε = f32::EPSILON). GPU and CPU sum in different orders, so each element may
//! differ by up to `4·k·ε`, about 12 times the typical error. Inputs from files scale that by
//! `max(1, max|a|·max|b|)`, the bound of a product term.
//!
//! Products of more than 2^33 multiply-adds are checked on 33 rows of C (the first, the last
//! and rows spread between; every column of each), so that the CPU's reference takes seconds
//! at 16384³ rather than an hour; their rows say so, and give no CPU time or speed-up.
//!
//! Rates are TFLOP/s against the peak of the arithmetic the product runs in (FP32, or the
//! `--dtype`'s on the tensor cores: `crate::report`).
//!
//! Which kernel the library's `gemm` would run here is marked in its row; `--chosen` runs it
//! alone. By concern: `launch` (each kernel's launch shape and the binding of their one
//! signature), `options` (the CLI and `.npy` input), `tune` (`--tune` and `--all-configs`),
//! `gpus` (`--gpus N`), `tensor` (`--dtype`: conversions, bindings, rounding and tolerance),
//! `e4m3` (`--dtype fp8`: its inputs, reference and per-element check); here, the workload and
//! its CPU reference.

mod cases;
mod e4m3;
mod gpus;
mod options;
mod tune;

pub use cuda_kernels::matmul::*;
pub use gpus::split;
pub use options::{InputType, Options};

use crate::check::{self, product_scale};
use crate::gpu::{is_hopper_kernel, refuse, require, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::io;
use crate::multi::SplitReport;
use crate::registry::{Checked, Kernel, Purpose, StepVariant, Variant, Workload};
use crate::report::{Arithmetic, Report, Work};
use crate::tuning::{self, TuningCache};
use cust::memory::DeviceBuffer;
use cust::stream::Stream;
use e4m3::Fp8;
use gpus::rows_to_check;
use interface::matmul::{DEFAULT_TILE, TILE_CONFIGS};
use options::{random_inputs, require_shape, shape_and_files, shape_class, Dims, Inputs};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tune::{cached_kernel, tile_notes, tile_variant, TuneTarget};

/// The types `--dtype` runs on the tensor cores, as the CLI names them.
const TENSOR_DTYPES: [&str; 3] = ["tf32", "bf16", "f16"];

/// The check shapes of the tensor types (and of FP8's GPU test, `tests/hopper.rs`): 1×1×1, k
/// below one slice (17x31x13), odd shapes, two interior blocks with k a whole number of slices
/// (256x512x64), and more.
pub const TENSOR_CHECK_SHAPES: [(usize, usize, usize); 7] =
    [(1, 1, 1), (17, 31, 13), (131, 67, 45), (257, 263, 300), (256, 512, 64), (300, 264, 48), (1, 300, 1)];

/// A and B on the GPU, C poisoned, ready to launch any variant.
pub struct Matmul {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    /// The inputs' type on the tensor cores, and A and B converted to it on the GPU (FP8's
    /// apart, in `fp8`).
    pub dtype: InputType,
    converted: Option<Converted>,
    /// A and B in e4m3 (`--dtype fp8` on Hopper), and the reference of the checked rows.
    fp8: Option<Fp8>,
    /// The tensor maps of the converted A and B, encoded once when a Hopper step runs.
    hopper_maps: Option<DeviceBuffer<hopper::TensorMap>>,
    /// C's tensor map, for the TMA-store step, where C's rows are 16-byte aligned.
    c_map: Option<DeviceBuffer<hopper::TensorMap>>,
    variants: Vec<Variant>,
    /// What the report says beside a variant, by variant name.
    notes: HashMap<String, String>,
    /// Set by `--tune`: the fastest configuration goes there.
    tune: Option<TuneTarget>,
    /// The Hopper steps of the dtype on another GPU, with why they do not run.
    unavailable: Vec<(Variant, String)>,
    /// Split k, where the library picks it at this shape (the variant [`SPLIT_K`]).
    split: Option<SplitK>,
    /// The tolerance's `max(1, max|a|·max|b|)`.
    scale: f64,
    output: Option<PathBuf>,
    /// The rows of C the check compares ([`rows_to_check`]), and their reference.
    checked: Vec<usize>,
    expected: Vec<f32>,
    da: DeviceBuffer<f32>,
    db: DeviceBuffer<f32>,
    dc: DeviceBuffer<f32>,
}

impl Matmul {
    /// Random A and B of shape `(m, n, k)`, to run the given steps (all when empty).
    pub fn new(gpu: &Gpu, shape: (usize, usize, usize), steps: &[Step], seed: u64) -> GpuResult<Self> {
        let variants = crate::registry::variants(steps);
        Self::with_inputs(gpu, shape, InputType::F32, variants, || random_inputs(shape, seed))
    }

    /// A and B from `inputs`, called once the shape is known to fit.
    fn with_inputs(
        gpu: &Gpu,
        (m, n, k): (usize, usize, usize),
        dtype: InputType,
        variants: Vec<Variant>,
        inputs: impl FnOnce() -> Inputs,
    ) -> GpuResult<Self> {
        require_shape((m, n, k))?;
        // The Hopper module's launches (the wgmma steps, FP8's) are checked against their
        // tensor maps when they launch, and split k's against its splits.
        for variant in variants.iter().filter(|v| !is_hopper_kernel(&v.kernel) && v.name != SPLIT_K) {
            gpu.validate(&variant.kernel, &product_launch(&variant.kernel, m, n)?)?;
        }
        let hopper = variants.iter().any(|v| hopper::kernel_of(&v.kernel).is_some());
        // The converted copies, padded, take at most as much again (TF32 on Hopper: B twice;
        // e4m3's, a byte an element, far less).
        let copies = match dtype {
            InputType::F32 => 1,
            InputType::Gemm(Dtype::Tf32) if hopper => 3,
            _ => 2,
        };
        gpu.ensure_fits("matmul's A, B and C", 4 * (copies * (m * k + k * n + 8 * (m + k)) + m * n) as u64)?;
        let (a, b) = inputs();
        if let Some(dtype) = dtype.gemm() {
            tensor::require_in_range(dtype, &a, &b)?;
        }
        let (da, db) = (gpu.upload("A", &a)?, gpu.upload("B", &b)?);
        let converted = match dtype.gemm() {
            // SAFETY: the conversions are waited for right here, before `da` and `db` could go.
            Some(dtype) => unsafe { tensor::convert(gpu, dtype, (&da, &db), (m, n, k), hopper) }?,
            None => None,
        };
        gpu.synchronize("converting A and B")?;
        let hopper_maps = match (&converted, dtype.gemm().and_then(hopper_precision)) {
            (Some(converted), Some(precision)) if hopper => Some(converted.upload_hopper_maps(precision, (m, n, k))?),
            _ => None,
        };
        // FP8's conversions, where its product runs (they need the Hopper module too).
        let fp8 = match variants.iter().any(|v| v.kernel == fp8::GEMM) {
            true => Some(Fp8::convert(gpu, (&da, &db), (&a, &b), (m, n, k))?),
            false => None,
        };
        let dc = gpu.poisoned::<f32>("C", m * n)?;
        // C's tensor map, for the TMA-store step, where its rows are 16-byte aligned.
        let mut c_map = None;
        if hopper_maps.is_some() && n.is_multiple_of(4) {
            hopper::output_map(hopper::Step::TmaStore, &dc, (m, n), &mut c_map)?;
        }
        let scale = product_scale(&a, &b);
        let notes = HashMap::new();
        let (checked, expected) = (rows_to_check((m, n, k), 1), vec![]);
        Ok(Self {
            m,
            n,
            k,
            a,
            b,
            dtype,
            converted,
            fp8,
            hopper_maps,
            c_map,
            variants,
            notes,
            tune: None,
            unavailable: Vec::new(),
            split: None,
            scale,
            output: None,
            checked,
            expected,
            da,
            db,
            dc,
        })
    }

    /// Queues the product `kernel` on `stream`.
    ///
    /// # Safety
    /// Queued, not finished, on return: `self` must outlive the stream's running it.
    pub unsafe fn launch_on(&self, gpu: &Gpu, stream: &Stream, kernel: &str) -> GpuResult<()> {
        if let Some(fp8) = &self.fp8 {
            // SAFETY: the inputs and C are `self`'s, which the caller keeps until the stream ran.
            return unsafe { fp8.launch_on(gpu, stream, kernel, &self.dc) };
        }
        let (m, n, k) = (self.m, self.n, self.k);
        let hopper = (self.hopper_maps.as_ref(), self.precision(), hopper::kernel_of(kernel));
        match (&self.converted, hopper) {
            // SAFETY: the buffers are `self`'s, which the caller keeps until the stream ran.
            (None, _) => unsafe {
                gpu.launch_on(stream, kernel, &SgemmArgs { a: &self.da, b: &self.db, c: &self.dc, m, n, k })
            },
            // SAFETY: as above.
            (Some(converted), (_, _, None)) => unsafe { converted.launch_on(gpu, stream, kernel, &self.dc, (m, n, k)) },
            (Some(converted), (Some(device), Some(precision), Some(_))) => {
                // SAFETY: `with_inputs` wrote `c_map` with `output_map` for C, never moved since.
                let out = self.c_map.as_ref().map(|map| unsafe { hopper::OutputMap::assume_uploaded(&self.dc, (m, n), map) });
                let maps = (precision, &**device, out.as_ref());
                // SAFETY: `with_inputs` wrote `device` with `upload_hopper_maps` on these
                // converted buffers (never moved or rewritten since), for this precision and
                // shape; a kernel of another precision is refused by the maps' check.
                unsafe { converted.launch_hopper(gpu, stream, kernel, maps, &self.dc, (m, n, k)) }
            }
            (Some(_), _) => Err(refuse(kernel, format!("--dtype {} has no tensor maps for it", self.dtype.name()))),
        }
    }

    /// Split k on the GPU's stream: step 4d or 5d (f32) or a wgmma step over `split`'s splits
    /// of k, then their sum into C.
    ///
    /// # Safety
    /// Queued, not finished, on return: `self` must outlive the stream's running it.
    unsafe fn launch_split(&self, gpu: &Gpu, split: &SplitK) -> GpuResult<()> {
        let dims = (self.m, self.n, self.k);
        let (step, precision) = match split.step {
            split::SplitStep::F32(step) => {
                let (inputs, c) = ((&*self.da, &*self.db), &self.dc);
                // SAFETY: A, B, the workspace and C are `self`'s, which the caller keeps until
                // the stream has run it.
                return unsafe {
                    split::launch_f32_on(gpu, gpu.stream(), step, inputs, &split.partials, c, dims, split.splits)
                };
            }
            split::SplitStep::Wgmma(step, precision) => (step, precision),
        };
        let (Some(converted), Some(maps)) = (&self.converted, &self.hopper_maps) else {
            return Err(refuse(SPLIT_K, format!("--dtype {} has no tensor maps for it", self.dtype.name())));
        };
        let (stream, c) = (gpu.stream(), &self.dc);
        // SAFETY: `with_inputs` wrote `maps` with `upload_hopper_maps` on these converted
        // buffers (never moved or rewritten since), for this precision and shape; they, the
        // workspace and C are `self`'s, which the caller keeps until the stream has run it.
        unsafe {
            converted.launch_hopper_split(gpu, stream, (step, precision, maps), (&split.partials, split.splits), c, dims)
        }
    }

    /// C on the GPU, for kernels that consume it.
    pub fn c(&self) -> &DeviceBuffer<f32> {
        &self.dc
    }

    pub fn result(&self, gpu: &Gpu) -> GpuResult<Vec<f32>> {
        gpu.download("C", &self.dc, self.m * self.n)
    }

    /// All of C computed on the CPU, for the types of the library's `gemm`; FP8 as f32 (the
    /// check compares FP8's with `e4m3`'s reference, on the inputs as rounded).
    pub fn cpu_reference(&self) -> Vec<f32> {
        self.reference_rows(self.dtype.gemm().unwrap_or(Dtype::F32), &(0..self.m).collect::<Vec<_>>())
    }

    /// `rows` of C computed on the CPU: in f32 for f32, in f64 on the inputs rounded to
    /// `dtype` for the tensor cores.
    fn reference_rows(&self, dtype: Dtype, rows: &[usize]) -> Vec<f32> {
        let (n, k) = (self.n, self.k);
        let a = match rows.len() == self.m {
            true => Cow::Borrowed(&self.a[..]),
            false => Cow::Owned(rows.iter().flat_map(|&r| self.a[r * k..(r + 1) * k].iter().copied()).collect()),
        };
        match dtype {
            Dtype::F32 => cpu_reference(&a, &self.b, rows.len(), n, k),
            dtype => rounded_reference(dtype, &a, &self.b, rows.len(), n, k),
        }
    }

    /// The wgmma steps' precision for the inputs' type, if they take it.
    fn precision(&self) -> Option<hopper::Precision> {
        self.dtype.gemm().and_then(hopper_precision)
    }

    /// `--dtype fp8`: its one product where the Hopper module is loaded; on another GPU nothing
    /// runs, and the report names the product with the reason (`Gpu::function`'s "needs sm_90").
    fn prepare_fp8(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let (shape, inputs) = shape_and_files(options)?;
        let (variants, unavailable) = match gpu.function(fp8::GEMM) {
            Ok(_) => (Self::variants_for(options)?, Vec::new()),
            Err(why) => {
                let why = why.to_string();
                (Vec::new(), Self::variants_for(options)?.into_iter().map(|v| (v, why.clone())).collect())
            }
        };
        let random = || random_inputs(shape, seed);
        let mut matmul = Self::with_inputs(gpu, shape, InputType::Fp8, variants, || inputs.unwrap_or_else(random))?;
        if let Some(fp8) = &matmul.fp8 {
            matmul.notes.insert(fp8::GEMM.into(), fp8.note());
            // C is written only where the product ran.
            matmul.output = options.output.clone();
        }
        matmul.unavailable = unavailable;
        Ok(matmul)
    }

    /// Whether the check compares only some rows of C.
    fn sampled(&self) -> bool {
        self.checked.len() < self.m
    }
}

/// The arithmetic a product of `dtype` runs in, whose peak its rate is measured against.
fn arithmetic(dtype: InputType) -> Arithmetic {
    match dtype {
        InputType::Gemm(Dtype::F32) => Arithmetic::Fp32,
        InputType::Gemm(Dtype::Tf32) => Arithmetic::Tf32,
        InputType::Gemm(Dtype::Bf16) => Arithmetic::Bf16,
        InputType::Gemm(Dtype::F16) => Arithmetic::Fp16,
        InputType::Fp8 => Arithmetic::Fp8,
    }
}

/// The variant of this command that launches `kernel`, under the name it has in other runs: a
/// ladder step's, a tile configuration's, the mma.sync step's or (the Hopper steps) the
/// kernel's own.
fn variant_of(kernel: &str) -> Variant {
    let step = Step::ALL.iter().find(|s| s.kernel() == kernel).map(|s| s.variant());
    let tensor = || TensorStep::ALL.iter().find(|s| s.kernel() == kernel).map(|s| s.variant());
    let tile = || tile_of(kernel).map(tile_variant);
    step.or_else(tensor).or_else(tile).unwrap_or_else(|| Variant::new(kernel, kernel))
}

/// The variant of split k (`GemmKernel::Split`, `SplitAsync` and `HopperSplit`): step 4d or 5d
/// (f32) or a wgmma kernel over splits of k, then their sum.
const SPLIT_K: &str = "split-k";

/// What the library's `gemm` runs for a type and shape on this GPU ([`GemmKernel::chosen`]).
struct Pick {
    /// As a variant of this command.
    variant: Variant,
    /// Where it splits k: the step that runs the splits and how many it asks for.
    split: Option<(split::SplitStep, usize)>,
    /// Why it is that one.
    why: String,
}

/// Split k as this run launches it: the splits, none empty, and the workspace of their partial
/// products.
struct SplitK {
    splits: usize,
    step: split::SplitStep,
    partials: DeviceBuffer<f32>,
}

/// The library's pick for this type and shape on this GPU, with the tuning cache at `cache`.
fn library_pick(gpu: &Gpu, dtype: Dtype, shape: Dims, cache: Option<&Path>) -> GpuResult<Pick> {
    let chosen = GemmKernel::chosen_in(cache, gpu, dtype, shape)?;
    let kernel = chosen.kernel(dtype)?;
    let split = chosen.split_step(dtype);
    let variant = if split.is_some() { Variant::new(SPLIT_K, kernel) } else { variant_of(kernel) };
    let class = match dtype {
        Dtype::F32 => shape_class(shape),
        dtype => format!("{} {}", shape_class(shape), dtype.name()),
    };
    let tuned = match cache {
        Some(path) => GemmKernel::tuned_in(path, gpu, dtype, shape)?,
        None => None,
    };
    let why = match tuned {
        Some(tuned) if tuned == chosen => {
            format!("gemm's pick: what --tune kept for {class} in the tuning cache")
        }
        _ => format!(
            "gemm's pick: the library's rule for {} on compute capability {}.{} (no --tune entry for {class})",
            dtype.name(),
            gpu.info().compute_capability.0,
            gpu.info().compute_capability.1
        ),
    };
    Ok(Pick { variant, split, why })
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Matmul> = crate::registry::Entry::new();

impl Kernel for Matmul {
    const NAME: &'static str = "matmul";
    const ABOUT: &'static str =
        "C = A × B, f32 row-major: a ladder from naive to cp.async with warp tiles, then the tensor cores (--dtype tf32|bf16|f16: mma.sync, and wgmma on Hopper; --dtype fp8: e4m3 wgmma on Hopper); --tune keeps the fastest tile (f32) or step (a --dtype)";
    type Options = Options;

    fn launches(sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let steps = Step::ALL.iter().map(|s| Ok((s.kernel(), s.launch_config(4096, 4096)?)));
        // The default configuration is the vec4 step; the others are listed once each.
        let tiles = TILE_CONFIGS.iter().skip(1).map(|t| Ok((t.kernel, tile_launch(t, 4096, 4096)?)));
        let tensor = TensorStep::ALL.iter().map(|s| Ok((s.kernel(), launch::mma_launch(*s, 4096, 4096)?)));
        // Split k as `gemm` runs 64×64×65536 (step 4d) and 1024³ (step 5d) on `sms` SMs, and
        // the reduction.
        let (long_k, mid) = ((64, 64, 65536), (1024, 1024, 1024));
        let splits = split::f32_splits_for(long_k, sms as usize);
        let async_splits = split::async_splits_for(mid, sms as usize);
        let split_k = [
            Ok((split::F32_SPLIT, split::F32Split::Vec4.launch(long_k, splits)?)),
            Ok((split::F32_SPLIT_ASYNC, split::F32Split::Async.launch(mid, async_splits)?)),
            Ok((split::REDUCE, split::reduce_launch(64 * 64, splits)?)),
        ];
        let kernels: GpuResult<Vec<_>> = steps.chain(tiles).chain(split_k).chain(tensor).collect();
        Ok(kernels?.into_iter().chain(tensor::conversions(4096, 4096)?).collect())
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        let cube = |side: usize| format!("--m {side} --n {side} --k {side}");
        // The simple kernels alone would take most of a sweep at 8192.
        let fast = |side: usize| format!("{} --variant blocked --variant vec4 --variant async", cube(side));
        match purpose {
            Purpose::Default => vec![String::new()],
            Purpose::Check => {
                // 300x264x48 mixes interior blocks (no checks) and edge blocks with n % 4 == 0 and
                // k % 16 == 0, for the 128x128 and 128x256 tiles alike; the others are odd.
                let shapes = [
                    (1, 1, 1),
                    (17, 31, 13),
                    (127, 129, 65),
                    (131, 257, 67),
                    (1, 300, 1),
                    (300, 1, 700),
                    (300, 264, 48),
                ];
                let steps =
                    shapes.iter().chain([(1024, 768, 512)].iter()).map(|(m, n, k)| format!("--m {m} --n {n} --k {k}"));
                // Every tile configuration on these shapes, edges in both dimensions.
                let tiles = shapes.iter().map(|(m, n, k)| format!("--m {m} --n {n} --k {k} --all-configs"));
                // FP8 too, here only: its product is not yet one of the report's sweeps.
                let tensor = TENSOR_DTYPES.iter().chain([&e4m3::NAME]).flat_map(|dtype| {
                    TENSOR_CHECK_SHAPES.iter().map(move |(m, n, k)| format!("--m {m} --n {n} --k {k} --dtype {dtype}"))
                });
                steps.chain(tiles).chain(tensor).collect()
            }
            Purpose::Quick => {
                let tensor =
                    TENSOR_DTYPES.iter().flat_map(|d| [2048, 4096].map(|s| format!("{} --dtype {d}", cube(s))));
                [cube(1024), cube(2048), cube(4096)].into_iter().chain(tensor).collect()
            }
            Purpose::Full => {
                let sides = [1024, 2048, 4096, 8192];
                let tensor = TENSOR_DTYPES.iter().flat_map(|d| sides.map(|s| format!("{} --dtype {d}", cube(s))));
                [cube(512), cube(1024), cube(2048), cube(4096), fast(8192)].into_iter().chain(tensor).collect()
            }
            Purpose::Criterion => vec![cube(256), cube(512), cube(1024)],
        }
    }

    fn split(options: &Options, seed: u64, iters: usize) -> Option<GpuResult<SplitReport>> {
        options.gpus.map(|gpus| match options.dtype.gemm() {
            Some(dtype) => split(options, dtype, gpus as usize, seed, iters),
            None => Err(GpuError::InvalidInput(format!(
                "--gpus divides the library's gemm (f32, tf32, bf16, f16); --dtype {} runs one Hopper product",
                e4m3::NAME
            ))),
        })
    }

    fn variants_for(options: &Options) -> GpuResult<Vec<Variant>> {
        let dtype = match options.dtype {
            InputType::Gemm(dtype) => dtype,
            InputType::Fp8 => {
                // One kernel, which the library's `gemm` does not pick: nothing to choose or tune.
                let choosing = !options.variants.is_empty() || options.all_configs || options.tune || options.chosen;
                require(!(choosing || options.tuning_cache.is_some()), || {
                    let options = "--variant, --all-configs, --tune, --chosen or --tuning-cache";
                    format!("--dtype {} runs its one product, {}: it takes no {options}", e4m3::NAME, fp8::GEMM)
                })?;
                return Ok(vec![Variant::new(fp8::GEMM, fp8::GEMM)]);
            }
        };
        if let Some(step) = dtype.step() {
            // Its other steps, the Hopper ones, join in `prepare`, where the GPU is known.
            let f32_only = !options.variants.is_empty() || options.all_configs;
            require(!f32_only, || {
                format!(
                    "--variant and --all-configs pick among the f32 steps; --dtype {} runs all of its steps",
                    dtype.name()
                )
            })?;
            if options.chosen {
                return Ok(vec![]);
            }
            return Ok(vec![step.variant()]);
        }
        Ok(if options.chosen {
            // The library's pick depends on the GPU: `prepare` finds it.
            vec![]
        } else if options.tune || options.all_configs {
            TILE_CONFIGS.iter().map(tile_variant).collect()
        } else {
            crate::registry::variants(&options.variants)
        })
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let Some(dtype) = options.dtype.gemm() else { return Self::prepare_fp8(gpu, options, seed) };
        let (shape, inputs) = shape_and_files(options)?;
        let (m, n, _) = shape;
        let class = match dtype {
            Dtype::F32 => shape_class(shape),
            dtype => format!("{} {}", shape_class(shape), dtype.name()),
        };
        let device = tuning::device_key(gpu.info());
        // Only --tune and an explicit --tuning-cache insist on a cache file being locatable.
        let cache_path = match (&options.tuning_cache, options.tune) {
            (Some(path), _) => Some(path.clone()),
            (None, true) => Some(tuning::default_path()?),
            (None, false) => tuning::default_path().ok(),
        };
        let mut variants = Self::variants_for(options)?;
        let pick = library_pick(gpu, dtype, shape, cache_path.as_deref())?;
        // Split k joins the type's steps where the library picks it (not under --tune, which
        // keeps a kernel by name, and split k's is the name of the step it splits on).
        let split_k = pick.split.is_some() && !(options.tune || options.all_configs);
        if options.chosen || split_k {
            variants.push(pick.variant.clone());
        }
        // The wgmma steps beside the mma.sync one where the Hopper module is loaded; on another
        // GPU the report names them with the reason (`Gpu::function`'s "needs sm_90").
        let mut unavailable = Vec::new();
        if let (Some(precision), false) = (hopper_precision(dtype), options.chosen) {
            for step in hopper::Step::ALL {
                let kernel = step.kernel(precision);
                match gpu.function(kernel) {
                    Ok(_) if step == hopper::Step::TmaStore && !n.is_multiple_of(4) => {
                        let why = format!("its TMA stores need rows of C a multiple of 16 bytes, and n = {n} floats is not");
                        unavailable.push((Variant::new(kernel, kernel), why));
                    }
                    Ok(_) => variants.push(Variant::new(kernel, kernel)),
                    Err(why) => unavailable.push((Variant::new(kernel, kernel), why.to_string())),
                }
            }
        }
        let (notes, tune) = if options.tune || options.all_configs {
            let notes = if dtype == Dtype::F32 { tile_notes(gpu, (m, n))? } else { HashMap::new() };
            let tune = match cache_path.filter(|_| options.tune) {
                Some(path) => {
                    TuningCache::load(&path)?; // a corrupt cache stops the run before the timing
                    Some(TuneTarget { path, device, class })
                }
                None => None,
            };
            (notes, tune)
        } else {
            let mut notes = HashMap::new();
            if let (true, Some(path)) = (options.variants.is_empty() && !options.chosen, cache_path) {
                if let Some((kernel, note)) = cached_kernel(&path, &device, &class, &variants)? {
                    notes.insert("tuned".to_string(), note);
                    variants.push(Variant::new("tuned", kernel));
                }
            }
            (notes, None)
        };
        // The row of every variant that launches the library's pick says so.
        let mut notes = notes;
        let picked =
            |v: &Variant| v.name == pick.variant.name || (pick.split.is_none() && v.kernel == pick.variant.kernel);
        for variant in variants.iter().filter(|v| picked(v)) {
            let note = notes.remove(&variant.name).map_or(pick.why.clone(), |note| format!("{note}; {}", pick.why));
            notes.insert(variant.name.clone(), note);
        }
        let random = || random_inputs(shape, seed);
        let mut matmul = Self::with_inputs(gpu, shape, options.dtype, variants, || inputs.unwrap_or_else(random))?;
        if let (Some((step, wanted)), true) = (pick.split, split_k) {
            let splits = interface::matmul::split_count(step.slices(shape.2), wanted);
            let partials = split::workspace(gpu, (m, n), splits)?;
            let note = notes.remove(SPLIT_K).map_or(String::new(), |why| format!("; {why}"));
            notes.insert(SPLIT_K.into(), format!("{splits} splits of k on {}{note}", pick.variant.kernel));
            matmul.split = Some(SplitK { splits, step, partials });
        }
        matmul.notes = notes;
        matmul.tune = tune;
        matmul.unavailable = unavailable;
        matmul.output = options.output.clone();
        Ok(matmul)
    }

    fn launch_cases(kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        cases::launch_cases(kernel, memory)
    }
}

impl Workload for Matmul {
    fn shape(&self) -> String {
        format!("{}x{}x{}", self.m, self.n, self.k)
    }

    fn size(&self) -> u64 {
        self.m as u64
    }

    /// cuBLAS's key in `bench/peers/run`: SGEMM for f32, `cublasGemmEx` of the same type for
    /// the tensor steps (f32 accumulation and output, as here); none for FP8.
    fn peer(&self) -> Option<String> {
        let cube = self.m == self.n && self.n == self.k;
        let name = match self.dtype {
            InputType::F32 => "sgemm_f32".to_string(),
            InputType::Gemm(dtype) => format!("gemm_{}", dtype.name()),
            // `bench/peers/run` has no FP8 product; `bench/peers/sweep.py` times cuBLASLt's.
            InputType::Fp8 => return None,
        };
        Some(if cube { format!("{name}_{}", self.m) } else { format!("{name}_{}x{}x{}", self.m, self.n, self.k) })
    }

    fn work(&self) -> Work {
        Work::Flops(2 * (self.m * self.n * self.k) as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    fn unavailable(&self) -> Vec<(Variant, String)> {
        self.unavailable.clone()
    }

    unsafe fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        match &self.split {
            // SAFETY: the caller keeps `self` until the stream has run it.
            Some(split) if variant.name == SPLIT_K => unsafe { self.launch_split(gpu, split) },
            // SAFETY: as above.
            _ => unsafe { self.launch_on(gpu, gpu.stream(), &variant.kernel) },
        }
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("C", &self.dc)
    }

    fn compute_reference(&mut self) {
        match self.dtype.gemm() {
            Some(dtype) => self.expected = self.reference_rows(dtype, &self.checked),
            // FP8 on another GPU than Hopper runs nothing, so needs no reference.
            None => {
                if let Some(fp8) = &mut self.fp8 {
                    fp8.compute_reference((&self.a, &self.b), &self.checked, (self.n, self.k));
                }
            }
        }
    }

    fn check(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<Checked> {
        let n = self.n;
        let c = self.result(gpu)?;
        let got: Vec<f32> = match self.sampled() {
            true => self.checked.iter().flat_map(|&r| c[r * n..(r + 1) * n].iter().copied()).collect(),
            false => c,
        };
        let mut check = match &self.fp8 {
            // Each element within its own tolerance, on the inputs as rounded to e4m3.
            Some(fp8) => fp8.check(&got),
            None => {
                let tolerance =
                    if self.dtype.gemm() == Some(Dtype::F32) { tolerance(self.k) } else { tensor::tolerance(self.k) };
                check::close(&got, &self.expected, tolerance * self.scale)
            }
        };
        // The first mismatch as an index into all of C.
        check.first_mismatch = check.first_mismatch.map(|i| self.checked[i / n] * n + i % n);
        let mut notes: Vec<String> = self.notes.get(&variant.name).into_iter().cloned().collect();
        if self.sampled() {
            notes.push(format!("checked {} of {} rows", self.checked.len(), self.m));
        }
        Ok(Checked { check, note: (!notes.is_empty()).then(|| notes.join("; ")) })
    }

    /// Measures each rate against the peak of the product's arithmetic; leaves out the CPU's
    /// time where it computed only some rows; writes `--output`; with `--tune`, keeps the
    /// fastest configuration that passed.
    fn finish(&self, gpu: &Gpu, reports: &mut [Report]) -> GpuResult<()> {
        for report in reports.iter_mut() {
            report.rebase(gpu.info(), arithmetic(self.dtype));
            if self.sampled() {
                (report.cpu_ms, report.speedup) = (None, None);
            }
        }
        if let Some(path) = &self.output {
            io::write_matrix(path, (self.m, self.n), &self.result(gpu)?)?;
        }
        match &self.tune {
            Some(target) => {
                // The default the pick is measured against: the vec4 tile, or the portable
                // mma.sync step of a tensor type.
                let default = match self.dtype.gemm().and_then(Dtype::step) {
                    None => tile_label(&DEFAULT_TILE),
                    Some(step) => step.name().to_string(),
                };
                tune::keep_fastest(target, &self.variants, &default, &self.shape(), reports)
            }
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interface::matmul::{ASYNC_BK, ASYNC_BM, ASYNC_BN, BK, BM, BN, CP_ASYNC_BK, CP_ASYNC_BM, CP_ASYNC_BN};
    use options::Dims;

    /// Blocks of a `bm × bn × bk` tile at `(m, n, k)` that skip every bounds check, as the
    /// kernels' `interior_block` decides, and all blocks.
    fn interior_blocks((m, n, k): Dims, (bm, bn, bk): (usize, usize, usize)) -> (usize, usize) {
        let (rows, cols) = (m.div_ceil(bm), n.div_ceil(bn));
        let inside = (0..rows).flat_map(|y| (0..cols).map(move |x| (y, x)));
        let interior = inside.filter(|(y, x)| (y + 1) * bm <= m && (x + 1) * bn <= n && k % bk == 0 && n % 4 == 0);
        (interior.count(), rows * cols)
    }

    #[test]
    fn a_dtype_selects_its_tensor_step_and_nothing_else() {
        let matmul = crate::ops::family("matmul").expect("the matmul family");
        let variants = |options: &str| matmul.variants(&matmul.parse(options).expect("options that parse"));
        for (dtype, step) in [("tf32", TensorStep::MmaTf32), ("bf16", TensorStep::MmaBf16), ("f16", TensorStep::MmaF16)]
        {
            let chosen = variants(&format!("--m 8 --n 8 --k 8 --dtype {dtype}")).expect("a tensor step");
            assert_eq!(chosen, vec![step.variant()], "{dtype}");
            // --tune compares the type's steps (the Hopper ones join on the GPU).
            let tuned = variants(&format!("--m 8 --n 8 --k 8 --dtype {dtype} --tune")).expect("--tune of a type");
            assert_eq!(tuned, vec![step.variant()], "{dtype} --tune");
            for f32_only in ["--variant async", "--all-configs"] {
                let refused = variants(&format!("--dtype {dtype} {f32_only}")).unwrap_err();
                assert!(format!("{refused:#}").contains("pick among the f32 steps"), "{dtype} {f32_only}: {refused:#}");
            }
        }
        assert_eq!(variants("--m 8 --n 8 --k 8").expect("the ladder").len(), Step::ALL.len());
    }

    #[test]
    fn chosen_runs_the_library_pick_alone_and_names_it_as_other_runs_do() {
        let matmul = crate::ops::family("matmul").expect("the matmul family");
        for dtype in ["f32", "bf16"] {
            let options = matmul.parse(&format!("--m 64 --n 64 --k 65536 --dtype {dtype} --chosen")).expect("--chosen");
            // The pick needs the GPU: `prepare` adds it, and nothing else runs.
            assert_eq!(matmul.variants(&options).expect("its variants"), vec![], "{dtype}");
        }
        for other in ["--variant async", "--tune", "--all-configs", "--gpus 2"] {
            assert!(matmul.parse(&format!("--chosen {other}")).is_err(), "--chosen with {other}");
        }
        assert!(matmul.parse("--chosen --tuning-cache t.json").is_ok(), "--chosen reads the cache named");
        // A pick is the variant that other runs call by that name.
        assert_eq!(variant_of(Step::Async.kernel()), Step::Async.variant());
        assert_eq!(variant_of(TensorStep::MmaBf16.kernel()), TensorStep::MmaBf16.variant());
        // The default tile is the vec4 step's kernel; the others go by their labels.
        assert_eq!(variant_of(DEFAULT_TILE.kernel), Step::Vec4.variant());
        assert_eq!(variant_of(TILE_CONFIGS[2].kernel).name, tile_label(&TILE_CONFIGS[2]));
        let persistent = hopper::Step::Persistent.kernel(hopper::Precision::Bf16);
        assert_eq!(variant_of(persistent), Variant::new(persistent, persistent));
    }

    #[test]
    fn fp8_runs_its_one_product_by_any_of_its_names_and_refuses_the_rest() {
        let matmul = crate::ops::family("matmul").expect("the matmul family");
        let variants = |options: &str| matmul.variants(&matmul.parse(options).expect("options that parse"));
        let product = vec![Variant::new(fp8::GEMM, fp8::GEMM)];
        for name in std::iter::once(e4m3::NAME).chain(e4m3::ALIASES) {
            let options = format!("--m 1 --n 1 --k 1 --dtype {name}");
            assert_eq!(variants(&options).expect("FP8's product"), product, "{name}");
        }
        for other in ["--tune", "--chosen", "--variant async", "--all-configs", "--tuning-cache t.json"] {
            let refused = variants(&format!("--dtype fp8 {other}")).unwrap_err();
            assert!(format!("{refused:#}").contains("runs its one product"), "{other}: {refused:#}");
        }
        // --gpus divides the library's gemm, not FP8's product: refused before a GPU is opened.
        let split = matmul.split(&matmul.parse("--dtype e4m3 --gpus 2").expect("--gpus that parses"), 1, 1);
        let refused = split.expect("--gpus taken up").unwrap_err();
        assert!(format!("{refused:#}").contains("runs one Hopper product"), "{refused:#}");
        // --help lists it with the other types, where `bench/peers/sweep.py` looks.
        let command = matmul.command();
        let dtype = command.get_arguments().find(|a| a.get_id() == "dtype").expect("--dtype");
        let names: Vec<String> = dtype.get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
        assert_eq!(names, ["f32", "tf32", "bf16", "f16", "fp8"]);
        assert!(matmul.parse("--dtype e5m2").is_err());
    }

    #[test]
    fn each_type_is_measured_against_its_own_arithmetic() {
        let named = [
            (InputType::F32, "FP32"),
            (InputType::Gemm(Dtype::Tf32), "TF32"),
            (InputType::Gemm(Dtype::Bf16), "BF16"),
            (InputType::Gemm(Dtype::F16), "FP16"),
            (InputType::Fp8, "FP8"),
        ];
        for (dtype, name) in named {
            assert_eq!(arithmetic(dtype).name(), name);
        }
    }

    #[test]
    fn a_large_product_is_checked_on_rows_spread_over_c() {
        assert_eq!(rows_to_check((2048, 2048, 2048), 1).len(), 2048, "2^33 multiply-adds: every row");
        let rows = rows_to_check((16384, 16384, 16384), 1);
        assert_eq!((rows.len(), rows.first(), rows.last()), (33, Some(&0), Some(&16383)));
        assert!(rows.windows(2).all(|w| w[1] - w[0] <= 16384 / 32), "spread: {rows:?}");
    }

    #[test]
    fn a_check_shape_mixes_interior_and_edge_blocks_for_every_tile() {
        let sizes = Matmul::sizes(Purpose::Check);
        let shape = (300, 264, 48);
        let wanted = format!("--m {} --n {} --k {} --all-configs", shape.0, shape.1, shape.2);
        assert!(sizes.contains(&wanted), "the check shapes lack `{wanted}`");
        let tiles = TILE_CONFIGS.iter().map(|t| (t.bm, t.bn, t.bk));
        let steps = [(BM, BN, BK), (CP_ASYNC_BM, CP_ASYNC_BN, CP_ASYNC_BK), (ASYNC_BM, ASYNC_BN, ASYNC_BK)];
        for tile in tiles.chain(steps) {
            let (interior, all) = interior_blocks(shape, tile);
            assert!(interior > 0 && interior < all, "{tile:?}: {interior} of {all} blocks interior");
        }
    }
}
