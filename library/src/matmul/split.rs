//! Split k on the host (`kernels/src/matmul/split_k.rs`): a product's kernel on a grid `splits`
//! layers deep, each layer a run of k's slices writing its partial product into a workspace of
//! `splits × m × n` floats, then [`REDUCE`] summing the layers into C in a fixed order, so that
//! a product gives the same C on every run. In f32, step 4d ([`F32_SPLIT`], 64×64 tiles) and
//! step 5d ([`F32_SPLIT_ASYNC`], step 5c's 128×256 tiles) split; for the tensor types on Hopper,
//! any wgmma step: the pipelined one (H3), or a persistent one whose grid is as many layers
//! deep.
//!
//! [`tensor_split_for`], [`f32_splits_for`] and [`async_splits_for`] are the choices
//! [`super::gemm`] makes: none while C's tiles already cover many SMs; else as many as fill
//! them about once (step 4d: two blocks an SM; small wgmma tiles: half the SMs), each split at
//! least its step's fewest slices. In BF16, 64×64×65536 becomes 64 splits of 16 slices on small
//! tiles and 16×4096×4096 8 of 8 on wide ones; in f32, 64×64×65536 becomes 256 splits of 16
//! slices (step 4d) and 1024³ 4 splits of 32 (step 5d).

use super::hopper::{checked_launch, kernel_of, with_args, Precision, Step, TensorMaps, WgmmaArgs};
use super::launch::tile_launch;
use crate::gpu::{
    blocks, product, refuse, require_aligned, require_disjoint, require_kernel, require_len, Gpu, GpuResult,
    KernelArgs, LaunchConfig, Params,
};
use cust::memory::{DeviceBuffer, DeviceCopy, DeviceSlice};
use cust::stream::Stream;
use interface::matmul::{
    reduce_groups, split_count, ASYNC_BK, ASYNC_BM, ASYNC_BN, ASYNC_SPLIT_BOUNDS, ASYNC_SPLIT_COST_PERCENT,
    ASYNC_SPLIT_MAX_WAVES, ASYNC_SPLIT_MIN_SLICES, REDUCE_THREADS, SPLIT_BK, SPLIT_BM, SPLIT_BN,
    SPLIT_MIN_SLICES as F32_MIN_SLICES, SPLIT_TARGET_BLOCKS_PER_SM, SPLIT_TILE,
};
use interface::wgmma::{BK_FP8, BM, BN, NARROW_BN, SMALL_SPLIT_MIN_SLICES, SPLIT_MIN_SLICES, SPLIT_MIN_SPLITS};

/// The reduction that sums the splits' partial products into C.
pub const REDUCE: &str = "matmul_split_reduce";

/// Step 4d, split k in f32: step 4c's kernel on 64×64 tiles, on a grid `splits` deep.
pub const F32_SPLIT: &str = SPLIT_TILE.kernel;

/// Step 5d, split k in f32 on step 5c's 128×256 tiles, on a grid `splits` deep.
pub const F32_SPLIT_ASYNC: &str = ASYNC_SPLIT_BOUNDS.kernel;

/// The f32 steps that split k: both write `splits` layers of partial products that [`REDUCE`]
/// sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum F32Split {
    /// Step 4d ([`F32_SPLIT`]): 64×64 tiles, slices of [`SPLIT_BK`].
    Vec4,
    /// Step 5d ([`F32_SPLIT_ASYNC`]): step 5c's 128×256 tiles, slices of [`ASYNC_BK`].
    Async,
}

impl F32Split {
    /// The kernel's name in the PTX.
    pub fn kernel(self) -> &'static str {
        match self {
            F32Split::Vec4 => F32_SPLIT,
            F32Split::Async => F32_SPLIT_ASYNC,
        }
    }

    /// Slices of k (each a split's smallest part) of an inner dimension `k`.
    pub fn slices(self, k: usize) -> usize {
        k.div_ceil(match self {
            F32Split::Vec4 => SPLIT_BK,
            F32Split::Async => ASYNC_BK,
        })
    }

    /// The launch of an `m × n × k` product over `splits` splits: the step's tile grid,
    /// `splits` deep.
    ///
    /// ```
    /// use cuda_kernels::matmul::split::F32Split;
    ///
    /// // 1024×1024 is 8 × 4 tiles of 128×256.
    /// let launch = F32Split::Async.launch((1024, 1024, 1024), 4).unwrap();
    /// assert_eq!(launch.grid, (4, 8, 4));
    /// ```
    pub fn launch(self, (m, n, _): (usize, usize, usize), splits: usize) -> GpuResult<LaunchConfig> {
        let per_tile = match self {
            F32Split::Vec4 => tile_launch(&SPLIT_TILE, m, n)?,
            // Step 5c's launch, whose kernel this is.
            F32Split::Async => super::Step::Async.launch_config(m, n)?,
        };
        layered(self.kernel(), per_tile, splits)
    }
}

