//! **Step 4b: a conflict-free layout, read 16 bytes at a time.** Step 4a's thread owns an
//! 8×8 block of outputs, so per `k` it reads 8 contiguous floats of `A` and of `B` from shared
//! memory (the compiler already makes them two 16-byte loads). A 16-byte shared load is served
//! a quarter-warp at a time, 8 threads reading 128 bytes; but 8 threads that each read
//! columns `8·tx .. 8·tx + 4` of `B` span 256 bytes, and two of them meet in every bank: two
//! passes instead of one.
//!
//! Here a thread owns its TM×TN = 8×8 outputs as 2×2 groups of 4×4, half a tile apart:
//!
//! ```text
//!                 columns 0..64: 16 groups of 4        columns 64..128
//!               +---------------------------------+---------------------------------+
//!   rows 0-3    | t0  t1  t2  ...  t15            | t0  t1  t2  ...  t15            |
//!   rows 4-7    | t16 t17 t18 ...  t31            | t16 t17 t18 ...  t31            |
//!      :        |  :                              |  :                              |
//!   rows 60-63  | t240 ...         t255           | t240 ...         t255           |
//!               +---------------------------------+---------------------------------+
//!   rows 64-67  | t0  t1  t2  ...  t15            | t0  t1  t2  ...  t15            |
//!      :        |  :                              |  :                              |
//!   rows 124-127| t240 ...         t255           | t240 ...         t255           |
//!               +---------------------------------+---------------------------------+
//!   each entry: one 4×4 group; thread t owns one group in each quadrant
//! ```
//!
//! Per `k` a thread now reads `A` at rows `4·ty` and `4·ty + 64` and `B` at columns `4·tx` and
//! `4·tx + 64`, each as one explicit 16-byte load (`ld.shared.v4.f32`). The 8 threads of a
//! quarter-warp read 8 consecutive groups of `B`, 128 contiguous bytes, one pass with no bank
//! conflict, and share one group of `A` (a broadcast). The outputs go to `C` in the
//! same groups. Staging is step 4a's.

use super::{interior_block, load4, store_c4, Float4};
use crate::Quad;
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::matmul::{BK, BM, BN, TM, TN};

#[inline(always)]
unsafe fn matmul_vshared<
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
    // Shared memory: A slice transposed (BK rows of BM), then the B slice (BK rows of BN).
    let a_tile = dynamic_shared_mem::<f32>();
    let b_tile = a_tile.add(BK * BM);

    let tid = thread::thread_idx_x() as usize;
    let block_row = thread::block_idx_y() as usize * BM;
    let block_col = thread::block_idx_x() as usize * BN;
    // A thread's rows are TM/4 groups of 4, `row_step` apart, starting at row 4·ty; its
    // columns likewise.
    let (tx, ty) = (tid % (BN / TN), tid / (BN / TN));
    let (row_step, col_step) = (BM / (TM / 4), BN / (TN / 4));

    let mut acc = [[0.0f32; TN]; TM];

    let mut t = 0;
    while t < k {
        // Stage the slices a piece at a time: consecutive threads take consecutive pieces of a
        // row, so the global loads coalesce. Elements past the matrix's edges read as zero.
        let mut e = tid;
        while e < BM * BK / 4 {
            let (r, kk) = (e / (BK / 4), e % (BK / 4) * 4);
            let row = block_row + r;
            let valid = if !CHECKED {
                4
            } else if row < m {
                k.saturating_sub(t + kk)
            } else {
                0
            };
            let v = load4(a.as_ptr().wrapping_add(row * k + t + kk), valid, !CHECKED || k % 4 == 0);
            for j in 0..4 {
                *a_tile.add((kk + j) * BM + r) = v.0[j];
            }
            e += threads;
        }
        let mut e = tid;
        while e < BK * BN / 4 {
            let (kk, col) = (e / (BN / 4), e % (BN / 4) * 4);
            let valid = if !CHECKED {
                4
            } else if t + kk < k {
                n.saturating_sub(block_col + col)
            } else {
                0
            };
            let v = load4(b.as_ptr().wrapping_add((t + kk) * n + block_col + col), valid, !CHECKED || n % 4 == 0);
            *(b_tile.add(kk * BN + col) as *mut Float4) = v;
            e += threads;
        }
        thread::sync_threads();

        crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |kk| {
            if kk < BK {
                let mut a_frag = [Quad([0.0f32; 4]); 2];
                let mut b_frag = [Quad([0.0f32; 4]); 2];
                for g in 0..TM / 4 {
                    a_frag[g] = *(a_tile.add(kk * BM + ty * 4 + g * row_step) as *const Float4);
                }
                for g in 0..TN / 4 {
                    b_frag[g] = *(b_tile.add(kk * BN + tx * 4 + g * col_step) as *const Float4);
                }
                for i in 0..TM {
                    for j in 0..TN {
                        acc[i][j] += a_frag[i / 4].0[i % 4] * b_frag[j / 4].0[j % 4];
                    }
                }
            }
        });
        thread::sync_threads();
        t += BK;
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
/// `a`, `b` and `c` start 16-byte aligned. Launch: as step 3 (the same tile and constants),
/// blocks of `BLOCKED_THREADS` threads, a grid of `⌈n / BN⌉ × ⌈m / BM⌉` blocks,
/// `BLOCKED_SHARED_BYTES` of dynamic shared memory.
#[kernel]
pub unsafe fn matmul_vshared_128x128(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    if interior_block(BM, BN, BK, m, n, k) {
        matmul_vshared::<BM, BN, BK, TM, TN, false>(a, b, c, m, n, k);
    } else {
        matmul_vshared::<BM, BN, BK, TM, TN, true>(a, b, c, m, n, k);
    }
}
