//! **Step 5b: three stages, warp tiles, 8×16 outputs per thread.** Step 5a on a larger tile,
//! with more slices in flight:
//! - **8×16 outputs per thread** on a 128×256 tile (256 threads, BK = 8): per `k` a thread
//!   reads 8 + 16 values from shared memory for 128 FMAs, 5.3 FMAs per value against 4.
//! - **Three stages:** slices `t + 1` and `t + 2` are in flight while slice `t` is multiplied;
//!   a thread waits only for the oldest ([`wait_copies_but_newest`]), once per slice.
//! - **Warp tiles:** a warp owns a 32×128 piece of the tile, its lanes a 4×8 grid, so per `k`
//!   a warp's 16-byte loads read 4 groups of `A` and 8 of `B`, 64 and 128 contiguous bytes:
//!   one pass of shared memory each, where step 5a's 2×16 lanes need two for each load of `B`.
//!
//! ```text
//!   the block tile, 128 × 256:        one warp's 32 × 128 in groups of 4×4 (l = lane):
//!          0..128    128..256                0..32       32..64      64..96      96..128
//!        +---------+---------+      0..16   l0  .. l7   l0  .. l7   l0  .. l7   l0  .. l7
//!     0  | warp 0  | warp 1  |              l8  .. l15  l8  .. l15     ...
//!    32  | warp 2  | warp 3  |              l16 .. l23     ...
//!    64  | warp 4  | warp 5  |              l24 .. l31
//!    96  | warp 6  | warp 7  |     16..32   l0  .. l7   l0  .. l7   ...     (the same again)
//!        +---------+---------+
//!   lane l owns 2 × 4 groups, 16 rows and 32 columns apart: its 8 × 16 outputs
//! ```
//!
//! - **`A` transposed by 4-byte copies:** each thread copies single floats, 8 threads the 8
//!   consecutive `k` of one row (one 32-byte sector). The transposed rows are
//!   `ASYNC_A_STRIDE = 132` floats apart, 4 more than the tile, so that a warp's 32 copies land
//!   in 32 different banks.

use super::{interior_block, store_c4, Float4};
use crate::async_copy::{commit_copies, copy_async_16, copy_async_4, wait_copies_but_newest};
use crate::{shared_address, Quad};
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::matmul::{
    ASYNC_A_STRIDE, ASYNC_BK, ASYNC_BM, ASYNC_BN, ASYNC_STAGES, ASYNC_STAGE_FLOATS, ASYNC_THREADS, ASYNC_TM, ASYNC_TN,
};

