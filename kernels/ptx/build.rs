//! Compiles the `kernels` crate (the parent directory) to PTX with rustc_codegen_nvvm, twice:
//! every family for compute_80 (`kernels.ptx`), and, with the `hopper` feature, the kernels on
//! Hopper's instructions for compute_90 raised to sm_90a (`kernels_sm90a.ptx`). Then it adds
//! the launch bounds that cuda_std 0.2 cannot express.
//!
//! libNVVM's last step, IR to PTX, runs in a process of its own, its addresses not randomised:
//! the same IR has come out as different PTX from one compile to the next (one kernel's shared
//! loads vectorised one way or the other), inside rustc and, less often, in a fresh process
//! too; with the address space fixed (`setarch -R`), as the same PTX every time it was tried.
//! So the codegen (patched, `NVVM_PROGRAM_OUT`) writes the program it verified instead of
//! compiling it, and this script runs itself again (`--compile-nvvm-program`) to compile it.

use cuda_builder::{CudaBuilder, NvvmArch};
use interface::LaunchBounds;
use nvvm::{NvvmOption, NvvmProgram};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The argument that makes this script compile an NVVM program's directory to PTX on stdout.
const COMPILE: &str = "--compile-nvvm-program";

/// The program the codegen wrote to `dir` (`program.ll`, its lazy modules, `options`), compiled.
fn compile_program(dir: &Path) -> Result<Vec<u8>, String> {
    let read =
        |name: &str| std::fs::read(dir.join(name)).map_err(|e| format!("reading {}: {}", dir.join(name).display(), e));
    let options = String::from_utf8(read("options")?).map_err(|e| format!("the NVVM options: {}", e))?;
    let options = options
        .lines()
        .map(|o| o.parse::<NvvmOption>().map_err(|e| format!("NVVM option `{}`: {}", o, e)))
        .collect::<Result<Vec<_>, _>>()?;
    let failed = |e: nvvm::NvvmError| format!("libNVVM: {}", e);
    let program = NvvmProgram::new().map_err(failed)?;
    program.add_module(&read("program.ll")?, "merged".to_string()).map_err(failed)?;
    program.add_lazy_module(&read("libdevice.bc")?, "libdevice".to_string()).map_err(failed)?;
    program.add_lazy_module(&read("libintrinsics.bc")?, "libintrinsics".to_string()).map_err(failed)?;
    program.compile(&options).map_err(|e| {
        let log = program.compiler_log().ok().flatten().unwrap_or_default();
        format!("libNVVM: {}\n{}", e, log)
    })
}

/// [`compile_program`] in a new process of this script, without address-space randomisation
/// (`setarch -R`, util-linux), on which libNVVM's output has depended.
fn compile_apart(dir: &Path) -> Result<String, String> {
    let this = std::env::current_exe().map_err(|e| format!("this build script's path: {}", e))?;
    let out = Command::new("setarch")
        .arg("-R")
        .arg(&this)
        .arg(COMPILE)
        .arg(dir)
        .output()
        .map_err(|e| format!("running {} under setarch -R (util-linux): {}", this.display(), e))?;
    if !out.status.success() {
        return Err(format!("compiling {} apart: {}", dir.display(), String::from_utf8_lossy(&out.stderr)));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("the PTX of {}: {}", dir.display(), e))
}

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

/// The Hopper module's header: libNVVM 11.8 writes `.version 7.8` / `.target sm_90` for
/// compute_90, and passes the inline PTX through unchanged; wgmma and setmaxnreg exist only for
/// `sm_90a` from PTX 8.0 on, which the driver's JIT and a CUDA 12 ptxas accept once the header
/// says so. Anything else in the header is an error, not a guess.
fn raised_to_sm90a(ptx: &str) -> Result<String, String> {
    let version = ptx.lines().find(|l| l.starts_with(".version ")).ok_or("no .version line")?;
    let target = ptx.lines().find(|l| l.starts_with(".target ")).ok_or("no .target line")?;
    if version.trim() != ".version 7.8" || target.trim() != ".target sm_90" {
        return Err(format!(
            "expected `.version 7.8` and `.target sm_90` from libNVVM, found `{}` and `{}`",
            version, target
        ));
    }
    Ok(ptx.replacen(version, ".version 8.0", 1).replacen(target, ".target sm_90a", 1))
}

/// Compiles the kernels crate for `arch` with `features` into `ptx`, checks its target, then
/// rewrites it with `finish`.
fn build(
    ptx: &Path,
    arch: NvvmArch,
    features: &[&str],
    target: &str,
    finish: impl Fn(&str) -> Result<String, String>,
) -> Result<(), String> {
    let program = ptx.with_extension("nvvm");
    std::fs::create_dir_all(&program).map_err(|e| format!("creating {}: {}", program.display(), e))?;
    std::env::set_var("NVVM_PROGRAM_OUT", &program);
    let built = CudaBuilder::new("..").copy_to(ptx).arch(arch).build_args(features).build();
    std::env::remove_var("NVVM_PROGRAM_OUT");
    built.map_err(|e| format!("compiling kernels/ to PTX for {:?}: {}", arch, e))?;
    let text = compile_apart(&program)?;
    if !text.lines().any(|l| l.trim() == target) {
        return Err(format!("{} is not for `{}`", ptx.display(), target));
    }
    let finished = finish(&text).map_err(|e| format!("{}: {}", ptx.display(), e))?;
    std::fs::write(ptx, finished).map_err(|e| format!("writing {}: {}", ptx.display(), e))
}

fn main() {
    let args: Vec<_> = std::env::args_os().collect();
    if args.len() == 3 && args[1] == COMPILE {
        use std::io::Write;
        let written = compile_program(Path::new(&args[2]))
            .and_then(|ptx| std::io::stdout().write_all(&ptx).map_err(|e| format!("writing the PTX: {}", e)));
        if let Err(err) = written {
            eprintln!("{}", err);
            std::process::exit(1);
        }
        return;
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for watched in ["../src", "../Cargo.toml", "../../interface/src"] {
        println!("cargo:rerun-if-changed={}", watched);
    }
    // compute_80 is the newest target libNVVM 1.x (CUDA 11) names in the pinned `nvvm` crate;
    // the driver JIT and ptxas take it to sm_90.
    let main = build(&out.join("kernels.ptx"), NvvmArch::Compute80, &[], ".target sm_80", |text| {
        with_launch_bounds(text, interface::LAUNCH_BOUNDS)
    });
    // The Hopper module: compute_90 (patches/nvvm-compute90.patch), raised to sm_90a.
    let hopper = || {
        build(&out.join("kernels_sm90a.ptx"), NvvmArch::Compute90, &["--features", "hopper"], ".target sm_90", |text| {
            with_launch_bounds(&raised_to_sm90a(text)?, &interface::wgmma::BOUNDS)
        })
    };
    if let Err(err) = main.and_then(|()| hopper()) {
        eprintln!("{}", err);
        std::process::exit(1);
    }
}
