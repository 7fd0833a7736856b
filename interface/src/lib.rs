//! The interface between the kernels (`kernels/`, compiled to PTX) and the host that launches
//! them: every number both sides must agree on lives here once, and so does the histogram's
//! binning rule, so that the CPU reference bins exactly as the GPU does.
//!
//! `no_std` with no dependencies: the pinned nightly builds it for the GPU and the stable
//! toolchain builds it for the host, where `std` also gives the host-only parts what `core`
//! lacks (the square root of `reduce::Moments::std`).
#![no_std]
// The histogram's exact edges need explicitly rounded PTX arithmetic (`histogram::F32Bins`).
#![cfg_attr(target_os = "cuda", feature(asm, asm_experimental_arch))]

#[cfg(not(target_os = "cuda"))]
extern crate std;

pub mod conv;
pub mod histogram;
pub mod label;
pub mod matmul;
pub mod measure;
pub mod reduce;
pub mod scan;
pub mod select;
pub mod wgmma;
pub mod window;

/// Threads per block of the one-thread-per-element kernels when the user does not choose.
pub const DEFAULT_BLOCK: u32 = 256;

/// `__launch_bounds__(threads, min_blocks)` of a kernel, which cuda_std 0.2 cannot express:
/// the PTX builder writes them as `.maxntid` / `.minnctapersm`, so ptxas caps the registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchBounds {
    pub kernel: &'static str,
    pub max_threads: u32,
    pub min_blocks_per_sm: u32,
}

/// Every kernel that has launch bounds.
pub const LAUNCH_BOUNDS: &[LaunchBounds] =
    &concat::<{ matmul::SGEMM_BOUNDS.len() + scan::BOUNDS.len() + histogram::F32_BOUNDS.len() }>(
        &concat::<{ matmul::SGEMM_BOUNDS.len() + scan::BOUNDS.len() }>(matmul::SGEMM_BOUNDS, &scan::BOUNDS),
        &histogram::F32_BOUNDS,
    );

/// `a` then `b`, as one array of `N = a.len() + b.len()` bounds.
const fn concat<const N: usize>(a: &[LaunchBounds], b: &[LaunchBounds]) -> [LaunchBounds; N] {
    let mut out = [a[0]; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < a.len() { a[i] } else { b[i - a.len()] };
        i += 1;
    }
    out
}

/// Launch shapes of the element-wise kernels with 16-byte accesses.
pub mod vector {
    /// Groups of four elements each thread of `vector_add_vec4` adds.
    pub const QUADS_PER_THREAD: usize = 4;
    /// Elements one block of `vector_add_vec4` covers.
    pub const fn elements_per_block(block: usize) -> usize {
        4 * QUADS_PER_THREAD * block
    }
}

/// Launch shapes of the transpose kernels (`kernels/src/transpose.rs`): a block of
/// `TILE × BLOCK_ROWS` threads transposes a `TILE × TILE` tile.
pub mod transpose {
    /// Side of the square tile of the naive, shared and padded kernels.
    pub const TILE: usize = 32;
    /// Rows of threads per block: each thread takes TILE / BLOCK_ROWS rows of the tile.
    pub const BLOCK_ROWS: usize = 8;
    /// `transpose_padded_64`: a 64 × 64 tile, 16 of its rows per thread.
    pub const WIDE_TILE: usize = 64;
    pub const WIDE_BLOCK_ROWS: usize = 4;
}