/// The splits of k [`super::gemm`] runs an f32 `m × n × k` product in on a GPU of `sms` SMs: 1
/// while C's 64×64 tiles outnumber the SMs; else enough that tiles × splits come to about
/// [`SPLIT_TARGET_BLOCKS_PER_SM`] blocks an SM, each split at least `SPLIT_MIN_SLICES` slices,
/// made even by `split_count` (none empty).
///
/// ```
/// use cuda_kernels::matmul::{split::f32_splits_for, GemmKernel};
///
/// // One 64×64 tile down a k of 65536 on 132 SMs: 256 splits of 16 slices of 16.
/// assert_eq!(f32_splits_for((64, 64, 65536), 132), 256);
/// // A square C covers the SMs with its own tiles: no split.
/// assert_eq!(f32_splits_for((4096, 4096, 4096), 132), 1);
/// // `gemm`'s default follows it.
/// let picked = cuda_kernels::matmul::f32_default((64, 64, 65536), 132);
/// assert_eq!(picked, GemmKernel::Split(256));
/// ```
pub fn f32_splits_for((m, n, k): (usize, usize, usize), sms: usize) -> usize {
    let tiles = m.div_ceil(SPLIT_BM) * n.div_ceil(SPLIT_BN);
    // An empty C has no tiles to split: the product refuses it.
    if tiles == 0 || tiles > sms {
        return 1;
    }
    let slices = F32Split::Vec4.slices(k);
    split_count(slices, (SPLIT_TARGET_BLOCKS_PER_SM * sms / tiles).min(slices / F32_MIN_SLICES))
}

/// The splits of k for step 5d ([`F32Split::Async`]) of an f32 `m × n × k` product on a GPU of
/// `sms` SMs: 1 where C's 128×256 tiles already fill a wave (one block an SM); else the count
/// that costs least, where a count's cost is its waves of blocks (each `1/splits` of the walk
/// down k) plus `ASYNC_SPLIT_COST_PERCENT` per split, up to `ASYNC_SPLIT_MAX_WAVES` waves and
/// down to `ASYNC_SPLIT_MIN_SLICES` slices a split (the fewest on a tie), made even by
/// `split_count` (none empty).
///
/// ```
/// use cuda_kernels::matmul::split::async_splits_for;
///
/// // 1024×1024 is 32 tiles: 4 splits of 32 slices of 8 fill 128 of 132 SMs in one wave.
/// assert_eq!(async_splits_for((1024, 1024, 1024), 132), 4);
/// // 1536×1536 is 72: 5 splits are three waves of a fifth of k, where 1 split is one of all k.
/// assert_eq!(async_splits_for((1536, 1536, 1536), 132), 5);
/// // 2048×2048 is 128 tiles, nearly a block an SM already.
/// assert_eq!(async_splits_for((2048, 2048, 2048), 132), 1);
/// ```
pub fn async_splits_for((m, n, k): (usize, usize, usize), sms: usize) -> usize {
    let tiles = m.div_ceil(ASYNC_BM) * n.div_ceil(ASYNC_BN);
    // An empty C has no tiles to split: the product refuses it.
    if tiles == 0 || tiles >= sms {
        return 1;
    }
    let slices = F32Split::Async.slices(k);
    let most = (slices / ASYNC_SPLIT_MIN_SLICES).min(ASYNC_SPLIT_MAX_WAVES * sms / tiles).max(1);
    // A count's cost, as a fraction (numerator, denominator) of one block's walk down k.
    let cost = |splits: usize| {
        let waves = (tiles * splits).div_ceil(sms);
        let extra = if splits > 1 { ASYNC_SPLIT_COST_PERCENT * splits * splits } else { 0 };
        (100 * waves + extra, 100 * splits)
    };
    let cheaper = |a: (usize, usize), b: (usize, usize)| a.0 * b.1 < b.0 * a.1;
    let best = (2..=most).fold(1, |best, splits| if cheaper(cost(splits), cost(best)) { splits } else { best });
    split_count(slices, best)
}

/// Slices of k (one stage of the kernels each) of an inner dimension `k` in `precision`.
pub fn slices(precision: Precision, k: usize) -> usize {
    k.div_ceil(precision.bk())
}

/// The kernel that runs a split product's layers: an f32 step (4d or 5d), or for a tensor type
/// on Hopper a wgmma step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitStep {
    /// Step 4d or 5d.
    F32(F32Split),
    /// This Hopper step in this precision.
    Wgmma(Step, Precision),
}

impl SplitStep {
    /// Slices of k (each a split's smallest part) of an inner dimension `k`.
    pub fn slices(self, k: usize) -> usize {
        match self {
            SplitStep::F32(step) => step.slices(k),
            SplitStep::Wgmma(_, precision) => slices(precision, k),
        }
    }
}

