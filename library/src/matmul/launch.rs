//! Each SGEMM kernel's launch shape, and the binding of the signature they all share.

use crate::gpu::{
    product, refuse, require_aligned, require_disjoint, require_len, GpuResult, KernelArgs, LaunchConfig, Params,
};
use cust::memory::DeviceSlice;
use interface::matmul::{
    TileConfig, ASYNC_BM, ASYNC_BN, ASYNC_SHARED_BYTES, ASYNC_THREADS, BLOCKED_SHARED_BYTES, BLOCKED_THREADS, BM, BN,
    CP_ASYNC_BM, CP_ASYNC_BN, CP_ASYNC_SHARED_BYTES, CP_ASYNC_THREADS, DEFAULT_TILE, HALF_SHARED_BYTES, LARGE_TILE,
    LARGE_TILE_SHARED_BYTES, MMA_BM, MMA_BN, MMA_THREADS, NAIVE_BLOCK, SMALL_TILE, SMALL_TILE_SHARED_BYTES,
    TF32_SHARED_BYTES, TILE_CONFIGS,
};

crate::variants! {
    /// The steps of the ladder (`kernels/src/matmul/`), each adding one idea to the one before.
    pub enum Step {
        /// 1: one thread per output.
        Naive => ("naive", "matmul_naive"),
        /// 2: shared-memory tiles, 16×16.
        Tiled16 => ("tiled16", "matmul_tiled_16"),
        /// 2: shared-memory tiles, 32×32.
        Tiled32 => ("tiled32", "matmul_tiled_32"),
        /// 3: 8×8 outputs per thread, in registers, on 128×128 tiles.
        Blocked => ("blocked", "matmul_blocked_128x128"),
        /// 4a: 16-byte global loads and stores.
        Vload => ("vload", "matmul_vload_128x128"),
        /// 4b: conflict-free 16-byte shared loads.
        Vshared => ("vshared", "matmul_vshared_128x128"),
        /// 4c: double buffering through registers.
        Vec4 => ("vec4", "matmul_vec4_128x128"),
        /// 5a: `cp.async` copies, two stages.
        CpAsync => ("cp-async", "matmul_cp_async_128x128"),
        /// 5b: three stages, warp tiles, 8×16 outputs per thread on 128×256 tiles.
        Warps => ("warps", "matmul_warps_128x256"),
        /// 5c: step 5b scheduled for ptxas.
        Async => ("async", "matmul_async_128x256"),
    }
}

crate::variants! {
    /// The tensor-core steps, one per `--dtype` other than f32 (`kernels/src/matmul/mma_*.rs`).
    pub enum TensorStep {
        /// `mma.sync` in TF32 (6a).
        MmaTf32 => ("mma-tf32", "matmul_mma_tf32_128x256"),
        /// `mma.sync` in BF16, with `ldmatrix` (6b).
        MmaBf16 => ("mma-bf16", "matmul_mma_bf16_128x256"),
        /// `mma.sync` in FP16, with `ldmatrix` (6b).
        MmaF16 => ("mma-f16", "matmul_mma_f16_128x256"),
    }
}

impl Step {
    /// The launch of this step for an `m × n` C: one block per tile of C, with the threads
    /// and shared memory its kernel is written for (`interface::matmul`).
    pub fn launch_config(self, m: usize, n: usize) -> GpuResult<LaunchConfig> {
        let square =
            |tile: usize, shared: usize| LaunchConfig::tiles_2d(n, m, (tile, tile), (tile as u32, tile as u32), shared);
        let blocked = || LaunchConfig::tiles_2d(n, m, (BN, BM), (BLOCKED_THREADS as u32, 1), BLOCKED_SHARED_BYTES);
        let warp_tiled =
            || LaunchConfig::tiles_2d(n, m, (ASYNC_BN, ASYNC_BM), (ASYNC_THREADS as u32, 1), ASYNC_SHARED_BYTES);
        match self {
            Step::Naive => square(NAIVE_BLOCK, 0),
            Step::Tiled16 => square(SMALL_TILE, SMALL_TILE_SHARED_BYTES),
            Step::Tiled32 => square(LARGE_TILE, LARGE_TILE_SHARED_BYTES),
            // Steps 4a and 4b keep step 3's tile, threads and shared memory.
            Step::Blocked | Step::Vload | Step::Vshared => blocked(),
            Step::Vec4 => tile_launch(&DEFAULT_TILE, m, n),
            Step::CpAsync => LaunchConfig::tiles_2d(
                n,
                m,
                (CP_ASYNC_BN, CP_ASYNC_BM),
                (CP_ASYNC_THREADS as u32, 1),
                CP_ASYNC_SHARED_BYTES,
            ),
            // Step 5c is step 5b rescheduled: the same launch.
            Step::Warps | Step::Async => warp_tiled(),
        }
    }
}

