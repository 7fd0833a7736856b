//! The kernels' two PTX modules, every family's (compute_80) and the Hopper kernels'
//! (sm_90a), ship in `ptx/` beside this script, so that a crate depending on this one builds
//! with stable cargo alone: no nightly, no LLVM, no libNVVM.
//!
//! With `CUDA_KERNELS_PTX=build` this script rebuilds them from `kernels/` first and refreshes
//! `ptx/`: the path of whoever changes a kernel (CI rebuilds and fails on any difference from
//! the committed files). The rebuild has to give the same bytes in every checkout and every
//! time. Two things stood in the way:
//! - libNVVM compiled the very same IR into one of two PTX variants (one kernel's shared loads
//!   vectorised one way or the other) from one build to the next: often inside rustc, now and
//!   then in a process of its own, and never yet in one whose address space is not randomised.
//!   So the builder (`kernels/ptx/build.rs`) has the codegen write its program and compiles
//!   it apart, under `setarch -R`.
//! - The IR must be the same bytes too, and it holds the paths rustc was given, of the vendored
//!   crates among them. So the build runs where the paths and variables are the same
//!   everywhere: in a private mount namespace (`unshare`, as `scripts/dependent-check` uses)
//!   with the checkout bound at [`BUILD_ROOT`], in an environment of `PATH`, `HOME`,
//!   `CARGO_HOME` and `RUSTUP_HOME` alone. Cargo hashes a path dependency outside the workspace
//!   by its absolute path into its symbols, so the kernels reach `interface` through the link
//!   `kernels/interface`, inside it.
//!
//! The PTX comes from rustc_codegen_nvvm, a rustc backend tied to the nightly that
//! `kernels/rust-toolchain.toml` pins, so the builder in `kernels/ptx` runs under that nightly
//! (`rustup run`); the outer rustup and cargo's toolchain, flags and target directory, which
//! they pass to child processes, are among the variables that do not reach it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shipped modules, as `ptx/` names them.
const MODULES: [&str; 2] = ["kernels.ptx", "kernels_sm90a.ptx"];

/// Where the checkout is bound while its PTX builds: the same directory on every machine.
const BUILD_ROOT: &str = "/mnt";

/// The modules' files, relative to `kernels/`, where the builder writes them.
const BUILT: &str = "target/ptx-modules";

fn pinned_toolchain(kernels: &Path) -> Result<String, String> {
    let file = kernels.join("rust-toolchain.toml");
    let text = std::fs::read_to_string(&file).map_err(|e| format!("reading {}: {}", file.display(), e))?;
    text.lines()
        .find_map(|line| line.trim().strip_prefix("channel = \"")?.strip_suffix('"').map(str::to_string))
        .ok_or_else(|| format!("{} names no channel", file.display()))
}

fn variable(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("the PTX build needs {name} set"))
}

/// Whether this process runs as root, which may make a mount namespace without a user one.
fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().any(|line| line.split_whitespace().take(2).eq(["Uid:", "0"]))
}

/// Compiles the checkout's `kernels/` with the pinned nightly, bound at [`BUILD_ROOT`] in a
/// mount namespace of its own, into the two modules under `kernels/` + [`BUILT`].
fn build_ptx(root: &Path) -> Result<(), String> {
    let toolchain = pinned_toolchain(&root.join("kernels"))?;
    if !Path::new(BUILD_ROOT).is_dir() {
        return Err(format!("the PTX build binds the checkout at {BUILD_ROOT}, which this machine lacks"));
    }
    let built = root.join("kernels").join(BUILT);
    std::fs::create_dir_all(&built).map_err(|e| format!("creating {}: {e}", built.display()))?;
    let home = variable("HOME")?;
    let cargo_home = std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{home}/.cargo"));
    let rustup_home = std::env::var("RUSTUP_HOME").unwrap_or_else(|_| format!("{home}/.rustup"));
    let mut command = Command::new("unshare");
    if !is_root() {
        command.args(["--user", "--map-root-user"]);
    }
    // Inside: bind, enter, and run the builder, which writes the modules where BUILT says.
    let inside = r#"mount --bind "$1" "$2" && cd "$2/kernels" && shift 2 && exec "$@""#;
    command
        .args(["--mount", "--fork", "sh", "-c", inside, "sh"])
        .arg(root)
        .arg(BUILD_ROOT)
        .args(["rustup", "run", &toolchain, "cargo", "run", "--release", "--quiet", "-p", "ptx", "--"])
        .args(MODULES.map(|module| format!("{BUILT}/{module}")))
        .current_dir("/")
        .env_clear()
        .env("PATH", format!("{cargo_home}/bin:/usr/local/bin:/usr/bin:/bin"))
        .env("HOME", home)
        .env("CARGO_HOME", cargo_home)
        .env("RUSTUP_HOME", rustup_home);
    let status = command.status().map_err(|e| format!("running `unshare` for the PTX build: {e}"))?;
    if !status.success() {
        return Err(format!(
            "the PTX build with {toolchain} failed ({status}); has scripts/setup run, and may this user make a \
             mount namespace (root, or unprivileged user namespaces)?"
        ));
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
    build_ptx(root)?;
    for module in MODULES {
        let fresh =
            std::fs::read(kernels.join(BUILT).join(module)).map_err(|e| format!("reading the new {module}: {e}"))?;
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