/// The Hopper step and the splits of k [`super::gemm`] runs an `m × n × k` product in on a GPU
/// of `sms` SMs. No split (1) while C's wide tiles fill more than a quarter of the SMs, while
/// the partial products would outweigh A and B, or where fewer than `SPLIT_MIN_SPLITS` would
/// do. Else, where C is no wider than a narrow tile (128), small tiles (128×64) in enough
/// splits that tiles × splits come to about half the SMs, each split at least
/// `SMALL_SPLIT_MIN_SLICES` slices; otherwise the pipelined step's wide tiles in enough to fill
/// the SMs about once, each at least `SPLIT_MIN_SLICES`; made even by `split_count` (none
/// empty).
///
/// A wide tile over a C of 64 or 128 columns loads and multiplies mostly zeros past C's edge,
/// and its ring of four stages holds half of an 8-slice split; a small tile's ring of eight
/// holds all of it, and half the SMs in longer splits leave fewer partials to sum for the
/// same speed of A and B. Where the tiles already cover many SMs, or the partials outweigh
/// the inputs, writing and summing the partials costs more than the split gains (the
/// measurements are in the closing notes of issue 32).
///
/// ```
/// use cuda_kernels::matmul::hopper::{Precision, Step};
/// use cuda_kernels::matmul::split::tensor_split_for;
///
/// // 64×64×65536: one small tile in 64 splits of 16 slices of 64.
/// assert_eq!(tensor_split_for(Precision::Bf16, (64, 64, 65536), 132), (Step::Small, 64));
/// // 16×4096×4096: 16 wide tiles in 8 splits.
/// assert_eq!(tensor_split_for(Precision::Bf16, (16, 4096, 4096), 132), (Step::Pipelined, 8));
/// ```
pub fn tensor_split_for(precision: Precision, (m, n, k): (usize, usize, usize), sms: usize) -> (Step, usize) {
    let (step, blocks, fewest) = if n <= NARROW_BN {
        (Step::Small, sms / 2, SMALL_SPLIT_MIN_SLICES)
    } else {
        (Step::Pipelined, sms, SPLIT_MIN_SLICES)
    };
    let splits = wgmma_splits((m, n, k), precision.bytes(), (step.tile_n(), slices(precision, k)), (blocks, fewest), sms);
    (step, splits)
}

/// The splits of k of an FP8 `m × n × k` product (`super::fp8`, whose persistent grid has only
/// wide tiles) on a GPU of `sms` SMs: [`tensor_split_for`]'s rule on wide tiles, `BK_FP8` of k
/// a slice.
///
/// ```
/// use cuda_kernels::matmul::split::fp8_splits_for;
///
/// // One wide tile down 512 slices of 128: 128 splits of 4.
/// assert_eq!(fp8_splits_for((64, 64, 65536), 132), 128);
/// assert_eq!(fp8_splits_for((4096, 4096, 4096), 132), 1);
/// ```
pub fn fp8_splits_for((m, n, k): (usize, usize, usize), sms: usize) -> usize {
    wgmma_splits((m, n, k), 1, (BN, k.div_ceil(BK_FP8)), (sms, SPLIT_MIN_SLICES), sms)
}

/// The splits of an `m × n × k` product of `bytes`-byte inputs on tiles `tile_n` wide, k being
/// `slices` slices: 1 while C's wide tiles fill more than a quarter of the `sms` SMs, while the
/// partial products would outweigh A and B, or where fewer than `SPLIT_MIN_SPLITS` would do;
/// else enough that tiles × splits come to about `blocks`, each split at least `fewest`
/// slices, made even by `split_count`.
fn wgmma_splits(
    (m, n, k): (usize, usize, usize),
    bytes: usize,
    (tile_n, slices): (usize, usize),
    (blocks, fewest): (usize, usize),
    sms: usize,
) -> usize {
    let wide = m.div_ceil(BM) * n.div_ceil(BN);
    // An empty C has no tiles to split: the product refuses it.
    if wide == 0 || 4 * wide > sms {
        return 1;
    }
    let tiles = m.div_ceil(BM) * n.div_ceil(tile_n);
    let splits = split_count(slices, (blocks / tiles).min(slices / fewest));
    let (partials, inputs) = (4 * splits * m * n, bytes * k * (m + n));
    if partials > inputs || splits < SPLIT_MIN_SPLITS {
        1
    } else {
        splits
    }
}

/// A workspace for the partial products of `splits` splits of an `m × n` C (poisoned: an
/// element no split wrote would show as NaN).
pub fn workspace(gpu: &Gpu, (m, n): (usize, usize), splits: usize) -> GpuResult<DeviceBuffer<f32>> {
    gpu.poisoned::<f32>("the partial products of split k", product(REDUCE, splits, product(REDUCE, m, n)?)?)
}

/// The arguments of a split product: a Hopper kernel of the maps' precision on a grid `splits`
/// layers deep, each writing its partial product to its layer of `partials`.
pub struct SplitArgs<'a, T: DeviceCopy> {
    /// The tensor maps of A and B, in device memory, and the operands they describe.
    pub maps: &'a TensorMaps<'a, T>,
    /// `splits` partial products of `m × n` f32, one after the other, written.
    pub partials: &'a DeviceSlice<f32>,
    /// Rows of A and C; must equal the maps'.
    pub m: usize,
    /// Columns of B and C; must equal the maps'.
    pub n: usize,
    /// The inner dimension; must equal the maps'.
    pub k: usize,
    /// Splits of k's slices: at least 1, none of them empty ([`split_count`] of itself).
    pub splits: usize,
    /// Blocks of each layer of a persistent kernel's grid (at least 1); the pipelined kernel
    /// takes one per tile and ignores it.
    pub blocks: u32,
}

