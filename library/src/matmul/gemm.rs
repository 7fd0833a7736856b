//! `gemm`: C = A × B for a program's own matrices, with the kernel chosen for it.
//!
//! The choice, for each precision and shape, on the GPU at hand:
//! - the configuration `host matmul --tune` measured fastest for this GPU and shape class,
//!   where the tuning cache ([`crate::tuning`]) holds one;
//! - otherwise the default: for f32, [`f32_default`]'s kernel for the shape (split k, step 4d,
//!   where C's tiles are too few for the SMs and k is long enough; step 5d, split k on the
//!   last step's tiles, where those are fewer than the SMs; the last step of the ladder,
//!   [`Step::Async`], where its large tiles fill the SMs in whole waves); for the
//!   tensor types on Hopper, split k on small or wide tiles ([`GemmKernel::HopperSplit`]) where
//!   C's tiles fill at most a quarter of the SMs and k is long enough
//!   ([`split::tensor_split_for`]), else a persistent wgmma
//!   step on wide, medium, narrow or small tiles, weighing each width's speed by the share of
//!   SMs its waves keep busy ([`hopper::persistent_step`]), wide ones with the TMA-store
//!   epilogue where C's rows are 16-byte aligned;
//!   the mma.sync step on other GPUs.

use super::hopper::{self, Precision};
use super::split::{self, F32Split, SplitStep};
use super::tensor::{self, Dtype};
use super::{launch_config, tile_of, SgemmArgs, Step};
use crate::gpu::{DeviceMatrix, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::tuning::{self, TuningCache};
use cust::memory::DeviceSlice;
use interface::matmul::{split_count, TileConfig, ASYNC_BK, ASYNC_BM, ASYNC_BN, TILE_CONFIGS};
use ndarray::{Array2, ArrayView2};
use std::path::Path;

/// The kernel a product runs: a step of the f32 ladder, a tuned f32 tile configuration, a
/// tensor type's mma.sync step, or a Hopper step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GemmKernel {
    /// A step of the f32 ladder.
    Ladder(Step),
    /// An f32 tile configuration (`interface::matmul::TILE_CONFIGS`), by kernel name.
    Tile(&'static str),
    /// The mma.sync step of the precision's type.
    Mma,
    /// A wgmma step (compute capability 9.0 only).
    Hopper(hopper::Step),
    /// Split k over this many splits, their partial products summed in a fixed order: step 4d
    /// for f32, the pipelined wgmma step (H3, compute capability 9.0 only) for the tensor
    /// types. A count that would leave a split empty runs as the fewest even splits of the same
    /// length (`split_count`).
    Split(usize),
    /// Split k over this many splits on step 5c's 128×256 tiles (step 5d, f32 only), made even
    /// as [`GemmKernel::Split`]'s are.
    SplitAsync(usize),
    /// Split k over this many splits on this wgmma step's tiles, a grid as many layers deep
    /// (the tensor types, compute capability 9.0 only), made even as [`GemmKernel::Split`]'s
    /// are. On the pipelined step it is `Split`.
    HopperSplit(hopper::Step, usize),
}

impl GemmKernel {
    /// The kernel's name in the PTX, for `precision`.
    pub fn kernel(self, precision: Dtype) -> GpuResult<&'static str> {
        let tensor_only = |what: &str| {
            GpuError::InvalidInput(format!("{what} multiplies f32 only; {} needs the tensor cores", precision.name()))
        };
        match (self, precision.step(), hopper_precision(precision)) {
            (GemmKernel::Ladder(step), None, _) => Ok(step.kernel()),
            (GemmKernel::Tile(kernel), None, _) => Ok(kernel),
            (GemmKernel::Ladder(step), Some(_), _) => Err(tensor_only(step.name())),
            (GemmKernel::Tile(kernel), Some(_), _) => Err(tensor_only(kernel)),
            (GemmKernel::Mma, Some(step), _) => Ok(step.kernel()),
            (GemmKernel::Hopper(step), _, Some(hopper)) => Ok(step.kernel(hopper)),
            (GemmKernel::Split(_), _, Some(hopper)) => Ok(hopper::Step::Pipelined.kernel(hopper)),
            (GemmKernel::HopperSplit(step, _), _, Some(hopper)) => Ok(step.kernel(hopper)),
            (GemmKernel::Split(_), None, None) => Ok(split::F32_SPLIT),
            (GemmKernel::SplitAsync(_), None, _) => Ok(split::F32_SPLIT_ASYNC),
            (GemmKernel::SplitAsync(_), Some(_), _) => Err(tensor_only("step 5d")),
            (GemmKernel::Mma | GemmKernel::Hopper(_), None, _)
            | (GemmKernel::Hopper(_) | GemmKernel::Split(_) | GemmKernel::HopperSplit(..), _, None) => {
                Err(GpuError::InvalidInput("the tensor-core steps take tf32, bf16 or f16".into()))
            }
        }
    }

    /// The launch of this f32 kernel for an `m × n × k` product: a step's or a configuration's
    /// tile grid, or for split k its step's grid as deep as its splits, made even as
    /// [`gemm_on_slices`] makes them.
    ///
    /// ```
    /// use cuda_kernels::matmul::GemmKernel;
    ///
    /// // 7 splits of k's 2 slices of 16 run as 2.
    /// let launch = GemmKernel::Split(7).f32_launch((64, 64, 32)).unwrap();
    /// assert_eq!(launch.grid, (1, 1, 2));
    /// ```
    pub fn f32_launch(self, (m, n, k): (usize, usize, usize)) -> GpuResult<LaunchConfig> {
        match self.f32_split() {
            Some((step, wanted)) => step.launch((m, n, k), split_count(step.slices(k), wanted)),
            None => launch_config(self.kernel(Dtype::F32)?, m, n),
        }
    }

    /// The f32 step that splits k and the splits asked for, for f32 products over `Split` (step
    /// 4d) or `SplitAsync` (step 5d); for the tensor types `Split` is step H3 instead.
    pub fn f32_split(self) -> Option<(F32Split, usize)> {
        match self {
            GemmKernel::Split(wanted) => Some((F32Split::Vec4, wanted)),
            GemmKernel::SplitAsync(wanted) => Some((F32Split::Async, wanted)),
            _ => None,
        }
    }

    /// The step that runs this pick's splits of k for `precision`, and the splits it asks for:
    /// `None` where it does not split k, or where `precision` has no such step ([`Self::kernel`]
    /// says why).
    ///
    /// ```
    /// use cuda_kernels::matmul::split::{F32Split, SplitStep};
    /// use cuda_kernels::matmul::hopper::{Precision, Step};
    /// use cuda_kernels::matmul::{Dtype, GemmKernel};
    ///
    /// assert_eq!(GemmKernel::Split(8).split_step(Dtype::F32), Some((SplitStep::F32(F32Split::Vec4), 8)));
    /// let pipelined = SplitStep::Wgmma(Step::Pipelined, Precision::Bf16);
    /// assert_eq!(GemmKernel::Split(8).split_step(Dtype::Bf16), Some((pipelined, 8)));
    /// assert_eq!(GemmKernel::SplitAsync(4).split_step(Dtype::Bf16), None);
    /// assert_eq!(GemmKernel::Mma.split_step(Dtype::Bf16), None);
    /// let small = GemmKernel::HopperSplit(Step::Small, 64);
    /// assert_eq!(small.split_step(Dtype::Tf32), Some((SplitStep::Wgmma(Step::Small, Precision::Tf32), 64)));
    /// assert_eq!(small.split_step(Dtype::F32), None);
    /// ```
    pub fn split_step(self, precision: Dtype) -> Option<(SplitStep, usize)> {
        match (self.f32_split(), hopper_precision(precision)) {
            (Some((F32Split::Vec4, wanted)), Some(hopper)) => Some((SplitStep::Wgmma(hopper::Step::Pipelined, hopper), wanted)),
            (Some((step, wanted)), None) => Some((SplitStep::F32(step), wanted)),
            (None, Some(hopper)) => match self {
                GemmKernel::HopperSplit(step, wanted) => Some((SplitStep::Wgmma(step, hopper), wanted)),
                _ => None,
            },
            _ => None,
        }
    }

    /// The kernel `host matmul --tune` kept in the default tuning cache for this GPU, precision
    /// and shape, if any ([`GemmKernel::tuned_in`]).
    pub fn tuned(gpu: &Gpu, precision: Dtype, dims: (usize, usize, usize)) -> GpuResult<Option<Self>> {
        match tuning::default_path() {
            Ok(path) => Self::tuned_in(&path, gpu, precision, dims),
            Err(_) => Ok(None),
        }
    }

    /// The kernel `host matmul --tune` kept in the tuning cache at `path` for this GPU,
    /// precision and shape, if any: an unreadable cache file is an error, an absent one (or a
    /// kernel this build does not run for `precision`) is none.
    pub fn tuned_in(
        path: &Path,
        gpu: &Gpu,
        precision: Dtype,
        (m, n, k): (usize, usize, usize),
    ) -> GpuResult<Option<Self>> {
        let class = tuning::shape_class(&[("m", m), ("n", n), ("k", k)]);
        let class = match precision {
            Dtype::F32 => class,
            dtype => format!("{class} {}", dtype.name()),
        };
        let cache = TuningCache::load(path)?;
        let Some(choice) = cache.lookup("matmul", &tuning::device_key(gpu.info()), &class) else { return Ok(None) };
        let kernel = choice.kernel.as_str();
        let found = Step::ALL
            .iter()
            .find(|s| s.kernel() == kernel)
            .map(|&s| GemmKernel::Ladder(s))
            .or_else(|| tile_of(kernel).map(|t| GemmKernel::Tile(t.kernel)))
            .or_else(|| precision.step().filter(|s| s.kernel() == kernel).map(|_| GemmKernel::Mma))
            .or_else(|| hopper::kernel_of(kernel).map(|(step, _)| GemmKernel::Hopper(step)));
        Ok(found.filter(|choice| choice.kernel(precision).is_ok_and(|k| k == kernel)))
    }

    /// The kernel [`gemm`] runs: the tuned one where the default tuning cache has it, else the
    /// default for `precision` on this GPU.
    pub fn chosen(gpu: &Gpu, precision: Dtype, dims: (usize, usize, usize)) -> GpuResult<Self> {
        Self::chosen_in(tuning::default_path().ok().as_deref(), gpu, precision, dims)
    }

    /// [`GemmKernel::chosen`] with the tuning cache at `cache` (none: the default alone).
    ///
    /// ```
    /// # fn main() -> cuda_kernels::GpuResult<()> {
    /// use cuda_kernels::matmul::{Dtype, GemmKernel};
    ///
    /// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
    /// // A cache file that is not there holds no tuned kernel: the library's rule picks.
    /// let absent = std::env::temp_dir().join(format!("no-tuning-cache-{}.json", std::process::id()));
    /// let dims = (4096, 4096, 4096);
    /// let picked = GemmKernel::chosen_in(Some(&absent), &gpu, Dtype::Bf16, dims)?;
    /// assert_eq!(picked, GemmKernel::chosen_in(None, &gpu, Dtype::Bf16, dims)?);
    /// println!("bf16 {dims:?}: {}", picked.kernel(Dtype::Bf16)?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn chosen_in(
        cache: Option<&Path>,
        gpu: &Gpu,
        precision: Dtype,
        dims: (usize, usize, usize),
    ) -> GpuResult<Self> {
        let tuned = match cache {
            Some(path) => Self::tuned_in(path, gpu, precision, dims)?,
            None => None,
        };
        if let Some(tuned) = tuned {
            if !matches!(tuned, GemmKernel::Hopper(_)) || gpu.has_hopper() {
                // The TMA-store step stores rows of a multiple of 16 bytes only; a shape of the
                // same class with other rows takes the same tiles stored without TMA.
                if tuned == GemmKernel::Hopper(hopper::Step::TmaStore) && !dims.1.is_multiple_of(4) {
                    return Ok(GemmKernel::Hopper(hopper::Step::Persistent));
                }
                return Ok(tuned);
            }
        }
        let sms = gpu.sms() as usize;
        Ok(match hopper_precision(precision) {
            None => f32_default(dims, sms),
            Some(hopper) if gpu.has_hopper() => {
                match split::tensor_split_for(hopper, dims, sms) {
                    (_, 1) => GemmKernel::Hopper(hopper::persistent_step(dims, hopper, sms)),
                    (step, splits) => GemmKernel::HopperSplit(step, splits),
                }
            }
            Some(_) => GemmKernel::Mma,
        })
    }
}

