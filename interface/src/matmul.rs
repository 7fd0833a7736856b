//! Launch shapes of the SGEMM kernels, the steps of `kernels/src/matmul/`.

use crate::LaunchBounds;

/// Threads per block side, and output tile side, of `matmul_naive`.
pub const NAIVE_BLOCK: usize = 16;
/// Tile sides of the shared-memory tiled kernels `matmul_tiled_16` and `matmul_tiled_32`.
pub const SMALL_TILE: usize = 16;
pub const LARGE_TILE: usize = 32;

/// Dynamic shared memory of a tiled kernel: one tile of `A` and one of `B`.
pub const fn tiled_shared_bytes(tile: usize) -> usize {
    2 * tile * tile * 4
}
pub const SMALL_TILE_SHARED_BYTES: usize = tiled_shared_bytes(SMALL_TILE);
pub const LARGE_TILE_SHARED_BYTES: usize = tiled_shared_bytes(LARGE_TILE);

/// Register blocking (step 3, and steps 4a and 4b on the same tile): a block computes a BM×BN
/// tile of `C`, walking `k` in steps of BK; each thread owns a TM×TN sub-tile.
pub const BM: usize = 128;
pub const BN: usize = 128;
pub const BK: usize = 8;
pub const TM: usize = 8;
pub const TN: usize = 8;
/// Threads per block of steps 3, 4a and 4b: one per TM×TN sub-tile.
pub const BLOCKED_THREADS: usize = (BM / TM) * (BN / TN);
/// One stage in shared memory: a BM×BK slice of `A` and a BK×BN slice of `B`.
pub const BLOCKED_SHARED_BYTES: usize = BK * (BM + BN) * 4;

/// One configuration of the vectorized, double-buffered SGEMM `matmul_vec4::<BM, BN, BK, TM,
/// TN>`: a block of `threads()` threads computes a `bm × bn` tile of `C`, walking `k` in
/// slices of `bk`; each thread owns a `tm × tn` sub-tile (4 or 8 each, as groups of 4).
/// `host matmul --tune` times every configuration on the shape at hand and keeps the fastest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileConfig {
    pub kernel: &'static str,
    pub bm: usize,
    pub bn: usize,
    pub bk: usize,
    pub tm: usize,
    pub tn: usize,
    /// Blocks per SM the registers are capped for (`__launch_bounds__`' second argument).
    pub min_blocks_per_sm: u32,
}

impl TileConfig {
    /// A configuration; one the kernel cannot run stops the build of both crates.
    pub const fn new(
        kernel: &'static str,
        (bm, bn, bk): (usize, usize, usize),
        (tm, tn): (usize, usize),
        min_blocks_per_sm: u32,
    ) -> Self {
        let config = Self { kernel, bm, bn, bk, tm, tn, min_blocks_per_sm };
        assert!(config.is_valid(), "an SGEMM configuration matmul_vec4 cannot run");
        config
    }

    pub const fn threads(&self) -> usize {
        (self.bm / self.tm) * (self.bn / self.tn)
    }

    /// Two stages (double buffering) of one A slice and one B slice.
    pub const fn shared_bytes(&self) -> usize {
        2 * self.bk * (self.bm + self.bn) * 4
    }

    pub const fn bounds(&self) -> LaunchBounds {
        LaunchBounds {
            kernel: self.kernel,
            max_threads: self.threads() as u32,
            min_blocks_per_sm: self.min_blocks_per_sm,
        }
    }

    /// Whether the kernel's layout works: every thread stages the same whole number (1 to
    /// [`MAX_LOADS`]) of 16-byte pieces of each slice, and sub-tiles are 4 or 8 on a side.
    pub const fn is_valid(&self) -> bool {
        let (threads, bk) = (self.threads(), self.bk);
        let a_pieces = self.bm * bk / 4;
        let b_pieces = bk * self.bn / 4;
        (self.tm == 4 || self.tm == 8)
            && (self.tn == 4 || self.tn == 8)
            && self.bm % self.tm == 0
            && self.bn % self.tn == 0
            && (bk == 8 || bk == 16)
            && a_pieces % threads == 0
            && b_pieces % threads == 0
            && a_pieces / threads >= 1
            && a_pieces / threads <= MAX_LOADS
            && b_pieces / threads >= 1
            && b_pieces / threads <= MAX_LOADS
    }
}

