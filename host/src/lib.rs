//! Host side of the Rust CUDA kernels: launches each kernel with cust, checks it against a
//! CPU reference (ndarray) and times it with CUDA events.

pub use cuda_kernels::{check, data, gpu, stats, tuning};
pub use radio::{fits, io};

pub mod bench;
pub mod cargo_bench;
pub mod demos;
pub mod multi;
pub mod perf_doc;
pub mod registry;
pub mod report;
pub mod resources;
pub mod sky;
pub mod sources;

/// One module per kernel family (named as in `kernels/src/`): options, launch shapes, CPU
/// reference, check. [`registry::FAMILIES`] lists them.
pub mod ops {
    pub mod compact;
    pub mod conv1d;
    pub mod conv2d;
    pub mod counter;
    pub mod histogram;
    pub mod label;
    pub mod matmul;
    pub mod measure;
    pub mod reduce;
    pub mod saxpy;
    pub mod scan;
    pub mod select;
    pub mod transpose;
    pub mod vector_add;
}
