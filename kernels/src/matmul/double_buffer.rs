//! **Step 4c: double buffering.** In step 4b the block waits at a barrier for each slice's
//! global loads, and with few warps per scheduler nothing hides that wait. Here shared memory
//! holds two stages: the next slice's loads are issued into registers (`a4`, `b4`) before the
//! FMAs on one stage and stored into the other after them, so the arithmetic hides their
//! latency, with one barrier per slice. (Holding the pieces costs registers: one block per SM.)
//!
//! ```text
//!   fetch(0); store(stage 0); sync
//!   loop:  fetch(t + 1)  ->  FMAs on stage s  ->  store(stage s ^ 1)  ->  sync  ->  s ^= 1
//! ```
//!
//! The tile sizes are const generics: `interface::sgemm_configs!` lists the configurations
//! compiled, one kernel each (the default `matmul_vec4_128x128` has BK = 16), and `host matmul
//! --tune` picks the fastest for a shape. Arrays sized by them are declared at their largest
//! and indexed under constant guards, which the compiler folds away.

use super::{interior_block, load4, store_c4, Float4};
use crate::Quad;
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::matmul::MAX_LOADS;

/// The `BM × BN` tile of C at block (`blockIdx.y`, `blockIdx.x`), summed over k's columns of A
/// (rows of B) from `k_begin` to `k_end`, where `k` is A's row length: all of k for the kernels
/// below, one run of it for step 4d's splits (`split_k.rs`). `k_begin` is a multiple of `BK`.
#[inline(always)]
pub(super) unsafe fn matmul_vec4<
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
    (k_begin, k_end): (usize, usize),
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
                let valid = if !CHECKED {
                    4
                } else if row < m {
                    k_end.saturating_sub(t + col)
                } else {
                    0
                };
                a4[l] = load4(a.as_ptr().wrapping_add(row * k + t + col), valid, !CHECKED || k % 4 == 0);
            }
            if l < b_loads {
                let (r, col) = b_piece(l);
                let valid = if !CHECKED {
                    4
                } else if t + r < k_end {
                    n.saturating_sub(block_col + col)
                } else {
                    0
                };
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
    fetch(k_begin, &mut a4, &mut b4);
    store(0, &a4, &b4);
    thread::sync_threads();

    let mut stage = 0;
    let mut t = k_begin;
    while t < k_end {
        let next = t + BK;
        // The last step re-fetches its own slice instead of one past the end: behind an `if`,
        // NVVM would sink the loads into the branch that stores them, after the FMAs.
        fetch(if next < k_end { next } else { t }, &mut a4, &mut b4);
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
        /// # Safety
        /// `a.len() >= m·k`, `b.len() >= k·n`, `c` valid for `m·n` writes and aliasing neither;
        /// `a`, `b`, `c` 16-byte aligned. Launch (the configuration's `TileConfig`): blocks of
        /// `threads()`, a grid of `⌈n / bn⌉ × ⌈m / bm⌉`, `shared_bytes()` of dynamic shared memory.
        #[kernel]
        pub unsafe fn $kernel(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
            if interior_block($bm, $bn, $bk, m, n, k) {
                matmul_vec4::<$bm, $bn, $bk, $tm, $tn, false>(a, b, c, m, n, k, (0, k));
            } else {
                matmul_vec4::<$bm, $bn, $bk, $tm, $tn, true>(a, b, c, m, n, k, (0, k));
            }
        }
    )+};
}
interface::sgemm_configs!(vec4_kernels);