/// Most 16-byte pieces of one slice a thread of `matmul_vec4` stages per step.
pub const MAX_LOADS: usize = 4;

/// Step 5a, `matmul_cp_async_128x128`: step 4c's default tile, its two stages filled by
/// `cp.async` copies.
pub const CP_ASYNC_BM: usize = 128;
pub const CP_ASYNC_BN: usize = 128;
pub const CP_ASYNC_BK: usize = 16;
pub const CP_ASYNC_TM: usize = 8;
pub const CP_ASYNC_TN: usize = 8;
pub const CP_ASYNC_THREADS: usize = (CP_ASYNC_BM / CP_ASYNC_TM) * (CP_ASYNC_BN / CP_ASYNC_TN);
/// Two stages of one A slice and one B slice.
pub const CP_ASYNC_SHARED_BYTES: usize = 2 * CP_ASYNC_BK * (CP_ASYNC_BM + CP_ASYNC_BN) * 4;
/// One block per SM, as step 4c's tile; `TileConfig::new` checks that the layout works.
pub const CP_ASYNC_BOUNDS: LaunchBounds =
    TileConfig::new("matmul_cp_async_128x128", (CP_ASYNC_BM, CP_ASYNC_BN, CP_ASYNC_BK), (CP_ASYNC_TM, CP_ASYNC_TN), 1)
        .bounds();

/// Steps 5b (`matmul_warps_128x256`) and 5c (`matmul_async_128x256`): a block of
/// [`ASYNC_THREADS`] computes an `ASYNC_BM × ASYNC_BN` tile of `C` in slices of `ASYNC_BK`
/// along `k`, each thread an `ASYNC_TM × ASYNC_TN` sub-tile; [`ASYNC_STAGES`] slices are in
/// flight in shared memory.
pub const ASYNC_BM: usize = 128;
pub const ASYNC_BN: usize = 256;
pub const ASYNC_BK: usize = 8;
pub const ASYNC_TM: usize = 8;
pub const ASYNC_TN: usize = 16;
pub const ASYNC_STAGES: usize = 3;
pub const ASYNC_THREADS: usize = (ASYNC_BM / ASYNC_TM) * (ASYNC_BN / ASYNC_TN);
/// Floats between consecutive `k` of the transposed `A` slice: 4 more than `ASYNC_BM`, so the
/// 8 `k` × 4 rows a warp stages per copy fall in 32 different banks.
pub const ASYNC_A_STRIDE: usize = ASYNC_BM + 4;
/// One stage: the transposed `A` slice, then the `B` slice.
pub const ASYNC_STAGE_FLOATS: usize = ASYNC_BK * (ASYNC_A_STRIDE + ASYNC_BN);
pub const ASYNC_SHARED_BYTES: usize = ASYNC_STAGES * ASYNC_STAGE_FLOATS * 4;
/// Their registers (about 250 of them) allow one block per SM.
pub const WARPS_BOUNDS: LaunchBounds =
    LaunchBounds { kernel: "matmul_warps_128x256", max_threads: ASYNC_THREADS as u32, min_blocks_per_sm: 1 };
pub const ASYNC_BOUNDS: LaunchBounds =
    LaunchBounds { kernel: "matmul_async_128x256", max_threads: ASYNC_THREADS as u32, min_blocks_per_sm: 1 };
/// Step 5d, `matmul_async_128x256_split`: step 5c's kernel on a grid as deep as its splits of k.
pub const ASYNC_SPLIT_BOUNDS: LaunchBounds =
    LaunchBounds { kernel: "matmul_async_128x256_split", max_threads: ASYNC_THREADS as u32, min_blocks_per_sm: 1 };
