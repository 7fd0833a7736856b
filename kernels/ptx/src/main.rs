//! `ptx <file>`: writes the kernels' PTX, which build.rs compiled, to `<file>`. host/build.rs
//! runs this with the pinned nightly, so the host itself builds on stable Rust.

const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

fn main() {
    let path = match std::env::args_os().nth(1) {
        Some(path) => std::path::PathBuf::from(path),
        None => {
            eprintln!("usage: ptx <output file>");
            std::process::exit(2);
        }
    };
    if let Err(err) = std::fs::write(&path, PTX) {
        eprintln!("writing {}: {}", path.display(), err);
        std::process::exit(1);
    }
}