/// The SGEMM configuration named `kernel` in `interface::sgemm_configs!`; a name not there
/// stops the build.
const fn config(kernel: &str) -> TileConfig {
    let mut i = 0;
    while i < TILE_CONFIGS.len() {
        let (name, wanted) = (TILE_CONFIGS[i].kernel.as_bytes(), kernel.as_bytes());
        let mut same = name.len() == wanted.len();
        let mut j = 0;
        while same && j < name.len() {
            same = name[j] == wanted[j];
            j += 1;
        }
        if same {
            return TILE_CONFIGS[i];
        }
        i += 1;
    }
    panic!("no SGEMM configuration of that name")
}

/// The configurations [`f32_default`] picks between, besides step 5c: 64×64 tiles of 4×4
/// thread tiles (three blocks an SM), 128×128 (the `vec4` step's), and 64×128 (three an SM).
const TILE_64X64: TileConfig = config("matmul_vec4_64x64_t4");
const TILE_128X128: TileConfig = config("matmul_vec4_128x128");
const TILE_64X128: TileConfig = config("matmul_vec4_64x128");

/// Tiles of `bm × bn` covering an `m × n` C.
fn tiles((m, n): (usize, usize), (bm, bn): (usize, usize)) -> usize {
    m.div_ceil(bm) * n.div_ceil(bn)
}

