//! The kernels' two PTX modules, every family's (compute_80) and the Hopper kernels'
//! (sm_90a), ship in `ptx/` beside this script, so that a crate depending on this one builds
//! with stable cargo alone: no nightly, no LLVM, no libNVVM.
//!
//! With `CUDA_KERNELS_PTX=build` this script rebuilds them from `kernels/` first and refreshes
//! `ptx/`: the path of whoever changes a kernel (CI rebuilds and fails on any difference from
//! the committed files). The build is deterministic in one checkout; in another, the mangled
//! symbols' hashes and what they order differ, so a module is rewritten only when its code does. The PTX comes from rustc_codegen_nvvm, a rustc backend tied to the
//! nightly that `kernels/rust-toolchain.toml` pins, so the builder in `kernels/ptx` runs under
//! that nightly (`rustup run`), in a clean environment: rustup and cargo pass their own
//! toolchain, flags and target directory to child processes, which would otherwise leak into
//! the nightly build.

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

/// The PTX with what depends on where the checkout lies taken out, for comparing two builds.
/// Path dependencies outside the kernels' workspace (`interface`) are hashed by their absolute
/// path into every mangled symbol (`17h<16 hex>E`), which reorders functions and so renumbers
/// their block labels (`$L__BB<function>_`) and the private string globals (`private$<n>`).
/// What stays is compared: the symbols without their hash, the labels without the function's
/// number, each function's text in order, and the functions and declarations as a sorted set.
fn normalised(ptx: &str) -> Vec<String> {
    let mut text = String::with_capacity(ptx.len());
    let mut rest = ptx;
    while let Some(at) = rest.find(['1', '$']) {
        let (before, tail) = rest.split_at(at);
        text.push_str(before);
        let hex = |s: &str| s.len() >= 16 && s.as_bytes()[..16].iter().all(|b| b.is_ascii_hexdigit());
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        let skipped = if let Some(hash) = tail.strip_prefix("17h").filter(|h| hex(h) && h[16..].starts_with('E')) {
            text.push_str("17hE");
            tail.len() - hash.len() + 17
        } else if let Some(label) = tail.strip_prefix("$L__BB").filter(|l| digits(l) > 0) {
            text.push_str("$L__BB");
            tail.len() - label.len() + digits(label)
        } else if let Some(name) = tail.strip_prefix('$').filter(|_| text.ends_with("private")) {
            let letters = name.bytes().take_while(u8::is_ascii_alphabetic).count();
            text.push('$');
            1 + letters + digits(&name[letters..])
        } else {
            text.push_str(&tail[..1]);
            1
        };
        rest = &tail[skipped..];
    }
    text.push_str(rest);
    let mut chunks = Vec::new();
    let mut function: Option<String> = None;
    for line in text.lines() {
        match function.as_mut() {
            Some(body) => {
                body.push_str(line);
                body.push('\n');
                if line == "}" {
                    chunks.extend(function.take());
                }
            }
            None if line.contains(".entry ") || line.contains(".func ") => function = Some(format!("{line}\n")),
            None => chunks.push(line.to_string()),
        }
    }
    chunks.extend(function);
    chunks.sort();
    chunks
}

/// Rebuilds the modules and writes into `shipped` those whose code changed: a build in another
/// checkout differs only in what [`normalised`] takes out, and leaves the files as they are.
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
        let fresh = String::from_utf8(fresh).map_err(|e| format!("the new {module} is not text: {e}"))?;
        let same = std::fs::read_to_string(&target).is_ok_and(|old| normalised(&old) == normalised(&fresh));
        if !same {
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
