//! Compiles the `kernels` crate to PTX with rustc_codegen_nvvm; the host embeds the result.

use cuda_builder::{CudaBuilder, NvvmArch};
use std::path::PathBuf;

/// Launch bounds (`__launch_bounds__(threads, blocks per SM)` in CUDA C), which cuda_std 0.2
/// cannot express: written into the PTX as `.maxntid` / `.minnctapersm`, so that ptxas caps
/// the kernel's registers to fit that many blocks on an SM. Only the kernels listed here
/// are affected.
const LAUNCH_BOUNDS: &[(&str, u32, u32)] = &[("matmul_vec4_128x128", 256, 2)];

fn with_launch_bounds(ptx: &str) -> Result<String, String> {
    let mut out = ptx.to_string();
    for (kernel, threads, blocks) in LAUNCH_BOUNDS {
        let entry = out
            .find(&format!(".entry {}(", kernel))
            .ok_or_else(|| format!("kernel `{}` is not in the PTX", kernel))?;
        // The directives go between the parameter list and the body.
        let body = entry + out[entry..].find("\n{").ok_or_else(|| format!("no body for `{}`", kernel))?;
        out.insert_str(body, &format!("\n.maxntid {}, 1, 1\n.minnctapersm {}", threads, blocks));
    }
    Ok(out)
}

fn main() {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let ptx = out_dir.join("kernels.ptx");
    println!("cargo:rerun-if-changed=../kernels/src");
    println!("cargo:rerun-if-changed=../kernels/Cargo.toml");
    if let Err(err) = CudaBuilder::new("../kernels").copy_to(&ptx).arch(NvvmArch::Compute80).build() {
        eprintln!("compiling kernels/ to PTX failed: {}", err);
        std::process::exit(1);
    }
    let bounded = std::fs::read_to_string(&ptx).map_err(|e| e.to_string()).and_then(|text| with_launch_bounds(&text));
    match bounded.and_then(|text| std::fs::write(&ptx, text).map_err(|e| e.to_string())) {
        Ok(()) => {}
        Err(err) => {
            eprintln!("adding launch bounds to {}: {}", ptx.display(), err);
            std::process::exit(1);
        }
    }
}
