//! The next idea after `wgmma_small.rs`: *a tile width between two of the ladder's*, for
//! products whose waves none of the others fills.
//!
//! How well a persistent grid keeps the SMs busy depends on how its tiles divide among them.
//! At 3072², C has 288 wide tiles (2.2 per SM: the third wave leaves 120 of 132 SMs idle) and
//! 576 narrow ones (4.4 per SM: the fifth leaves 76 idle), and a narrow tile is slower per
//! flop. A tile of 128×192, three quarters of a wide one, gives 384 tiles: three waves, the
//! last nine tenths full, on tiles that load almost as little per flop as wide ones.
//!
//! The block is the same again: a producer warpgroup and two consumers of 64 rows each, now
//! issuing `m64n192` instructions on 96 accumulators a thread. A stage is A's 128×64 box and
//! three of B's 64×64 boxes, 40 KiB, and the ring holds `MEDIUM_STAGES` (5) of them.
//!
//! ```text
//!   stage s:  [ A 128×64 (16 KiB) | B 64×64 | 64×64 | 64×64 (24 KiB) ]    5 stages
//!   tile:     128 × 192 of C, consumers at rows 0-63 and 64-127
//! ```

use super::wgmma::{store_tile, Half, Mma, Tf32, Width};
use super::wgmma_persistent::matmul_wgmma_persistent;
use crate::tensor::hopper::{wgmma_m64n192k16_bf16, wgmma_m64n192k16_f16, wgmma_m64n192k8_tf32, TensorMap};
use cuda_std::prelude::*;
use interface::wgmma::{MEDIUM_BN, MEDIUM_STAGES, MEDIUM_STAGE_BYTES};

/// Tiles of `BM × MEDIUM_BN` (128×192), one `m64n192` instruction per k-step.
struct Medium;

impl Width for Medium {
    const BN: usize = MEDIUM_BN;
    const STAGES: usize = MEDIUM_STAGES;
    const STAGE_BYTES: usize = MEDIUM_STAGE_BYTES;
    type Accumulators = [u32; 96];
    const ZEROS: [u32; 96] = [0; 96];
    #[inline(always)]
    unsafe fn store(
        c: *mut f32,
        acc: &[u32; 96],
        tile: (usize, usize),
        consumer: usize,
        dims: (usize, usize),
        staging: u32,
    ) {
        store_tile(c, acc, tile, consumer, dims, staging);
    }
}

impl<const F16: bool> Mma<Medium> for Half<F16> {
    #[inline(always)]
    unsafe fn mma(acc: &mut [u32; 96], a: u64, b: u64, accumulate: bool) {
        if F16 {
            wgmma_m64n192k16_f16(acc, a, b, accumulate);
        } else {
            wgmma_m64n192k16_bf16(acc, a, b, accumulate);
        }
    }
}

impl Mma<Medium> for Tf32 {
    #[inline(always)]
    unsafe fn mma(acc: &mut [u32; 96], a: u64, b: u64, accumulate: bool) {
        wgmma_m64n192k8_tf32(acc, a, b, accumulate);
    }
}

/// # Safety
/// As `matmul_wgmma_persistent_bf16` (the same tensor maps, dimensions, splits and C), except
/// for the tiles: any number of blocks of `THREADS` threads in each layer (the host gives one
/// per SM over all layers, at most one per tile of `BM × MEDIUM_BN`), `MEDIUM_SHARED_BYTES` of dynamic
/// shared memory, on an sm_90a device.
#[kernel]
pub unsafe fn matmul_wgmma_medium_bf16(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma_persistent::<Half<false>, Medium>(maps, c, m, n, k, 1.0);
}

/// # Safety
/// As [`matmul_wgmma_medium_bf16`], with both tensor maps f16.
#[kernel]
pub unsafe fn matmul_wgmma_medium_f16(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma_persistent::<Half<true>, Medium>(maps, c, m, n, k, 1.0);
}

/// # Safety
/// As [`matmul_wgmma_medium_bf16`], with the TF32 tensor maps of `matmul_wgmma_tf32`.
#[kernel]
pub unsafe fn matmul_wgmma_medium_tf32(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma_persistent::<Tf32, Medium>(maps, c, m, n, k, 1.0);
}
