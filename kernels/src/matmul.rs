//! SGEMM, `C = A × B` for row-major f32 matrices (`A` is m×k, `B` is k×n), in four steps a
//! reader can compare (`host matmul` runs them side by side). Measured at 4096³ on an H100
//! (2026-11-22, cuBLAS 51 TFLOP/s): naive 2.4, tiled 8.3, register-blocked 25.7 and
//! vectorized + double-buffered 37.1 TFLOP/s (docs/performance.md).
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
//!
//! **`matmul_vec4_128x128`**: the same blocking with 16-byte loads, conflict-free shared
//! reads and double buffering; see [`matmul_vec4`] below.

use crate::Quad;
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::matmul::{BK, BM, BN, LARGE_TILE, SMALL_TILE, TM, TN};

#[kernel]
pub unsafe fn matmul_naive(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    let row = (thread::block_idx_y() * thread::block_dim_y() + thread::thread_idx_y()) as usize;
    let col = (thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x()) as usize;
    if row < m && col < n {
        // Walk row `row` of A and column `col` of B, four products per pass (the order of the
        // sum is unchanged): nvcc unrolls this loop so in CUDA C, and with four loads of each
        // in flight at once the latency of L1/L2 is paid a quarter as often.
        let (mut pa, mut pb) = (a.as_ptr().add(row * k), b.as_ptr().add(col));
        let mut acc = 0.0f32;
        let mut i = 0;
        while i + 4 <= k {
            crate::unroll!([0, 1, 2, 3], |u| {
                acc += *pa.add(u) * *pb.add(u * n);
            });
            pa = pa.add(4);
            pb = pb.add(4 * n);
            i += 4;
        }
        while i < k {
            acc += *pa * *pb;
            pa = pa.add(1);
            pb = pb.add(n);
            i += 1;
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
    matmul_tiled::<SMALL_TILE>(a, b, c, m, n, k);
}

#[kernel]
pub unsafe fn matmul_tiled_32(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_tiled::<LARGE_TILE>(a, b, c, m, n, k);
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

#[kernel]
pub unsafe fn matmul_blocked_128x128(
    a: &[f32],
    b: &[f32],
    c: *mut f32,
    m: usize,
    n: usize,
    k: usize,
) {
    matmul_blocked::<BM, BN, BK, TM, TN>(a, b, c, m, n, k);
}

/// Four floats moved as one 16-byte load or store (`ld.global.v4.f32`, `ld.shared.v4.f32`).
type Float4 = Quad<f32>;

/// Four consecutive elements of row `row` starting at `col`, zero outside the matrix: one
/// 16-byte load when all four are inside and aligned (`cols` a multiple of 4), else one
/// element at a time.
#[inline(always)]
unsafe fn load4(matrix: &[f32], row: usize, col: usize, rows: usize, cols: usize) -> Float4 {
    if row < rows && col + 4 <= cols && cols % 4 == 0 {
        *(matrix.as_ptr().add(row * cols + col) as *const Float4)
    } else {
        let mut v = [0.0f32; 4];
        for j in 0..4 {
            v[j] = load_or_zero(matrix, row, col + j, rows, cols);
        }
        Quad(v)
    }
}

/// **Step 4, `matmul_vec4_128x128`** (`matmul_vec4::<BM, BN, BK>`): the register-blocked
/// kernel with the memory traffic reshaped.
/// - 128-bit global loads: each thread fetches one `Float4` of `A` and one of `B` per step.
/// - 128-bit shared loads, no bank conflicts: a thread's 8×8 outputs are a 2×2 set of 4×4
///   groups, half a tile apart. Per `k` it reads two `Float4` of `A` (a broadcast within the
///   warp) and two of `B`, where a warp's 16 threads read 256 contiguous bytes.
/// - Double buffering: two shared-memory stages. The next slice's global loads are issued
///   before the FMAs on the current one and stored into the other stage afterwards, so their
///   latency hides behind arithmetic and one barrier per step suffices.
///
/// - The 8 steps along `k` of one slice are unrolled by hand (`unroll!`): NVVM keeps the
///   loop rolled at this size, and unrolled, the shared loads of step `kk + 1` can issue
///   while step `kk`'s 64 FMAs run; with only 4 warps per scheduler (registers limit the
///   occupancy to 25%) that overlap has to come from within the warp.
///
/// Layout invariant: `BM·8 = BN·8 = 4·threads`, with `(BM/8)·(BN/8)` threads: each thread
/// loads exactly one `Float4` of each matrix per step (128×128 with 256 threads).
#[inline(always)]
unsafe fn matmul_vec4<const BM: usize, const BN: usize>(
    a: &[f32],
    b: &[f32],
    c: *mut f32,
    m: usize,
    n: usize,
    k: usize,
) {
    let stage_size = BK * (BM + BN);
    let shared = dynamic_shared_mem::<f32>();
    let a_tile = |stage: usize| shared.add(stage * stage_size);
    let b_tile = |stage: usize| shared.add(stage * stage_size + BK * BM);

    let tid = thread::thread_idx_x() as usize;
    let (tx, ty) = (tid % (BN / 8), tid / (BN / 8));
    let block_row = thread::block_idx_y() as usize * BM;
    let block_col = thread::block_idx_x() as usize * BN;
    // Which Float4 of each slice this thread fetches.
    let (a_row, a_col) = (tid / (BK / 4), (tid % (BK / 4)) * 4);
    let (b_row, b_col) = (tid / (BN / 4), (tid % (BN / 4)) * 4);

    let store_slices = |stage: usize, a4: Float4, b4: Float4| {
        // A goes in transposed so that a thread's rows are contiguous along BM.
        for j in 0..4 {
            *a_tile(stage).add((a_col + j) * BM + a_row) = a4.0[j];
        }
        *(b_tile(stage).add(b_row * BN + b_col) as *mut Float4) = b4;
    };

    let mut acc = [[0.0f32; 8]; 8];
    store_slices(0, load4(a, block_row + a_row, a_col, m, k), load4(b, b_row, block_col + b_col, k, n));
    thread::sync_threads();

    let mut stage = 0;
    let mut t = 0;
    while t < k {
        let next = t + BK;
        let prefetch = if next < k {
            Some((load4(a, block_row + a_row, next + a_col, m, k), load4(b, next + b_row, block_col + b_col, k, n)))
        } else {
            None
        };
        let (a_stage, b_stage) = (a_tile(stage).add(ty * 4), b_tile(stage).add(tx * 4));
        crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |kk| {
            let a_lo = *(a_stage.add(kk * BM) as *const Float4);
            let a_hi = *(a_stage.add(kk * BM + BM / 2) as *const Float4);
            let b_lo = *(b_stage.add(kk * BN) as *const Float4);
            let b_hi = *(b_stage.add(kk * BN + BN / 2) as *const Float4);
            for i in 0..8 {
                let a_i = if i < 4 { a_lo.0[i] } else { a_hi.0[i - 4] };
                for j in 0..8 {
                    let b_j = if j < 4 { b_lo.0[j] } else { b_hi.0[j - 4] };
                    acc[i][j] += a_i * b_j;
                }
            }
        });
        if let Some((a4, b4)) = prefetch {
            store_slices(stage ^ 1, a4, b4);
        }
        thread::sync_threads();
        stage ^= 1;
        t = next;
    }

    for i in 0..8 {
        let row = block_row + if i < 4 { ty * 4 + i } else { BM / 2 + ty * 4 + i - 4 };
        for half in 0..2 {
            let col = block_col + half * (BN / 2) + tx * 4;
            let v = Quad([acc[i][half * 4], acc[i][half * 4 + 1], acc[i][half * 4 + 2], acc[i][half * 4 + 3]]);
            if row < m && col + 4 <= n && n % 4 == 0 {
                *(c.add(row * n + col) as *mut Float4) = v;
            } else {
                for j in 0..4 {
                    if row < m && col + j < n {
                        *c.add(row * n + col + j) = v.0[j];
                    }
                }
            }
        }
    }
}

#[kernel]
pub unsafe fn matmul_vec4_128x128(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_vec4::<BM, BN>(a, b, c, m, n, k);
}