/// Step 5d's fewest slices of [`ASYNC_BK`] a split (128 of k): shorter runs spend more of their
/// time filling the pipeline and writing their partial products than multiplying.
pub const ASYNC_SPLIT_MIN_SLICES: usize = 16;
/// Step 5d's most waves of blocks: more splits would each be short, their partials many.
pub const ASYNC_SPLIT_MAX_WAVES: usize = 4;
/// What each split of step 5d costs beyond its share of the work, in percent of one block's
/// walk down the whole of k: its partial product written and summed, its pipeline filled.
pub const ASYNC_SPLIT_COST_PERCENT: usize = 3;
// The kernels' layout: 8 warps of 4×8 threads, 4-byte copies of A with 8 consecutive `k` per
// row (a 32-byte sector), a whole number of 16-byte copies of B per thread, three stages (their
// wait keeps one group of copies in flight), and at most 48 KiB of shared memory (the most a
// launch gets without opting in).
const _: () = assert!(
    ASYNC_BK == 8
        && ASYNC_STAGES == 3
        && ASYNC_TM == 8
        && ASYNC_TN == 16
        && ASYNC_THREADS == 256
        && ASYNC_BM * ASYNC_BK % ASYNC_THREADS == 0
        && ASYNC_BK * ASYNC_BN / 4 % ASYNC_THREADS == 0
        && ASYNC_SHARED_BYTES <= 48 * 1024
);

/// Step 4d, split k (`matmul_vec4_64x64_split`): step 4c's kernel on 64×64 tiles of 4×4
/// thread tiles, on a grid whose layer z takes one run of k's slices of [`SPLIT_BK`]
/// ([`split_slices`]) and writes its partial product to layer z of a workspace.
pub const SPLIT_BM: usize = 64;
pub const SPLIT_BN: usize = 64;
pub const SPLIT_BK: usize = 16;
pub const SPLIT_TM: usize = 4;
pub const SPLIT_TN: usize = 4;
/// Blocks an SM holds at once (its registers and shared memory allow three).
pub const SPLIT_BLOCKS_PER_SM: u32 = 3;
/// Fewest slices of k a split takes: shorter runs spend more on their partials than they gain.
pub const SPLIT_MIN_SLICES: usize = 4;
/// Blocks per SM that split k's grid aims at: two of the three an SM holds. Measured over
/// every count of splits at eight shapes, the fastest count filled about two a SM each time:
/// the third block of an SM adds more waiting on shared memory than it hides.
pub const SPLIT_TARGET_BLOCKS_PER_SM: usize = 2;
/// The tile configuration of step 4d; `TileConfig::new` checks that the layout works.
pub const SPLIT_TILE: TileConfig = TileConfig::new(
    "matmul_vec4_64x64_split",
    (SPLIT_BM, SPLIT_BN, SPLIT_BK),
    (SPLIT_TM, SPLIT_TN),
    SPLIT_BLOCKS_PER_SM,
);
const _: () = assert!(SPLIT_TARGET_BLOCKS_PER_SM <= SPLIT_BLOCKS_PER_SM as usize);
pub const SPLIT_THREADS: usize = SPLIT_TILE.threads();
pub const SPLIT_SHARED_BYTES: usize = SPLIT_TILE.shared_bytes();

/// Threads of a block of the reduction that sums the splits' partial products into C.
pub const REDUCE_THREADS: usize = 256;
/// Splits one thread of the reduction sums, about: the reduction gives each quad of C
/// [`reduce_groups`] threads, so that each loads this many partials at once.
pub const REDUCE_SPLITS_PER_THREAD: usize = 4;
/// Most threads the reduction gives one quad of C.
pub const REDUCE_MAX_GROUPS: usize = 32;

/// The first slice of k and the slices that split `split` of `splits` takes of `slices`: the
/// slices in runs of `⌈slices / splits⌉`, the last run shorter. Every split has at least one
/// when `(splits − 1) · ⌈slices / splits⌉ < slices`, which [`split_count`] ensures.
pub const fn split_slices(slices: usize, split: usize, splits: usize) -> (usize, usize) {
    split_runs(slices, split, (slices + splits - 1) / splits)
}

/// The first slice of k and the slices that split `split` takes of `slices` in runs of `per`,
/// the last run shorter: [`split_slices`] once the run's length is known (a kernel that divides
/// by a count it knows is not zero computes it without the division's zero check).
///
/// ```
/// use interface::matmul::{split_runs, split_slices};
///
/// // 10 slices in runs of 4: the third split takes the last 2.
/// assert_eq!(split_runs(10, 2, 4), (8, 2));
/// assert_eq!(split_runs(10, 2, 4), split_slices(10, 2, 3));
/// ```
pub const fn split_runs(slices: usize, split: usize, per: usize) -> (usize, usize) {
    let first = split * per;
    let rest = slices.saturating_sub(first);
    (first, if rest < per { rest } else { per })
}