// SAFETY: `TensorMaps::check_product` checks what `WgmmaArgs` does, with `partials` as the
// output: maps of A and B with TMA's strides for these dimensions, in a buffer of two 64-byte
// aligned, the kernel a layered Hopper step (`Step::LAYERED`) of their precision, `partials` holding `splits·m·n`
// floats, 16-byte aligned when `n` is a multiple of 4, overlapping neither matrix. `splits` is
// checked to leave no split empty. The grid is the step's (`checked_launch`: a persistent one
// of at least one block), `splits` deep, as every step's `# Safety` section asks. The
// parameters are `maps, c: *mut f32, m, n, k`, `c` being `partials`.
unsafe impl<T: DeviceCopy> KernelArgs for SplitArgs<'_, T> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let (m, n, k, splits) = (self.m, self.n, self.k, self.splits);
        let precision = self.maps.precision();
        require_even_splits(kernel, slices(precision, k), splits)?;
        let layers = product(kernel, splits, product(kernel, m, n)?)?;
        let steps = Step::LAYERED.map(|s| s.kernel(precision));
        self.maps.check_product(kernel, &steps, (m, n, k), ("the partial products", self.partials, layers))?;
        let (step, _) = kernel_of(kernel).ok_or_else(|| refuse(kernel, "it is not a Hopper matrix product"))?;
        layered(kernel, checked_launch(kernel, step, (m, n), self.blocks)?, splits)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().pointer(self.maps.device()).pointer(self.partials).value(self.m).value(self.n).value(self.k)
    }
}

/// The arguments of [`REDUCE`]: `c[e] = Σ_s partials[s·len + e]` for `e < len`.
pub struct ReduceArgs<'a> {
    /// `splits` layers of `len` floats, one after the other.
    pub partials: &'a DeviceSlice<f32>,
    /// The sums, `len` floats, written.
    pub c: &'a DeviceSlice<f32>,
    /// Elements of one layer, and of C: at least 1.
    pub len: usize,
    /// Layers: at least 1.
    pub splits: usize,
}

// SAFETY: the kernel reads `partials[..splits·len]` and writes `c[..len]`, both checked that long
// (the product checked for overflow) and not to overlap, both 16-byte aligned when `len` is a
// multiple of 4 (its quad loads and stores); `len` and `splits` are at least 1. The launch is
// `reduce_launch`'s, the blocks and grid its indexing assumes. The parameters are
// `partials: &[f32], c: *mut f32, len: usize, splits: usize`.
unsafe impl KernelArgs for ReduceArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &[REDUCE], "ReduceArgs")?;
        let (len, splits) = (self.len, self.splits);
        if len == 0 || splits == 0 {
            return Err(refuse(kernel, format!("{splits} layers of {len} elements: both must be at least 1")));
        }
        let read = product(kernel, splits, len)?;
        require_len(kernel, "the partial products", self.partials, read)?;
        require_len(kernel, "C", self.c, len)?;
        require_disjoint(kernel, ("C", self.c, len), ("the partial products", self.partials, read))?;
        if len.is_multiple_of(4) {
            require_aligned(kernel, "the partial products", self.partials, 16)?;
            require_aligned(kernel, "C", self.c, 16)?;
        }
        reduce_launch(len, splits)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.partials).pointer(self.c).value(self.len).value(self.splits)
    }
}

/// The reduction's launch for `splits` layers of `len`: blocks of `REDUCE_THREADS`, each
/// `REDUCE_THREADS / reduce_groups(splits)` quads of C.
pub fn reduce_launch(len: usize, splits: usize) -> GpuResult<LaunchConfig> {
    let quads = REDUCE_THREADS / reduce_groups(splits);
    Ok(LaunchConfig {
        grid: (blocks(len.div_ceil(4), quads)?, 1, 1),
        block: (REDUCE_THREADS as u32, 1, 1),
        shared_bytes: 0,
    })
}

/// The arguments of the f32 split steps ([`F32Split`]: the kernel launched is the step):
/// `splits` layers of `A × B`'s partial products over runs of k, f32 row-major A (m×k) and B
/// (k×n), into `partials`.
pub struct SgemmSplitArgs<'a> {
    /// A, m × k.
    pub a: &'a DeviceSlice<f32>,
    /// B, k × n.
    pub b: &'a DeviceSlice<f32>,
    /// `splits` partial products of `m × n`, one after the other, written. With one split,
    /// this is C.
    pub partials: &'a DeviceSlice<f32>,
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B: the inner dimension.
    pub k: usize,
    /// Splits of k's slices: at least 1, none of them empty ([`split_count`] of itself).
    pub splits: usize,
}

// SAFETY: the kernel reads `a[..m·k]` and `b[..k·n]` and writes `partials[..splits·m·n]`; all are
// checked that long (the products checked for overflow), the partials not to overlap A or B, and
// all three 16-byte aligned (its 16-byte accesses). `splits` is checked to leave no split of the
// kernel's slices empty. The launch is the kernel's step's tile grid, `splits` deep, as both
// kernels' `# Safety` sections ask. The parameters of both are `a: &[f32], b: &[f32], c: *mut
// f32, m: usize, n: usize, k: usize`, `c` being `partials`.
unsafe impl KernelArgs for SgemmSplitArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &[F32_SPLIT, F32_SPLIT_ASYNC], "SgemmSplitArgs")?;
        let step = if kernel == F32_SPLIT { F32Split::Vec4 } else { F32Split::Async };
        let (m, n, k, splits) = (self.m, self.n, self.k, self.splits);
        require_even_splits(kernel, step.slices(k), splits)?;
        let (a_len, b_len) = (product(kernel, m, k)?, product(kernel, k, n)?);
        let layers = product(kernel, splits, product(kernel, m, n)?)?;
        require_len(kernel, "A", self.a, a_len)?;
        require_len(kernel, "B", self.b, b_len)?;
        require_len(kernel, "the partial products", self.partials, layers)?;
        require_disjoint(kernel, ("the partial products", self.partials, layers), ("A", self.a, a_len))?;
        require_disjoint(kernel, ("the partial products", self.partials, layers), ("B", self.b, b_len))?;
        for (what, matrix) in [("A", self.a), ("B", self.b), ("the partial products", self.partials)] {
            require_aligned(kernel, what, matrix, 16)?;
        }
        step.launch((m, n, k), splits)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.a).slice(self.b).pointer(self.partials).value(self.m).value(self.n).value(self.k)
    }
}

