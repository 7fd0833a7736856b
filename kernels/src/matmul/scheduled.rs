//! **Step 5c: scheduled for ptxas.** Step 5b's algorithm, arranged so that ptxas keeps the FMA
//! pipe busy: step 5b loses issue slots, not work, to warps stalled on a copy's registers and
//! FMAs stalled on register-bank conflicts.
//! - **Copies between the FMAs.** A `cp.async` reads its address registers only when the
//!   memory pipe takes it, and an instruction that overwrites one of them waits until then.
//!   Issued after the barrier, the copies held up the first shared loads, which ptxas gave the
//!   same registers. Here `A`'s copies follow the FMAs of the first `k` and `B`'s those of the
//!   fifth, where 128 FMAs each hide the wait.
//! - **FMA order.** An FMA whose accumulator and `B` operand share a register bank waits a
//!   cycle, and the order of the FMAs steers how ptxas allocates the 128 accumulators: column
//!   by column, even columns first, two down the rows and two up (`docs/performance.md`).
//! - **`acc + 0.0` stores.** Storing the accumulators themselves in 16 bytes pins 4 of them to
//!   consecutive registers, the banks of the `B` values they meet; `acc + 0.0` gives the store
//!   registers of its own (and changes no value but the sign of a zero).
//! - **Short bookkeeping.** The copies read through two pointers moved on once per slice, and
//!   slices and stages are counted in 32 bits (far fewer than 2^32 slices fit in memory).

use super::{interior_block, store_c4, Float4};
use crate::async_copy::{commit_copies, copy_async_16, copy_async_4, wait_copies_but_newest};
use crate::{shared_address, Quad};
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::matmul::{
    ASYNC_A_STRIDE, ASYNC_BK, ASYNC_BM, ASYNC_BN, ASYNC_STAGES, ASYNC_STAGE_FLOATS, ASYNC_THREADS, ASYNC_TM, ASYNC_TN,
};

