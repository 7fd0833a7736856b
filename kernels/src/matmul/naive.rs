//! **Step 1: one thread per output.** Thread `(x, y)` of block `(bx, by)` computes
//! `C[row][col]`, with `row = by·16 + y` and `col = bx·16 + x`: the dot product of row `row` of
//! `A` and column `col` of `B`, read straight from global memory.
//!
//! ```text
//!                      B (k × n)
//!                        | col |
//!                        |  .  |
//!                        |  .  |
//!   A (m × k)            |  .  |
//!   row:  ---- . . . ---->  C[row][col]    a 16×16 block of threads: a 16×16 tile of C
//! ```
//!
//! Each output costs `2k` loads for `2k` flops. Consecutive threads of a warp share a row of
//! `A` (one broadcast load) and read consecutive columns of `B` (coalesced), but nothing is
//! reused from fast memory: `A`'s row is read again by every block in its row of blocks. The
//! kernel is bound by the bandwidth of L1 and L2, far below the arithmetic peak.
//!
//! The loop is a `while`, not `for i in 0..k`: NVVM, which gets rustc's IR unoptimized, sees
//! the range iterator's `next` make each step of the counter conditional (a select), so it
//! cannot turn the index arithmetic into pointer increments, and every product recomputes
//! its addresses with 64-bit multiplies. The `while` loop compiles as nvcc compiles the same
//! loop in C: unrolled by 4, with the addresses stepped.

use cuda_std::prelude::*;

/// # Safety
/// `a.len() >= m·k`, `b.len() >= k·n`, and `c` is valid for `m·n` writes and aliases neither.
/// Launch: blocks of `NAIVE_BLOCK × NAIVE_BLOCK` threads (x, y) and a grid of
/// `⌈n / NAIVE_BLOCK⌉ × ⌈m / NAIVE_BLOCK⌉` blocks, no dynamic shared memory. Threads outside
/// C write nothing, so any grid that covers C is correct.
#[kernel]
pub unsafe fn matmul_naive(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    let row = (thread::block_idx_y() * thread::block_dim_y() + thread::thread_idx_y()) as usize;
    let col = (thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x()) as usize;
    if row < m && col < n {
        let mut acc = 0.0f32;
        let mut i = 0;
        while i < k {
            acc += *a.get_unchecked(row * k + i) * *b.get_unchecked(i * n + col);
            i += 1;
        }
        *c.add(row * n + col) = acc;
    }
}
