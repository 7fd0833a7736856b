//! `host perf-doc`: `docs/performance.md` from the last run's JSON files, so that the
//! numbers live in one place and name their device and date:
//!
//! ```sh
//! cargo run -p host --release -- perf-doc --runner runner.json --peers peers.json \
//!     [--bench bench-report/report.json] > docs/performance.md
//! ```
//!
//! `runner.json` is the twins runner's `--json` output, `peers.json` what `bench/peers/run`
//! writes, `report.json` what `host bench` writes. The same command rewrites the rows of the
//! SGEMM ladder's table in `kernels/src/matmul/mod.rs` (or `--ladder`): each row keeps its step,
//! file, kernel and idea, and gets the kernel's TFLOP/s at 4096³ from the runner and its
//! fraction of cuBLAS's speed there from the peers.

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::{self, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Options {
    /// The twins runner's `--json` output (the Rust tax).
    #[arg(long)]
    pub runner: PathBuf,
    /// `bench/peers/run`'s output (the libraries).
    #[arg(long)]
    pub peers: PathBuf,
    /// `host bench`'s report.json: adds the sweep's fastest variant at each size.
    #[arg(long)]
    pub bench: Option<PathBuf>,
    /// `bench/peers/sweep.py`'s `--json` output: adds the matrix products beside cuBLAS at the
    /// shapes users call, per type, with their geometric means and the accumulation error.
    #[arg(long)]
    pub products: Option<PathBuf>,
    /// `bench/peers/finders.py`'s `--json` output: adds `host sources` beside BANE + Aegean and
    /// PyBDSF on survey skies, each catalog's scores and each finder's time.
    #[arg(long)]
    pub finders: Option<PathBuf>,
    /// The module whose ladder table is rewritten [default: kernels/src/matmul/mod.rs, when
    /// it exists].
    #[arg(long)]
    pub ladder: Option<PathBuf>,
}

/// Where the ladder's table is when `--ladder` is not given, from the repository's root.
const DEFAULT_LADDER: &str = "kernels/src/matmul/mod.rs";
const LADDER_START: &str = "//! <!-- ladder-table:start -->";
const LADDER_END: &str = "//! <!-- ladder-table:end -->";
/// The ladder's table is measured at this cube.
const LADDER_SIDE: u64 = 4096;
/// The Rust tax's bar: a Rust kernel at most this much slower than its twin.
const TAX_BAR: f64 = 1.03;
/// The products' bar (`bench/peers/sweep.py`): no shape below this share of cuBLAS's speed.
const PRODUCT_BAR: f64 = 0.90;

/// The twins runner's `--json` output (`bench/twins/runner.cpp`, `write_json`).
#[derive(Debug, Deserialize)]
pub struct Runner {
    pub device: String,
    pub date: String,
    pub quick: bool,
    pub runs: u32,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub untwinned: Vec<String>,
    pub rows: Vec<Twin>,
}

/// One kernel beside its twin; a time is null where it was not measured.
#[derive(Debug, Deserialize)]
pub struct Twin {
    pub kernel: String,
    pub size: String,
    pub rust_ms: Option<f64>,
    pub c_ms: Option<f64>,
    pub ratio: Option<f64>,
    pub unit: String,
    pub rust_rate: Option<f64>,
    pub rust_regs: i64,
    pub c_regs: i64,
    pub check: String,
}

/// `bench/peers/run`'s output: the libraries, keyed by the work they do.
#[derive(Debug, Deserialize)]
pub struct Peers {
    pub device: String,
    pub date: String,
    pub peers: BTreeMap<String, Peer>,
}

#[derive(Debug, Deserialize)]
pub struct Peer {
    pub library: String,
    pub ms: f64,
    pub n: Option<u64>,
    pub m: Option<u64>,
    pub k: Option<u64>,
    pub side: Option<u64>,
    #[serde(rename = "GBps")]
    pub gbps: Option<f64>,
    #[serde(rename = "GFLOPs")]
    pub gflops: Option<f64>,
    /// For the lesson's pipeline (`bench/peers/sources.py`): `host sources`' time on the same
    /// sky in the same run, the image on the GPU (its median over `--runs`).
    pub host_sources_ms: Option<f64>,
}

/// What `perf-doc` reads of `host bench`'s report.json.
#[derive(Debug, Deserialize)]
pub struct Sweep {
    pub device: SweepDevice,
    pub date: Option<String>,
    pub quick: bool,
    pub rows: Vec<SweepRow>,
}

#[derive(Debug, Deserialize)]
pub struct SweepDevice {
    pub name: String,
    pub peak_bandwidth_gbs: f64,
    pub peak_fp32_gflops: f64,
}

#[derive(Debug, Deserialize)]
pub struct SweepRow {
    pub report: SweepReport,
    pub peer: Option<SweepPeer>,
}

#[derive(Debug, Deserialize)]
pub struct SweepReport {
    pub family: String,
    pub variant: String,
    pub shape: String,
    pub timing: SweepTiming,
    /// `{"Bytes": n}`, `{"Flops": n}` or `"Launches"`.
    pub work: serde_json::Value,
    pub throughput: Option<f64>,
    /// What the rate is measured against (absent in reports written before roofs were named).
    #[serde(default)]
    pub roof: Option<SweepRoof>,
    pub percent_of_peak: Option<f64>,
}

/// A row's roof: `memory`, or the arithmetic it runs in (`FP32`, `BF16`, ...).
#[derive(Debug, Deserialize)]
pub struct SweepRoof {
    pub name: String,
}

#[derive(Debug, Deserialize)]
pub struct SweepTiming {
    pub median_ms: f64,
}

#[derive(Debug, Deserialize)]
pub struct SweepPeer {
    pub library: String,
    pub ratio: f64,
}

/// `bench/peers/sweep.py`'s `--json` output: our product beside cuBLAS's at each shape and type.
#[derive(Debug, Deserialize)]
pub struct Products {
    pub device: String,
    pub date: String,
    /// PyTorch's version, through which cuBLAS ran.
    pub torch: String,
    pub rows: Vec<Product>,
    /// Per type: the shapes with both times, their ratios' geometric mean, and how many are
    /// below [`PRODUCT_BAR`].
    pub summary: BTreeMap<String, ProductSummary>,
    pub accuracy: Vec<ProductAccuracy>,
}

#[derive(Debug, Deserialize)]
pub struct Product {
    pub shape: String,
    #[serde(rename = "type")]
    pub dtype: String,
    pub ours: Ours,
    pub cublas: Cublas,
    /// cuBLAS's time over ours (above 1: ours is faster).
    pub ratio: Option<f64>,
}

/// The product the library's `gemm` picks at a shape (FP8's one product), as it ran.
#[derive(Debug, Deserialize)]
pub struct Ours {
    pub ms: Option<f64>,
    pub variant: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Cublas {
    pub ms: Option<f64>,
    pub error: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct ProductSummary {
    pub shapes: usize,
    pub geomean: f64,
    pub below: usize,
}

/// The largest error of each side against an f64 product, relative to C.
#[derive(Debug, Deserialize)]
pub struct ProductAccuracy {
    pub shape: String,
    #[serde(rename = "type")]
    pub dtype: String,
    pub ours: Option<f64>,
    pub cublas: Option<f64>,
    pub variant: Option<String>,
    pub error: Option<String>,
}

/// `bench/peers/finders.py`'s `--json` output: each finder on each sky.
#[derive(Debug, Deserialize)]
pub struct Finders {
    /// Where `host sources` ran ("CPU", or the GPU's name); absent from runs before it was kept.
    pub device: Option<String>,
    pub date: Option<String>,
    pub side: usize,
    /// The peers' processes' cores.
    pub cores: usize,
    pub rows: Vec<FinderRow>,
}

/// One finder on one sky: its wall time (or, stopped, a lower bound) and its catalog's scores.
#[derive(Debug, Deserialize)]
pub struct FinderRow {
    pub finder: String,
    pub sky: String,
    pub seconds: Option<f64>,
    /// A peer stopped at its limit: its time is at least this.
    pub over_seconds: Option<f64>,
    /// Ours: its own file-to-catalog time (absent from runs before it was kept).
    pub file_to_catalog_ms: Option<f64>,
    pub detections: Option<usize>,
    pub on_core: Option<usize>,
    pub on_shell: Option<usize>,
    pub completeness_above: Option<Fraction>,
    pub reliability: Option<Fraction>,
    pub position_px: Option<f64>,
    pub peak: Option<f64>,
    pub flux: Option<f64>,
    /// A peer's time over ours on its sky, as `finders.py` works it out (absent from ours, and
    /// from runs before it was kept).
    pub speedup: Option<Speedup>,
}

/// A peer's wall time over ours on the same sky: over our file-to-catalog time and over our process's wall time, and whether the peer was stopped at
/// its limit (so each is a lower bound).
#[derive(Debug, Deserialize)]
pub struct Speedup {
    pub file_to_catalog: f64,
    pub wall: f64,
    pub lower_bound: bool,
}

/// `count` of `of`, and their ratio.
#[derive(Debug, Deserialize)]
pub struct Fraction {
    pub value: f64,
    pub count: usize,
    pub of: usize,
}

fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Reads the files the options name, rewrites the ladder's table (saying so, and what it
/// could not fill, on stderr) and returns the markdown of `docs/performance.md`.
pub fn run(options: &Options) -> Result<String> {
    let runner: Runner = read(&options.runner)?;
    let peers: Peers = read(&options.peers)?;
    let sweep: Option<Sweep> = options.bench.as_deref().map(read).transpose()?;
    let products: Option<Products> = options.products.as_deref().map(read).transpose()?;
    let finders: Option<Finders> = options.finders.as_deref().map(read).transpose()?;
    let ladder = match &options.ladder {
        Some(path) => Some(path.clone()),
        None => Some(PathBuf::from(DEFAULT_LADDER)).filter(|path| path.exists()),
    };
    if let Some(path) = ladder {
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let (rewritten, missing) = rewrite_ladder(&text, &runner, &peers)
            .with_context(|| format!("the ladder table in {}", path.display()))?;
        if rewritten != text {
            std::fs::write(&path, rewritten).with_context(|| format!("writing {}", path.display()))?;
        }
        eprintln!("perf-doc: the ladder table in {} is up to date", path.display());
        for kernel in missing {
            eprintln!(
                "perf-doc: warning: no {LADDER_SIDE}³ time for `{kernel}` in the runner or peers: its row says -"
            );
        }
    }
    let mut doc = markdown(&runner, &peers, sweep.as_ref());
    if let Some(products) = &products {
        products_section(&mut doc, products).expect("formatting into a String does not fail");
    }
    if let Some(finders) = &finders {
        finders_section(&mut doc, finders).expect("formatting into a String does not fail");
    }
    Ok(doc)
}

/// `1.2345` for a time that may be missing.
fn ms(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{v:.4}"))
}

/// A rate as it reads at a glance: GB/s below a thousand, else TB/s; TFLOP/s for flops.
fn rate(value: f64, unit: &str) -> String {
    match unit {
        "GB/s" if value >= 1e3 => format!("{:.2} TB/s", value / 1e3),
        "GB/s" => format!("{value:.0} GB/s"),
        "GFLOP/s" => format!("{:.1} TFLOP/s", value / 1e3),
        _ => format!("{value:.3} {unit}"),
    }
}

/// Which of the runner's kernels do a peer's work.
enum Doers {
    /// Names with this prefix and suffix.
    Named(&'static str, String),
    /// The FP32 ladder, whose peer is cuBLAS SGEMM: `matmul_` but not a tensor-core step.
    FloatLadder,
    /// The tensor-core steps of one type (`tf32`, `bf16`, `f16`), whose peer is cuBLAS of that
    /// type.
    Tensor(String),
}

impl Doers {
    fn include(&self, kernel: &str) -> bool {
        match self {
            Doers::Named(prefix, suffix) => kernel.starts_with(prefix) && kernel.ends_with(suffix.as_str()),
            Doers::FloatLadder => kernel.starts_with("matmul_") && tensor_dtype(kernel).is_none(),
            Doers::Tensor(dtype) => tensor_dtype(kernel) == Some(dtype.as_str()),
        }
    }
}

/// The input type of a tensor-core matmul step: `matmul_mma_<type>_<tile>` (mma.sync) or
/// `matmul_wgmma[_<step>]_<type>` (Hopper); `None` for the FP32 ladder and other kernels.
fn tensor_dtype(kernel: &str) -> Option<&str> {
    if let Some(rest) = kernel.strip_prefix("matmul_mma_") {
        rest.split('_').next()
    } else if kernel.starts_with("matmul_wgmma") {
        kernel.rsplit('_').next()
    } else {
        None
    }
}

/// The runner's size string of the work a peer does, and which kernels do it; `None` for the
/// device copy, which is the bandwidth reference of them all.
fn same_work(key: &str, peer: &Peer) -> Option<(String, Doers)> {
    let parts: Vec<&str> = key.split('_').collect();
    let shape = || Some(format!("{}x{}x{}", peer.m?, peer.n?, peer.k?));
    let n = || Some(format!("n={}", peer.n?));
    let named = |prefix, suffix: &str| Doers::Named(prefix, suffix.to_string());
    Some(match parts.as_slice() {
        ["sgemm", "f32", ..] => (shape()?, Doers::FloatLadder),
        ["gemm", dtype, ..] => (shape()?, Doers::Tensor(dtype.to_string())),
        ["vector", "add", "f32"] => (n()?, named("vector_add", "")),
        ["scan", input] => (n()?, named("scan_exclusive_", &format!("_{input}"))),
        [histogram, input] => {
            let bins = histogram.strip_prefix("histogram")?;
            (format!("n={} bins={bins}", peer.n?), named("histogram_", &format!("_{input}")))
        }
        ["conv2d", filter, "f32", ..] => (format!("{}^2 {filter}", peer.side?), named("conv2d_", "")),
        ["conv1d", taps, "f32"] => (format!("n={} {taps} taps", peer.n?), named("conv1d", "")),
        ["reduce", "sum", "f32"] => (n()?, named("reduce_", "")),
        ["select", "if", "f32"] => (n()?, named("compact_", "")),
        _ => return None,
    })
}

/// The runner's fastest kernel doing a peer's work.
fn fastest<'a>(runner: &'a Runner, key: &str, peer: &Peer) -> Option<&'a Twin> {
    let (size, doers) = same_work(key, peer)?;
    let doing = runner.rows.iter().filter(|t| t.size == size && doers.include(&t.kernel) && t.rust_ms.is_some());
    doing.min_by(|a, b| a.rust_ms.partial_cmp(&b.rust_ms).unwrap_or(std::cmp::Ordering::Equal))
}

/// The whole of `docs/performance.md`.
pub fn markdown(runner: &Runner, peers: &Peers, sweep: Option<&Sweep>) -> String {
    let mut out = String::new();
    document(&mut out, runner, peers, sweep).expect("formatting into a String does not fail");
    out
}

fn document(w: &mut String, runner: &Runner, peers: &Peers, sweep: Option<&Sweep>) -> fmt::Result {
    writeln!(w, "# Performance\n")?;
    writeln!(
        w,
        "<!-- Written by `cargo run -p host --release -- perf-doc` from the JSON of the last run; \
         run it again rather than editing. Earlier numbers are in git's history. -->\n"
    )?;
    let mut devices: Vec<&str> = Vec::new();
    for device in [Some(&runner.device), Some(&peers.device), sweep.map(|s| &s.device.name)].into_iter().flatten() {
        if !devices.contains(&device.as_str()) {
            devices.push(device);
        }
    }
    writeln!(w, "Measured on {}.\n", devices.iter().map(|d| format!("**{d}**")).collect::<Vec<_>>().join(", "))?;
    writeln!(w, "| run | device | date (UTC) |\n|---|---|---|")?;
    let quick = |quick: bool| if quick { " (`--quick` sizes)" } else { "" };
    writeln!(w, "| twins runner{} | {} | {} |", quick(runner.quick), runner.device, runner.date)?;
    writeln!(w, "| library peers (`bench/peers/run`) | {} | {} |", peers.device, peers.date)?;
    if let Some(sweep) = sweep {
        let date = sweep.date.as_deref().unwrap_or("-");
        writeln!(w, "| size sweep (`host bench`){} | {} | {} |", quick(sweep.quick), sweep.device.name, date)?;
    }
    writeln!(w)?;
    method(w, runner)?;
    rust_tax(w, runner)?;
    libraries(w, runner, peers)?;
    pipeline(w, peers)?;
    match sweep {
        Some(sweep) => sweep_table(w, sweep),
        None => Ok(()),
    }
}

fn method(w: &mut String, runner: &Runner) -> fmt::Result {
    writeln!(w, "## Method\n")?;
    writeln!(
        w,
        "Every time is the median of CUDA-event-timed launches after a warm-up, with L2 flushed \
         before each launch by a write outside the events, so that inputs come from DRAM. The \
         twins runner (`bench/twins`) launches each Rust kernel (the project's PTX, JIT-compiled \
         by the driver) and its CUDA C twin on the same buffers with the same launch shape, checks \
         that they agree, and interleaves at least {} timed launches of each (more for a kernel \
         of a few microseconds, up to ten times as many, so that each side has 2 ms timed). The \
         library peers \
         (`bench/peers`) are timed the same way, each result checked first. *Rust / C* is the Rust \
         kernel's time over its twin's (below 1: Rust is faster; the bar is {TAX_BAR}); *× library* is \
         the library's time over the fastest Rust kernel's (above 1: Rust is faster). Rates count \
         the bytes that must move once, or 2·m·n·k flops.\n",
        runner.runs
    )
}

fn rust_tax(w: &mut String, runner: &Runner) -> fmt::Result {
    writeln!(w, "## The Rust tax: each Rust kernel against its CUDA C twin\n")?;
    if let Some(error) = &runner.error {
        writeln!(w, "**The runner stopped early:** {error}\n")?;
    }
    writeln!(w, "| kernel | size | Rust ms | CUDA C ms | Rust / C | registers Rust / C |")?;
    writeln!(w, "|---|---|---:|---:|---:|---|")?;
    for t in &runner.rows {
        let ratio = t.ratio.map_or("-".into(), |r| format!("{r:.3}"));
        let (kernel, size, rust, c, regs) = (&t.kernel, &t.size, ms(t.rust_ms), ms(t.c_ms), (t.rust_regs, t.c_regs));
        writeln!(w, "| `{kernel}` | {size} | {rust} | {c} | {ratio} | {} / {} |", regs.0, regs.1)?;
    }
    let failed: Vec<String> =
        runner.rows.iter().filter(|t| t.check != "PASS").map(|t| format!("`{}` ({})", t.kernel, t.check)).collect();
    let ratios: Vec<f64> = runner.rows.iter().filter_map(|t| t.ratio).collect();
    let within = ratios.iter().filter(|&&r| r <= TAX_BAR).count();
    let faster = ratios.iter().filter(|&&r| r < 2.0 - TAX_BAR).count();
    write!(
        w,
        "\n{} rows: {within} within {:.0}% of their twins (Rust / C ≤ {TAX_BAR}), {faster} of them faster by more \
         than that (below {:.2})",
        runner.rows.len(),
        100.0 * (TAX_BAR - 1.0),
        2.0 - TAX_BAR
    )?;
    match failed.is_empty() {
        true => writeln!(w, "; every cross-check passed.")?,
        false => writeln!(w, "; not passed: {}.", failed.join(", "))?,
    }
    if !runner.untwinned.is_empty() {
        let names: Vec<String> = runner.untwinned.iter().map(|k| format!("`{k}`")).collect();
        writeln!(w, "\nIn the PTX without a twin: {}.", names.join(", "))?;
    }
    writeln!(w)
}

fn libraries(w: &mut String, runner: &Runner, peers: &Peers) -> fmt::Result {
    writeln!(w, "## Against the libraries a user would call instead\n")?;
    let copy = peers.peers.get("copy_f32").and_then(|p| p.gbps);
    if let (Some(copy), Some(peer)) = (copy, peers.peers.get("copy_f32")) {
        writeln!(
            w,
            "The device copy ({}) moves {}; *× copy* is a kernel's rate over it.\n",
            peer.library,
            rate(copy, "GB/s")
        )?;
    }
    writeln!(w, "| work | library | library ms | fastest Rust kernel | Rust ms | × library | Rust rate | × copy |")?;
    writeln!(w, "|---|---|---:|---|---:|---:|---:|---:|")?;
    for (key, peer) in &peers.peers {
        let Some((size, _)) = same_work(key, peer) else { continue };
        let ours = fastest(runner, key, peer);
        let (kernel, rust_ms) = ours.map_or(("-".into(), "-".into()), |t| (format!("`{}`", t.kernel), ms(t.rust_ms)));
        let times = ours.and_then(|t| t.rust_ms.map(|r| peer.ms / r));
        let versus = times.map_or("-".into(), |x| format!("{x:.2}"));
        let ours_rate = ours.and_then(|t| Some((t.rust_rate?, t.unit.as_str())));
        let rust_rate = ours_rate.map_or("-".into(), |(r, unit)| rate(r, unit));
        let versus_copy = match (ours_rate, copy) {
            (Some((r, "GB/s")), Some(copy)) => format!("{:.2}", r / copy),
            _ => "-".into(),
        };
        let (library, library_ms) = (&peer.library, peer.ms);
        writeln!(
            w,
            "| `{key}` ({size}) | {library} | {library_ms:.4} | {kernel} | {rust_ms} | {versus} | {rust_rate} | {versus_copy} |"
        )?;
    }
    writeln!(w)
}

/// The lesson's source finding (`bench/peers/sources.py`): its CuPy code against `host sources`
/// on the same sky, and NumPy/SciPy's time for scale.
fn pipeline(w: &mut String, peers: &Peers) -> fmt::Result {
    let rows: Vec<(&String, &Peer)> = peers.peers.iter().filter(|(key, _)| key.starts_with("sources_")).collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "## Finding sources: the lesson's pipeline against `host sources --mode lesson`
"
    )?;
    writeln!(
        w,
        "The lesson's code from κσ clipping to the catalog, on the sky `host sky --side N` draws, the image \
         already on the GPU (CUDA events around the whole pipeline, median of runs), beside `host sources --mode \
         lesson` on the same image in the same run (wall clock, median of its `--runs`). *×* is the library's \
         time over ours.\n"
    )?;
    writeln!(w, "| side | library | library ms | `host sources` ms | × |\n|---|---|---:|---:|---:|")?;
    for (_, peer) in rows {
        let side = peer.side.map_or("-".into(), |s| format!("{s}²"));
        let ours = peer.host_sources_ms.map_or("-".into(), |ms| format!("{ms:.3}"));
        let times = peer.host_sources_ms.map_or("-".into(), |ms| format!("{:.0}", peer.ms / ms));
        writeln!(w, "| {side} | {} | {:.2} | {ours} | {times} |", peer.library, peer.ms)?;
    }
    writeln!(w)
}

/// The work of a report.json row, as its unit.
fn sweep_unit(work: &serde_json::Value) -> &'static str {
    match work.as_object().and_then(|o| o.keys().next()).map(String::as_str) {
        Some("Bytes") => "GB/s",
        Some("Flops") => "GFLOP/s",
        _ => "",
    }
}

