//! The next idea after `wgmma.rs`: a *persistent* grid whose tile order keeps L2 warm.
//!
//! **Persistent blocks.** One block per SM (the host launches `min(SMs, tiles)` of them) loops
//! over tiles `blockIdx.x, blockIdx.x + gridDim.x, …`. The producer does not stop at the end
//! of a tile: while the consumers store one tile's C, it is already loading the first slices
//! of the next into the ring, so the tensor cores restart on data that is waiting. With one
//! block per tile, each block paid the ring's fill and its epilogue with nothing overlapping
//! them; with few slices per tile (k = 256 is four) that was most of its time. Each side's
//! slot runs on from one tile to the next, so the ring's stages and phases do too.
//!
//! **Splits of k.** As the pipelined step's grid, this one may be `splits` layers deep, each
//! layer's blocks looping over all the tiles for one run of k's slices (`wgmma.rs`).
//!
//! **Tile order.** The blocks running at once work on neighbouring tiles, and each slice of A
//! or B they read is read by every running tile in its row or column of tiles: from DRAM once,
//! then from L2. Walking C row by row, 132 running tiles span a few rows of tiles and every
//! column, so the whole of B streams through L2 again for each few rows. Walking it in groups
//! of `GROUP_M` rows of tiles, column by column within a group, 132 tiles cover about 16 × 8
//! tiles (2048 rows of A, 2048 columns of B): half the distinct bytes per slice, which L2 holds.
//!
//! ```text
//!   tiles of C, GROUP_M = 4 shown:   0  4  8 12 16 ..
//!                                    1  5  9 13 17 ..
//!                                    2  6 10 14 18 ..
//!                                    3  7 11 15 19 ..
//!                                   (next group below)
//! ```

use super::wgmma::{consume, prefetch_maps, produce, Half, Input, Mma, Ring, Slot, Tf32, Wide, Width};
use crate::tensor::hopper::{claim_registers_to_232, release_registers_to_40, TensorMap};
use core::num::NonZeroUsize;
use cuda_std::prelude::*;
use interface::matmul::split_runs;
use interface::wgmma::{BM, GROUP_M, WARPGROUP};

/// `x` as a divisor, 1 in place of 0: dividing by a `NonZeroUsize` has no division-by-zero
/// panic, whose branch made ptxas treat the producer's warp as possibly diverged and run its
/// loop on per-thread registers.
#[inline(always)]
fn divisor(x: usize) -> NonZeroUsize {
    // SAFETY: `max(1)` is not zero.
    unsafe { NonZeroUsize::new_unchecked(x.max(1)) }
}

/// Row and column (in tiles) of tile number `tile` (below `tiles_m · tiles_n`) in the grouped
/// order. Both divisors are at least 1 for such a tile.
#[inline(always)]
pub(super) fn tile_position(tile: usize, tiles_m: usize, tiles_n: usize) -> (usize, usize) {
    let per_group = divisor(GROUP_M * tiles_n);
    let first_row = tile / per_group * GROUP_M;
    let rows = divisor((tiles_m - first_row).min(GROUP_M));
    let within = tile % per_group;
    (first_row + within % rows, within / rows)
}

/// The producer's warp over this block's tiles of a `tiles_m × tiles_n` C, from `first_tile`
/// every `step`th in the grouped order: each tile's run of `k_tiles` slices from `k_first` on,
/// through one ring.
///
/// # Safety
/// As [`produce`], for every tile the block's consumers take in the same order.
#[inline(always)]
pub(super) unsafe fn produce_tiles<T: Input, W: Width>(
    ring: &Ring<W>,
    maps: *const TensorMap,
    (tiles_m, tiles_n): (usize, usize),
    (first_tile, step): (usize, usize),
    run: (usize, usize),
) {
    let mut slot = Slot::FIRST;
    let mut tile = first_tile;
    while tile < tiles_m * tiles_n {
        let (row, col) = tile_position(tile, tiles_m, tiles_n);
        slot = produce::<T, W>(ring, maps, (row * BM, col * W::BN), run, slot);
        tile += step;
    }
}

/// The persistent grid over tiles of width `W` (`wgmma_narrow.rs` runs it on narrower ones,
/// `wgmma_fp8.rs` on FP8 inputs, whose epilogue multiplies C by `scale`; the other types
/// ignore it).
#[inline(always)]
pub(super) unsafe fn matmul_wgmma_persistent<T: Mma<W>, W: Width>(
    maps: *const TensorMap,
    c: *mut f32,
    m: usize,
    n: usize,
    k: usize,
    scale: f32,
) {
    let ring = Ring::<W>::new();
    let warpgroup = thread::thread_idx_x() as usize / WARPGROUP;
    // Layer z of a grid `splits` deep takes one run of k's slices into layer z of `c` (split
    // k); one layer is all of k into C. The runs are `split_slices`', divided by a `divisor`.
    let (split, splits) = (thread::block_idx_z() as usize, divisor(thread::grid_dim_z() as usize));
    let slices = (k + T::BK - 1) / T::BK;
    let (k_first, k_tiles) = split_runs(slices, split, (slices + splits.get() - 1) / splits);
    let c = c.add(split * m * n);
    let (tiles_m, tiles_n) = ((m + BM - 1) / BM, (n + W::BN - 1) / W::BN);
    let tiles = tiles_m * tiles_n;
    let (first_tile, step) = (thread::block_idx_x() as usize, thread::grid_dim_x() as usize);
    if warpgroup == 0 {
        release_registers_to_40();
        if thread::thread_idx_x() < 32 {
            prefetch_maps(maps);
            produce_tiles::<T, W>(&ring, maps, (tiles_m, tiles_n), (first_tile, step), (k_first, k_tiles));
        }
    } else {
        claim_registers_to_232();
        let consumer = warpgroup - 1;
        let staging = ring.staging();
        let mut acc = W::ZEROS;
        let mut slot = Slot::FIRST;
        let mut tile = first_tile;
        while tile < tiles {
            let (row, col) = tile_position(tile, tiles_m, tiles_n);
            slot = consume::<T, W>(&ring, k_tiles, slot, consumer, row * BM + 64 * consumer < m, &mut acc);
            T::finish(&mut acc, scale);
            W::store(c, &acc, (row * BM, col * W::BN), consumer, (m, n), staging);
            tile += step;
        }
    }
}

/// # Safety
/// As `matmul_wgmma_bf16` (the same tensor maps and dimensions; a grid `splits` deep that
/// leaves no split of k's slices empty; `c` valid for `splits·m·n` f32 writes, 16-byte aligned
/// when `n` is a multiple of 4), except across: any number of blocks of `THREADS` threads in
/// each layer (the host gives one per SM over all layers, at most one per tile),
/// `SHARED_BYTES` of dynamic shared memory, on an sm_90a device.
#[kernel]
pub unsafe fn matmul_wgmma_persistent_bf16(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma_persistent::<Half<false>, Wide>(maps, c, m, n, k, 1.0);
}

/// # Safety
/// As [`matmul_wgmma_persistent_bf16`], with both tensor maps f16.
#[kernel]
pub unsafe fn matmul_wgmma_persistent_f16(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma_persistent::<Half<true>, Wide>(maps, c, m, n, k, 1.0);
}

/// # Safety
/// As [`matmul_wgmma_persistent_bf16`], with the TF32 tensor maps of `matmul_wgmma_tf32`.
#[kernel]
pub unsafe fn matmul_wgmma_persistent_tf32(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma_persistent::<Tf32, Wide>(maps, c, m, n, k, 1.0);
}
