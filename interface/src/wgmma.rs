//! Sizes of the Hopper matrix products (`kernels/src/matmul/wgmma.rs`): TF32, BF16 or FP16
//! inputs, f32 accumulators and output, on `wgmma.mma_async` fed by TMA.
//!
//! A block computes a `BM × BN` tile of C with three warpgroups: one producer, which issues the
//! TMA copies, and [`CONSUMERS`] consumers, each owning `64 × BN` of the tile (one
//! `m64n256k16` instruction per 16 of k, or `m64n256k8` per 8 for TF32). The k dimension
//! advances one 128-byte row of the swizzle at a time ([`BK`] 16-bit elements, [`BK_TF32`]
//! TF32 ones) through [`STAGES`] shared-memory stages of equal size for every type.

use crate::LaunchBounds;

/// Rows of C per block: one 64-row wgmma per consumer warpgroup.
pub const BM: usize = 128;
/// Columns of C per block: the widest wgmma (`n256`).
pub const BN: usize = 256;
/// k per stage: 64 16-bit elements, 128 bytes, the span of the 128-byte swizzle.
pub const BK: usize = 64;
/// k per stage for TF32: 32 elements of 4 bytes, the same 128-byte span.
pub const BK_TF32: usize = 32;
/// k per stage for FP8 (e4m3): 128 one-byte elements, the same 128-byte span; one
/// `m64n256k32` instruction per 32 of them.
pub const BK_FP8: usize = 128;
/// Stages in flight between the producer and the consumers.
pub const STAGES: usize = 4;
/// Consumer warpgroups.
pub const CONSUMERS: usize = 2;
/// A warpgroup: four warps that issue one wgmma together.
pub const WARPGROUP: usize = 128;
/// The producer warpgroup and the consumers.
pub const THREADS: usize = (CONSUMERS + 1) * WARPGROUP;
/// Columns of B in one TMA box: a stage of B is `BN / BOX_N` boxes. For 16-bit types a box is
/// `BK` rows of 64 elements (128 bytes, the swizzle span); TF32's wgmma reads B only contiguous
/// along k, so its box is 64 rows of Bᵀ, each `BK_TF32` elements: 8 KiB either way.
pub const BOX_N: usize = 64;
/// Bytes of one stage of A (`BM × BK`) and of B (`BK × BN`), 16-bit elements; TF32's stages,
/// half as deep in k with elements twice as wide, are the same bytes.
pub const A_STAGE_BYTES: usize = BM * BK * 2;
pub const B_STAGE_BYTES: usize = BK * BN * 2;
pub const STAGE_BYTES: usize = A_STAGE_BYTES + B_STAGE_BYTES;
/// The 128-byte swizzle repeats every 8 rows of 128 bytes: tiles start on this boundary, and
/// the kernel rounds its dynamic shared memory up to it.
pub const SWIZZLE_ALIGN: usize = 1024;
/// The epilogue's staging, for a C whose rows are not 16-byte aligned (`n` not a multiple of
/// 4): each consumer warp passes its 16 rows through shared memory 16 columns at a time, so
/// that a store instruction writes two rows' 64 contiguous bytes rather than 4 bytes of each
/// of 8 rows. A staged row is [`EPILOGUE_STRIDE`] floats apart: the pairs the accumulators
/// write and the rows the stores read then fall on distinct banks.
pub const EPILOGUE_COLS: usize = 16;
pub const EPILOGUE_STRIDE: usize = 24;
/// One consumer warp's staging: 16 rows.
pub const EPILOGUE_WARP_BYTES: usize = 16 * EPILOGUE_STRIDE * 4;
pub const EPILOGUE_BYTES: usize = CONSUMERS * WARPGROUP / 32 * EPILOGUE_WARP_BYTES;
/// The stages, two mbarriers (8 bytes) per stage, the epilogue's staging, and the slack to
/// align the stages.
pub const SHARED_BYTES: usize = SWIZZLE_ALIGN + STAGES * STAGE_BYTES + 2 * STAGES * 8 + EPILOGUE_BYTES;
/// Registers per thread after `setmaxnreg`: the producer gives registers back, the consumers,
/// which hold `BN / 2` accumulators each, take them. `(PRODUCER + CONSUMERS · CONSUMER) ·
/// WARPGROUP` stays within the SM's 65536.
pub const PRODUCER_REGISTERS: u32 = 40;
pub const CONSUMER_REGISTERS: u32 = 232;