fn sweep_table(w: &mut String, sweep: &Sweep) -> fmt::Result {
    writeln!(w, "## The size sweep (`host bench`): the fastest variant at each size\n")?;
    let (bandwidth, fp32) = (sweep.device.peak_bandwidth_gbs, sweep.device.peak_fp32_gflops);
    writeln!(
        w,
        "Peaks from the device's attributes: {} memory, {} FP32; a tensor type's is the H100 SXM's \
         dense peak from the datasheet (`host bench`'s report.md lists those it used). *% of peak* is of \
         the row's type. *× peer* is the variant's rate over the library's at the same size.\n",
        rate(bandwidth, "GB/s"),
        rate(fp32, "GFLOP/s")
    )?;
    writeln!(w, "| kernel | shape | fastest variant | median ms | rate | % of peak | × peer |")?;
    writeln!(w, "|---|---|---|---:|---:|---:|---|")?;
    // The fastest row of each (family, shape, roof) in the sweep's order: matmul's types apart.
    let roof = |r: &SweepReport| r.roof.as_ref().map(|x| x.name.clone());
    let mut best: Vec<&SweepRow> = Vec::new();
    for row in sweep.rows.iter().filter(|r| r.report.throughput.is_some()) {
        let r = &row.report;
        let same =
            |b: &&mut &SweepRow| b.report.family == r.family && b.report.shape == r.shape && roof(&b.report) == roof(r);
        match best.iter_mut().find(same) {
            Some(b) if r.timing.median_ms < b.report.timing.median_ms => *b = row,
            Some(_) => {}
            None => best.push(row),
        }
    }
    for row in best {
        let r = &row.report;
        let throughput = r.throughput.map_or("-".into(), |t| rate(t, sweep_unit(&r.work)));
        let peak = match (r.percent_of_peak, &r.roof) {
            (Some(p), Some(roof)) if roof.name != "memory" => format!("{p:.0}% of {}", roof.name),
            (Some(p), _) => format!("{p:.0}%"),
            (None, _) => "-".into(),
        };
        let peer = row.peer.as_ref().map_or("-".into(), |p| format!("{:.2} {}", p.ratio, p.library));
        let (family, shape, variant, median) = (&r.family, &r.shape, &r.variant, r.timing.median_ms);
        writeln!(w, "| {family} | {shape} | {variant} | {median:.4} | {throughput} | {peak} | {peer} |")?;
    }
    writeln!(w)
}

