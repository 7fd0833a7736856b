//! The next idea after `wgmma_medium.rs`: *an epilogue that TMA stores*, so that writing one
//! tile of C overlaps the products of the next.
//!
//! In the persistent grid the producer already loads the next tile's slices while the
//! consumers store, but the consumers themselves stop: their stores (`st.global`) leave the SM
//! only as fast as the memory system takes them, and while every SM stores at once it takes
//! them at DRAM's rate, so a consumer waits on its own stores before its next `wgmma`. The
//! tensor cores idle for the epilogue and DRAM for the products. Where k is short (8192×8192×256
//! has four slices a tile) the two times add up rather than overlap.
//!
//! TMA copies the other way too. Each consumer warp writes its 16 rows of C, 32 columns at a
//! time, into a box of shared memory laid out with the 128-byte swizzle (so the accumulators'
//! pairs land on distinct banks), orders those writes before the async proxy
//! (`fence.proxy.async`), and one lane hands the box to TMA (`cp.async.bulk.tensor` from shared
//! to global, C described by a third tensor map). The warp goes on at once; it waits only
//! before it writes a box again, until TMA has *read* the copy it last made from there
//! (`cp.async.bulk.wait_group.read`), not until C is written. Each warp has `STORE_BOXES` (2)
//! boxes, so one is filled while the other drains. TMA also clips the boxes at C's edges, so
//! the epilogue checks no bounds.
//!
//! The boxes take the shared memory of the staged epilogue and more, which leaves the wide
//! ring its four stages. TMA needs C's rows 16-byte aligned (`n` a multiple of 4); the host
//! runs the persistent step for other widths.
//!
//! ```text
//!   consumer warp:  acc ──st.shared──► box (16×32, swizzled) ──TMA──► C
//!                   next box while TMA reads this one; next tile's wgmma right after
//! ```

use super::wgmma::{consume, prefetch_maps, stage_pair, Half, Mma, Ring, Slot, Tf32, Wide, Width};
use super::wgmma_persistent::{produce_tiles, tile_position};
use crate::tensor::hopper::{
    bulk_commit, bulk_wait, bulk_wait_read, claim_registers_to_232, elect_one, fence_proxy_async, prefetch_tensor_map,
    release_registers_to_40, tma_store_2d, TensorMap,
};
use crate::unrolled;
use cuda_std::prelude::*;
use cuda_std::warp;
use interface::wgmma::{BM, BN, STORE_BOXES, STORE_BOX_BYTES, STORE_BOX_COLS, STORE_WARP_BYTES, WARPGROUP};

/// Bytes of one row of a box: the 128-byte swizzle's span, whose 16-byte chunks it permutes by
/// the row's place among eight.
const BOX_ROW_BYTES: u32 = 128;

/// Writes a consumer warp's 16 rows of `2N` columns of accumulators to C at (`row0`, `n0`) of
/// the map `out`, `STORE_BOX_COLS` columns a box, through the warp's `STORE_BOXES` boxes at
/// `boxes` taken in turn from `*count` (which it advances): each box is written once TMA has
/// read the copy before it from there, then copied out by lane 0.
///
/// # Safety
/// Every thread of the warp, together; `boxes` is this warp's own `STORE_WARP_BYTES` of shared
/// memory, `SWIZZLE_ALIGN`-aligned; `out` as the kernels' `# Safety` says; the accumulators are
/// complete (`wgmma_wait`).
#[inline(always)]
unsafe fn store_tile_async<const N: usize>(
    out: *const TensorMap,
    acc: &[u32; N],
    (row0, n0): (usize, usize),
    boxes: u32,
    count: &mut u32,
) {
    let lane = thread::thread_idx_x() % 32;
    // This thread's pairs: row r and r + 8 of the box (the same swizzle phase), columns 2t and
    // 2t + 1 of each group of 8.
    let (r, t) = (lane / 4, lane % 4);
    crate::count_up!(
        [x x x] 1,
        [0],
        unrolled!(q, {
            // 32 columns, 16 accumulators, each step: all 8 steps at N = 128.
            if q < N / 16 {
                let at = boxes + (*count % STORE_BOXES as u32) * STORE_BOX_BYTES as u32;
                if lane == 0 {
                    bulk_wait_read::<{ STORE_BOXES as u32 - 1 }>();
                }
                warp::sync_warp(u32::MAX);
                crate::unroll!([0, 1, 2, 3], |g| {
                    // Group g of the box's four: its 16-byte chunk 2g + t/2, permuted by the row.
                    let chunk = ((2 * g as u32 + t / 2) ^ r) * 16 + (t % 2) * 8;
                    let j = 4 * (4 * q + g);
                    stage_pair(at + r * BOX_ROW_BYTES + chunk, acc[j], acc[j + 1]);
                    stage_pair(at + (r + 8) * BOX_ROW_BYTES + chunk, acc[j + 2], acc[j + 3]);
                });
                fence_proxy_async();
                warp::sync_warp(u32::MAX);
                if lane == 0 {
                    tma_store_2d(out, at, (n0 + STORE_BOX_COLS * q) as i32, row0 as i32);
                    bulk_commit();
                }
                *count += 1;
            }
        })
    );
}