/// Whether `tiles` blocks, one an SM at a time, keep at least nine tenths of the SMs busy over
/// their waves: one wave of nearly every SM, or whole waves but for a last one nearly full.
fn fills_its_waves(tiles: usize, sms: usize) -> bool {
    10 * tiles >= 9 * tiles.div_ceil(sms) * sms
}

/// The f32 kernel [`gemm`] runs for an `m × n × k` product on a GPU of `sms` SMs where
/// `--tune` kept none:
/// - split k (step 4d) where [`split::f32_splits_for`] splits: C's 64×64 tiles fewer than the
///   SMs and k long enough;
/// - split k on step 5c's tiles (step 5d) where [`split::async_splits_for`] splits and step
///   5c's fast path applies: C's 128×256 tiles fewer than the SMs, and k long enough;
/// - step 5c ([`Step::Async`]) where its 128×256 tiles fill their waves and its fast path
///   applies (k a multiple of its slice, n of 4: otherwise every block copies B four bytes at
///   a time);
/// - else 64×64 tiles of 4×4 thread tiles where there are at most two of them an SM: small C,
///   or long k on few tiles, where more and smaller blocks keep more SMs at work;
/// - else 128×128 tiles where they fill their waves, or all fit in one;
/// - else 64×128 tiles, whose finer waves lose least of the last one.
///
/// The measurements behind it are in the closing notes of issue 32's sessions of 2026-11-28
/// and (step 5d) 2026-11-29.
pub fn f32_default((m, n, k): (usize, usize, usize), sms: usize) -> GemmKernel {
    let sms = sms.max(1);
    let fast_path = k % ASYNC_BK == 0 && n % 4 == 0;
    let of = |tile: &TileConfig| tiles((m, n), (tile.bm, tile.bn));
    let splits = split::f32_splits_for((m, n, k), sms);
    if splits > 1 {
        GemmKernel::Split(splits)
    } else if let (true, splits @ 2..) = (fast_path, split::async_splits_for((m, n, k), sms)) {
        GemmKernel::SplitAsync(splits)
    } else if fast_path && fills_its_waves(tiles((m, n), (ASYNC_BM, ASYNC_BN)), sms) {
        GemmKernel::Ladder(Step::Async)
    } else if of(&TILE_64X64) <= 2 * sms {
        GemmKernel::Tile(TILE_64X64.kernel)
    } else if of(&TILE_128X128) <= sms || fills_its_waves(of(&TILE_128X128), sms) {
        GemmKernel::Tile(TILE_128X128.kernel)
    } else {
        GemmKernel::Tile(TILE_64X128.kernel)
    }
}