/// `layer`, the launch of one layer of `kernel`'s grid, `splits` layers deep.
pub(super) fn layered(kernel: &str, layer: LaunchConfig, splits: usize) -> GpuResult<LaunchConfig> {
    let depth = u32::try_from(splits).map_err(|_| refuse(kernel, format!("{splits} splits exceed a grid's depth")))?;
    Ok(LaunchConfig { grid: (layer.grid.0, layer.grid.1, depth), ..layer })
}

/// Refuses `splits` splits of `slices` slices unless each split gets at least one.
pub(super) fn require_even_splits(kernel: &str, slices: usize, splits: usize) -> GpuResult<()> {
    if splits == 0 || split_count(slices, splits) != splits {
        let even = split_count(slices, splits);
        return Err(refuse(
            kernel,
            format!("{splits} splits of k's {slices} slices: each needs at least one ({even} would do)"),
        ));
    }
    Ok(())
}

/// Queues the f32 `C = A × B` on `stream` over `splits` splits of k (at least 1, none of
/// `step`'s slices empty): `step` into `partials` (`splits·m·n` floats, see [`workspace`]),
/// then their sum into `c`. One split is the product straight into `c`, `partials` unused.
///
/// # Safety
/// Queued, not finished, on return: `a`, `b`, `partials` and `c` must stay allocated until
/// `stream` has run both kernels (see [`Gpu::launch`]).
#[allow(clippy::too_many_arguments)]
pub unsafe fn launch_f32_on(
    gpu: &Gpu,
    stream: &Stream,
    step: F32Split,
    (a, b): (&DeviceSlice<f32>, &DeviceSlice<f32>),
    partials: &DeviceSlice<f32>,
    c: &DeviceSlice<f32>,
    (m, n, k): (usize, usize, usize),
    splits: usize,
) -> GpuResult<()> {
    if splits == 1 {
        // SAFETY: the caller keeps the buffers alive until the stream has run it.
        return unsafe { gpu.launch_on(stream, step.kernel(), &SgemmSplitArgs { a, b, partials: c, m, n, k, splits }) };
    }
    // SAFETY: as above; the product is queued on `stream`.
    unsafe {
        layers_then_sum(gpu, stream, (partials, c), (m, n), splits, || {
            gpu.launch_on(stream, step.kernel(), &SgemmSplitArgs { a, b, partials, m, n, k, splits })
        })
    }
}

/// Queues a product of `splits` layers into `partials` (`queue_layers`, on `stream`), then
/// [`REDUCE`] summing them into the `m × n` C `c`. The reduction's arguments are checked first,
/// so that a bad C is refused before the product is queued rather than after.
///
/// # Safety
/// `queue_layers` queues on `stream`, and `partials` and `c` stay allocated until `stream` has
/// run both kernels.
pub(super) unsafe fn layers_then_sum(
    gpu: &Gpu,
    stream: &Stream,
    (partials, c): (&DeviceSlice<f32>, &DeviceSlice<f32>),
    (m, n): (usize, usize),
    splits: usize,
    queue_layers: impl FnOnce() -> GpuResult<()>,
) -> GpuResult<()> {
    let reduce = ReduceArgs { partials, c, len: product(REDUCE, m, n)?, splits };
    reduce.checked_config(REDUCE)?;
    queue_layers()?;
    // SAFETY: the caller keeps both buffers until the stream has run it, after the product.
    unsafe { gpu.launch_on(stream, REDUCE, &reduce) }
}

/// Queues `C = A × B` on `stream` over `splits` splits of k (at least 1, none empty): `step`'s
/// kernel of the maps' precision into `partials` (`splits·m·n` floats, see [`workspace`]), each
/// layer of a persistent grid [`layer_blocks`] blocks, then their sum into `c`. One split is the
/// plain product straight into `c`, `partials` unused.
///
/// # Safety
/// Queued, not finished, on return: the buffers behind `maps`, `partials` and `c` must stay
/// allocated until `stream` has run both kernels (see [`Gpu::launch`]).
#[allow(clippy::too_many_arguments)]
pub unsafe fn launch_on<T: DeviceCopy>(
    gpu: &Gpu,
    stream: &Stream,
    step: Step,
    maps: &TensorMaps<T>,
    partials: &DeviceSlice<f32>,
    c: &DeviceSlice<f32>,
    (m, n, k): (usize, usize, usize),
    splits: usize,
) -> GpuResult<()> {
    let kernel = step.kernel(maps.precision());
    let blocks = layer_blocks(gpu.sms(), splits);
    if splits == 1 {
        // SAFETY: the caller keeps the buffers alive until the stream has run it.
        return unsafe { gpu.launch_on(stream, kernel, &WgmmaArgs { maps, out: None, c, m, n, k, blocks }) };
    }
    // SAFETY: as above; the product is queued on `stream`.
    unsafe {
        layers_then_sum(gpu, stream, (partials, c), (m, n), splits, || {
            gpu.launch_on(stream, kernel, &SplitArgs { maps, partials, m, n, k, splits, blocks })
        })
    }
}