/// The matrix products beside cuBLAS (`bench/peers/sweep.py`): every row as the sweep printed
/// it, the per-type summary, and the accumulation error at long k.
fn products_section(w: &mut String, products: &Products) -> fmt::Result {
    writeln!(w, "## Matrix products against cuBLAS at the shapes users call (`bench/peers/sweep.py`)\n")?;
    writeln!(
        w,
        "On **{}**, {} (UTC), cuBLAS through PyTorch {}: f32 with TF32 off for FP32, TF32 on for TF32, \
         BF16 and FP16 in with f32 out, FP8 e4m3 through cuBLASLt (`torch._scaled_mm`). *Ours* is the kernel \
         the library's `gemm` picks at the shape with no tuning (`host matmul --chosen`; FP8's one product). \
         *Ratio* is cuBLAS's time over ours (above 1: ours is faster); bold below {PRODUCT_BAR:.2}.\n",
        products.device, products.date, products.torch
    )?;
    writeln!(
        w,
        "| shape | type | ours ms | ours, kernel | cuBLAS ms | ratio | note |\n|---|---|---:|---|---:|---:|---|"
    )?;
    for row in &products.rows {
        let (ours, cublas) = (&row.ours, &row.cublas);
        let notes: Vec<String> = [&ours.error, &cublas.error].into_iter().flatten().cloned().collect();
        let ratio = match row.ratio {
            Some(r) if r < PRODUCT_BAR => format!("**{r:.2}**"),
            Some(r) => format!("{r:.2}"),
            None => "-".into(),
        };
        let kernel = ours.variant.as_deref().unwrap_or("-");
        writeln!(
            w,
            "| {} | {} | {} | {kernel} | {} | {ratio} | {} |",
            row.shape,
            row.dtype,
            ms(ours.ms),
            ms(cublas.ms),
            notes.join("; ")
        )?;
    }
    writeln!(w, "\n| type | shapes with both times | geometric mean | below {PRODUCT_BAR:.2} |\n|---|---:|---:|---:|")?;
    // In the rows' order of types.
    let mut types: Vec<&str> = Vec::new();
    for row in &products.rows {
        if !types.contains(&row.dtype.as_str()) {
            types.push(&row.dtype);
        }
    }
    for dtype in types {
        let of = products.rows.iter().filter(|r| r.dtype == dtype).count();
        match products.summary.get(dtype) {
            Some(s) => writeln!(w, "| {dtype} | {} of {of} | {:.2} | {} |", s.shapes, s.geomean, s.below)?,
            None => writeln!(w, "| {dtype} | 0 of {of} | - | - |")?,
        }
    }
    writeln!(
        w,
        "\nAccumulation error at long k: the largest |C − C64| over C, C64 the f64 product of the inputs as \
         rounded to the type, the same inputs on both sides.\n"
    )?;
    writeln!(w, "| shape | type | ours (gemm's pick) | ours | cuBLAS | ours / cuBLAS |\n|---|---|---|---:|---:|---:|")?;
    for a in &products.accuracy {
        match (a.ours, a.cublas, &a.error) {
            (Some(ours), Some(cublas), None) => {
                let over = if cublas > 0.0 { format!("{:.2}", ours / cublas) } else { "-".into() };
                let variant = a.variant.as_deref().unwrap_or("-");
                writeln!(w, "| {} | {} | {variant} | {ours:.3e} | {cublas:.3e} | {over} |", a.shape, a.dtype)?;
            }
            _ => writeln!(w, "| {} | {} | - | - | - | {} |", a.shape, a.dtype, a.error.as_deref().unwrap_or("-"))?,
        }
    }
    writeln!(w)
}