/// The Hopper kernels' input type for `dtype`, if they take it.
pub fn hopper_precision(dtype: Dtype) -> Option<Precision> {
    match dtype {
        Dtype::Tf32 => Some(Precision::Tf32),
        Dtype::Bf16 => Some(Precision::Bf16),
        Dtype::F16 => Some(Precision::F16),
        Dtype::F32 => None,
    }
}

/// The shape of `a × b` into `c`, or an error naming the mismatch.
fn dims(a: &DeviceMatrix<f32>, b: &DeviceMatrix<f32>, c: &DeviceMatrix<f32>) -> GpuResult<(usize, usize, usize)> {
    let ((m, k), (kb, n)) = (a.dim(), b.dim());
    let refuse = |what: String| Err(GpuError::InvalidInput(format!("gemm: {what}")));
    if k != kb {
        return refuse(format!("A is {m}×{k} and B is {kb}×{n}: their inner dimensions differ"));
    }
    if c.dim() != (m, n) {
        return refuse(format!("C is {}×{}, A × B is {m}×{n}", c.dim().0, c.dim().1));
    }
    if m == 0 || n == 0 || k == 0 {
        return refuse(format!("an empty product ({m}×{n}×{k})"));
    }
    Ok((m, n, k))
}

/// C = A × B, with A m×k, B k×n and C m×n row-major f32 matrices on `gpu`, the inputs read
/// in `precision` (f32 on the FP32 lanes; tf32, bf16 or f16 on the tensor cores, converted on
/// the GPU, accumulated in f32), by the kernel [`GemmKernel::chosen`] picks.
///
/// f32 products are queued on the GPU's stream and return at once; tensor-core products wait
/// for their converted copies of A and B to be used before returning. For f16, values beyond
/// its range (±65504) convert to infinities; [`gemm_array`], which sees them, refuses them.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::matmul::{cpu_reference, gemm, Dtype};
/// use cuda_kernels::DeviceMatrix;
/// use ndarray::Array2;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let a = Array2::from_shape_fn((67, 33), |(i, j)| ((i * 7 + j) % 11) as f32 - 5.0);
/// let b = Array2::from_shape_fn((33, 129), |(i, j)| ((i + 3 * j) % 5) as f32 - 2.0);
/// let (da, db) = (DeviceMatrix::from_array(&gpu, a.view())?, DeviceMatrix::from_array(&gpu, b.view())?);
/// let mut c = DeviceMatrix::zeros(&gpu, (67, 129))?;
/// gemm(&gpu, &da, &db, &mut c, Dtype::F32)?;
/// // Small integers: every product and sum is exact in f32.
/// let expected = cpu_reference(a.as_slice().unwrap(), b.as_slice().unwrap(), 67, 129, 33);
/// assert_eq!(c.to_array(&gpu)?.into_raw_vec_and_offset().0, expected);
/// # Ok(())
/// # }
/// ```
pub fn gemm(
    gpu: &Gpu,
    a: &DeviceMatrix<f32>,
    b: &DeviceMatrix<f32>,
    c: &mut DeviceMatrix<f32>,
    precision: Dtype,
) -> GpuResult<()> {
    let shape = dims(a, b, c)?;
    let kernel = GemmKernel::chosen(gpu, precision, shape)?;
    gemm_with(gpu, a, b, c, precision, kernel)
}

