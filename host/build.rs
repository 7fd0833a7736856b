//! Compiles the `kernels` crate to PTX with rustc_codegen_nvvm; the host embeds the result.

use cuda_builder::{CudaBuilder, NvvmArch};
use std::path::PathBuf;

fn main() {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let ptx = out_dir.join("kernels.ptx");
    println!("cargo:rerun-if-changed=../kernels/src");
    println!("cargo:rerun-if-changed=../kernels/Cargo.toml");
    if let Err(err) = CudaBuilder::new("../kernels").copy_to(&ptx).arch(NvvmArch::Compute80).build() {
        eprintln!("compiling kernels/ to PTX failed: {}", err);
        std::process::exit(1);
    }
}
