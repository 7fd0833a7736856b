//! SGEMM, `C = A × B` for row-major f32 matrices (`A` is m×k, `B` is k×n), three steps.
//!
//! **`matmul_naive`**: one thread per element of `C`, a 2D grid of 2D blocks:
//! `row = blockIdx.y * blockDim.y + threadIdx.y`, `col = blockIdx.x * blockDim.x + threadIdx.x`.
//! Each thread reads a whole row of `A` and column of `B` from global memory: `2k` loads for
//! `2k` flops. Consecutive threads share a row of `A` (one broadcast load) and read
//! consecutive columns of `B` (coalesced), but nothing is reused from fast memory, so the
//! kernel is bound by L1/L2 bandwidth at a small fraction of the FP32 peak.
//!
//! **`matmul_tiled_16` / `matmul_tiled_32`** (`matmul_tiled::<TILE>`): a TILE×TILE block
//! computes a TILE×TILE tile of `C`. It walks `k` in steps of TILE; at each step every thread
//! copies one element of `A` and one of `B` into shared memory, the block synchronizes, and
//! each thread does TILE multiply-adds from shared memory. Every global element is now
//! loaded once per block instead of once per thread: TILE times less global traffic. The
//! tiles live in dynamic shared memory (the host sizes it: `2 * TILE * TILE * 4` bytes)
//! because a `static` cannot depend on a const generic. Reading `a_tile[ty][i]` is a
//! broadcast and `b_tile[i][tx]` hits 32 different banks, so no bank conflicts. Out-of-range
//! elements are loaded as 0, which makes any m, n, k correct.
//!
//! **`matmul_blocked_128x128`** (`matmul_blocked::<BM, BN, BK, TM, TN>`): register blocking.
//! A 256-thread block owns a BM×BN = 128×128 tile of `C`; each thread owns a TM×TN = 8×8
//! sub-tile held in 64 registers. Per step of BK = 8 along `k`, the block stages a BM×BK
//! slice of `A` (stored transposed, so a thread's 8 `A` values are contiguous) and a BK×BN
//! slice of `B` in shared memory; then, for each of the BK columns, a thread loads 8 values
//! of `A` and 8 of `B` into registers and does 64 FMAs with them. That is 16 shared loads
//! per 64 FMAs instead of 2 per FMA: the arithmetic, not memory, becomes the limit.
//! Register arrays are indexed only by constant-trip loops, which NVVM unrolls, so they
//! stay in registers. Global loads check bounds per element, so any shape is correct.

use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;

#[kernel]
pub unsafe fn matmul_naive(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    let row = (thread::block_idx_y() * thread::block_dim_y() + thread::thread_idx_y()) as usize;
    let col = (thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x()) as usize;
    if row < m && col < n {
        let mut acc = 0.0f32;
        for i in 0..k {
            acc += *a.get_unchecked(row * k + i) * *b.get_unchecked(i * n + col);
        }
        *c.add(row * n + col) = acc;
    }
}

#[inline(always)]
unsafe fn matmul_tiled<const TILE: usize>(
    a: &[f32],
    b: &[f32],
    c: *mut f32,
    m: usize,
    n: usize,
    k: usize,
) {
    let a_tile = dynamic_shared_mem::<f32>();
    let b_tile = a_tile.add(TILE * TILE);
    let tx = thread::thread_idx_x() as usize;
    let ty = thread::thread_idx_y() as usize;
    let row = thread::block_idx_y() as usize * TILE + ty;
    let col = thread::block_idx_x() as usize * TILE + tx;

    let mut acc = 0.0f32;
    let mut t = 0;
    while t < k {
        *a_tile.add(ty * TILE + tx) =
            if row < m && t + tx < k { *a.get_unchecked(row * k + t + tx) } else { 0.0 };
        *b_tile.add(ty * TILE + tx) =
            if t + ty < k && col < n { *b.get_unchecked((t + ty) * n + col) } else { 0.0 };
        thread::sync_threads();
        for i in 0..TILE {
            acc += *a_tile.add(ty * TILE + i) * *b_tile.add(i * TILE + tx);
        }
        // Nobody may overwrite the tiles while a slower thread still reads them.
        thread::sync_threads();
        t += TILE;
    }
    if row < m && col < n {
        *c.add(row * n + col) = acc;
    }
}

#[kernel]
pub unsafe fn matmul_tiled_16(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_tiled::<16>(a, b, c, m, n, k);
}

#[kernel]
pub unsafe fn matmul_tiled_32(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_tiled::<32>(a, b, c, m, n, k);
}

#[inline(always)]
unsafe fn load_or_zero(matrix: &[f32], row: usize, col: usize, rows: usize, cols: usize) -> f32 {
    if row < rows && col < cols {
        *matrix.get_unchecked(row * cols + col)
    } else {
        0.0
    }
}

#[inline(always)]
unsafe fn matmul_blocked<
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const TM: usize,
    const TN: usize,
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

        for kk in 0..BK {
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

/// Threads per block of [`matmul_blocked_128x128`]: (128 / 8) × (128 / 8).
pub const BLOCKED_THREADS: usize = 256;

#[kernel]
pub unsafe fn matmul_blocked_128x128(
    a: &[f32],
    b: &[f32],
    c: *mut f32,
    m: usize,
    n: usize,
    k: usize,
) {
    matmul_blocked::<128, 128, 8, 8, 8>(a, b, c, m, n, k);
}