/// [`gemm`] with the kernel named.
pub fn gemm_with(
    gpu: &Gpu,
    a: &DeviceMatrix<f32>,
    b: &DeviceMatrix<f32>,
    c: &mut DeviceMatrix<f32>,
    precision: Dtype,
    kernel: GemmKernel,
) -> GpuResult<()> {
    let dims = dims(a, b, c)?;
    // SAFETY: the arrays record the product below, so none is freed before it ran.
    unsafe { gemm_on_slices(gpu, (a.slice(gpu)?, b.slice(gpu)?, c.slice(gpu)?), dims, precision, kernel) }?;
    for used in [a, b] {
        used.record_use(gpu)?;
    }
    c.record_use(gpu)
}

/// [`gemm_with`] on raw device memory: C (`c`, m×n) = A (`a`, m×k) × B (`b`, k×n), row-major
/// f32, on `gpu`'s stream, for callers that keep their own buffers (`host matmul --gpus`, a
/// share of C's rows on each GPU). Slices too short for `dims`, or an empty product, are errors.
///
/// # Safety
/// The three slices live on `gpu`'s context and until its stream has run the product: f32
/// products return once queued (tensor-core products wait for their converted copies).
pub unsafe fn gemm_on_slices(
    gpu: &Gpu,
    (sa, sb, sc): (&DeviceSlice<f32>, &DeviceSlice<f32>, &DeviceSlice<f32>),
    (m, n, k): (usize, usize, usize),
    precision: Dtype,
    kernel: GemmKernel,
) -> GpuResult<()> {
    if m == 0 || n == 0 || k == 0 {
        return Err(GpuError::InvalidInput(format!("gemm: an empty product ({m}×{n}×{k})")));
    }
    for (what, len, wanted) in [("A", sa.len(), m * k), ("B", sb.len(), k * n), ("C", sc.len(), m * n)] {
        if len < wanted {
            return Err(GpuError::InvalidInput(format!("gemm: {what} holds {len} values, {m}×{n}×{k} needs {wanted}")));
        }
    }
    let name = kernel.kernel(precision)?;
    gpu.bind()?;
    match (kernel.split_step(precision), kernel, hopper_precision(precision)) {
        (Some((split_step, wanted)), ..) => {
            let splits = split_count(split_step.slices(k), wanted);
            let partials = split::workspace(gpu, (m, n), splits)?;
            match split_step {
                SplitStep::F32(step) => {
                    // SAFETY: the caller keeps the slices until the stream has run the product,
                    // and `partials` lives until the synchronization below.
                    unsafe {
                        split::launch_f32_on(gpu, gpu.stream(), step, (sa, sb), &partials, sc, (m, n, k), splits)
                    }?;
                    // The workspace is dropped on return: the product must have used it.
                    gpu.synchronize("the split f32 product")?;
                }
                SplitStep::Wgmma(step, hopper) => {
                    // SAFETY: as for the Hopper steps below.
                    let converted = unsafe { converted(gpu, precision, (sa, sb), (m, n, k), true) }?;
                    let maps = converted.upload_hopper_maps(hopper, (m, n, k))?;
                    let split = (&*partials, splits);
                    // SAFETY: `maps` was just written by `upload_hopper_maps` on `converted` for
                    // this precision and shape; the copies, the maps and `partials` live until
                    // the stream has run the product, which the synchronization below waits for.
                    unsafe {
                        converted.launch_hopper_split(gpu, gpu.stream(), (step, hopper, &maps), split, sc, (m, n, k))
                    }?;
                    // The copies, the maps and the workspace are dropped after this: the product
                    // must have used them.
                    gpu.synchronize("the split wgmma product")?;
                }
            }
        }
        (None, GemmKernel::Ladder(_) | GemmKernel::Tile(_), _) => {
            // SAFETY: the caller keeps the slices until the stream has run the product.
            unsafe { gpu.launch(name, &SgemmArgs { a: sa, b: sb, c: sc, m, n, k }) }?;
        }
        (None, GemmKernel::Mma, _) => {
            // SAFETY: the caller keeps the slices until the stream has run the work below, and
            // the copies are dropped after it.
            unsafe {
                let converted = converted(gpu, precision, (sa, sb), (m, n, k), false)?;
                converted.launch_on(gpu, gpu.stream(), name, sc, (m, n, k))?;
            }
            // The converted copies are dropped on return: the product must have read them.
            gpu.synchronize("the tensor-core product")?;
        }
        (None, GemmKernel::Hopper(step), Some(hopper)) => {
            // SAFETY: the caller keeps the slices until the stream has run the work below, and
            // the copies are dropped after it.
            let converted = unsafe { converted(gpu, precision, (sa, sb), (m, n, k), true) }?;
            let maps = converted.upload_hopper_maps(hopper, (m, n, k))?;
            let mut out_device = None;
            let out = hopper::output_map(step, sc, (m, n), &mut out_device)?;
            // SAFETY: `maps` was just written by `upload_hopper_maps` on `converted` for this
            // precision and shape, and neither changes before the launch; C's map and the
            // copies are dropped after the synchronization below.
            unsafe {
                converted.launch_hopper(gpu, gpu.stream(), name, (hopper, &maps, out.as_ref()), sc, (m, n, k))
            }?;
            gpu.synchronize("the wgmma product")?;
        }
        (None, ..) => {
            unreachable!("GemmKernel::kernel refuses a Hopper step for f32 and step 5d for the tensor types; split_step names the step of every other split")
        }
    }
    Ok(())
}

