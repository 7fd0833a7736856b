//! Launch shapes of the SGEMM kernels (`kernels/src/matmul.rs`).

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

/// Register blocking: a block computes a BM×BN tile of `C`, walking `k` in steps of BK; each
/// thread owns a TM×TN sub-tile.
pub const BM: usize = 128;
pub const BN: usize = 128;
pub const BK: usize = 8;
pub const TM: usize = 8;
pub const TN: usize = 8;
/// Threads per block of the register-blocked kernels: one per TM×TN sub-tile.
pub const BLOCKED_THREADS: usize = (BM / TM) * (BN / TN);
/// One stage in shared memory: a BM×BK slice of `A` and a BK×BN slice of `B`.
pub const BLOCKED_SHARED_BYTES: usize = BK * (BM + BN) * 4;
/// `matmul_vec4` double-buffers: two stages.
pub const VEC4_SHARED_BYTES: usize = 2 * BLOCKED_SHARED_BYTES;

/// Two blocks per SM: ptxas keeps `matmul_vec4_128x128` within 128 registers per thread.
pub const VEC4_BOUNDS: LaunchBounds =
    LaunchBounds { kernel: "matmul_vec4_128x128", max_threads: BLOCKED_THREADS as u32, min_blocks_per_sm: 2 };
