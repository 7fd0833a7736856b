//! `bench/twins/interface.h` is what `c-header` prints now, and it defines every number and
//! string constant of `interface/src`, named by the rule the twins rely on.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const REGENERATE: &str = "cargo run -q -p interface --bin c-header > bench/twins/interface.h";

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn committed_header() -> String {
    let path = manifest_dir().join("../bench/twins/interface.h");
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {} (run `{}`)", path.display(), e, REGENERATE))
}

#[test]
fn committed_header_is_what_the_generator_prints() {
    let output = Command::new(env!("CARGO_BIN_EXE_c-header")).output().expect("running c-header");
    assert!(output.status.success(), "c-header failed: {}", String::from_utf8_lossy(&output.stderr));
    let generated = String::from_utf8(output.stdout).expect("c-header prints UTF-8");
    let committed = committed_header();
    if let Some((line, (want, have))) =
        generated.lines().zip(committed.lines()).enumerate().find(|(_, (want, have))| want != have)
    {
        panic!(
            "bench/twins/interface.h is stale at line {}: `{}`, generated `{}`; run `{}`",
            line + 1,
            have,
            want,
            REGENERATE
        );
    }
    assert_eq!(generated, committed, "bench/twins/interface.h is stale (its length differs); run `{}`", REGENERATE);
}

/// Constants of types the header carries: integers, floats and strings.
fn is_carried(ty: &str) -> bool {
    const NUMBERS: [&str; 14] =
        ["u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64"];
    NUMBERS.contains(&ty) || ty == "&str" || ty == "&'static str"
}

/// The module path of a source file under `src`: `lib.rs` is the crate, `a.rs` and `a/mod.rs`
/// are `a`, `a/b.rs` is `a::b`.
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let file = parts.pop().expect("a file name");
    if file != "lib.rs" && file != "mod.rs" {
        parts.push(file.trim_end_matches(".rs").to_string());
    }
    parts
}

/// `(C name, Rust path)` of every carried `pub const` in `text`, a file of module `module`;
/// inline `pub mod name {` blocks add to the path until their closing brace.
fn constants(text: &str, module: &[String]) -> Vec<(String, String)> {
    let mut path = module.to_vec();
    // The indentation of each open inline module, whose `}` at the same depth closes it.
    let mut open: Vec<usize> = Vec::new();
    let mut found = Vec::new();
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let code = line.trim();
        if let Some(name) = code.strip_prefix("pub mod ").and_then(|rest| rest.strip_suffix(" {")) {
            path.push(name.to_string());
            open.push(indent);
        } else if code == "}" && open.last() == Some(&indent) {
            open.pop();
            path.pop();
        } else if let Some(rest) = code.strip_prefix("pub const ").filter(|rest| !rest.starts_with("fn ")) {
            let declaration =
                rest.split_once(':').and_then(|(name, rest)| Some((name.trim(), rest.split_once('=')?.0)));
            if let Some((name, _)) = declaration.filter(|(_, ty)| is_carried(ty.trim())) {
                let c_name: Vec<String> = path.iter().map(|p| p.to_uppercase()).chain([name.to_string()]).collect();
                let rust: Vec<&str> =
                    ["interface"].into_iter().chain(path.iter().map(String::as_str)).chain([name]).collect();
                found.push((c_name.join("_"), rust.join("::")));
            }
        }
    }
    found
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {}", dir.display(), e)) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            // src/bin holds the generator, not the interface.
            if path.file_name().map_or(false, |n| n != "bin") {
                sources(&path, out);
            }
        } else if path.extension().map_or(false, |e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn header_defines_every_constant_of_the_sources() {
    let src = manifest_dir().join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let header = committed_header();
    let defined: Vec<&str> =
        header.lines().filter_map(|l| l.strip_prefix("#define ")).filter_map(|l| l.split(' ').next()).collect();
    let mut all = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).expect("reading a source file");
        all.extend(constants(&text, &module_of(file.strip_prefix(&src).expect("under src"))));
    }
    // The parser must see the constants the twins use from each module, or it checks nothing.
    for known in ["DEFAULT_BLOCK", "VECTOR_QUADS_PER_THREAD", "TRANSPOSE_TILE", "CONV_TILE", "MATMUL_ASYNC_BM"] {
        assert!(all.iter().any(|(c, _)| c == known), "the source scan missed {}", known);
    }
    let missing: Vec<String> = all
        .iter()
        .filter(|(c, _)| !defined.contains(&c.as_str()))
        .map(|(c, rust)| format!("{} ({})", c, rust))
        .collect();
    assert!(
        missing.is_empty(),
        "bench/twins/interface.h lacks {}: list them in interface/src/bin/c-header.rs and run `{}`",
        missing.join(", "),
        REGENERATE
    );
}

#[test]
fn the_source_scan_follows_modules() {
    let text = "pub const A: usize = 1;\npub mod inner {\n    pub const B: u32 = 2;\n    pub const fn f() {}\n}\n\
                pub const C: &str = \"c\";\npub const D: Thing = Thing;\n";
    let found = constants(text, &["conv".to_string()]);
    let names: Vec<&str> = found.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(names, ["CONV_A", "CONV_INNER_B", "CONV_C"]);
    assert_eq!(found[1].1, "interface::conv::inner::B");
    assert_eq!(module_of(Path::new("lib.rs")), Vec::<String>::new());
    assert_eq!(module_of(Path::new("matmul/mod.rs")), ["matmul"]);
    assert_eq!(module_of(Path::new("matmul/steps.rs")), ["matmul", "steps"]);
}
