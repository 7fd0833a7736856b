//! Compiles the `kernels` crate (the parent directory) to PTX with rustc_codegen_nvvm, then
//! adds the launch bounds that cuda_std 0.2 cannot express.

use cuda_builder::{CudaBuilder, NvvmArch};
use interface::LaunchBounds;
use std::path::PathBuf;

/// Writes each kernel's bounds into the PTX as `.maxntid` / `.minnctapersm`, between its
/// parameter list and its body, so that ptxas caps its registers to fit that many blocks.
fn with_launch_bounds(ptx: &str, bounds: &[LaunchBounds]) -> Result<String, String> {
    let mut out = ptx.to_string();
    for b in bounds {
        let entry = out
            .find(&format!(".entry {}(", b.kernel))
            .ok_or_else(|| format!("kernel `{}` is not in the PTX", b.kernel))?;
        let body = entry + out[entry..].find("\n{").ok_or_else(|| format!("no body for `{}`", b.kernel))?;
        out.insert_str(body, &format!("\n.maxntid {}, 1, 1\n.minnctapersm {}", b.max_threads, b.min_blocks_per_sm));
    }
    Ok(out)
}

fn main() {
    let ptx = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("kernels.ptx");
    for watched in ["../src", "../Cargo.toml", "../../interface/src"] {
        println!("cargo:rerun-if-changed={}", watched);
    }
    // compute_80 is the newest target libNVVM 1.x (CUDA 11) names; the driver JIT and ptxas
    // take it to sm_90.
    if let Err(err) = CudaBuilder::new("..").copy_to(&ptx).arch(NvvmArch::Compute80).build() {
        eprintln!("compiling kernels/ to PTX failed: {}", err);
        std::process::exit(1);
    }
    let bounded = std::fs::read_to_string(&ptx)
        .map_err(|e| e.to_string())
        .and_then(|text| with_launch_bounds(&text, interface::LAUNCH_BOUNDS))
        .and_then(|text| std::fs::write(&ptx, text).map_err(|e| e.to_string()));
    if let Err(err) = bounded {
        eprintln!("adding launch bounds to {}: {}", ptx.display(), err);
        std::process::exit(1);
    }
}