#[inline(always)]
unsafe fn matmul_warps<const CHECKED: bool>(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    const A_COPIES: usize = ASYNC_BM * ASYNC_BK / ASYNC_THREADS;
    const B_COPIES: usize = ASYNC_BK * ASYNC_BN / 4 / ASYNC_THREADS;
    // A warp's tile: 4×8 lanes, each TM/4 × TN/4 groups of 4×4, groups 16 rows / 32 columns apart.
    const WARP_ROWS: usize = ASYNC_TM / 4 * 16;
    const WARP_COLS: usize = ASYNC_TN / 4 * 32;
    let shared = dynamic_shared_mem::<f32>();
    let shared_base = shared_address(shared);
    let tid = thread::thread_idx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let row0 = (warp / (ASYNC_BN / WARP_COLS)) * WARP_ROWS + (lane / 8) * 4;
    let col0 = (warp % (ASYNC_BN / WARP_COLS)) * WARP_COLS + (lane % 8) * 4;
    let block_row = thread::block_idx_y() as usize * ASYNC_BM;
    let block_col = thread::block_idx_x() as usize * ASYNC_BN;
    let slices = (k + ASYNC_BK - 1) / ASYNC_BK;

    // A thread copies A's rows `a_row + l·A_ROW_STEP` at column `a_kk` of each slice, and B's
    // rows `b_row + l·B_ROW_STEP` at columns `b_col .. b_col + 4`.
    const A_ROW_STEP: usize = ASYNC_THREADS / ASYNC_BK;
    const B_ROW_STEP: usize = ASYNC_THREADS / (ASYNC_BN / 4);
    let (a_kk, a_row) = (tid % ASYNC_BK, tid / ASYNC_BK);
    let (b_row, b_col) = (tid / (ASYNC_BN / 4), tid % (ASYNC_BN / 4) * 4);
    let a_to = shared_base + ((a_kk * ASYNC_A_STRIDE + a_row) * 4) as u32;
    let b_to = shared_base + ((ASYNC_BK * ASYNC_A_STRIDE + b_row * ASYNC_BN + b_col) * 4) as u32;
    // Issue the copies of slice `s` (columns `s·BK ..` of A, rows of B) into stage `s % STAGES`.
    let copy_slice = |s: usize| {
        let (t, stage_offset) = (s * ASYNC_BK, ((s % ASYNC_STAGES) * ASYNC_STAGE_FLOATS * 4) as u32);
        crate::unroll!([0, 1, 2, 3], |l| {
            if l < A_COPIES {
                let row = block_row + a_row + l * A_ROW_STEP;
                let inside = !CHECKED || (row < m && t + a_kk < k);
                let from = if inside { a.as_ptr().wrapping_add(row * k + t + a_kk) } else { a.as_ptr() };
                copy_async_4(a_to + stage_offset + (l * A_ROW_STEP * 4) as u32, from, if inside { 4 } else { 0 });
            }
        });
        crate::unroll!([0, 1], |l| {
            if l < B_COPIES {
                let to = b_to + stage_offset + (l * B_ROW_STEP * ASYNC_BN * 4) as u32;
                let from = b.as_ptr().wrapping_add((t + b_row + l * B_ROW_STEP) * n + block_col + b_col);
                if !CHECKED {
                    copy_async_16(to, from);
                } else {
                    for j in 0..4 {
                        let inside = t + b_row + l * B_ROW_STEP < k && block_col + b_col + j < n;
                        let from = if inside { from.wrapping_add(j) } else { b.as_ptr() };
                        copy_async_4(to + 4 * j as u32, from, if inside { 4 } else { 0 });
                    }
                }
            }
        });
    };

    // Slices 0 .. STAGES-1 go in flight first; a group is committed even when empty, so that
    // "all but the newest group" always means "all but the newest slice".
    crate::unroll!([0, 1], |s| {
        if s < slices {
            copy_slice(s);
        }
        commit_copies();
    });

    let mut acc = [[0.0f32; ASYNC_TN]; ASYNC_TM];
    for t in 0..slices {
        // Slice t has landed (only t + 1 may still be in flight) and, after the barrier, every
        // thread is done with slice t - 1, whose stage the copies of slice t + 2 now reuse.
        wait_copies_but_newest();
        thread::sync_threads();
        if t + ASYNC_STAGES - 1 < slices {
            copy_slice(t + ASYNC_STAGES - 1);
        }
        commit_copies();

        let stage = t % ASYNC_STAGES;
        let a_stage = shared.add(stage * ASYNC_STAGE_FLOATS + row0);
        let b_stage = shared.add(stage * ASYNC_STAGE_FLOATS + ASYNC_BK * ASYNC_A_STRIDE + col0);
        crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |kk| {
            let mut a_frag = [Quad([0.0f32; 4]); ASYNC_TM / 4];
            let mut b_frag = [Quad([0.0f32; 4]); ASYNC_TN / 4];
            for g in 0..ASYNC_TM / 4 {
                a_frag[g] = *(a_stage.add(kk * ASYNC_A_STRIDE + g * 16) as *const Float4);
            }
            for g in 0..ASYNC_TN / 4 {
                b_frag[g] = *(b_stage.add(kk * ASYNC_BN + g * 32) as *const Float4);
            }
            crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |i| {
                crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], |j| {
                    acc[i][j] += a_frag[i / 4].0[i % 4] * b_frag[j / 4].0[j % 4];
                });
            });
        });
    }

    crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |i| {
        let row = block_row + row0 + (i / 4) * 16 + i % 4;
        crate::unroll!([0, 1, 2, 3], |g| {
            let col = block_col + col0 + g * 32;
            let v = Quad([acc[i][g * 4], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]]);
            store_c4::<CHECKED>(c, row, col, m, n, &v);
        });
    });
}

/// # Safety
/// `a.len() >= m·k`, `b.len() >= k·n`, and `c` is valid for `m·n` writes and aliases neither;
/// `a`, `b` and `c` start 16-byte aligned. Launch: blocks of `ASYNC_THREADS` threads, a grid of
/// `⌈n / ASYNC_BN⌉ × ⌈m / ASYNC_BM⌉` blocks, `ASYNC_SHARED_BYTES` of dynamic shared memory.
#[kernel]
pub unsafe fn matmul_warps_128x256(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    if interior_block(ASYNC_BM, ASYNC_BN, ASYNC_BK, m, n, k) {
        matmul_warps::<false>(a, b, c, m, n, k);
    } else {
        matmul_warps::<true>(a, b, c, m, n, k);
    }
}
