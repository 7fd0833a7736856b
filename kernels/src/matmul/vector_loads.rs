//! **Step 4a: 16-byte global loads and stores.** Step 3 with its global memory traffic in
//! pieces of four consecutive floats of a row: a thread stages a piece of `A` or `B` with one
//! `ld.global.v4.f32` instead of four loads, and writes its outputs to `C` four at a time. A
//! quarter of the instructions for the same bytes, and four times the bytes in flight per load
//! instruction, which is what hides the latency of DRAM. At 128×128×8 and 256 threads, each
//! thread stages one piece of `A` and one of `B` per slice.
//!
//! **Interior and edge blocks.** A 16-byte access must be 16-byte aligned and lie inside the
//! matrix. In most blocks it always does: their tile of `C` lies wholly inside `C`, `k` is a
//! whole number of slices and rows are a multiple of 4 floats long ([`super::interior_block`]).
//! Those blocks run a copy of the body with every bounds check compiled out (`CHECKED =
//! false`). The blocks on the bottom and right edges run the checked copy, where a piece that
//! is partly outside the matrix, or unaligned, is read one element at a time and zero past the
//! edge ([`super::load4`]), and `C` is written element by element where needed
//! ([`super::store_c4`]). The choice is the same for a whole block, so no warp diverges over
//! it, and only the edge blocks pay for checks. Every later step keeps this split.

use super::{interior_block, load4, store_c4, Float4};
use crate::Quad;
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::matmul::{BK, BM, BN, TM, TN};

#[inline(always)]
unsafe fn matmul_vload<
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
    // This thread's TM×TN sub-tile inside the block tile.
    let thread_row = (tid / (BN / TN)) * TM;
    let thread_col = (tid % (BN / TN)) * TN;

    let mut acc = [[0.0f32; TN]; TM];
    let mut a_reg = [0.0f32; TM];
    let mut b_reg = [0.0f32; TN];

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
                for i in 0..TM {
                    a_reg[i] = *a_tile.add(kk * BM + thread_row + i);
                }
                for j in 0..TN {
                    b_reg[j] = *b_tile.add(kk * BN + thread_col + j);
                }
                for i in 0..TM {
                    for j in 0..TN {
                        acc[i][j] += a_reg[i] * b_reg[j];
                    }
                }
            }
        });
        thread::sync_threads();
        t += BK;
    }

    for i in 0..TM {
        let row = block_row + thread_row + i;
        for g in 0..TN / 4 {
            let col = block_col + thread_col + g * 4;
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
pub unsafe fn matmul_vload_128x128(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    if interior_block(BM, BN, BK, m, n, k) {
        matmul_vload::<BM, BN, BK, TM, TN, false>(a, b, c, m, n, k);
    } else {
        matmul_vload::<BM, BN, BK, TM, TN, true>(a, b, c, m, n, k);
    }
}
