//! The kernels' two PTX modules, every family's (compute_80) and the Hopper kernels'
//! (sm_90a), ship in `ptx/` beside this script, so that a crate depending on this one builds
//! with stable cargo alone: no nightly, no LLVM, no libNVVM.
//!
//! With `CUDA_KERNELS_PTX=build` this script rebuilds them from `kernels/` first and refreshes
//! `ptx/`: the path of whoever changes a kernel (CI rebuilds and fails on any difference from
//! the committed files). Cargo hashes a path dependency into its symbols (and so into the order
//! LLVM works in) by its path relative to the workspace, or by its absolute path where it lies
//! outside, so the kernels reach `interface` through the link `kernels/interface`, inside their
//! workspace. One dependence remains, on the environment the builder runs in: the same sources
//! rebuild into one of two PTX variants that differ in one kernel's register numbering
//! (`matmul_vec4_128x128_k8`), each the same from build to build in one setting and with the
//! same symbols, so the codegen's memory layout decides, not a hash. As measured: fresh
//! clones at 10-character paths rebuilt the committed variant and one at a 6-character path the
//! other; within one checkout, `cargo check` and `cargo build` have also differed. Rebuild with
//! CI's command (`.ci/run` names it) in a checkout whose path is as long as that of the one whose
//! PTX CI last accepted.
//!
//! The PTX comes from rustc_codegen_nvvm, a rustc backend tied to the nightly that
//! `kernels/rust-toolchain.toml` pins, so the builder in `kernels/ptx` runs under that nightly
//! (`rustup run`), in a clean environment: rustup and cargo pass their own toolchain, flags and
//! target directory to child processes, which would otherwise leak into the nightly build.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shipped modules, as `ptx/` names them.
const MODULES: [&str; 2] = ["kernels.ptx", "kernels_sm90a.ptx"];

/// Variables the outer cargo and rustup set for this script that must not reach the inner one.
fn leaks_into_nested_cargo(name: &str) -> bool {
    let kept = ["CARGO_HOME", "RUSTUP_HOME"];
    let prefixes = ["CARGO", "RUST", "DEP_"];
    let build_script = ["TARGET", "HOST", "OUT_DIR", "PROFILE", "OPT_LEVEL", "DEBUG", "NUM_JOBS"];
    !kept.contains(&name) && (prefixes.iter().any(|p| name.starts_with(p)) || build_script.contains(&name))
}

fn pinned_toolchain(kernels: &Path) -> Result<String, String> {
    let file = kernels.join("rust-toolchain.toml");
    let text = std::fs::read_to_string(&file).map_err(|e| format!("reading {}: {}", file.display(), e))?;
    text.lines()
        .find_map(|line| line.trim().strip_prefix("channel = \"")?.strip_suffix('"').map(str::to_string))
        .ok_or_else(|| format!("{} names no channel", file.display()))
}

/// Compiles `kernels/` into `out`'s two modules with the pinned nightly.
fn build_ptx(kernels: &Path, out: &Path) -> Result<(), String> {
    let toolchain = pinned_toolchain(kernels)?;
    let mut command = Command::new("rustup");
    command
        .args(["run", &toolchain, "cargo", "run", "--release", "--quiet", "-p", "ptx", "--"])
        .args(MODULES.map(|module| out.join(module)))
        .current_dir(kernels);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(leaks_into_nested_cargo) {
            command.env_remove(&name);
        }
    }
    let status = command.status().map_err(|e| format!("running `rustup run {} cargo`: {}", toolchain, e))?;
    if !status.success() {
        return Err(format!("the PTX build with {} failed ({}); has scripts/setup run?", toolchain, status));
    }
    Ok(())
}

/// Rebuilds the modules and writes into `shipped` those that changed.
fn refresh(library: &Path, shipped: &Path) -> Result<(), String> {
    let root = library.parent().ok_or("library/ sits in the repository")?;
    let kernels = root.join("kernels");
    for watched in ["kernels/src", "kernels/ptx", "kernels/Cargo.toml", "kernels/rust-toolchain.toml", "interface/src"]
    {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("cargo sets OUT_DIR")?);
    build_ptx(&kernels, &out)?;
    for module in MODULES {
        let fresh = std::fs::read(out.join(module)).map_err(|e| format!("reading the new {module}: {e}"))?;
        let target = shipped.join(module);
        if std::fs::read(&target).ok().as_ref() != Some(&fresh) {
            std::fs::write(&target, fresh).map_err(|e| format!("writing {}: {e}", target.display()))?;
        }
    }
    Ok(())
}

fn main() {
    println!("cargo:rerun-if-env-changed=CUDA_KERNELS_PTX");
    let library = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let shipped = library.join("ptx");
    match std::env::var("CUDA_KERNELS_PTX").as_deref() {
        Ok("build") => {
            if let Err(err) = refresh(&library, &shipped) {
                eprintln!("{}", err);
                std::process::exit(1);
            }
        }
        Ok(other) if !other.is_empty() => {
            eprintln!("CUDA_KERNELS_PTX={other}: the only value is `build` (rebuild ptx/ from kernels/)");
            std::process::exit(1);
        }
        _ => {}
    }
    for module in MODULES {
        println!("cargo:rerun-if-changed={}", shipped.join(module).display());
    }
}
