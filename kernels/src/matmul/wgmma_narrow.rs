//! The next idea after `wgmma_persistent.rs`: *narrow tiles*, so that a small product keeps
//! every SM at work.
//!
//! A 128×256 tile is the most work one block can do per byte it loads, which is what a large
//! product wants. A small one runs out of tiles first: at 1024×1024, C has 32 of them, and 100
//! of 132 SMs have nothing to do. Halving the width to 128 columns doubles the tiles (and the
//! blocks running) for the same C, and the persistent grid's waves grow finer: at 3072², 576
//! tiles share out as 4.4 per SM where 288 shared out as 2.2, so the last wave leaves fewer SMs
//! idle.
//!
//! The block is the same: a producer warpgroup and two consumers, each owning 64 rows of the
//! tile. Each consumer issues `m64n128` instructions and holds 64 accumulators a thread instead
//! of 128. A stage carries A's 128×64 box as before and two of B's 64×64 boxes instead of four,
//! so it is 32 KiB and the ring holds `NARROW_STAGES` (6) of them where it held 4: each stage
//! feeds half the tensor-core work, so more of them are kept in flight, and the producer must
//! turn the ring twice as fast: its loop is what `wgmma.rs`'s producer warp keeps short. The
//! tensor maps are the wide steps' own: only how many boxes of B a stage takes changes.
//!
//! ```text
//!   stage s:  [ A 128×64 (16 KiB) | B 64×64 | 64×64 (16 KiB) ]    6 stages
//!   tile:     128 × 128 of C, consumers at rows 0-63 and 64-127
//! ```

use super::wgmma::{store_tile, Half, Mma, Tf32, Width};
use super::wgmma_persistent::matmul_wgmma_persistent;
use crate::tensor::hopper::{wgmma_m64n128k16_bf16, wgmma_m64n128k16_f16, wgmma_m64n128k8_tf32, TensorMap};
use cuda_std::prelude::*;
use interface::wgmma::{NARROW_BN, NARROW_STAGES, NARROW_STAGE_BYTES};

/// Tiles of `BM × NARROW_BN` (128×128), one `m64n128` instruction per k-step.
struct Narrow;

impl Width for Narrow {
    const BN: usize = NARROW_BN;
    const STAGES: usize = NARROW_STAGES;
    const STAGE_BYTES: usize = NARROW_STAGE_BYTES;
    type Accumulators = [u32; 64];
    const ZEROS: [u32; 64] = [0; 64];
    #[inline(always)]
    unsafe fn store(
        c: *mut f32,
        acc: &[u32; 64],
        tile: (usize, usize),
        consumer: usize,
        dims: (usize, usize),
        staging: u32,
    ) {
        store_tile(c, acc, tile, consumer, dims, staging);
    }
}

impl<const F16: bool> Mma<Narrow> for Half<F16> {
    #[inline(always)]
    unsafe fn mma(acc: &mut [u32; 64], a: u64, b: u64, accumulate: bool) {
        if F16 {
            wgmma_m64n128k16_f16(acc, a, b, accumulate);
        } else {
            wgmma_m64n128k16_bf16(acc, a, b, accumulate);
        }
    }
}

impl Mma<Narrow> for Tf32 {
    #[inline(always)]
    unsafe fn mma(acc: &mut [u32; 64], a: u64, b: u64, accumulate: bool) {
        wgmma_m64n128k8_tf32(acc, a, b, accumulate);
    }
}

/// # Safety
/// As `matmul_wgmma_persistent_bf16` (the same tensor maps, dimensions, splits and C), except
/// for the tiles: any number of blocks of `THREADS` threads in each layer (the host gives one
/// per SM over all layers, at most one per tile of `BM × NARROW_BN`), `NARROW_SHARED_BYTES` of dynamic
/// shared memory, on an sm_90a device.
#[kernel]
pub unsafe fn matmul_wgmma_narrow_bf16(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma_persistent::<Half<false>, Narrow>(maps, c, m, n, k, 1.0);
}

/// # Safety
/// As [`matmul_wgmma_narrow_bf16`], with both tensor maps f16.
#[kernel]
pub unsafe fn matmul_wgmma_narrow_f16(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma_persistent::<Half<true>, Narrow>(maps, c, m, n, k, 1.0);
}

/// # Safety
/// As [`matmul_wgmma_narrow_bf16`], with the TF32 tensor maps of `matmul_wgmma_tf32`.
#[kernel]
pub unsafe fn matmul_wgmma_narrow_tf32(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma_persistent::<Tf32, Narrow>(maps, c, m, n, k, 1.0);
}
