//! `ptx <file> <hopper file>`: writes the kernels' PTX modules, which build.rs compiled, to the
//! two files: every family (compute_80), and the Hopper module (sm_90a). host/build.rs runs
//! this with the pinned nightly, so the host itself builds on stable Rust.

const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
const HOPPER_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels_sm90a.ptx"));

fn main() {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let [path, hopper_path] = match <[_; 2]>::try_from(args) {
        Ok(paths) => paths.map(std::path::PathBuf::from),
        Err(_) => {
            eprintln!("usage: ptx <output file> <Hopper output file>");
            std::process::exit(2);
        }
    };
    for (path, text) in [(&path, PTX), (&hopper_path, HOPPER_PTX)] {
        if let Err(err) = std::fs::write(path, text) {
            eprintln!("writing {}: {}", path.display(), err);
            std::process::exit(1);
        }
    }
}