/// `wanted` splits of `slices` slices made even: the fewest runs of `⌈slices / wanted⌉` that
/// cover them, so that no split is left empty. Between 1 and `slices`.
pub const fn split_count(slices: usize, wanted: usize) -> usize {
    let wanted = if wanted == 0 {
        1
    } else if wanted > slices {
        slices
    } else {
        wanted
    };
    let per = (slices + wanted - 1) / wanted;
    (slices + per - 1) / per
}

/// Threads the reduction gives each quad of C for `splits` partials, each summing every
/// `groups`-th of them: a power of two near `splits / REDUCE_SPLITS_PER_THREAD`, at most
/// [`REDUCE_MAX_GROUPS`]. A block covers `REDUCE_THREADS / groups` quads.
pub const fn reduce_groups(splits: usize) -> usize {
    let wanted = (splits + REDUCE_SPLITS_PER_THREAD - 1) / REDUCE_SPLITS_PER_THREAD;
    let mut groups = 1;
    while groups < wanted && groups < REDUCE_MAX_GROUPS {
        groups *= 2;
    }
    groups
}

const _: () = assert!(REDUCE_THREADS % REDUCE_MAX_GROUPS == 0 && REDUCE_MAX_GROUPS.is_power_of_two());

/// Calls `$then!` with every SGEMM configuration, as `(kernel, BM, BN, BK, TM, TN, blocks per
/// SM)` tuples: the kernels crate defines one kernel per tuple, this crate lists them as
/// [`TILE_CONFIGS`]; the list is written once, here. The first is the default (`vec4`).
#[macro_export]
macro_rules! sgemm_configs {
    ($then:ident) => {
        $then! {
            (matmul_vec4_128x128, 128, 128, 16, 8, 8, 1),
            (matmul_vec4_128x128_k8, 128, 128, 8, 8, 8, 1),
            (matmul_vec4_128x64, 128, 64, 8, 8, 8, 3),
            (matmul_vec4_64x128, 64, 128, 8, 8, 8, 3),
            (matmul_vec4_64x64, 64, 64, 8, 8, 8, 6),
            (matmul_vec4_64x64_t4, 64, 64, 16, 4, 4, 3),
            (matmul_vec4_128x64_k16, 128, 64, 16, 8, 8, 2),
        }
    };
}

macro_rules! tile_configs {
    ($(($kernel:ident, $bm:literal, $bn:literal, $bk:literal, $tm:literal, $tn:literal, $blocks:literal)),+ $(,)?) => {
        /// Every SGEMM configuration; the first is the default.
        pub const TILE_CONFIGS: &[TileConfig] =
            &[$(TileConfig::new(stringify!($kernel), ($bm, $bn, $bk), ($tm, $tn), $blocks)),+];
        /// Their launch bounds and those of steps 5a to 6b, split k's and its reduction's, for the
        /// PTX builder.
        pub const SGEMM_BOUNDS: &[LaunchBounds] = &[
            $(TileConfig::new(stringify!($kernel), ($bm, $bn, $bk), ($tm, $tn), $blocks).bounds()),+,
            CP_ASYNC_BOUNDS,
            WARPS_BOUNDS,
            ASYNC_BOUNDS,
            ASYNC_SPLIT_BOUNDS,
            SPLIT_TILE.bounds(),
            LaunchBounds { kernel: "matmul_split_reduce", max_threads: REDUCE_THREADS as u32, min_blocks_per_sm: 1 },
            MMA_BOUNDS[0],
            MMA_BOUNDS[1],
            MMA_BOUNDS[2],
        ];
    };
}
crate::sgemm_configs!(tile_configs);

/// The configuration of `matmul_vec4_128x128`, the `vec4` step and the untuned default.
pub const DEFAULT_TILE: TileConfig = TILE_CONFIGS[0];

