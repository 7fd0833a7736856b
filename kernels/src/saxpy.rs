//! SAXPY (`y = a * x + y`) written as a grid-stride loop, scalar and with 16-byte accesses.
//!
//! `vector_add` launches one thread per element, so the grid has to grow with the data. A
//! grid-stride loop decouples the two: thread `i` handles elements `i`, `i + stride`,
//! `i + 2 * stride`, ... where `stride = blockDim.x * gridDim.x` is the number of threads in
//! the whole grid. Any grid size is then correct, even a single block, and the host can size
//! the grid to the GPU (a few blocks per SM) instead of to the data. On each pass of the loop
//! neighbouring threads still touch neighbouring elements, so accesses stay coalesced.
//!
//! **`saxpy_vec4`** strides over groups of four elements ([`load_quad`]): one 16-byte load of
//! `x`, one of `y` and one 16-byte store per pass instead of four of each, so each thread keeps
//! four times the bytes in flight. The last `n % 4` elements are done one by one.

use crate::{global_index, grid_threads, load_quad, read_quad, store_quad, Quad};
use cuda_std::prelude::*;

/// # Safety
/// The launcher (`SaxpyArgs` on the host) guarantees that `y` is valid for reads and writes of
/// `x.len()` elements and does not overlap `x`. Any one-dimensional grid (a second dimension
/// would give two threads one index).
#[kernel]
pub unsafe fn saxpy(a: f32, x: &[f32], y: *mut f32) {
    let stride = grid_threads();
    let mut i = global_index();
    while i < x.len() {
        let yi = y.add(i);
        *yi = a * *x.get_unchecked(i) + *yi;
        i += stride;
    }
}

/// # Safety
/// As for [`saxpy`], and `x` and `y` start 16-byte aligned (they are accessed four floats at a
/// time).
#[kernel]
pub unsafe fn saxpy_vec4(a: f32, x: &[f32], y: *mut f32) {
    let n = x.len();
    let quads = n / 4;
    let stride = grid_threads();
    let mut q = global_index();
    while q < quads {
        // `y` is read and written through its raw pointer only: a `&[f32]` over it would be
        // a shared reference to memory this thread writes.
        let (xs, ys) = (load_quad(x, q).0, read_quad(y, q).0);
        store_quad(y, q, Quad([a * xs[0] + ys[0], a * xs[1] + ys[1], a * xs[2] + ys[2], a * xs[3] + ys[3]]));
        q += stride;
    }
    let tail = 4 * quads + global_index();
    if tail < n {
        let yi = y.add(tail);
        *yi = a * *x.get_unchecked(tail) + *yi;
    }
}