/// Blocks of each of `splits` layers of a persistent grid on a GPU of `sms` SMs: together about
/// one an SM, at least one a layer.
///
/// ```
/// use cuda_kernels::matmul::split::layer_blocks;
///
/// assert_eq!(layer_blocks(132, 1), 132);
/// assert_eq!(layer_blocks(132, 4), 33);
/// assert_eq!(layer_blocks(132, 256), 1);
/// ```
pub fn layer_blocks(sms: u32, splits: usize) -> u32 {
    (sms as usize / splits.max(1)).max(1) as u32
}

/// `C = A × B` over `splits` splits of k on `step`'s kernel of `precision`, A (`m×k`) and B
/// (`k×n`; for TF32 Bᵀ, `n×k`) dense row-major matrices of it, C `m×n` f32, as
/// [`super::hopper::launch`] runs a step: finished on return.
pub fn launch<T: DeviceCopy + bytemuck::Pod>(
    gpu: &Gpu,
    (step, precision): (Step, Precision),
    (a, b): (&DeviceSlice<T>, &DeviceSlice<T>),
    c: &DeviceSlice<f32>,
    (m, n, k): (usize, usize, usize),
    splits: usize,
) -> GpuResult<()> {
    let kernel = step.kernel(precision);
    let partials = workspace(gpu, (m, n), splits)?;
    // SAFETY: `with_args` waits for the stream before it returns, and `partials` outlives it.
    with_args(gpu, kernel, a, b, c, (m, n, k), |args| unsafe {
        launch_on(gpu, gpu.stream(), step, args.maps, &partials, c, (m, n, k), splits)
    })
}

#[cfg(test)]
mod tests {
    use super::super::hopper::Operands;
    use super::*;
    use crate::gpu::{GpuError, HOPPER_PTX, KERNELS_PTX};
    use crate::scan::tests::{same_memory, shifted, FakeMemory};

    #[test]
    fn long_k_on_few_tiles_splits_on_small_tiles_where_c_is_narrow_else_on_wide_ones() {
        let bf16 = |dims| tensor_split_for(Precision::Bf16, dims, 132);
        // Half the SMs in splits of small tiles: 1024 slices in runs of 16, 256 in runs of 8.
        assert_eq!(bf16((64, 64, 65536)), (Step::Small, 64));
        assert_eq!(bf16((128, 128, 16384)), (Step::Small, 32));
        assert_eq!(tensor_split_for(Precision::Tf32, (64, 64, 65536), 132), (Step::Small, 64));
        // C wider than a narrow tile: all the SMs in splits of wide tiles.
        assert_eq!(bf16((16, 4096, 4096)), (Step::Pipelined, 8));
        let wide_k = 64 * SPLIT_MIN_SLICES * SPLIT_MIN_SPLITS;
        assert_eq!(bf16((64, 256, wide_k)), (Step::Pipelined, SPLIT_MIN_SPLITS));
        // Enough tiles, partials larger than the inputs, or too little k for two splits of
        // the step's fewest slices: no split.
        let no_split = |dims| bf16(dims).1;
        assert_eq!(no_split((8192, 8192, 256)), 1);
        assert_eq!(no_split((4096, 4096, 4096)), 1);
        assert_eq!(no_split((128, 14336, 4096)), 1);
        assert_eq!(no_split((1024, 1024, 1024)), 1);
        assert_eq!(no_split((64, 8192, 64)), 1);
        assert_eq!(no_split((64, 64, 64 * (2 * SMALL_SPLIT_MIN_SLICES - 1))), 1);
        // Fewer than SPLIT_MIN_SPLITS: narrow tiles do as well without partials.
        let small_k = 64 * SMALL_SPLIT_MIN_SLICES;
        assert_eq!(no_split((64, 64, small_k * (SPLIT_MIN_SPLITS - 1))), 1);
        assert_eq!(bf16((64, 64, small_k * SPLIT_MIN_SPLITS)), (Step::Small, SPLIT_MIN_SPLITS));
        assert_eq!(tensor_split_for(Precision::Tf32, (256, 256, 256), 132).1, 1);
        assert_eq!(no_split((1, 1, 1)), 1);
        assert_eq!(no_split((0, 64, 65536)), 1);
    }

    #[test]
    fn fp8_splits_long_k_on_wide_tiles_to_fill_the_sms_once() {
        let fp8 = |dims| fp8_splits_for(dims, 132);
        // 512 slices of 128 in runs of 4; 128 in runs of 4; 32 in runs of 4 over 16 tiles; 40 in
        // runs of 4; 16 in runs of 4.
        assert_eq!(fp8((64, 64, 65536)), 128);
        assert_eq!(fp8((128, 128, 16384)), 32);
        assert_eq!(fp8((16, 4096, 4096)), 8);
        assert_eq!(fp8((17, 31, 5000)), 10);
        assert_eq!(fp8((130, 70, 2000)), 4);
        for no_split in [(4096, 4096, 4096), (128, 14336, 4096), (130, 70, 700), (1, 1, 1), (0, 64, 65536)] {
            assert_eq!(fp8(no_split), 1, "{no_split:?}");
        }
    }