/// Step H5, narrow tiles (`kernels/src/matmul/wgmma_narrow.rs`): `BM × NARROW_BN` tiles, each
/// consumer one `m64n128` instruction per k-step, for products whose `BM × BN` tiles would
/// leave SMs idle. Half the bytes of B per stage leave room for more stages.
pub const NARROW_BN: usize = 128;
pub const NARROW_STAGES: usize = 6;
pub const NARROW_STAGE_BYTES: usize = A_STAGE_BYTES + BK * NARROW_BN * 2;
pub const NARROW_SHARED_BYTES: usize =
    SWIZZLE_ALIGN + NARROW_STAGES * NARROW_STAGE_BYTES + 2 * NARROW_STAGES * 8 + EPILOGUE_BYTES;

/// Step H6, small tiles (`kernels/src/matmul/wgmma_small.rs`): `BM × SMALL_BN` tiles, each
/// consumer one `m64n64` instruction per k-step, for products too small to keep the SMs busy
/// even on narrow tiles. A stage holds one box of B, so the ring holds more of them.
pub const SMALL_BN: usize = 64;
pub const SMALL_STAGES: usize = 8;
pub const SMALL_STAGE_BYTES: usize = A_STAGE_BYTES + BK * SMALL_BN * 2;
pub const SMALL_SHARED_BYTES: usize =
    SWIZZLE_ALIGN + SMALL_STAGES * SMALL_STAGE_BYTES + 2 * SMALL_STAGES * 8 + EPILOGUE_BYTES;

/// Step H7, medium tiles (`kernels/src/matmul/wgmma_medium.rs`): `BM × MEDIUM_BN` tiles, each
/// consumer one `m64n192` instruction per k-step, for products whose waves of wide and narrow
/// tiles both end part full. Three boxes of B a stage leave room for five stages.
pub const MEDIUM_BN: usize = 192;
pub const MEDIUM_STAGES: usize = 5;
pub const MEDIUM_STAGE_BYTES: usize = A_STAGE_BYTES + BK * MEDIUM_BN * 2;
pub const MEDIUM_SHARED_BYTES: usize =
    SWIZZLE_ALIGN + MEDIUM_STAGES * MEDIUM_STAGE_BYTES + 2 * MEDIUM_STAGES * 8 + EPILOGUE_BYTES;

/// Step H8, the TMA-store epilogue (`kernels/src/matmul/wgmma_tma_store.rs`): the wide persistent
/// grid, whose consumer warps pass their 16 rows of C through `STORE_BOXES` boxes of shared
/// memory, each `STORE_BOX_ROWS` rows of `STORE_BOX_COLS` floats (one 128-byte swizzle row), which
/// TMA copies to C while the warp goes on to the next tile. The boxes follow the ring's
/// barriers, which take the first of two `SWIZZLE_ALIGN`s: a swizzled box starts on that
/// boundary.
pub const STORE_BOX_ROWS: usize = 16;
pub const STORE_BOX_COLS: usize = 32;
pub const STORE_BOX_BYTES: usize = STORE_BOX_ROWS * STORE_BOX_COLS * 4;
pub const STORE_BOXES: usize = 2;
pub const STORE_WARP_BYTES: usize = STORE_BOXES * STORE_BOX_BYTES;
pub const TMA_STORE_SHARED_BYTES: usize =
    SWIZZLE_ALIGN + STAGES * STAGE_BYTES + SWIZZLE_ALIGN + CONSUMERS * WARPGROUP / 32 * STORE_WARP_BYTES;

/// Rows of tiles in one group of the persistent kernels' tile order: 16 rows of 128 and the
/// 8 or so columns of 256 that the other running blocks take make a square of about 2048.
pub const GROUP_M: usize = 16;

