//! Host side of `kernels::matmul`: C = A × B, f32, row-major, any m, n, k. A and B are random
//! or read from `.npy` files (`--a`, `--b`); `--output` writes C as `.npy`. `--dtype` runs the
//! tensor-core step for TF32, BF16 or FP16 instead of the f32 ladder (`tensor`); on a Hopper
//! GPU, BF16 and FP16 also run the wgmma steps (`hopper`) on the same converted inputs.
//!
//! Tolerance: random inputs are uniform in [-1, 1), so a product term has magnitude at most 1
//! and a length-k dot product rounded in any order is typically within about k·ε/3 of the
//! exact value (ε = f32::EPSILON). GPU and CPU sum in different orders, so each element may
//! differ by up to `4·k·ε`, about 12 times the typical error. Inputs from files scale that by
//! `max(1, max|a|·max|b|)`, the bound of a product term.
//!
//! By concern: `launch` (each kernel's launch shape and the binding of their one signature),
//! `options` (the CLI and `.npy` input), `tune` (`--tune` and `--all-configs`), `split`
//! (`--gpus N`), `tensor` (`--dtype`: conversions, bindings, rounding and tolerance); here,
//! the workload and its CPU reference.

mod options;
mod split;
mod tune;

pub use cuda_kernels::matmul::*;
pub use options::Options;
pub use split::split;

