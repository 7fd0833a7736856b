//! Every `unsafe` says why: each `pub unsafe fn` under `kernels/src` has a `# Safety` section in
//! its doc comment, and each `unsafe` block or impl on the host side (the sources, tests,
//! benches and examples of `host`, `library`, `radio` and `dependent`) has a `SAFETY:` comment
//! on the lines just above it or on its own line.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("host/ sits in the repository").to_path_buf()
}

#[test]
fn every_unsafe_kernel_function_has_a_safety_section() {
    let mut missing = Vec::new();
    for file in rust_files(&root().join("kernels/src")) {
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.trim_start().starts_with("pub unsafe fn ") {
                continue;
            }
            // The doc comment and attributes directly above the function.
            let above = lines[..i]
                .iter()
                .rev()
                .take_while(|l| {
                    let l = l.trim_start();
                    l.starts_with("///") || l.starts_with("#[")
                })
                .any(|l| l.trim_start() == "/// # Safety");
            if !above {
                missing.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(missing.is_empty(), "`pub unsafe fn` without a `# Safety` section:\n{}", missing.join("\n"));
}

#[test]
fn every_unsafe_block_in_the_host_says_why_it_is_sound() {
    let mut missing = Vec::new();
    let crates = ["host", "library", "radio", "dependent"];
    let dirs = crates.iter().flat_map(|c| ["src", "tests", "benches", "examples"].map(|d| root().join(c).join(d)));
    for dir in dirs.filter(|d| d.is_dir()) {
        for file in rust_files(&dir) {
            let text = std::fs::read_to_string(&file).expect("a readable source file");
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let uses_unsafe = code.contains("unsafe {") || code.contains("unsafe impl");
                if !uses_unsafe || code.contains("\"") {
                    continue;
                }
                // The comment block directly above, or the line itself.
                let said = line.contains("SAFETY:")
                    || lines[..i]
                        .iter()
                        .rev()
                        .take_while(|l| l.trim_start().starts_with("//"))
                        .any(|l| l.contains("SAFETY:"));
                if !said {
                    missing.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(missing.is_empty(), "`unsafe` without a `SAFETY:` comment:\n{}", missing.join("\n"));
}
