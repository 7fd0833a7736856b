//! SAXPY (`y = a * x + y`) written as a grid-stride loop.
//!
//! `vector_add` launches one thread per element, so the grid has to grow with the data. A
//! grid-stride loop decouples the two: thread `i` handles elements `i`, `i + stride`,
//! `i + 2 * stride`, ... where `stride = blockDim.x * gridDim.x` is the number of threads in
//! the whole grid. Any grid size is then correct, even a single block, and the host can size
//! the grid to the GPU (a few blocks per SM) instead of to the data. On each pass of the loop
//! neighbouring threads still touch neighbouring elements, so accesses stay coalesced.

use crate::{global_index, grid_threads};
use cuda_std::prelude::*;

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