    #[test]
    fn f32_long_k_on_few_tiles_splits_to_fill_every_block_of_the_sms_once() {
        let f32 = |dims| f32_splits_for(dims, 132);
        // 4096 slices of 16 in runs of 16; 1024 in runs of 16; 256 in runs of 64; 313 in runs
        // of 5; 32 in runs of 8; 16 in runs of 4.
        assert_eq!(f32((64, 64, 65536)), 256);
        assert_eq!(f32((128, 128, 16384)), 64);
        assert_eq!(f32((16, 4096, 4096)), 4);
        assert_eq!(f32((67, 61, 5003)), 63);
        assert_eq!(f32((512, 512, 512)), 4);
        assert_eq!(f32((256, 256, 256)), 4);
        // More tiles than SMs, or k too short to split.
        assert_eq!(f32((1024, 1024, 1024)), 1);
        assert_eq!(f32((128, 14336, 4096)), 1);
        assert_eq!(f32((64, 8192, 64)), 1);
        assert_eq!(f32((64, 64, 16 * (2 * F32_MIN_SLICES - 1))), 1);
        assert_eq!(f32((1, 1, 1)), 1);
        assert_eq!(f32((64, 0, 65536)), 1);
        assert_eq!(f32_splits_for((64, 64, 65536), 1), 2);
    }

    #[test]
    fn every_split_takes_at_least_one_slice_and_together_all_of_them() {
        for slices in 1..60 {
            for wanted in 0..70 {
                let splits = split_count(slices, wanted);
                assert!((1..=slices.max(1)).contains(&splits), "{slices} slices, {wanted} wanted: {splits}");
                let mut next = 0;
                for split in 0..splits {
                    let (first, count) = interface::matmul::split_slices(slices, split, splits);
                    assert!(first == next && count >= 1, "{slices} slices, split {split} of {splits}");
                    next = first + count;
                }
                assert_eq!(next, slices, "{slices} slices in {splits} splits");
            }
        }
    }

    /// The sizes of the parameters of the entry `kernel`, in the module that has it: all 64-bit
    /// here.
    fn ptx_parameters(kernel: &str) -> Vec<usize> {
        let entry = format!(".entry {kernel}(");
        let ptx = [KERNELS_PTX, HOPPER_PTX].into_iter().find(|ptx| ptx.contains(&entry));
        let ptx = ptx.unwrap_or_else(|| panic!("no {kernel} in the PTX"));
        let start = ptx.find(&entry).expect("the entry");
        let list = &ptx[start..start + ptx[start..].find(')').expect("a parameter list")];
        list.split(',').filter(|p| p.contains(".param")).map(|p| if p.contains(".u64 ") { 8 } else { 0 }).collect()
    }

    /// As `launch_checks.rs` checks a binding: `valid` accepted for `kernel` with its entry's
    /// parameters and refused for `other`, every one of `refused` refused.
    fn check_binding(
        kernel: &str,
        other: &str,
        valid: &dyn KernelArgs,
        refused: Vec<(&str, Box<dyn KernelArgs + '_>)>,
    ) {
        valid.checked_config(kernel).unwrap_or_else(|e| panic!("{kernel}: valid arguments refused: {e}"));
        assert_eq!(valid.params(kernel).sizes(), ptx_parameters(kernel), "{kernel}: binding vs PTX parameters");
        let is_refused = |result: GpuResult<LaunchConfig>, what: &str| match result {
            Err(GpuError::InvalidLaunch { .. }) => {}
            other => panic!("{kernel} with {what}: expected a refused launch, got {other:?}"),
        };
        is_refused(valid.checked_config(other), other);
        for (what, args) in refused {
            is_refused(args.checked_config(kernel), what);
        }
    }

    #[test]
    fn the_reduction_binding_refuses_what_its_kernel_must_not_touch() {
        let mut memory = FakeMemory::new();
        let (len, splits) = (4100, 7);
        let (partials, c) = (memory.slice::<f32>(splits * len), memory.slice::<f32>(len));
        let with =
            |partials, c, len, splits| -> Box<dyn KernelArgs> { Box::new(ReduceArgs { partials, c, len, splits }) };
        let refused = vec![
            ("partials short", with(memory.slice(splits * len - 1), c, len, splits)),
            ("C short", with(partials, memory.slice(len - 1), len, splits)),
            ("C inside the partials", with(partials, same_memory(partials), len, splits)),
            ("partials misaligned", with(shifted(memory.slice(splits * len + 1)), c, len, splits)),
            ("C misaligned", with(partials, shifted(memory.slice(len + 1)), len, splits)),
            ("no splits", with(partials, c, len, 0)),
            ("no elements", with(partials, c, 0, splits)),
        ];
        check_binding(REDUCE, "matmul_wgmma_bf16", &*with(partials, c, len, splits), refused);
        // Elements one at a time: a C one float past a 16-byte boundary is fine.
        let odd = with(memory.slice(splits * 4099), shifted(memory.slice(4100)), 4099, splits);
        odd.checked_config(REDUCE).expect("an odd length stores one float at a time");
    }

    #[test]
    fn the_split_binding_refuses_empty_splits_and_short_or_overlapping_partials() {
        let mut memory = FakeMemory::new();
        // 4000 of k is 63 slices of 64.
        let (m, n, k, splits) = (200, 72, 4000, 8);
        let (a, b) = (memory.slice::<u16>(m * k), memory.slice::<u16>(k * n));
        let operands = Operands { precision: Precision::Bf16, a, lda: k, b, ldb: n, m, n, k, zero_padded: true };
        // SAFETY: no launch with these maps runs: each case is only checked.
        let maps = unsafe { TensorMaps::assume_uploaded(operands, memory.slice(2)) };
        let partials = memory.slice::<f32>(splits * m * n);
        let with = |partials, splits| -> Box<dyn KernelArgs + '_> {
            Box::new(SplitArgs { maps: &maps, partials, m, n, k, splits, blocks: 16 })
        };
        let refused = vec![
            ("no split", with(partials, 0)),
            ("more splits than slices", with(memory.slice(64 * m * n), 64)),
            // 62 splits of 63 slices are runs of 2: the last 30 splits would be empty.
            ("an empty split", with(memory.slice(62 * m * n), 62)),
            ("partials short", with(memory.slice(splits * m * n - 1), splits)),
            ("partials misaligned", with(shifted(memory.slice(splits * m * n + 1)), splits)),
            ("partials over A", with(same_memory(a), splits)),
        ];
        let valid = with(partials, splits);
        check_binding("matmul_wgmma_bf16", "matmul_wgmma_persistent_f16", &*valid, refused);
        assert_eq!(valid.checked_config("matmul_wgmma_bf16").expect("a launch").grid, (1, 2, 8));
        with(memory.slice(63 * m * n), 63).checked_config("matmul_wgmma_bf16").expect("a slice per split");
        // A persistent step's layers: C's 4 small tiles each (of 16 blocks asked), none of 0.
        let small = "matmul_wgmma_small_bf16";
        assert_eq!(valid.checked_config(small).expect("a launch").grid, (4, 1, 8));
        let no_blocks = SplitArgs { maps: &maps, partials, m, n, k, splits, blocks: 0 };
        assert!(matches!(no_blocks.checked_config(small), Err(GpuError::InvalidLaunch { .. })));
    }