use crate::check::{self, product_scale};
use crate::gpu::{refuse, require, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::io;
use crate::multi::SplitReport;
use crate::registry::{Checked, Kernel, Purpose, StepVariant, Variant, Workload};
use crate::report::{Report, Work};
use crate::tuning::{self, TuningCache};
use cust::memory::DeviceBuffer;
use cust::stream::Stream;
use interface::matmul::{DEFAULT_TILE, TILE_CONFIGS};
use options::{random_inputs, require_shape, shape_and_files, shape_class, Inputs};
use std::collections::HashMap;
use std::path::PathBuf;
use tune::{cached_kernel, tile_notes, tile_variant, TuneTarget};

/// The types `--dtype` runs on the tensor cores, as the CLI names them.
const TENSOR_DTYPES: [&str; 3] = ["tf32", "bf16", "f16"];

/// A and B on the GPU, C poisoned, ready to launch any variant.
pub struct Matmul {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    /// The inputs' type on the tensor cores, and A and B converted to it on the GPU.
    pub dtype: Dtype,
    converted: Option<Converted>,
    /// The tensor maps of the converted A and B, encoded once when a Hopper step runs.
    hopper_maps: Option<DeviceBuffer<hopper::TensorMap>>,
    variants: Vec<Variant>,
    /// What the report says beside a variant, by variant name.
    notes: HashMap<String, String>,
    /// Set by `--tune`: the fastest configuration goes there.
    tune: Option<TuneTarget>,
    /// The Hopper steps of the dtype on another GPU, with why they do not run.
    unavailable: Vec<(Variant, String)>,
    /// The tolerance's `max(1, max|a|·max|b|)`.
    scale: f64,
    output: Option<PathBuf>,
    expected: Vec<f32>,
    da: DeviceBuffer<f32>,
    db: DeviceBuffer<f32>,
    dc: DeviceBuffer<f32>,
}

impl Matmul {
    /// Random A and B of shape `(m, n, k)`, to run the given steps (all when empty).
    pub fn new(gpu: &Gpu, shape: (usize, usize, usize), steps: &[Step], seed: u64) -> GpuResult<Self> {
        let variants = crate::registry::variants(steps);
        Self::with_inputs(gpu, shape, Dtype::F32, variants, || random_inputs(shape, seed))
    }

    /// A and B from `inputs`, called once the shape is known to fit.
    fn with_inputs(
        gpu: &Gpu,
        (m, n, k): (usize, usize, usize),
        dtype: Dtype,
        variants: Vec<Variant>,
        inputs: impl FnOnce() -> Inputs,
    ) -> GpuResult<Self> {
        require_shape((m, n, k))?;
        // The Hopper steps' launches are checked against their tensor maps when they launch.
        for variant in variants.iter().filter(|v| hopper::kernel_of(&v.kernel).is_none()) {
            gpu.validate(&variant.kernel, &product_launch(&variant.kernel, m, n)?)?;
        }
        let hopper = variants.iter().any(|v| hopper::kernel_of(&v.kernel).is_some());
        // The converted copies, padded, take at most as much again (TF32 on Hopper: B twice).
        let copies = match dtype {
            Dtype::F32 => 1,
            Dtype::Tf32 if hopper => 3,
            _ => 2,
        };
        gpu.ensure_fits("matmul's A, B and C", 4 * (copies * (m * k + k * n + 8 * (m + k)) + m * n) as u64)?;
        let (a, b) = inputs();
        tensor::require_in_range(dtype, &a, &b)?;
        let (da, db) = (gpu.upload("A", &a)?, gpu.upload("B", &b)?);
        let converted = tensor::convert(gpu, dtype, (&da, &db), (m, n, k), hopper)?;
        let hopper_maps = match (&converted, hopper_precision(dtype)) {
            (Some(converted), Some(precision)) if hopper => Some(converted.upload_hopper_maps(precision, (m, n, k))?),
            _ => None,
        };
        let dc = gpu.poisoned::<f32>("C", m * n)?;
        let scale = product_scale(&a, &b);
        let notes = HashMap::new();
        let expected = vec![];
        Ok(Self {
            m,
            n,
            k,
            a,
            b,
            dtype,
            converted,
            hopper_maps,
            variants,
            notes,
            tune: None,
            unavailable: Vec::new(),
            scale,
            output: None,
            expected,
            da,
            db,
            dc,
        })
    }

    pub fn launch_on(&self, gpu: &Gpu, stream: &Stream, kernel: &str) -> GpuResult<()> {
        let (m, n, k) = (self.m, self.n, self.k);
        let hopper = (self.hopper_maps.as_ref(), hopper_precision(self.dtype), hopper::kernel_of(kernel));
        match (&self.converted, hopper) {
            (None, _) => gpu.launch_on(stream, kernel, &SgemmArgs { a: &self.da, b: &self.db, c: &self.dc, m, n, k }),
            (Some(converted), (_, _, None)) => converted.launch_on(gpu, stream, kernel, &self.dc, (m, n, k)),
            (Some(converted), (Some(device), Some(precision), Some(_))) => {
                // SAFETY: `with_inputs` wrote `device` with `upload_hopper_maps` on these
                // converted buffers (never moved or rewritten since), for this precision and
                // shape; a kernel of another precision is refused by the maps' check.
                unsafe { converted.launch_hopper(gpu, stream, kernel, (precision, device), &self.dc, (m, n, k)) }
            }
            (Some(_), _) => Err(refuse(kernel, format!("--dtype {} has no tensor maps for it", self.dtype.name()))),
        }
    }

    /// C on the GPU, for kernels that consume it.
    pub fn c(&self) -> &DeviceBuffer<f32> {
        &self.dc
    }

    pub fn result(&self, gpu: &Gpu) -> GpuResult<Vec<f32>> {
        gpu.download("C", &self.dc, self.m * self.n)
    }

    pub fn cpu_reference(&self) -> Vec<f32> {
        match self.dtype {
            Dtype::F32 => cpu_reference(&self.a, &self.b, self.m, self.n, self.k),
            dtype => rounded_reference(dtype, &self.a, &self.b, self.m, self.n, self.k),
        }
    }
}

impl Kernel for Matmul {
    const NAME: &'static str = "matmul";
    const ABOUT: &'static str =
        "C = A × B, f32 row-major: a ladder from naive to cp.async with warp tiles, then the tensor cores (--dtype tf32|bf16|f16: mma.sync, and wgmma on Hopper); --tune keeps the fastest tile (f32) or step (a --dtype)";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let steps = Step::ALL.iter().map(|s| Ok((s.kernel(), s.launch_config(4096, 4096)?)));
        // The default configuration is the vec4 step; the others are listed once each.
        let tiles = TILE_CONFIGS.iter().skip(1).map(|t| Ok((t.kernel, tile_launch(t, 4096, 4096)?)));
        let tensor = TensorStep::ALL.iter().map(|s| Ok((s.kernel(), launch::mma_launch(*s, 4096, 4096)?)));
        let kernels: GpuResult<Vec<_>> = steps.chain(tiles).chain(tensor).collect();
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
                // The tensor steps: 1×1×1, k below one slice (17x31x13), odd shapes, two
                // interior blocks with k a whole number of slices (256x512x64), and more.
                let tensor_shapes = [
                    (1, 1, 1),
                    (17, 31, 13),
                    (131, 67, 45),
                    (257, 263, 300),
                    (256, 512, 64),
                    (300, 264, 48),
                    (1, 300, 1),
                ];
                let tensor = TENSOR_DTYPES.iter().flat_map(|dtype| {
                    tensor_shapes.iter().map(move |(m, n, k)| format!("--m {m} --n {n} --k {k} --dtype {dtype}"))
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
        options.gpus.map(|gpus| match options.dtype {
            Dtype::F32 => split(options, gpus as usize, seed, iters),
            _ => Err(GpuError::InvalidInput("--gpus runs the f32 ladder; it takes no --dtype".into())),
        })
    }

    fn variants_for(options: &Options) -> GpuResult<Vec<Variant>> {
        if let Some(step) = options.dtype.step() {
            // Its other steps, the Hopper ones, join in `prepare`, where the GPU is known.
            let f32_only = !options.variants.is_empty() || options.all_configs;
            require(!f32_only, || {
                format!(
                    "--variant and --all-configs pick among the f32 steps; --dtype {} runs all of its steps",
                    options.dtype.name()
                )
            })?;
            return Ok(vec![step.variant()]);
        }
        Ok(if options.tune || options.all_configs {
            TILE_CONFIGS.iter().map(tile_variant).collect()
        } else {
            crate::registry::variants(&options.variants)
        })
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let (shape, inputs) = shape_and_files(options)?;
        let (m, n, _) = shape;
        let class = match options.dtype {
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
        // The wgmma steps beside the mma.sync one where the Hopper module is loaded; on another
        // GPU the report names them with the reason (`Gpu::function`'s "needs sm_90").
        let mut unavailable = Vec::new();
        if let Some(precision) = hopper_precision(options.dtype) {
            for step in hopper::Step::ALL {
                let kernel = step.kernel(precision);
                match gpu.function(kernel) {
                    Ok(_) => variants.push(Variant::new(kernel, kernel)),
                    Err(why) => unavailable.push((Variant::new(kernel, kernel), why.to_string())),
                }
            }
        }
        let (notes, tune) = if options.tune || options.all_configs {
            let notes = if options.dtype == Dtype::F32 { tile_notes(gpu, (m, n))? } else { HashMap::new() };
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
            if let (true, Some(path)) = (options.variants.is_empty(), cache_path) {
                if let Some((kernel, note)) = cached_kernel(&path, &device, &class, &variants)? {
                    notes.insert("tuned".to_string(), note);
                    variants.push(Variant::new("tuned", kernel));
                }
            }
            (notes, None)
        };
        let random = || random_inputs(shape, seed);
        let mut matmul = Self::with_inputs(gpu, shape, options.dtype, variants, || inputs.unwrap_or_else(random))?;
        matmul.notes = notes;
        matmul.tune = tune;
        matmul.unavailable = unavailable;
        matmul.output = options.output.clone();
        Ok(matmul)
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
    /// the tensor steps (f32 accumulation and output, as here).
    fn peer(&self) -> Option<String> {
        let cube = self.m == self.n && self.n == self.k;
        let name = match self.dtype {
            Dtype::F32 => "sgemm_f32".to_string(),
            dtype => format!("gemm_{}", dtype.name()),
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

    fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        self.launch_on(gpu, gpu.stream(), &variant.kernel)
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("C", &self.dc)
    }

    fn compute_reference(&mut self) {
        self.expected = self.cpu_reference();
    }

    fn check(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<Checked> {
        let tolerance = if self.dtype == Dtype::F32 { tolerance(self.k) } else { tensor::tolerance(self.k) };
        let check = check::close(&self.result(gpu)?, &self.expected, tolerance * self.scale);
        Ok(Checked { check, note: self.notes.get(&variant.name).cloned() })
    }

    /// Writes `--output`; with `--tune`, keeps the fastest configuration that passed.
    fn finish(&self, gpu: &Gpu, reports: &mut [Report]) -> GpuResult<()> {
        if let Some(path) = &self.output {
            io::write_matrix(path, (self.m, self.n), &self.result(gpu)?)?;
        }
        match &self.tune {
            Some(target) => {
                // The default the pick is measured against: the vec4 tile, or the portable
                // mma.sync step of a tensor type.
                let default = match self.dtype.step() {
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
