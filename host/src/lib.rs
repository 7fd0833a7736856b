//! Host side of the Rust CUDA kernels: launches each kernel with cust, checks it against a
//! CPU reference (ndarray) and times it with CUDA events.

pub mod bench;
pub mod check;
pub mod data;
pub mod gpu;
pub mod report;
pub mod resources;
pub mod runtime;

/// One module per kernel family: launch configuration, CPU reference, check.
pub mod ops {
    pub mod conv;
    pub mod counter;
    pub mod histogram;
    pub mod matmul;
    pub mod saxpy;
    pub mod vector_add;
}