    #[test]
    fn the_f32_split_binding_refuses_empty_splits_and_short_misaligned_or_overlapping_buffers() {
        let mut memory = FakeMemory::new();
        // 1000 of k is 63 slices of 16.
        let (m, n, k, splits) = (130, 70, 1000, 8);
        let (a, b) = (memory.slice::<f32>(m * k), memory.slice::<f32>(k * n));
        let partials = memory.slice::<f32>(splits * m * n);
        let with = |a, b, partials, splits| -> Box<dyn KernelArgs> {
            Box::new(SgemmSplitArgs { a, b, partials, m, n, k, splits })
        };
        let refused = vec![
            ("no split", with(a, b, partials, 0)),
            ("more splits than slices", with(a, b, memory.slice(64 * m * n), 64)),
            // 62 splits of 63 slices are runs of 2: the last 30 splits would be empty.
            ("an empty split", with(a, b, memory.slice(62 * m * n), 62)),
            ("A short", with(memory.slice(m * k - 1), b, partials, splits)),
            ("B short", with(a, memory.slice(k * n - 1), partials, splits)),
            ("partials short", with(a, b, memory.slice(splits * m * n - 1), splits)),
            ("A misaligned", with(shifted(memory.slice(m * k + 1)), b, partials, splits)),
            ("partials misaligned", with(a, b, shifted(memory.slice(splits * m * n + 1)), splits)),
            ("partials over A", with(a, b, same_memory(a), splits)),
            ("partials over B", with(a, b, same_memory(b), splits)),
        ];
        let valid = with(a, b, partials, splits);
        check_binding(F32_SPLIT, "matmul_vec4_64x64_t4", &*valid, refused);
        assert_eq!(valid.checked_config(F32_SPLIT).expect("a launch").grid, (2, 3, 8));
        with(a, b, memory.slice(63 * m * n), 63).checked_config(F32_SPLIT).expect("a slice per split");
    }

    #[test]
    fn step_5d_takes_the_same_arguments_over_its_own_slices() {
        let mut memory = FakeMemory::new();
        // 1000 of k is 125 slices of 8.
        let (m, n, k) = (130, 70, 1000);
        let (a, b) = (memory.slice::<f32>(m * k), memory.slice::<f32>(k * n));
        let with = |partials, splits| SgemmSplitArgs { a, b, partials, m, n, k, splits };
        // 124 splits of 125 slices are runs of 2: the last 61 would be empty.
        let empty = with(memory.slice(124 * m * n), 124);
        assert!(empty.checked_config(F32_SPLIT_ASYNC).is_err());
        // As many splits as slices: one slice each, which step 4d's 63 slices could not give.
        let each = with(memory.slice(125 * m * n), 125);
        assert_eq!(each.checked_config(F32_SPLIT_ASYNC).expect("a slice per split").grid, (1, 2, 125));
        assert!(each.checked_config(F32_SPLIT).is_err());
        assert!(with(memory.slice(4 * m * n), 4).checked_config("matmul_async_128x256").is_err());
    }

    #[test]
    fn the_reduction_gives_each_quad_a_power_of_two_of_threads() {
        assert_eq!([1, 2, 4, 5, 8, 9, 16, 64, 128, 1000].map(reduce_groups), [1, 1, 1, 2, 2, 4, 4, 16, 32, 32]);
        for splits in 1..300 {
            let config = reduce_launch(4099, splits).expect("a launch");
            let quads = REDUCE_THREADS / reduce_groups(splits);
            assert!(config.grid.0 as usize * quads * 4 >= 4099);
        }
    }
}
