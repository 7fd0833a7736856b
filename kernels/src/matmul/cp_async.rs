//! **Step 5a: `cp.async`, two stages.** Step 4c moves every slice through registers: loaded
//! into `a4` and `b4`, held through the FMAs, stored into shared memory. `cp.async`
//! ([`crate::async_copy`]) copies from global to shared memory directly: a thread issues the
//! copies of the next slice into the other stage and goes on computing, and the SM writes the
//! data when it arrives. The registers that held the pieces are free, and the shared stores
//! leave the instruction stream.
//!
//! ```text
//!   copy(slice 0 -> stage 0)
//!   loop:  wait for the copies  ->  sync  ->  copy(slice t + 1 -> stage s ^ 1)  ->  FMAs on stage s
//! ```
//!
//! The one barrier per slice does two jobs: after it, every thread's copies of slice `t` are
//! visible to the block, and every thread is done with the other stage, which the new copies
//! overwrite. A copy cannot transpose, so `A`'s copies are 4 bytes each; `B`'s are 16. Edge
//! blocks copy element by element with `cp.async`'s zero-fill (0 bytes read, zeros written
//! past the matrices' edges). The tile is step 4c's default, 128×128×16, 8×8 per thread.
//! By itself this step is slower than step 4c (the table in `mod.rs`): what makes the copies
//! pay comes with steps 5b and 5c.

use super::{interior_block, store_c4, Float4};
use crate::async_copy::{commit_copies, copy_async_16, copy_async_4, wait_all_copies};
use crate::{shared_address, Quad};
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::matmul::{CP_ASYNC_BK, CP_ASYNC_BM, CP_ASYNC_BN, CP_ASYNC_TM, CP_ASYNC_TN};

#[inline(always)]
unsafe fn matmul_cp_async<
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const TM: usize,
    const TN: usize,
    const CHECKED: bool,
>(
    a: &[f32],
    b: &[f32],
    c: *mut f32,
    m: usize,
    n: usize,
    k: usize,
) {
    let threads = (BM / TM) * (BN / TN);
    // 16-byte pieces of each slice a thread stages per step.
    let (a_loads, b_loads) = (BM * BK / 4 / threads, BK * BN / 4 / threads);
    let stage_size = BK * (BM + BN);
    let shared = dynamic_shared_mem::<f32>();
    let a_tile = |stage: usize| shared.add(stage * stage_size);
    let b_tile = |stage: usize| shared.add(stage * stage_size + BK * BM);
    // The same tiles as shared addresses, which the copies take.
    let shared_base = shared_address(shared);
    let a_to = |stage: usize| shared_base + (stage * stage_size * 4) as u32;
    let b_to = |stage: usize| shared_base + ((stage * stage_size + BK * BM) * 4) as u32;

    let tid = thread::thread_idx_x() as usize;
    let (tx, ty) = (tid % (BN / TN), tid / (BN / TN));
    let block_row = thread::block_idx_y() as usize * BM;
    let block_col = thread::block_idx_x() as usize * BN;
    // A thread's rows are TM/4 groups of 4, `row_step` apart; its columns likewise.
    let (row_step, col_step) = (BM / (TM / 4), BN / (TN / 4));
    // Piece `l` of each slice this thread fetches: row and column inside the slice.
    let a_piece = |l: usize| ((tid + l * threads) / (BK / 4), ((tid + l * threads) % (BK / 4)) * 4);
    let b_piece = |l: usize| ((tid + l * threads) / (BN / 4), ((tid + l * threads) % (BN / 4)) * 4);

    // Issue the copies of the slice starting at `t` into `stage`, and commit them as a group.
    let copy = |stage: usize, t: usize| {
        crate::unroll!([0, 1, 2, 3], |l| {
            // Elements past the matrix's last row or column are zero-filled.
            if l < a_loads {
                // A goes in transposed, a float at a time, so that a thread's rows are contiguous.
                let (r, col) = a_piece(l);
                let row = block_row + r;
                for j in 0..4 {
                    let inside = !CHECKED || (row < m && t + col + j < k);
                    let from = if inside { a.as_ptr().wrapping_add(row * k + t + col + j) } else { a.as_ptr() };
                    copy_async_4(a_to(stage) + (((col + j) * BM + r) * 4) as u32, from, if inside { 4 } else { 0 });
                }
            }
            if l < b_loads {
                let (r, col) = b_piece(l);
                let to = b_to(stage) + ((r * BN + col) * 4) as u32;
                let from = b.as_ptr().wrapping_add((t + r) * n + block_col + col);
                if !CHECKED {
                    copy_async_16(to, from);
                } else {
                    for j in 0..4 {
                        let inside = t + r < k && block_col + col + j < n;
                        let from = if inside { from.wrapping_add(j) } else { b.as_ptr() };
                        copy_async_4(to + 4 * j as u32, from, if inside { 4 } else { 0 });
                    }
                }
            }
        });
        commit_copies();
    };

    let mut acc = [[0.0f32; TN]; TM];
    copy(0, 0);

    let mut stage = 0;
    let mut t = 0;
    while t < k {
        // Slice t has landed and, after the barrier, every thread is done with the other stage
        // (slice t - 1), which the copies of slice t + 1 now overwrite.
        wait_all_copies();
        thread::sync_threads();
        let next = t + BK;
        if next < k {
            copy(stage ^ 1, next);
        }
        let (a_stage, b_stage) = (a_tile(stage).add(ty * 4), b_tile(stage).add(tx * 4));
        crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], |kk| {
            if kk < BK {
                let mut a_frag = [Quad([0.0f32; 4]); 2];
                let mut b_frag = [Quad([0.0f32; 4]); 2];
                for g in 0..TM / 4 {
                    a_frag[g] = *(a_stage.add(kk * BM + g * row_step) as *const Float4);
                }
                for g in 0..TN / 4 {
                    b_frag[g] = *(b_stage.add(kk * BN + g * col_step) as *const Float4);
                }
                for i in 0..TM {
                    for j in 0..TN {
                        acc[i][j] += a_frag[i / 4].0[i % 4] * b_frag[j / 4].0[j % 4];
                    }
                }
            }
        });
        stage ^= 1;
        t = next;
    }

    for i in 0..TM {
        let row = block_row + (i / 4) * row_step + ty * 4 + i % 4;
        for g in 0..TN / 4 {
            let col = block_col + g * col_step + tx * 4;
            let v = Quad([acc[i][g * 4], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]]);
            store_c4::<CHECKED>(c, row, col, m, n, &v);
        }
    }
}

/// # Safety
/// `a.len() >= m·k`, `b.len() >= k·n`, and `c` is valid for `m·n` writes and aliases neither;
/// `a`, `b` and `c` start 16-byte aligned. Launch: blocks of `CP_ASYNC_THREADS` threads, a grid
/// of `⌈n / CP_ASYNC_BN⌉ × ⌈m / CP_ASYNC_BM⌉` blocks, `CP_ASYNC_SHARED_BYTES` of dynamic shared
/// memory.
#[kernel]
pub unsafe fn matmul_cp_async_128x128(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    if interior_block(CP_ASYNC_BM, CP_ASYNC_BN, CP_ASYNC_BK, m, n, k) {
        matmul_cp_async::<CP_ASYNC_BM, CP_ASYNC_BN, CP_ASYNC_BK, CP_ASYNC_TM, CP_ASYNC_TN, false>(a, b, c, m, n, k);
    } else {
        matmul_cp_async::<CP_ASYNC_BM, CP_ASYNC_BN, CP_ASYNC_BK, CP_ASYNC_TM, CP_ASYNC_TN, true>(a, b, c, m, n, k);
    }
}