/// The `ASYNC_BM × ASYNC_BN` tile of C at block (`blockIdx.y`, `blockIdx.x`), summed over k's
/// columns of A (rows of B) from `k_begin` to `k_end`: all of k for `matmul_async_128x256`, one
/// run of it for step 5d's splits (`split_async.rs`). `k_begin` is a multiple of `ASYNC_BK`.
#[inline(always)]
pub(super) unsafe fn matmul_async<const CHECKED: bool>(
    a: &[f32],
    b: &[f32],
    c: *mut f32,
    m: usize,
    n: usize,
    k: usize,
    (k_begin, k_end): (usize, usize),
) {
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
    let slices = ((k_end - k_begin + ASYNC_BK - 1) / ASYNC_BK) as u32;

    // A thread copies A's rows `a_row + l·A_ROW_STEP` at column `a_kk` of each slice, and B's
    // rows `b_row + l·B_ROW_STEP` at columns `b_col .. b_col + 4`.
    const A_ROW_STEP: usize = ASYNC_THREADS / ASYNC_BK;
    const B_ROW_STEP: usize = ASYNC_THREADS / (ASYNC_BN / 4);
    let (a_kk, a_row) = (tid % ASYNC_BK, tid / ASYNC_BK);
    let (b_row, b_col) = (tid / (ASYNC_BN / 4), tid % (ASYNC_BN / 4) * 4);
    let a_to = shared_base + ((a_kk * ASYNC_A_STRIDE + a_row) * 4) as u32;
    let b_to = shared_base + ((ASYNC_BK * ASYNC_A_STRIDE + b_row * ASYNC_BN + b_col) * 4) as u32;
    // The sources of the next slice to stage, moved on one slice per iteration.
    let mut a_from = a.as_ptr().wrapping_add((block_row + a_row) * k + k_begin + a_kk);
    let mut b_from = b.as_ptr().wrapping_add((k_begin + b_row) * n + block_col + b_col);

    // Issue the copies of A's and of B's part of the slice starting at `t` into `stage`.
    let stage_a = |stage: u32, t: usize, a_from: *const f32| {
        let stage_offset = stage * (ASYNC_STAGE_FLOATS * 4) as u32;
        crate::unroll!([0, 1, 2, 3], |l| {
            if l < A_COPIES {
                let inside = !CHECKED || (block_row + a_row + l * A_ROW_STEP < m && t + a_kk < k_end);
                let from = if inside { a_from.wrapping_add(l * A_ROW_STEP * k) } else { a.as_ptr() };
                copy_async_4(a_to + stage_offset + (l * A_ROW_STEP * 4) as u32, from, if inside { 4 } else { 0 });
            }
        });
    };
    let stage_b = |stage: u32, t: usize, b_from: *const f32| {
        let stage_offset = stage * (ASYNC_STAGE_FLOATS * 4) as u32;
        crate::unroll!([0, 1], |l| {
            if l < B_COPIES {
                let to = b_to + stage_offset + (l * B_ROW_STEP * ASYNC_BN * 4) as u32;
                let from = b_from.wrapping_add(l * B_ROW_STEP * n);
                if !CHECKED {
                    copy_async_16(to, from);
                } else {
                    for j in 0..4 {
                        let inside = t + b_row + l * B_ROW_STEP < k_end && block_col + b_col + j < n;
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
        if (s as u32) < slices {
            stage_a(s as u32, k_begin + s * ASYNC_BK, a_from);
            stage_b(s as u32, k_begin + s * ASYNC_BK, b_from);
            a_from = a_from.wrapping_add(ASYNC_BK);
            b_from = b_from.wrapping_add(ASYNC_BK * n);
        }
        commit_copies();
    });

    let mut acc = [[0.0f32; ASYNC_TN]; ASYNC_TM];
    const STAGES: u32 = ASYNC_STAGES as u32;
    let (mut stage, mut free_stage) = (0, STAGES - 1);
    for t in 0..slices {
        // Slice t has landed (only t + 1 may still be in flight) and, after the barrier, every
        // thread is done with slice t - 1, whose stage the copies of slice t + 2 now reuse.
        wait_copies_but_newest();
        thread::sync_threads();
        let copy_ahead = t + STAGES - 1 < slices;

        let a_stage = shared.add(stage as usize * ASYNC_STAGE_FLOATS + row0);
        let b_stage = shared.add(stage as usize * ASYNC_STAGE_FLOATS + ASYNC_BK * ASYNC_A_STRIDE + col0);
        crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |kk| {
            let mut a_frag = [Quad([0.0f32; 4]); ASYNC_TM / 4];
            let mut b_frag = [Quad([0.0f32; 4]); ASYNC_TN / 4];
            for g in 0..ASYNC_TM / 4 {
                a_frag[g] = *(a_stage.add(kk * ASYNC_A_STRIDE + g * 16) as *const Float4);
            }
            for g in 0..ASYNC_TN / 4 {
                b_frag[g] = *(b_stage.add(kk * ASYNC_BN + g * 32) as *const Float4);
            }
            // Column by column, even columns first, two columns down and two up.
            crate::unroll!([0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15], |j| {
                crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |step| {
                    let i = if j % 4 < 2 { step } else { ASYNC_TM - 1 - step };
                    acc[i][j] += a_frag[i / 4].0[i % 4] * b_frag[j / 4].0[j % 4];
                });
            });
            // Slice t + 2 goes in flight between the FMAs.
            if kk == 0 && copy_ahead {
                stage_a(free_stage, k_begin + (t + STAGES - 1) as usize * ASYNC_BK, a_from);
            }
            if kk == ASYNC_BK / 2 {
                if copy_ahead {
                    stage_b(free_stage, k_begin + (t + STAGES - 1) as usize * ASYNC_BK, b_from);
                }
                commit_copies();
            }
        });
        a_from = a_from.wrapping_add(ASYNC_BK);
        b_from = b_from.wrapping_add(ASYNC_BK * n);
        stage = if stage + 1 == STAGES { 0 } else { stage + 1 };
        free_stage = if free_stage + 1 == STAGES { 0 } else { free_stage + 1 };
    }

    crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |i| {
        let row = block_row + row0 + (i / 4) * 16 + i % 4;
        crate::unroll!([0, 1, 2, 3], |g| {
            let col = block_col + col0 + g * 32;
            // `+ 0.0`: registers of its own for the 16-byte store.
            let v =
                Quad([acc[i][g * 4] + 0.0, acc[i][g * 4 + 1] + 0.0, acc[i][g * 4 + 2] + 0.0, acc[i][g * 4 + 3] + 0.0]);
            store_c4::<CHECKED>(c, row, col, m, n, &v);
        });
    });
}

/// # Safety
/// `a.len() >= m·k`, `b.len() >= k·n`, and `c` is valid for `m·n` writes and aliases neither;
/// `a`, `b` and `c` start 16-byte aligned. Launch: blocks of `ASYNC_THREADS` threads, a grid of
/// `⌈n / ASYNC_BN⌉ × ⌈m / ASYNC_BM⌉` blocks, `ASYNC_SHARED_BYTES` of dynamic shared memory.
#[kernel]
pub unsafe fn matmul_async_128x256(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    if interior_block(ASYNC_BM, ASYNC_BN, ASYNC_BK, m, n, k) {
        matmul_async::<false>(a, b, c, m, n, k, (0, k));
    } else {
        matmul_async::<true>(a, b, c, m, n, k, (0, k));
    }
}
