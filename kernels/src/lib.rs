//! The GPU side of the project: CUDA kernels in Rust, one family per module. `ptx/build.rs`
//! compiles this crate to PTX with rustc_codegen_nvvm; `host/` launches and checks them. The
//! sizes both sides must agree on come from the `interface` crate.
#![no_std]
#![cfg_attr(
    target_os = "cuda",
    feature(register_attr, asm, asm_experimental_arch),
    register_attr(nvvm_internal)
)]
#![allow(improper_ctypes_definitions)]

pub mod conv1d;
pub mod conv2d;
pub mod counter;
pub mod histogram;
pub mod matmul;
pub mod saxpy;
pub mod vector_add;

use cuda_std::thread;

/// This thread's index in a 1D grid, `blockIdx.x * blockDim.x + threadIdx.x`, computed in 64
/// bits: cuda_std's `index_1d` is a `u32`, which wraps once an array passes 2^32 elements.
#[inline(always)]
pub fn global_index() -> usize {
    thread::block_idx_x() as usize * thread::block_dim_x() as usize + thread::thread_idx_x() as usize
}

/// Threads in the 1D grid: the step of a grid-stride loop.
#[inline(always)]
pub fn grid_threads() -> usize {
    thread::block_dim_x() as usize * thread::grid_dim_x() as usize
}