/// A and B converted to `precision` on the GPU, into new buffers padded as the tensor steps
/// read them (Bᵀ too for TF32 on Hopper).
///
/// # Safety
/// As for [`tensor::convert`].
unsafe fn converted(
    gpu: &Gpu,
    precision: Dtype,
    (a, b): (&DeviceSlice<f32>, &DeviceSlice<f32>),
    dims: (usize, usize, usize),
    hopper: bool,
) -> GpuResult<tensor::Converted> {
    // SAFETY: the caller keeps its promise to `tensor::convert`.
    unsafe { tensor::convert(gpu, precision, (a, b), dims, hopper) }?
        .ok_or_else(|| GpuError::InvalidInput("f32 products are not converted".into()))
}

/// A × B for `ndarray` matrices: uploads them, runs [`gemm`] and reads C back.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::matmul::{gemm_array, rounded_reference, Dtype};
/// use ndarray::Array2;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let a = Array2::from_shape_fn((130, 70), |(i, j)| ((i * 13 + j * 7) % 17) as f32 / 16.0 - 0.5);
/// let b = Array2::from_shape_fn((70, 90), |(i, j)| ((i * 5 + j * 3) % 19) as f32 / 18.0 - 0.5);
/// let c = gemm_array(&gpu, a.view(), b.view(), Dtype::Bf16)?;
/// let expected = rounded_reference(Dtype::Bf16, a.as_slice().unwrap(), b.as_slice().unwrap(), 130, 90, 70);
/// for (got, want) in c.iter().zip(&expected) {
///     assert!((got - want).abs() <= 1e-4, "{got} vs {want}");
/// }
/// # Ok(())
/// # }
/// ```
pub fn gemm_array(gpu: &Gpu, a: ArrayView2<f32>, b: ArrayView2<f32>, precision: Dtype) -> GpuResult<Array2<f32>> {
    if let Some(bad) = a.iter().chain(b.iter()).find(|v| !v.is_finite()) {
        return Err(GpuError::InvalidInput(format!("gemm: the inputs hold {bad}, and only finite values multiply")));
    }
    if precision == Dtype::F16 {
        let (a, b): (Vec<f32>, Vec<f32>) = (a.iter().copied().collect(), b.iter().copied().collect());
        tensor::require_in_range(precision, &a, &b)?;
    }
    let (da, db) = (DeviceMatrix::from_array(gpu, a)?, DeviceMatrix::from_array(gpu, b)?);
    let mut c = DeviceMatrix::zeros(gpu, (a.nrows(), b.ncols()))?;
    gemm(gpu, &da, &db, &mut c, precision)?;
    c.to_array(gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_default_takes_the_large_tiles_where_they_fill_their_waves_and_smaller_ones_elsewhere() {
        let h100 = |m, n, k| f32_default((m, n, k), 132);
        let (async_step, small, square, wide) = (
            GemmKernel::Ladder(Step::Async),
            GemmKernel::Tile(TILE_64X64.kernel),
            GemmKernel::Tile(TILE_128X128.kernel),
            GemmKernel::Tile(TILE_64X128.kernel),
        );
        for s in [2048, 4096, 6144, 8192, 16384] {
            assert_eq!(h100(s, s, s), async_step, "{s}³");
        }
        assert_eq!(h100(8192, 8192, 256), async_step);
        assert_eq!(h100(4096, 14336, 4096), async_step);
        // Few tiles: small C, or long k.
        assert_eq!(h100(1, 1, 1), small);
        // Step 5c's 32 tiles are under half the SMs: 4 splits of k fill 128.
        assert_eq!(h100(1024, 1024, 1024), GemmKernel::SplitAsync(4));
        assert_eq!(h100(1000, 1000, 1000), GemmKernel::SplitAsync(4));
        // k not a multiple of step 5c's slice: no fast path, so no step 5d.
        assert_eq!(h100(1000, 1000, 1001), small);
        // Fewer 64×64 tiles than SMs: split k.
        assert_eq!(h100(64, 64, 65536), GemmKernel::Split(256));
        assert_eq!(h100(128, 128, 16384), GemmKernel::Split(64));
        assert_eq!(h100(16, 4096, 4096), GemmKernel::Split(4));
        assert_eq!(h100(256, 256, 256), GemmKernel::Split(4));
        assert_eq!(h100(512, 512, 512), GemmKernel::Split(4));
        // 288 tiles of step 5c are 2.2 waves; 576 of 128×128 are 4.4.
        assert_eq!(h100(3072, 3072, 3072), wide);
        // k odd: no fast path for step 5c; 1056 tiles of 128×128 are 8 whole waves.
        assert_eq!(h100(4095, 4097, 4099), square);
        assert_eq!(h100(4096, 4096, 4098), square);
        // 56 tiles of step 5c fill under half the SMs: 2 splits fill 112.
        assert_eq!(h100(128, 14336, 4096), GemmKernel::SplitAsync(2));
        // The same shapes on a GPU of 8 SMs: waves are finer there.
        assert_eq!(f32_default((1024, 1024, 1024), 8), async_step);
        assert_eq!(f32_default((1, 1, 1), 0), small);
    }

    #[test]
    fn every_f32_default_is_an_f32_kernel_with_a_launch() {
        let shapes = [(1, 1, 1), (3072, 3072, 3072), (4095, 4097, 4099), (128, 14336, 4096), (4096, 4096, 4096)];
        // And split k's picks.
        for (m, n, k) in shapes.into_iter().chain([(64, 64, 65536), (512, 512, 512), (1024, 1024, 1024)]) {
            f32_default((m, n, k), 132).f32_launch((m, n, k)).expect("a launch");
        }
        assert_eq!(GemmKernel::Split(8).kernel(Dtype::F32).expect("an f32 kernel"), split::F32_SPLIT);
        assert_eq!(GemmKernel::SplitAsync(4).kernel(Dtype::F32).expect("an f32 kernel"), split::F32_SPLIT_ASYNC);
        assert!(GemmKernel::SplitAsync(4).kernel(Dtype::Bf16).is_err());
    }
}