/// Steps 6a and 6b, the tensor cores through `mma.sync`: a block of [`MMA_THREADS`] (8 warps,
/// 2 down × 4 across, each a 64×64 warp tile) computes an `MMA_BM × MMA_BN` tile of `C`, with
/// [`MMA_STAGES`] slices of `k` in flight in shared memory.
pub const MMA_BM: usize = 128;
pub const MMA_BN: usize = 256;
pub const MMA_WARPS_M: usize = 2;
pub const MMA_WARPS_N: usize = 4;
pub const MMA_WARP_M: usize = MMA_BM / MMA_WARPS_M;
pub const MMA_WARP_N: usize = MMA_BN / MMA_WARPS_N;
pub const MMA_THREADS: usize = 32 * MMA_WARPS_M * MMA_WARPS_N;
pub const MMA_STAGES: usize = 3;
/// The tensor-core kernels read `A` and `B` as the conversion kernels write them: rows padded
/// with zeros to a multiple of this many elements. Every row then starts 16-byte aligned, and
/// a row of 16-bit values is a whole number of Hopper's 128-byte TMA box rows: the tensor maps
/// reach to the padded end, so that no box lies partly past a row, which TMA copies slowly.
pub const MMA_ROW_ALIGN: usize = 64;

/// Elements in a row of `cols` once padded to [`MMA_ROW_ALIGN`].
pub const fn padded(cols: usize) -> usize {
    (cols + MMA_ROW_ALIGN - 1) / MMA_ROW_ALIGN * MMA_ROW_ALIGN
}

/// Step 6a, `matmul_mma_tf32_128x256`: slices of [`TF32_BK`] floats of `k`; the rows of the
/// staged slices are padded (by 4 floats for `A`, 8 for `B`) so that the fragment loads of a
/// warp hit 32 different banks.
pub const TF32_BK: usize = 32;
pub const TF32_A_STRIDE: usize = TF32_BK + 4;
pub const TF32_B_STRIDE: usize = MMA_BN + 8;
pub const TF32_STAGE_FLOATS: usize = MMA_BM * TF32_A_STRIDE + TF32_BK * TF32_B_STRIDE;
pub const TF32_SHARED_BYTES: usize = MMA_STAGES * TF32_STAGE_FLOATS * 4;

/// Step 6b, `matmul_mma_bf16_128x256` and `matmul_mma_f16_128x256`: slices of [`HALF_BK`]
/// 16-bit elements of `k`, unpadded, their 16-byte pieces swizzled (XOR) within 128-byte lines.
pub const HALF_BK: usize = 64;
pub const HALF_STAGE_ELEMENTS: usize = (MMA_BM + MMA_BN) * HALF_BK;
pub const HALF_SHARED_BYTES: usize = MMA_STAGES * HALF_STAGE_ELEMENTS * 2;

/// The tensor-core kernels' registers (a 64×64 warp tile is 128 accumulators a thread) allow
/// one block per SM.
pub const MMA_BOUNDS: [LaunchBounds; 3] = [
    LaunchBounds { kernel: "matmul_mma_tf32_128x256", max_threads: MMA_THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_mma_bf16_128x256", max_threads: MMA_THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_mma_f16_128x256", max_threads: MMA_THREADS as u32, min_blocks_per_sm: 1 },
];

/// Threads per block of the conversion kernels (`convert_tf32`, `convert_bf16`, `convert_f16`).
pub const CONVERT_THREADS: usize = 256;

// The kernels' layout: each thread stages four 16-byte pieces of `A` and eight of `B` per
// slice (both dtypes: a slice's row of `A` is 128 bytes either way), the warp tile is a whole
// number of m16 × n16 fragments, and the stages fit the H100's 227 KiB.
const _: () = assert!(
    MMA_THREADS == 256
        && MMA_BM * TF32_BK / 4 == 4 * MMA_THREADS
        && TF32_BK * MMA_BN / 4 == 8 * MMA_THREADS
        && MMA_BM * HALF_BK / 8 == 4 * MMA_THREADS
        && HALF_BK * MMA_BN / 8 == 8 * MMA_THREADS
        && MMA_WARP_M == 64
        && MMA_WARP_N == 64
        && TF32_SHARED_BYTES <= 227 * 1024
        && HALF_SHARED_BYTES <= 227 * 1024
);
