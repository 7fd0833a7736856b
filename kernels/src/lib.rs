//! The GPU side of the project: CUDA kernels in Rust, one family per module. `host/build.rs`
//! compiles this crate to PTX with rustc_codegen_nvvm; `host/` launches and checks them.
#![no_std]
#![cfg_attr(
    target_os = "cuda",
    feature(register_attr, asm, asm_experimental_arch),
    register_attr(nvvm_internal)
)]
#![allow(improper_ctypes_definitions)]

pub mod atomics;
pub mod conv;
pub mod grid_stride;
pub mod histogram;
pub mod matmul;
pub mod vector_add;
