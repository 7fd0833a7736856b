//! **Step 3: register blocking.** A block of 256 threads owns a BM×BN = 128×128 tile of `C`,
//! and each thread a TM×TN = 8×8 sub-tile of it, held in 64 registers:
//!
//! ```text
//!            BN = 128 columns: 16 threads × 8
//!          +----+----+----+-- ... --+----+
//!          | t0 | t1 | t2 |         |t15 |   8 rows
//!          +----+----+----+-- ... --+----+
//!          |t16 |t17 |    |         |t31 |   each cell: one thread's 8×8 outputs
//!          +----+----+----+-- ... --+----+
//!          :                             :   BM = 128 rows: 16 threads × 8
//!          |t240|    |    |         |t255|
//!          +----+----+----+-- ... --+----+
//! ```
//!
//! Per slice of BK = 8 along `k`, the block stages a BM×BK slice of `A` (stored transposed, so
//! a thread's 8 values of `A` are contiguous) and a BK×BN slice of `B` in shared memory. Then,
//! for each of the BK columns, a thread loads 8 values of `A` and 8 of `B` into registers and
//! does 64 FMAs with them: 16 shared loads per 64 FMAs instead of step 2's 2 per FMA, so the
//! arithmetic, not memory, becomes the limit.
//!
//! Register arrays are indexed only by loops of constant trip count, which NVVM unrolls, so
//! they stay in registers. The loop over the BK columns is unrolled by hand (`unroll!`), as
//! nvcc unrolls it in CUDA C; NVVM keeps it rolled at this size. Global loads check bounds per
//! element, so any shape is correct.

use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::matmul::{BK, BM, BN, TM, TN};

/// `matrix[row][col]` of a `rows × cols` matrix, or 0 outside it.
#[inline(always)]
unsafe fn load_or_zero(matrix: &[f32], row: usize, col: usize, rows: usize, cols: usize) -> f32 {
    if row < rows && col < cols {
        *matrix.get_unchecked(row * cols + col)
    } else {
        0.0
    }
}

#[inline(always)]
unsafe fn matmul_blocked<const BM: usize, const BN: usize, const BK: usize, const TM: usize, const TN: usize>(
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
        // Stage the slices: consecutive threads take consecutive elements of a row, so the
        // global loads coalesce.
        let mut e = tid;
        while e < BM * BK {
            let (r, kk) = (e / BK, e % BK);
            *a_tile.add(kk * BM + r) = load_or_zero(a, block_row + r, t + kk, m, k);
            e += threads;
        }
        let mut e = tid;
        while e < BK * BN {
            let (kk, col) = (e / BN, e % BN);
            *b_tile.add(kk * BN + col) = load_or_zero(b, t + kk, block_col + col, k, n);
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
        for j in 0..TN {
            let col = block_col + thread_col + j;
            if row < m && col < n {
                *c.add(row * n + col) = acc[i][j];
            }
        }
    }
}

/// # Safety
/// `a.len() >= m·k`, `b.len() >= k·n`, and `c` is valid for `m·n` writes and aliases neither.
/// Launch: blocks of `BLOCKED_THREADS` threads (x only), a grid of `⌈n / BN⌉ × ⌈m / BM⌉`
/// blocks, `BLOCKED_SHARED_BYTES` of dynamic shared memory.
#[kernel]
pub unsafe fn matmul_blocked_128x128(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_blocked::<BM, BN, BK, TM, TN>(a, b, c, m, n, k);
}