/// The wide persistent grid of `wgmma_persistent.rs` (one layer: all of k) with the TMA-store
/// epilogue.
#[inline(always)]
unsafe fn matmul_wgmma_tma_store<T: Mma<Wide>>(
    maps: *const TensorMap,
    out: *const TensorMap,
    m: usize,
    n: usize,
    k: usize,
) {
    let ring = Ring::<Wide>::new();
    let warpgroup = thread::thread_idx_x() as usize / WARPGROUP;
    let k_tiles = (k + T::BK - 1) / T::BK;
    let (tiles_m, tiles_n) = ((m + BM - 1) / BM, (n + BN - 1) / BN);
    let tiles = tiles_m * tiles_n;
    let (first_tile, step) = (thread::block_idx_x() as usize, thread::grid_dim_x() as usize);
    if warpgroup == 0 {
        release_registers_to_40();
        if thread::thread_idx_x() < 32 {
            prefetch_maps(maps);
            if elect_one() {
                prefetch_tensor_map(out);
            }
            produce_tiles::<T, Wide>(&ring, maps, (tiles_m, tiles_n), (first_tile, step), (0, k_tiles));
        }
    } else {
        claim_registers_to_232();
        let consumer = warpgroup - 1;
        let warp = thread::thread_idx_x() as usize / 32 - WARPGROUP / 32;
        let boxes = ring.aligned_staging() + (warp * STORE_WARP_BYTES) as u32;
        let warp_row = 64 * consumer + warp % 4 * 16;
        let (mut acc, mut slot, mut count) = (Wide::ZEROS, Slot::FIRST, 0);
        let mut tile = first_tile;
        while tile < tiles {
            let (row, col) = tile_position(tile, tiles_m, tiles_n);
            slot = consume::<T, Wide>(&ring, k_tiles, slot, consumer, row * BM + 64 * consumer < m, &mut acc);
            store_tile_async(out, &acc, (row * BM + warp_row, col * BN), boxes, &mut count);
            tile += step;
        }
        // The block's shared memory must outlive the copies that read it.
        if thread::thread_idx_x() % 32 == 0 {
            bulk_wait();
        }
    }
}

/// # Safety
/// As `matmul_wgmma_persistent_bf16` with one layer (the same tensor maps of A and B in `maps`,
/// dimensions and grid: any number of blocks of `THREADS` threads, the host giving one per SM,
/// at most one per tile), except that C is written through `out`, the address in global memory,
/// 64-byte aligned, of C's tensor map: f32, dimensions {n, m}, row stride `4n` bytes (so `n` a
/// multiple of 4), box {`STORE_BOX_COLS`, `STORE_BOX_ROWS`}, the 128-byte swizzle, over `m·n`
/// writable floats, 16-byte aligned, that overlap neither A nor B; `TMA_STORE_SHARED_BYTES`
/// of dynamic shared memory, on an sm_90a device.
#[kernel]
pub unsafe fn matmul_wgmma_tma_store_bf16(maps: *const TensorMap, out: *const TensorMap, m: usize, n: usize, k: usize) {
    matmul_wgmma_tma_store::<Half<false>>(maps, out, m, n, k);
}

/// # Safety
/// As [`matmul_wgmma_tma_store_bf16`], with both input maps f16.
#[kernel]
pub unsafe fn matmul_wgmma_tma_store_f16(maps: *const TensorMap, out: *const TensorMap, m: usize, n: usize, k: usize) {
    matmul_wgmma_tma_store::<Half<true>>(maps, out, m, n, k);
}

/// # Safety
/// As [`matmul_wgmma_tma_store_bf16`], with the TF32 input maps of `matmul_wgmma_tf32`.
#[kernel]
pub unsafe fn matmul_wgmma_tma_store_tf32(maps: *const TensorMap, out: *const TensorMap, m: usize, n: usize, k: usize) {
    matmul_wgmma_tma_store::<Tf32>(maps, out, m, n, k);
}
