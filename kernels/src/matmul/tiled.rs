//! **Step 2: shared-memory tiles.** A block of TILE×TILE threads still computes a TILE×TILE
//! tile of `C`, one output per thread as in step 1, but it walks `k` in slices of TILE: at
//! each slice every thread copies one element of `A` and one of `B` into shared memory, the
//! block synchronizes, and each thread does TILE multiply-adds from shared memory.
//!
//! ```text
//!                      B: slice t, TILE rows
//!                      [ b_tile ]
//!   A: slice t,
//!   TILE columns  [ a_tile ]  ->  [ C tile ]     thread (tx, ty): a_tile[ty][i] · b_tile[i][tx]
//! ```
//!
//! Every element of `A` and `B` a block needs is now loaded from global memory once per
//! block instead of once per thread: TILE times less global traffic. Reading `a_tile[ty][i]`
//! is a broadcast within a warp and `b_tile[i][tx]` hits 32 different banks, so no bank
//! conflicts. Elements past the matrices' edges are staged as 0, which makes any m, n, k
//! correct. The tiles live in dynamic shared memory, sized by the launch
//! (`interface::matmul::tiled_shared_bytes`), because a `static` cannot depend on the const
//! generic TILE.

use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::matmul::{LARGE_TILE, SMALL_TILE};

#[inline(always)]
unsafe fn matmul_tiled<const TILE: usize>(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    let a_tile = dynamic_shared_mem::<f32>();
    let b_tile = a_tile.add(TILE * TILE);
    let tx = thread::thread_idx_x() as usize;
    let ty = thread::thread_idx_y() as usize;
    let row = thread::block_idx_y() as usize * TILE + ty;
    let col = thread::block_idx_x() as usize * TILE + tx;

    let mut acc = 0.0f32;
    let mut t = 0;
    while t < k {
        *a_tile.add(ty * TILE + tx) = if row < m && t + tx < k { *a.get_unchecked(row * k + t + tx) } else { 0.0 };
        *b_tile.add(ty * TILE + tx) = if t + ty < k && col < n { *b.get_unchecked((t + ty) * n + col) } else { 0.0 };
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

/// # Safety
/// `a.len() >= m·k`, `b.len() >= k·n`, and `c` is valid for `m·n` writes and aliases neither.
/// Launch: blocks of exactly `SMALL_TILE × SMALL_TILE` threads (x, y), a grid of
/// `⌈n / SMALL_TILE⌉ × ⌈m / SMALL_TILE⌉` blocks, `SMALL_TILE_SHARED_BYTES` of dynamic shared
/// memory.
#[kernel]
pub unsafe fn matmul_tiled_16(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_tiled::<SMALL_TILE>(a, b, c, m, n, k);
}

/// # Safety
/// As [`matmul_tiled_16`], with `LARGE_TILE` and `LARGE_TILE_SHARED_BYTES`.
#[kernel]
pub unsafe fn matmul_tiled_32(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_tiled::<LARGE_TILE>(a, b, c, m, n, k);
}
