//! Host side of the Rust CUDA kernels: launches each kernel with cust, checks it against a
//! CPU reference (ndarray) and times it with CUDA events.

pub use cuda_kernels::{check, data, gpu, stats, tuning};
pub use radio::{fits, io};

pub mod bench;
pub mod cargo_bench;
pub mod demos;
pub mod launch_cases;
pub mod multi;
pub mod perf_doc;
pub mod registry;
pub mod report;
pub mod resources;
pub mod sky;
pub mod sources;
pub mod survey;

pub mod ops;