/// Ours beside the source finders astronomers use (`bench/peers/finders.py`): every finder's
/// catalog scored on every sky, then each peer's time over ours.
fn finders_section(w: &mut String, finders: &Finders) -> fmt::Result {
    let or_unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "(not recorded)".into());
    writeln!(w, "## Source finding beside BANE + Aegean and PyBDSF (`bench/peers/finders.py`)\n")?;
    writeln!(
        w,
        "`host sources` on **{}**, {} (UTC), beside BANE + Aegean and PyBDSF on the CPU ({} cores), on \
         `host sky --survey` skies of {}² with known truth, each finder reading the FITS file as `host sky` \
         writes it (its beam and sky coordinates in the header). Wall times are each finder's processes', \
         Python's and CUDA's starts included; *to catalog* is ours from the FITS file to the catalog, as \
         `host sources` reports it. Errors are medians above 20σ.\n",
        or_unknown(&finders.device),
        or_unknown(&finders.date),
        finders.cores,
        finders.side
    )?;
    writeln!(
        w,
        "| sky | finder | wall s | to catalog ms | found | completeness > 10σ | reliability | position px | \
         peak | flux | core / shell |\n|---|---|---:|---:|---:|---|---|---:|---:|---:|---|"
    )?;
    let fraction = |f: &Option<Fraction>, false_ones: bool| match f {
        Some(f) if false_ones => format!("{:.4} ({} false)", f.value, f.of - f.count),
        Some(f) => format!("{:.4} ({}/{})", f.value, f.count, f.of),
        None => "-".into(),
    };
    let percent = |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.2}%", 100.0 * v));
    for r in &finders.rows {
        let wall = match (r.seconds, r.over_seconds) {
            (Some(s), _) => format!("{s:.2}"),
            (None, Some(s)) => format!("> {s:.1} (stopped)"),
            (None, None) => "-".into(),
        };
        let core_shell = match (r.on_core, r.on_shell) {
            (Some(core), Some(shell)) => format!("{core} / {shell}"),
            _ => "-".into(),
        };
        writeln!(
            w,
            "| {} | {} | {wall} | {} | {} | {} | {} | {} | {} | {} | {core_shell} |",
            r.sky,
            r.finder,
            r.file_to_catalog_ms.map_or("-".into(), |ms| format!("{ms:.1}")),
            r.detections.map_or("-".into(), |d| d.to_string()),
            fraction(&r.completeness_above, false),
            fraction(&r.reliability, true),
            r.position_px.map_or("-".into(), |p| format!("{p:.4}")),
            percent(r.peak),
            percent(r.flux),
        )?;
    }
    // Each peer over ours on the same sky, as `finders.py` worked it out.
    let peers: Vec<(&FinderRow, &Speedup)> =
        finders.rows.iter().filter_map(|r| r.speedup.as_ref().map(|speedup| (r, speedup))).collect();
    if !peers.is_empty() {
        writeln!(
            w,
            "\nEach peer's wall time over ours on the same sky: over our file-to-catalog \
             time, and over our process's wall time.\n\n| sky | peer | its wall s | over ours to catalog | over \
             our wall |\n|---|---|---:|---:|---:|"
        )?;
        for (peer, speedup) in peers {
            let bound = if speedup.lower_bound { "≥ " } else { "" };
            let theirs = peer.seconds.or(peer.over_seconds).map_or("-".into(), |s| format!("{bound}{s:.2}"));
            writeln!(
                w,
                "| {} | {} | {theirs} | {bound}{:.0}× | {bound}{:.0}× |",
                peer.sky, peer.finder, speedup.file_to_catalog, speedup.wall
            )?;
        }
    }
    writeln!(w)
}