/// The launch of an SGEMM configuration: one block of `tile.threads()` per tile of C.
pub fn tile_launch(tile: &TileConfig, m: usize, n: usize) -> GpuResult<LaunchConfig> {
    LaunchConfig::tiles_2d(n, m, (tile.bn, tile.bm), (tile.threads() as u32, 1), tile.shared_bytes())
}

/// `128x64x8/8x8`: the block tile BM×BN×BK, then the thread tile TM×TN.
pub fn tile_label(tile: &TileConfig) -> String {
    format!("{}x{}x{}/{}x{}", tile.bm, tile.bn, tile.bk, tile.tm, tile.tn)
}

/// The tile configuration (`interface::matmul::TILE_CONFIGS`) whose kernel is `kernel`, if any.
pub fn tile_of(kernel: &str) -> Option<&'static TileConfig> {
    TILE_CONFIGS.iter().find(|t| t.kernel == kernel)
}

/// The launch of any matmul product: a tensor step's, or [`launch_config`]'s.
pub fn product_launch(kernel: &str, m: usize, n: usize) -> GpuResult<LaunchConfig> {
    match TensorStep::named(kernel) {
        Ok(step) => mma_launch(step, m, n),
        Err(_) => launch_config(kernel, m, n),
    }
}

/// The launch of an f32 product: a tutorial step's or a configuration's.
pub fn launch_config(kernel: &str, m: usize, n: usize) -> GpuResult<LaunchConfig> {
    match (Step::ALL.iter().find(|s| s.kernel() == kernel), tile_of(kernel)) {
        (Some(step), _) => step.launch_config(m, n),
        (None, Some(tile)) => tile_launch(tile, m, n),
        (None, None) => Err(refuse(kernel, "it is not a matmul kernel")),
    }
}

/// Whether `kernel` moves four floats per access, so its matrices must start 16-byte aligned.
fn vector_access(kernel: &str) -> bool {
    !matches!(kernel, "matmul_naive" | "matmul_tiled_16" | "matmul_tiled_32" | "matmul_blocked_128x128")
}

/// The arguments of every SGEMM kernel: `C = A × B` with A m×k, B k×n and C m×n, row-major.
pub struct SgemmArgs<'a> {
    /// A, m × k.
    pub a: &'a DeviceSlice<f32>,
    /// B, k × n.
    pub b: &'a DeviceSlice<f32>,
    /// C, m × n, written.
    pub c: &'a DeviceSlice<f32>,
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B: the inner dimension.
    pub k: usize,
}

// SAFETY: the kernels read `a[..m·k]` and `b[..k·n]` and write `c[..m·n]`; all three are checked
// to be that long (the products checked for overflow) and C not to overlap A or B. The kernels
// with 16-byte accesses get matrices checked 16-byte aligned. The shape is the one each kernel's
// indexing and shared memory are written for (`launch_config`). The parameters are
// `a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize`.
unsafe impl KernelArgs for SgemmArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let (m, n, k) = (self.m, self.n, self.k);
        let (a_len, b_len, c_len) = (product(kernel, m, k)?, product(kernel, k, n)?, product(kernel, m, n)?);
        require_len(kernel, "A", self.a, a_len)?;
        require_len(kernel, "B", self.b, b_len)?;
        require_len(kernel, "C", self.c, c_len)?;
        require_disjoint(kernel, ("C", self.c, c_len), ("A", self.a, a_len))?;
        require_disjoint(kernel, ("C", self.c, c_len), ("B", self.b, b_len))?;
        if vector_access(kernel) {
            for (what, matrix) in [("A", self.a), ("B", self.b), ("C", self.c)] {
                require_aligned(kernel, what, matrix, 16)?;
            }
        }
        launch_config(kernel, m, n)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.a).slice(self.b).pointer(self.c).value(self.m).value(self.n).value(self.k)
    }
}

/// The launch of a tensor-core product: one block of `MMA_THREADS` per 128×256 tile of C.
pub fn mma_launch(step: TensorStep, m: usize, n: usize) -> GpuResult<LaunchConfig> {
    let shared = if step == TensorStep::MmaTf32 { TF32_SHARED_BYTES } else { HALF_SHARED_BYTES };
    LaunchConfig::tiles_2d(n, m, (MMA_BN, MMA_BM), (MMA_THREADS as u32, 1), shared)
}
