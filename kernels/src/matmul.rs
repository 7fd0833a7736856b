//! SGEMM, `C = A × B` for row-major f32 matrices (`A` is m×k, `B` is k×n), in five steps a
//! reader can compare (`host matmul` runs them side by side). Measured at 4096³ on an H100
//! (2026-11-23, cuBLAS 51.6 TFLOP/s): naive 5.1, tiled 8.3, register-blocked 27.2,
//! vectorized + double-buffered 45.0 and `cp.async` with 8×16 sub-tiles 52.3 TFLOP/s
//! (docs/performance.md).
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
//!
//! **`matmul_async_128x256`**: copies that bypass the registers (`cp.async`), three slices in
//! flight, and an 8×16 sub-tile per thread; see [`matmul_async`] below.

use crate::{shared_address, Quad};
use core::arch::asm;
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::matmul::{
    ASYNC_A_STRIDE, ASYNC_BK, ASYNC_BM, ASYNC_BN, ASYNC_STAGES, ASYNC_STAGE_FLOATS, ASYNC_THREADS, ASYNC_TM, ASYNC_TN,
    BK, BM, BN, LARGE_TILE, MAX_LOADS, SMALL_TILE, TM, TN,
};

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

        // Unrolled by hand, as nvcc unrolls it: NVVM keeps this loop rolled.
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

/// Four consecutive elements from `p`, zero past the first `valid`: one 16-byte load when
/// all four exist and `aligned` (the row length is a multiple of 4, so `p` is 16-byte
/// aligned), else one element at a time.
#[inline(always)]
unsafe fn load4(p: *const f32, valid: usize, aligned: bool) -> Float4 {
    if valid >= 4 && aligned {
        *(p as *const Float4)
    } else {
        let mut v = [0.0f32; 4];
        for j in 0..4 {
            if j < valid {
                v[j] = *p.add(j);
            }
        }
        Quad(v)
    }
}

/// Whether this block's `bm × bn` tile of C lies inside C, on rows 16-byte aligned, with `k` a
/// whole number of `bk` slices: then it needs no bounds checks at all.
#[inline(always)]
fn interior_block(bm: usize, bn: usize, bk: usize, m: usize, n: usize, k: usize) -> bool {
    (thread::block_idx_y() as usize + 1) * bm <= m
        && (thread::block_idx_x() as usize + 1) * bn <= n
        && k % bk == 0
        && n % 4 == 0
}

/// Stores `v` at `C[row][col .. col + 4]`: one 16-byte store when unchecked or when all four
/// lie inside C on an aligned row, else the elements inside C one at a time.
#[inline(always)]
unsafe fn store_c4<const CHECKED: bool>(c: *mut f32, row: usize, col: usize, m: usize, n: usize, v: &Float4) {
    if !CHECKED || (row < m && col + 4 <= n && n % 4 == 0) {
        *(c.add(row * n + col) as *mut Float4) = *v;
    } else {
        for j in 0..4 {
            if row < m && col + j < n {
                *c.add(row * n + col + j) = v.0[j];
            }
        }
    }
}

/// **Step 4, `matmul_vec4_128x128`** (`matmul_vec4::<BM, BN, BK, TM, TN>`): the
/// register-blocked kernel with the memory traffic reshaped.
/// - 128-bit global loads: per step each thread fetches the same number of `Float4` of `A`
///   and of `B` (two of each at 128×128, BK = 16, 256 threads).
/// - 128-bit shared loads, no bank conflicts: a thread's TM×TN outputs are groups of 4×4,
///   a fraction of the tile apart (at 8×8: 2×2 groups, half a tile apart). Per `k` it reads
///   TM/4 `Float4` of `A` (a broadcast within the warp) and TN/4 of `B`, where a warp's
///   threads read contiguous bytes.
/// - Double buffering: two shared-memory stages. The next slice's global loads are issued
///   before the FMAs on the current one and stored into the other stage afterwards, so their
///   latency hides behind arithmetic and one barrier per step suffices. (Issued after the
///   FMAs instead, they cost 4–34% depending on the tile, measured on an H100; the registers
///   they hold through the FMAs are why the 128×128 tile runs one block per SM, not two.)
/// - The BK steps along `k` of one slice are unrolled by hand (`unroll!`): NVVM keeps the
///   loop rolled at this size, and unrolled, the shared loads of step `kk + 1` can issue
///   while step `kk`'s FMAs run; with few warps per scheduler (registers limit the occupancy)
///   that overlap has to come from within the warp.
///
/// - Bounds checks only where needed: a block whose tile lies wholly inside C (and `k` is a
///   whole number of slices, rows 16-byte aligned) runs a copy of the body with every check
///   compiled out (`CHECKED = false`). The choice is uniform per block, so no warp diverges;
///   with the checks and their scalar fallbacks inside the loop, the compiler's schedule of
///   the main loop was ~15% slower.
///
/// The tile sizes are const generics: `interface::sgemm_configs!` lists the configurations
/// compiled (one kernel each), and `host matmul --tune` picks the fastest for a shape. Arrays
/// sized by a product of them (the staged pieces, the fragments) are declared at their
/// largest and indexed under constant guards, which the compiler folds away.
#[inline(always)]
unsafe fn matmul_vec4<
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
    // Interior blocks run a copy of the body without checks. The choice is per block
    // (uniform), so no warp diverges; only edge blocks pay for checks.
    if interior_block(BM, BN, BK, m, n, k) {
        matmul_vec4_body::<BM, BN, BK, TM, TN, false>(a, b, c, m, n, k);
    } else {
        matmul_vec4_body::<BM, BN, BK, TM, TN, true>(a, b, c, m, n, k);
    }
}

