//! The next idea after `wgmma_narrow.rs`: *small tiles*, for products too small to keep the
//! SMs busy even on narrow ones.
//!
//! At 1024×1024, C has 64 narrow tiles: half of 132 SMs wait, and each busy one runs the whole
//! of k for its tile alone. At 256×256 it has four. A product that small takes a few
//! microseconds, most of it the latency of filling the ring and storing C, which a block pays
//! once whatever its tile's size; what shortens it is sharing the work among more blocks, each
//! with less to do once its data arrives. Quartering the width to 64 columns gives four times
//! the blocks of a wide tile, each with a quarter of the tensor-core work and of C to store.
//!
//! The block is the same again: a producer warpgroup and two consumers of 64 rows each, now
//! issuing `m64n64` instructions on 32 accumulators a thread. A stage is A's 128×64 box and one
//! of B's 64×64 boxes, 24 KiB, and the ring holds `SMALL_STAGES` (8) of them. An instruction
//! reads 4 KiB of shared memory for a quarter of the work a wide one does with 10 KiB, so a
//! small tile is slower per flop: the library takes it only where the extra blocks make up
//! for that (`hopper::persistent_step`). The same holds for split k where C is no wider than
//! a narrow tile: a wide tile's ring would load mostly zeros past C's edge, where the small
//! ring holds all of a short split's slices at once (`library/src/matmul/split.rs`).
//!
//! ```text
//!   stage s:  [ A 128×64 (16 KiB) | B 64×64 (8 KiB) ]    8 stages
//!   tile:     128 × 64 of C, consumers at rows 0-63 and 64-127
//! ```

use super::wgmma::{store_tile, Half, Mma, Tf32, Width};
use super::wgmma_persistent::matmul_wgmma_persistent;
use crate::tensor::hopper::{wgmma_m64n64k16_bf16, wgmma_m64n64k16_f16, wgmma_m64n64k8_tf32, TensorMap};
use cuda_std::prelude::*;
use interface::wgmma::{SMALL_BN, SMALL_STAGES, SMALL_STAGE_BYTES};

/// Tiles of `BM × SMALL_BN` (128×64), one `m64n64` instruction per k-step.
struct Small;

impl Width for Small {
    const BN: usize = SMALL_BN;
    const STAGES: usize = SMALL_STAGES;
    const STAGE_BYTES: usize = SMALL_STAGE_BYTES;
    type Accumulators = [u32; 32];
    const ZEROS: [u32; 32] = [0; 32];
    #[inline(always)]
    unsafe fn store(
        c: *mut f32,
        acc: &[u32; 32],
        tile: (usize, usize),
        consumer: usize,
        dims: (usize, usize),
        staging: u32,
    ) {
        store_tile(c, acc, tile, consumer, dims, staging);
    }
}

impl<const F16: bool> Mma<Small> for Half<F16> {
    #[inline(always)]
    unsafe fn mma(acc: &mut [u32; 32], a: u64, b: u64, accumulate: bool) {
        if F16 {
            wgmma_m64n64k16_f16(acc, a, b, accumulate);
        } else {
            wgmma_m64n64k16_bf16(acc, a, b, accumulate);
        }
    }
}

impl Mma<Small> for Tf32 {
    #[inline(always)]
    unsafe fn mma(acc: &mut [u32; 32], a: u64, b: u64, accumulate: bool) {
        wgmma_m64n64k8_tf32(acc, a, b, accumulate);
    }
}

/// # Safety
/// As `matmul_wgmma_persistent_bf16` (the same tensor maps, dimensions, splits and C), except
/// for the tiles: any number of blocks of `THREADS` threads in each layer (the host gives one
/// per SM over all layers, at most one per tile of `BM × SMALL_BN`), `SMALL_SHARED_BYTES` of
/// dynamic shared memory, on an sm_90a device.
#[kernel]
pub unsafe fn matmul_wgmma_small_bf16(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma_persistent::<Half<false>, Small>(maps, c, m, n, k, 1.0);
}

/// # Safety
/// As [`matmul_wgmma_small_bf16`], with both tensor maps f16.
#[kernel]
pub unsafe fn matmul_wgmma_small_f16(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma_persistent::<Half<true>, Small>(maps, c, m, n, k, 1.0);
}

/// # Safety
/// As [`matmul_wgmma_small_bf16`], with the TF32 tensor maps of `matmul_wgmma_tf32`.
#[kernel]
pub unsafe fn matmul_wgmma_small_tf32(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma_persistent::<Tf32, Small>(maps, c, m, n, k, 1.0);
}
