//! Vector addition, the "hello world" of CUDA: `c[i] = a[i] + b[i]`, in two versions.
//!
//! **`vector_add`**: one thread per element. A thread finds its element from its block's
//! position in the grid and its own position in the block: `i = blockIdx.x * blockDim.x +
//! threadIdx.x` ([`global_index`], in 64 bits so arrays past 2^32 elements work). The grid is
//! rounded up to whole blocks, so the last block may hold threads past the end of the data;
//! the bounds check keeps them from writing. Each thread reads 8 bytes and writes 4 with no
//! reuse, so the kernel is bound by memory bandwidth. Neighbouring threads touch neighbouring
//! addresses, so every warp's loads and stores coalesce into full 128-byte transactions.
//!
//! **`vector_add_vec4`**: the same work with fewer, wider memory instructions. Each thread
//! handles [`QUADS_PER_THREAD`] groups of four elements with 16-byte loads and stores
//! ([`load_quad`]), a block's threads taking consecutive quads so accesses still coalesce.
//! All loads are issued before the first add, so each thread has 64 bytes in flight instead
//! of 8: DRAM sees enough outstanding requests to run at full speed. The `n % 4` elements
//! past the last whole quad are added one by one by the thread that owns that position.

use crate::{global_index, load_quad, store_quad, Quad};
use cuda_std::prelude::*;
use interface::vector::QUADS_PER_THREAD;

/// # Safety
/// The launcher (`AddArgs` on the host) guarantees that `c` is valid for `a.len()` writes, that
/// `b` is at least as long as `a`, and that `c` overlaps neither. Any one-dimensional grid: threads
/// past the end do nothing.
#[kernel]
pub unsafe fn vector_add(a: &[f32], b: &[f32], c: *mut f32) {
    let i = global_index();
    if i < a.len() && i < b.len() {
        *c.add(i) = a[i] + b[i];
    }
}

/// # Safety
/// As for [`vector_add`], and `a`, `b` and `c` start 16-byte aligned (they are accessed four
/// floats at a time).
#[kernel]
pub unsafe fn vector_add_vec4(a: &[f32], b: &[f32], c: *mut f32) {
    let n = a.len().min(b.len());
    let quads = n / 4;
    let block = thread::block_dim_x() as usize;
    let first = thread::block_idx_x() as usize * block * QUADS_PER_THREAD + thread::thread_idx_x() as usize;
    let mut x = [Quad([0.0f32; 4]); QUADS_PER_THREAD];
    let mut y = [Quad([0.0f32; 4]); QUADS_PER_THREAD];
    for u in 0..QUADS_PER_THREAD {
        let q = first + u * block;
        if q < quads {
            x[u] = load_quad(a, q);
            y[u] = load_quad(b, q);
        }
    }
    for u in 0..QUADS_PER_THREAD {
        let q = first + u * block;
        if q < quads {
            let (x, y) = (x[u].0, y[u].0);
            store_quad(c, q, Quad([x[0] + y[0], x[1] + y[1], x[2] + y[2], x[3] + y[3]]));
        } else if q == quads {
            for i in 4 * quads..n {
                *c.add(i) = *a.get_unchecked(i) + *b.get_unchecked(i);
            }
        }
    }
}