#[inline(always)]
unsafe fn matmul_vec4_body<
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

    let tid = thread::thread_idx_x() as usize;
    let (tx, ty) = (tid % (BN / TN), tid / (BN / TN));
    let block_row = thread::block_idx_y() as usize * BM;
    let block_col = thread::block_idx_x() as usize * BN;
    // A thread's rows are TM/4 groups of 4, `row_step` apart; its columns likewise.
    let (row_step, col_step) = (BM / (TM / 4), BN / (TN / 4));
    // Piece `l` of each slice this thread fetches: row and column inside the slice.
    let a_piece = |l: usize| ((tid + l * threads) / (BK / 4), ((tid + l * threads) % (BK / 4)) * 4);
    let b_piece = |l: usize| ((tid + l * threads) / (BN / 4), ((tid + l * threads) % (BN / 4)) * 4);

    // The pieces in flight between their global load and their shared store.
    let mut a4 = [Quad([0.0f32; 4]); MAX_LOADS];
    let mut b4 = [Quad([0.0f32; 4]); MAX_LOADS];
    let fetch = |t: usize, a4: &mut [Float4; MAX_LOADS], b4: &mut [Float4; MAX_LOADS]| {
        crate::unroll!([0, 1, 2, 3], |l| {
            // Elements past the matrix's last row or column read as zero.
            if l < a_loads {
                let (r, col) = a_piece(l);
                let row = block_row + r;
                let valid = if !CHECKED { 4 } else if row < m { k.saturating_sub(t + col) } else { 0 };
                a4[l] = load4(a.as_ptr().wrapping_add(row * k + t + col), valid, !CHECKED || k % 4 == 0);
            }
            if l < b_loads {
                let (r, col) = b_piece(l);
                let valid = if !CHECKED { 4 } else if t + r < k { n.saturating_sub(block_col + col) } else { 0 };
                b4[l] = load4(b.as_ptr().wrapping_add((t + r) * n + block_col + col), valid, !CHECKED || n % 4 == 0);
            }
        });
    };
    let store = |stage: usize, a4: &[Float4; MAX_LOADS], b4: &[Float4; MAX_LOADS]| {
        crate::unroll!([0, 1, 2, 3], |l| {
            if l < a_loads {
                // A goes in transposed so that a thread's rows are contiguous along BM.
                let (r, col) = a_piece(l);
                for j in 0..4 {
                    *a_tile(stage).add((col + j) * BM + r) = a4[l].0[j];
                }
            }
            if l < b_loads {
                let (r, col) = b_piece(l);
                *(b_tile(stage).add(r * BN + col) as *mut Float4) = b4[l];
            }
        });
    };

    let mut acc = [[0.0f32; TN]; TM];
    fetch(0, &mut a4, &mut b4);
    store(0, &a4, &b4);
    thread::sync_threads();

    let mut stage = 0;
    let mut t = 0;
    while t < k {
        let next = t + BK;
        // The last step re-fetches its own slice instead of one past the end: with no branch
        // around them, the loads stay ahead of the FMAs (behind an `if`, NVVM sinks them into
        // the branch that stores them, after the FMAs, where their latency shows).
        fetch(if next < k { next } else { t }, &mut a4, &mut b4);
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
        store(stage ^ 1, &a4, &b4);
        thread::sync_threads();
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

/// One kernel per configuration of `interface::sgemm_configs!`.
macro_rules! vec4_kernels {
    ($(($kernel:ident, $bm:literal, $bn:literal, $bk:literal, $tm:literal, $tn:literal, $blocks:literal)),+ $(,)?) => {$(
        #[kernel]
        pub unsafe fn $kernel(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
            matmul_vec4::<$bm, $bn, $bk, $tm, $tn>(a, b, c, m, n, k);
        }
    )+};
}
interface::sgemm_configs!(vec4_kernels);

/// Copies the first `bytes` (4 or 0) of the 4 bytes at `global` to the shared address `shared`
/// and zero-fills the rest, without the value passing through a register: the SM's copy
/// engine (`cp.async`, sm_80+) writes it into shared memory when it arrives.
#[inline(always)]
unsafe fn copy_async_4(shared: u32, global: *const f32, bytes: u32) {
    asm!("cp.async.ca.shared.global [{s}], [{g}], 4, {n};", s = in(reg32) shared, g = in(reg64) global, n = in(reg32) bytes);
}

/// Copies 16 bytes from `global` (16-byte aligned) to the shared address `shared`, like
/// [`copy_async_4`], bypassing L1 (`.cg`): B's pieces are read once per block.
#[inline(always)]
unsafe fn copy_async_16(shared: u32, global: *const f32) {
    asm!("cp.async.cg.shared.global [{s}], [{g}], 16;", s = in(reg32) shared, g = in(reg64) global);
}

/// Closes the group of copies issued since the last call: waits count groups.
#[inline(always)]
unsafe fn commit_copies() {
    asm!("cp.async.commit_group;");
}

/// Waits until at most one group of copies, the newest, is still in flight
/// (`ASYNC_STAGES - 2` of them: the slices staged ahead of the one the block computes next).
#[inline(always)]
unsafe fn wait_copies_but_newest() {
    const _: () = assert!(ASYNC_STAGES - 2 == 1, "the wait below keeps ASYNC_STAGES - 2 groups in flight");
    asm!("cp.async.wait_group 1;");
}

/// **Step 5, `matmul_async_128x256`**: what step 4 still lost to cuBLAS on an H100 was issue
/// slots, not work: the same instruction count, but a warp ready on 76.6% of the cycles
/// against cuBLAS's 91.1% (ncu), most of the difference dispatch stalls of the FMAs.
/// - Copies without registers: `cp.async` moves each slice from global to shared memory while
///   the block computes on another. Step 4 held a slice's 16 floats per thread in registers
///   through the FMAs; here those registers hold more of `C` instead.
/// - Three stages: slices `t + 1` and `t + 2` are in flight while slice `t` is multiplied,
///   and a block waits only for the oldest (`cp.async.wait_group`), once per slice, with one
///   barrier.
/// - An 8×16 sub-tile per thread (128 accumulators) on a 128×256 block tile: per `k` a thread
///   loads 8 + 16 values from shared memory for 128 FMAs, 5.3 FMAs per value against step 4's 4.
/// - Warp tiles: a warp owns a 32×128 piece of the tile, its lanes 4×8 groups of 4×4 outputs,
///   so per `k` a warp reads 4 distinct `A` pieces (broadcast) and 128 contiguous bytes of `B`.
/// - `A` is transposed on its way in, by 4-byte copies: 8 consecutive `k` of a row (one
///   32-byte sector) per 8 threads, into rows of 132 floats, so a warp's 32 copies land in 32
///   different banks.
/// - Copies between the FMAs: a `cp.async` reads its address registers only when the memory
///   pipe takes it, and an instruction that overwrites one of them waits until then (ncu:
///   long-scoreboard stalls). Issued right after the barrier, the copies held up the first
///   shared loads, which ptxas gave the same registers. Here `A`'s copies go after the FMAs
///   of the first `k` and `B`'s after those of the fifth, where 128 FMAs each hide the wait:
///   2.63 ms at 4096³ against 2.79 with the copies in one place after the barrier.
/// - Register banks: ptxas allocates the 128 accumulators itself, and an FMA whose `C` and `B`
///   registers share a bank waits a cycle (ncu's dispatch stalls). `C` leaves through 16-byte
///   stores of `acc + 0.0`: fresh registers, since storing the accumulators themselves pins
///   4 of them to 4 consecutive registers, the banks of the 4 `B` values they meet. And the
///   FMAs run column by column, even columns first, two columns down the rows and two up: of
///   64 orders measured on an H100 (rows or columns first, 4 row and 4 column permutations,
///   zigzag or not), this was the fastest, 2.63 ms against 2.70 for the previous order and
///   2.98 for the slowest.
/// - The copies add to two pointers per slice and count slices and stages in 32 bits, which
///   leaves about 50 instructions per slice besides the 1024 FMAs and 48 shared loads.
/// - Edge blocks copy element by element with `cp.async`'s zero-fill (0 bytes read from
///   outside the matrices, zeros written), so any m, n, k is correct; interior blocks copy `B`
///   16 bytes at a time and store `C` without checks.
#[inline(always)]
unsafe fn matmul_async(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    if interior_block(ASYNC_BM, ASYNC_BN, ASYNC_BK, m, n, k) {
        matmul_async_body::<false>(a, b, c, m, n, k);
    } else {
        matmul_async_body::<true>(a, b, c, m, n, k);
    }
}

#[inline(always)]
unsafe fn matmul_async_body<const CHECKED: bool>(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
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
    // 32-bit slice and stage counters keep the loop's bookkeeping short; a matrix that fits in
    // GPU memory has far fewer than 2^32 slices.
    let slices = ((k + ASYNC_BK - 1) / ASYNC_BK) as u32;

    // A thread copies A's rows `a_row + l·A_ROW_STEP` at column `a_kk` of each slice, and B's
    // rows `b_row + l·B_ROW_STEP` at columns `b_col .. b_col + 4`.
    const A_ROW_STEP: usize = ASYNC_THREADS / ASYNC_BK;
    const B_ROW_STEP: usize = ASYNC_THREADS / (ASYNC_BN / 4);
    let (a_kk, a_row) = (tid % ASYNC_BK, tid / ASYNC_BK);
    let (b_row, b_col) = (tid / (ASYNC_BN / 4), tid % (ASYNC_BN / 4) * 4);
    let a_to = shared_base + ((a_kk * ASYNC_A_STRIDE + a_row) * 4) as u32;
    let b_to = shared_base + ((ASYNC_BK * ASYNC_A_STRIDE + b_row * ASYNC_BN + b_col) * 4) as u32;
    // The sources of the next slice to stage, moved one slice on per call: the main loop then
    // adds to two pointers instead of recomputing 64-bit indices for every copy.
    let mut a_from = a.as_ptr().wrapping_add((block_row + a_row) * k + a_kk);
    let mut b_from = b.as_ptr().wrapping_add(b_row * n + block_col + b_col);

    // Issue the copies of A's and of B's part of the slice starting at `t` into `stage`.
    let stage_a = |stage: u32, t: usize, a_from: *const f32| {
        let stage_offset = stage * (ASYNC_STAGE_FLOATS * 4) as u32;
        crate::unroll!([0, 1, 2, 3], |l| {
            if l < A_COPIES {
                let inside = !CHECKED || (block_row + a_row + l * A_ROW_STEP < m && t + a_kk < k);
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
        if (s as u32) < slices {
            stage_a(s as u32, s * ASYNC_BK, a_from);
            stage_b(s as u32, s * ASYNC_BK, b_from);
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
            // Column by column, even columns first, two columns down and two up: see the doc
            // comment on the order.
            crate::unroll!([0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15], |j| {
                crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |step| {
                    let i = if j % 4 < 2 { step } else { ASYNC_TM - 1 - step };
                    acc[i][j] += a_frag[i / 4].0[i % 4] * b_frag[j / 4].0[j % 4];
                });
            });
            // Slice t + 2 goes in flight between the FMAs: see the doc comment.
            if kk == 0 && copy_ahead {
                stage_a(free_stage, (t + STAGES - 1) as usize * ASYNC_BK, a_from);
            }
            if kk == ASYNC_BK / 2 {
                if copy_ahead {
                    stage_b(free_stage, (t + STAGES - 1) as usize * ASYNC_BK, b_from);
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
            // `+ 0.0` gives the 16-byte store registers of its own (see the doc comment); it
            // changes no value but the sign of a zero.
            let v = Quad([
                acc[i][g * 4] + 0.0,
                acc[i][g * 4 + 1] + 0.0,
                acc[i][g * 4 + 2] + 0.0,
                acc[i][g * 4 + 3] + 0.0,
            ]);
            store_c4::<CHECKED>(c, row, col, m, n, &v);
        });
    });
}

#[kernel]
pub unsafe fn matmul_async_128x256(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_async(a, b, c, m, n, k);
}
