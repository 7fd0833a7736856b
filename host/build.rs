//! Builds the kernels' two PTX modules, every family's (compute_80) and the Hopper kernels'
//! (sm_90a), and hands them to the host (`include_str!` in `gpu`).
//!
//! The PTX comes from rustc_codegen_nvvm, a rustc backend tied to the nightly that
//! `kernels/rust-toolchain.toml` pins, while this crate builds on stable. So this script runs
//! the builder in `kernels/ptx` with that nightly (`rustup run`), in a clean environment:
//! rustup and cargo pass their own toolchain, flags and target directory to child processes,
//! which would otherwise leak into the nightly build.

use std::path::{Path, PathBuf};
use std::process::Command;

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

fn build_ptx(kernels: &Path, ptx: &Path, hopper_ptx: &Path) -> Result<(), String> {
    let toolchain = pinned_toolchain(kernels)?;
    let mut command = Command::new("rustup");
    command
        .args(["run", &toolchain, "cargo", "run", "--release", "--quiet", "-p", "ptx", "--"])
        .arg(ptx)
        .arg(hopper_ptx)
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

fn main() {
    let host = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = host.parent().expect("host/ sits in the repository");
    let kernels = root.join("kernels");
    for watched in ["kernels/src", "kernels/ptx", "kernels/Cargo.toml", "kernels/rust-toolchain.toml", "interface/src"]
    {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    if let Err(err) = build_ptx(&kernels, &out.join("kernels.ptx"), &out.join("kernels_sm90a.ptx")) {
        eprintln!("{}", err);
        std::process::exit(1);
    }
    // The toolchain tests check the codegen dylib that made the PTX.
    let codegen = kernels.join("target/release/deps/librustc_codegen_nvvm.so");
    println!("cargo:rustc-env=CODEGEN_DYLIB={}", codegen.display());
}