/// `text` with the rows of the table between the ladder markers rewritten, and the kernels of
/// rows that had no measurement (their cells say `-`). A row is `| step | file | kernel | idea
/// | TFLOP/s | × cuBLAS |` with the kernel in backticks; other lines are kept as they are.
pub fn rewrite_ladder(text: &str, runner: &Runner, peers: &Peers) -> Result<(String, Vec<String>)> {
    let (Some(start), Some(end)) = (text.find(LADDER_START), text.find(LADDER_END)) else {
        bail!("no `{LADDER_START}` … `{LADDER_END}` lines");
    };
    if end < start {
        bail!("`{LADDER_END}` comes before `{LADDER_START}`");
    }
    let size = format!("{LADDER_SIDE}x{LADDER_SIDE}x{LADDER_SIDE}");
    // The tensor-core steps are compared with cuBLAS's product of their own type.
    let cublas_ms = |kernel: &str| {
        let key =
            tensor_dtype(kernel).map_or(format!("sgemm_f32_{LADDER_SIDE}"), |d| format!("gemm_{d}_{LADDER_SIDE}"));
        peers.peers.get(&key).map(|p| p.ms)
    };
    let (mut out, mut missing) = (String::new(), Vec::new());
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let inside = offset > start && offset < end;
        offset += line.len();
        let cells: Vec<&str> = line.trim_end().trim_start_matches("//!").trim().split('|').collect();
        // `| a | b | c | d | e | f |` splits into 8: empty ends around six cells.
        let kernel = cells.get(3).map(|c| c.trim()).and_then(|c| c.strip_prefix('`')?.strip_suffix('`'));
        let (true, 8, Some(kernel)) = (inside, cells.len(), kernel) else {
            out.push_str(line);
            continue;
        };
        let twin = runner.rows.iter().find(|t| t.kernel == kernel && t.size == size);
        let rust_ms = twin.and_then(|t| t.rust_ms);
        let tflops = twin.and_then(|t| t.rust_rate).map_or("-".into(), |r| format!("{:.1}", r / 1e3));
        let fraction =
            rust_ms.zip(cublas_ms(kernel)).map_or("-".into(), |(ours, theirs)| format!("{:.2}", theirs / ours));
        if tflops == "-" || fraction == "-" {
            missing.push(kernel.to_string());
        }
        // The first four cells as they were written; the two numbers anew.
        let kept = line.match_indices('|').nth(4).map_or(line, |(at, _)| &line[..at]);
        writeln!(out, "{kept}| {tflops} | {fraction} |")?;
    }
    Ok((out, missing))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Fixtures in the files' formats. The numbers are made up for the tests: they are not
    // measurements.
    const RUNNER: &str = r#"{"device": "Test GPU", "date": "2030-01-02T03:04:05Z", "quick": false, "runs": 20, "untwinned": [], "rows": [
  {"kernel": "matmul_naive", "size": "4096x4096x4096", "rust_ms": 20, "rust_min_ms": 19, "c_ms": 20, "c_min_ms": 19, "ratio": 1, "unit": "GFLOP/s", "rust_rate": 6871.95, "c_rate": 6871.95, "rust_regs": 32, "c_regs": 30, "check": "PASS", "detail": ""},
  {"kernel": "matmul_fast", "size": "4096x4096x4096", "rust_ms": 2.5, "rust_min_ms": 2.4, "c_ms": 2.6, "c_min_ms": 2.5, "ratio": 0.961538, "unit": "GFLOP/s", "rust_rate": 54975.6, "c_rate": 52861.2, "rust_regs": 200, "c_regs": 210, "check": "PASS", "detail": ""},
  {"kernel": "matmul_fast", "size": "8192x8192x8192", "rust_ms": 22, "rust_min_ms": 21, "c_ms": 21, "c_min_ms": 20, "ratio": 1.04762, "unit": "GFLOP/s", "rust_rate": 49977.8, "c_rate": 52357.7, "rust_regs": 200, "c_regs": 210, "check": "PASS", "detail": ""},
  {"kernel": "histogram_shared_u32", "size": "n=268435456 bins=256", "rust_ms": 0.5, "rust_min_ms": 0.49, "c_ms": 0.5, "c_min_ms": 0.49, "ratio": 1, "unit": "GB/s", "rust_rate": 2147.48, "c_rate": 2147.48, "rust_regs": 18, "c_regs": 16, "check": "PASS", "detail": ""},
  {"kernel": "histogram_shared_f32", "size": "n=268435456 bins=256", "rust_ms": 0.4, "rust_min_ms": 0.39, "c_ms": null, "c_min_ms": null, "ratio": null, "unit": "GB/s", "rust_rate": 2684.35, "c_rate": null, "rust_regs": 20, "c_regs": 0, "check": "MISSING", "detail": "no twin"}
]}
"#;

    const PEERS: &str = r#"{
 "device": "Test GPU",
 "date": "2030-01-02T03:10:00Z",
 "peers": {
  "copy_f32": {"library": "cudaMemcpy D2D", "n": 268435456, "ms": 0.8, "min_ms": 0.79, "GBps": 2684.35},
  "sgemm_f32_1024": {"library": "cuBLAS SGEMM (TF32 off)", "m": 1024, "n": 1024, "k": 1024, "ms": 0.1, "min_ms": 0.09, "GFLOPs": 21474.8},
  "sgemm_f32_4096": {"library": "cuBLAS SGEMM (TF32 off)", "m": 4096, "n": 4096, "k": 4096, "ms": 2.75, "min_ms": 2.7, "GFLOPs": 49977.8},
  "histogram256_u32": {"library": "CUB DeviceHistogram::HistogramEven", "n": 268435456, "ms": 1, "min_ms": 0.9, "GBps": 1073.74},
  "sources_cupy_32_2048": {"library": "CuPy, the lesson's code", "side": 2048, "ms": 24.5, "min_ms": 24, "GBps": 0.7, "host_sources_ms": 0.5},
  "sources_scipy_2048": {"library": "SciPy, the lesson's code", "side": 2048, "ms": 2000, "min_ms": 2000, "GBps": 0.01}
 }
}
"#;

    const REPORT: &str = r#"{"device": {"name": "Test GPU", "peak_bandwidth_gbs": 3000.0, "peak_fp32_gflops": 60000.0, "multiprocessors": 100},
 "date": "2030-01-02T04:00:00Z", "quick": true, "peers": null, "rows": [
  {"size": 1024, "report": {"family": "matmul", "variant": "naive", "shape": "1024x1024x1024", "timing": {"median_ms": 0.5}, "work": {"Flops": 2147483648}, "throughput": 4294.97, "roof": {"name": "FP32", "peak": 60000.0, "source": "test"}, "percent_of_peak": 7.2}, "peer": {"peer": "sgemm_f32_1024", "library": "cuBLAS SGEMM (TF32 off)", "rate": 21474.8, "ratio": 0.2}},
  {"size": 1024, "report": {"family": "matmul", "variant": "fast", "shape": "1024x1024x1024", "timing": {"median_ms": 0.125}, "work": {"Flops": 2147483648}, "throughput": 17179.9, "roof": {"name": "FP32", "peak": 60000.0, "source": "test"}, "percent_of_peak": 28.6}, "peer": {"peer": "sgemm_f32_1024", "library": "cuBLAS SGEMM (TF32 off)", "rate": 21474.8, "ratio": 0.8}},
  {"size": 1024, "report": {"family": "matmul", "variant": "mma-bf16", "shape": "1024x1024x1024", "timing": {"median_ms": 0.01}, "work": {"Flops": 2147483648}, "throughput": 214748.4, "roof": {"name": "BF16", "peak": 989000.0, "source": "test"}, "percent_of_peak": 21.7}, "peer": null},
  {"size": 1048576, "report": {"family": "counter", "variant": "racy", "shape": "threads=1048576", "timing": {"median_ms": 0.4}, "work": "Launches", "throughput": null, "percent_of_peak": null}, "peer": null}
]}"#;

    const PRODUCTS: &str = r#"{"device": "Test GPU", "date": "2030-01-02T05:00:00Z", "torch": "9.9", "rows": [
  {"shape": "256x256x256", "type": "BF16", "ours": {"ms": 0.01, "variant": "narrow"}, "cublas": {"ms": 0.005}, "ratio": 0.5},
  {"shape": "4096x4096x4096", "type": "BF16", "ours": {"ms": 0.2, "variant": "persistent"}, "cublas": {"ms": 0.22}, "ratio": 1.1},
  {"shape": "1000x1000x1000", "type": "FP8", "ours": {"ms": 0.02, "variant": "e4m3"}, "cublas": {"error": "n/a: not divisible by 16"}, "ratio": null}
 ], "summary": {"BF16": {"shapes": 2, "geomean": 0.7416, "below": 1}},
 "accuracy": [{"shape": "64x64x65536", "type": "BF16", "ours": 1e-4, "cublas": 4e-4, "variant": "split-k"},
  {"shape": "64x8192x64", "type": "BF16", "error": "skipped: over --budget-s"}]}"#;

    #[test]
    fn the_products_section_has_every_row_the_summary_and_the_errors() {
        let (runner, peers, _) = fixtures();
        let products: Products = serde_json::from_str(PRODUCTS).unwrap();
        let mut doc = markdown(&runner, &peers, None);
        products_section(&mut doc, &products).unwrap();
        assert!(doc.contains("On **Test GPU**, 2030-01-02T05:00:00Z (UTC), cuBLAS through PyTorch 9.9"));
        assert!(doc.contains("| 256x256x256 | BF16 | 0.0100 | narrow | 0.0050 | **0.50** |  |"), "{doc}");
        assert!(doc.contains("| 4096x4096x4096 | BF16 | 0.2000 | persistent | 0.2200 | 1.10 |  |"), "{doc}");
        assert!(doc.contains("| 1000x1000x1000 | FP8 | 0.0200 | e4m3 | - | - | n/a: not divisible by 16 |"));
        assert!(doc.contains("| BF16 | 2 of 2 | 0.74 | 1 |"));
        assert!(doc.contains("| FP8 | 0 of 1 | - | - |"));
        assert!(doc.contains("| 64x64x65536 | BF16 | split-k | 1.000e-4 | 4.000e-4 | 0.25 |"));
        assert!(doc.contains("| 64x8192x64 | BF16 | - | - | - | skipped: over --budget-s |"));
    }

    const FINDERS: &str = r#"{"device": "Test GPU", "date": "2030-01-02T06:00:00Z", "side": 4096, "cores": 16, "rows": [
  {"finder": "host", "sky": "constant 7", "seconds": 0.5, "pipeline_ms": 40.0, "file_to_catalog_ms": 52.0, "detections": 1154, "on_core": 6, "on_shell": 6,
   "completeness_above": {"count": 1042, "of": 1043, "value": 0.99904}, "reliability": {"count": 1099, "of": 1103, "value": 0.99637},
   "position_px": 0.0114, "peak": 0.0037, "flux": 0.0034, "line": "-"},
  {"finder": "pybdsf", "sky": "constant 7", "seconds": 18.0, "pipeline_ms": null, "file_to_catalog_ms": null, "detections": 1115, "on_core": 0, "on_shell": 0,
   "completeness_above": {"count": 1018, "of": 1043, "value": 0.97603}, "reliability": {"count": 1100, "of": 1107, "value": 0.99368},
   "position_px": 0.0118, "peak": 0.0037, "flux": 0.0040, "line": "-",
   "speedup": {"over": "host", "file_to_catalog": 346.0, "wall": 36.0, "lower_bound": false}},
  {"finder": "aegean", "sky": "constant 7", "over_seconds": 60.0, "line": "-",
   "speedup": {"over": "host", "file_to_catalog": 1154.0, "wall": 120.0, "lower_bound": true}}
 ]}"#;

    #[test]
    fn the_finders_section_scores_every_catalog_and_times_each_peer_against_ours() {
        let finders: Finders = serde_json::from_str(FINDERS).unwrap();
        let mut doc = String::new();
        finders_section(&mut doc, &finders).unwrap();
        assert!(doc.contains("`host sources` on **Test GPU**, 2030-01-02T06:00:00Z (UTC)"), "{doc}");
        assert!(doc.contains("on the CPU (16 cores), on `host sky --survey` skies of 4096²"));
        assert!(doc.contains(
            "| constant 7 | host | 0.50 | 52.0 | 1154 | 0.9990 (1042/1043) | 0.9964 (4 false) | 0.0114 | 0.37% | 0.34% | 6 / 6 |"
        ));
        assert!(doc.contains(
            "| constant 7 | pybdsf | 18.00 | - | 1115 | 0.9760 (1018/1043) | 0.9937 (7 false) | 0.0118 | 0.37% | 0.40% | 0 / 0 |"
        ));
        assert!(doc.contains("| constant 7 | aegean | > 60.0 (stopped) | - | - | - | - | - | - | - | - |"));
        // Over ours, as finders.py found it: 18 s over 52 ms and over 0.5 s; a stopped peer, a
        // bound.
        assert!(doc.contains("| constant 7 | pybdsf | 18.00 | 346× | 36× |"), "{doc}");
        assert!(doc.contains("| constant 7 | aegean | ≥ 60.00 | ≥ 1154× | ≥ 120× |"));
    }

    #[test]
    fn a_finders_run_without_device_or_date_says_so() {
        let finders: Finders = serde_json::from_str(
            r#"{"side": 1024, "cores": 2, "rows": [{"finder": "host", "sky": "constant 7", "seconds": 1.0}]}"#,
        )
        .unwrap();
        let mut doc = String::new();
        finders_section(&mut doc, &finders).unwrap();
        assert!(doc.contains("`host sources` on **(not recorded)**, (not recorded) (UTC)"));
        assert!(!doc.contains("| sky | peer |"), "no peer, no speed-up table");
    }

    fn fixtures() -> (Runner, Peers, Sweep) {
        (
            serde_json::from_str(RUNNER).unwrap(),
            serde_json::from_str(PEERS).unwrap(),
            serde_json::from_str(REPORT).unwrap(),
        )
    }

    #[test]
    fn the_document_has_device_dates_tax_and_library_ratios() {
        let (runner, peers, sweep) = fixtures();
        let doc = markdown(&runner, &peers, Some(&sweep));
        assert!(doc.contains("Measured on **Test GPU**."), "one device, named once");
        for date in ["2030-01-02T03:04:05Z", "2030-01-02T03:10:00Z", "2030-01-02T04:00:00Z"] {
            assert!(doc.contains(date), "{date}");
        }
        assert!(doc.contains("| `matmul_fast` | 4096x4096x4096 | 2.5000 | 2.6000 | 0.962 | 200 / 210 |"));
        assert!(doc.contains("| `histogram_shared_f32` | n=268435456 bins=256 | 0.4000 | - | - | 20 / 0 |"));
        assert!(
            doc.contains("5 rows: 3 within 3% of their twins (Rust / C ≤ 1.03), 1 of them faster by more than that")
        );
        assert!(doc.contains("not passed: `histogram_shared_f32` (MISSING)."));
        // cuBLAS 2.75 ms over the fastest Rust kernel's 2.5 ms at 4096³; none ran at 1024³.
        assert!(doc.contains(
            "| `sgemm_f32_4096` (4096x4096x4096) | cuBLAS SGEMM (TF32 off) | 2.7500 | `matmul_fast` | 2.5000 | 1.10 | 55.0 TFLOP/s | - |"
        ));
        assert!(doc
            .contains("| `sgemm_f32_1024` (1024x1024x1024) | cuBLAS SGEMM (TF32 off) | 0.1000 | - | - | - | - | - |"));
        // CUB's 1 ms over 0.5 ms, and 2147 GB/s over the copy's 2684.
        assert!(doc.contains(
            "| `histogram256_u32` (n=268435456 bins=256) | CUB DeviceHistogram::HistogramEven | 1.0000 | `histogram_shared_u32` | 0.5000 | 2.00 | 2.15 TB/s | 0.80 |"
        ));
        assert!(!doc.contains("`copy_f32` ("), "the copy is the reference, not a row");
        assert!(doc.contains(
            "| matmul | 1024x1024x1024 | fast | 0.1250 | 17.2 TFLOP/s | 29% of FP32 | 0.80 cuBLAS SGEMM (TF32 off) |"
        ));
        // BF16 at the same shape is a row of its own, not the FP32 rows' fastest.
        assert!(
            doc.contains("| matmul | 1024x1024x1024 | mma-bf16 | 0.0100 | 214.7 TFLOP/s | 22% of BF16 | - |"),
            "{doc}"
        );
        assert!(!doc.contains("| counter |"), "no rate, no sweep row");
        // The pipeline: CuPy's 24.5 ms over host sources' 0.5 ms in the same run; SciPy's
        // run has no host time beside it.
        assert!(doc.contains("| 2048² | CuPy, the lesson's code | 24.50 | 0.500 | 49 |"), "{doc}");
        assert!(doc.contains("| 2048² | SciPy, the lesson's code | 2000.00 | - | - |"));
        assert!(!doc.contains("superseded"));
    }

    #[test]
    fn the_ladder_keeps_its_words_and_gets_fresh_numbers() {
        let (runner, peers, _) = fixtures();
        let module = "//! The ladder.\n//!\n//! <!-- ladder-table:start -->\n\
                      //! | step | file | kernel | idea | TFLOP/s | × cuBLAS |\n\
                      //! |---|---|---|---|---:|---:|\n\
                      //! | 1 | `naive.rs` | `matmul_naive` | one thread per output | 5.1 | 0.10 |\n\
                      //! | 9 | `fast.rs` | `matmul_fast` | everything at once | 1.0 | 0.01 |\n\
                      //! | 10 | `tensor.rs` | `matmul_tensor` | tensor cores | 99.0 | 9.99 |\n\
                      //! <!-- ladder-table:end -->\n//!\n//! | 1 | `x.rs` | `matmul_naive` | outside | 0 | 0 |\n\
                      pub mod naive;\n";
        let dir = std::env::temp_dir().join(format!("perf-doc-ladder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mod.rs");
        std::fs::write(&path, module).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let (rewritten, missing) = rewrite_ladder(&text, &runner, &peers).unwrap();
        std::fs::write(&path, &rewritten).unwrap();
        let lines: Vec<&str> = rewritten.lines().collect();
        assert_eq!(lines[3], "//! | step | file | kernel | idea | TFLOP/s | × cuBLAS |", "the header stays");
        assert_eq!(lines[5], "//! | 1 | `naive.rs` | `matmul_naive` | one thread per output | 6.9 | 0.14 |");
        assert_eq!(lines[6], "//! | 9 | `fast.rs` | `matmul_fast` | everything at once | 55.0 | 1.10 |");
        assert_eq!(lines[7], "//! | 10 | `tensor.rs` | `matmul_tensor` | tensor cores | - | - |");
        assert_eq!(missing, ["matmul_tensor"]);
        assert_eq!(lines[10], "//! | 1 | `x.rs` | `matmul_naive` | outside | 0 | 0 |", "outside the markers");
        assert_eq!(rewritten.lines().count(), module.lines().count());
        // Rewriting again changes nothing.
        assert_eq!(rewrite_ladder(&rewritten, &runner, &peers).unwrap().0, rewritten);
        std::fs::remove_dir_all(&dir).unwrap();

        let unmarked = rewrite_ladder("//! no table\n", &runner, &peers).unwrap_err();
        assert!(unmarked.to_string().contains("ladder-table:start"), "{unmarked}");
    }

    #[test]
    fn each_peer_is_beside_the_kernels_of_its_type() {
        let peer = |key: &str| -> Peer {
            serde_json::from_str(&format!(r#"{{"library": "{key}", "m": 8, "n": 8, "k": 8, "ms": 1.0}}"#)).unwrap()
        };
        let doers = |key: &str| same_work(key, &peer(key)).unwrap();
        let (size, sgemm) = doers("sgemm_f32_8");
        assert_eq!(size, "8x8x8");
        assert!(sgemm.include("matmul_async_128x256") && !sgemm.include("matmul_mma_bf16_128x256"));
        let (_, bf16) = doers("gemm_bf16_8");
        assert!(bf16.include("matmul_mma_bf16_128x256"));
        assert!(!bf16.include("matmul_mma_f16_128x256") && !bf16.include("matmul_async_128x256"));
        assert!(!bf16.include("convert_bf16"));
        assert!(bf16.include("matmul_wgmma_bf16") && bf16.include("matmul_wgmma_persistent_bf16"));
        assert!(!bf16.include("matmul_wgmma_f16") && !sgemm.include("matmul_wgmma_persistent_bf16"));
    }

    #[test]
    fn rates_read_at_a_glance() {
        assert_eq!(rate(2958.6, "GB/s"), "2.96 TB/s");
        assert_eq!(rate(378.2, "GB/s"), "378 GB/s");
        assert_eq!(rate(52_300.0, "GFLOP/s"), "52.3 TFLOP/s");
    }
}