/// Split-k (step H3): fewest slices of k a split takes, the ring's stages, so that its pipeline
/// fills before the split ends.
pub const SPLIT_MIN_SLICES: usize = STAGES;
/// Split-k on small tiles (step H6): fewest slices of k a split takes, the small ring's
/// stages, so that one split's slices are all in flight at once.
pub const SMALL_SPLIT_MIN_SLICES: usize = SMALL_STAGES;
/// Fewest splits worth their partial products: at two or three, narrow tiles (step H5) keep as
/// many SMs busy without them, and ran faster than the splits where both were measured.
pub const SPLIT_MIN_SPLITS: usize = 4;
/// FP8 operands (`kernels/src/matmul/convert_fp8.rs`): rows padded with zeros to a multiple of
/// 16 one-byte elements, the row stride TMA requires.
pub const FP8_ROW_ALIGN: usize = 16;
/// The largest finite e4m3 value: a per-tensor scale maps a tensor's largest magnitude here.
pub const E4M3_MAX: f64 = 448.0;
/// Threads per block of the FP8 conversions (the largest magnitude, the rounding).
pub const FP8_CONVERT_THREADS: usize = 256;
/// Side of the square of B one block of the transposing FP8 conversion takes (rows of k by
/// columns of n), staged in shared memory with a column of padding.
pub const FP8_TILE: usize = 64;

/// `cols` padded to [`FP8_ROW_ALIGN`].
pub const fn fp8_padded(cols: usize) -> usize {
    (cols + FP8_ROW_ALIGN - 1) / FP8_ROW_ALIGN * FP8_ROW_ALIGN
}

/// One block of [`THREADS`] per SM: its shared memory allows no second. The FP8 conversions'
/// blocks are small, and their registers few.
pub const BOUNDS: [LaunchBounds; 22] = [
    LaunchBounds { kernel: "matmul_wgmma_tf32", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_bf16", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_f16", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_persistent_tf32", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_persistent_bf16", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_persistent_f16", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_narrow_tf32", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_narrow_bf16", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_narrow_f16", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_small_tf32", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_small_bf16", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_small_f16", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_medium_tf32", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_medium_bf16", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_medium_f16", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_tma_store_tf32", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_tma_store_bf16", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_tma_store_f16", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "matmul_wgmma_e4m3", max_threads: THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "convert_fp8_amax", max_threads: FP8_CONVERT_THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "convert_e4m3", max_threads: FP8_CONVERT_THREADS as u32, min_blocks_per_sm: 1 },
    LaunchBounds { kernel: "convert_e4m3_transposed", max_threads: FP8_CONVERT_THREADS as u32, min_blocks_per_sm: 1 },
];

const _: () = assert!((PRODUCER_REGISTERS as usize + CONSUMERS * CONSUMER_REGISTERS as usize) * WARPGROUP <= 65536);
const _: () = assert!(NARROW_BN % BOX_N == 0 && NARROW_SHARED_BYTES <= 227 * 1024 && SHARED_BYTES <= 227 * 1024);
const _: () = assert!(SMALL_BN == BOX_N && SMALL_SHARED_BYTES <= 227 * 1024);
const _: () = assert!(MEDIUM_BN % BOX_N == 0 && MEDIUM_SHARED_BYTES <= 227 * 1024);
// The TMA-store step: its barriers fit before the boxes' boundary, and a box row is the
// swizzle's 128 bytes.
const _: () = assert!(2 * STAGES * 8 <= SWIZZLE_ALIGN && TMA_STORE_SHARED_BYTES <= 227 * 1024);
const _: () =
    assert!(STORE_BOX_COLS * 4 == 128 && STORE_BOX_ROWS * CONSUMERS * WARPGROUP / 32 == BM && BN % STORE_BOX_COLS == 0);
const _: () = assert!(BM == CONSUMERS * 64 && BN % BOX_N == 0 && BK * 2 == 128 && BK_TF32 * 4 == 128);
// The transposing conversion: each thread stages whole rows of the tile, and writes whole
// 4-byte words of it.
const _: () =
    assert!(BK_FP8 == 128 && FP8_TILE % FP8_ROW_ALIGN == 0 && (FP8_TILE * FP8_TILE / 4) % FP8_CONVERT_THREADS == 0);
