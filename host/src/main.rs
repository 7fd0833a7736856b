//! `host <command> [options]`: run a kernel family on the GPU, check it against the CPU,
//! report its speed; or show the device, the CUDA runtime demos, or a size sweep. The
//! family subcommands come from the registry.

use anyhow::{bail, Context, Result};
use clap::{ArgMatches, Args, Command, FromArgMatches};
use host::gpu::{Cache, Gpu};
use host::ops::{self, FAMILIES};
use host::registry::{Purpose, Timer};
use host::report::{self, Report};
use host::{bench, demos, resources};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
struct Global {
    /// One JSON object per result instead of a table.
    #[arg(long, global = true)]
    json: bool,
    /// Timed launches per kernel (min, median and spread are reported).
    #[arg(long, global = true, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    iters: u64,
    /// What L2 holds when a timed launch starts: flushed (inputs come from DRAM) or warm.
    #[arg(long, global = true, value_parser = host::registry::named::<Cache>(), default_value_t = Cache::Flushed)]
    cache: Cache,
    /// Seed of the random inputs.
    #[arg(long, global = true, default_value_t = 2026)]
    seed: u64,
}

#[derive(Args)]
struct Info {
    /// Also each kernel's registers, shared and local memory, and occupancy.
    #[arg(long)]
    kernels: bool,
}

#[derive(Args)]
struct Bandwidth {
    /// Transfer sizes in MiB.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64,256")]
    sizes_mib: Vec<usize>,
}

#[derive(Args)]
struct Overlap {
    #[arg(long, default_value_t = 1 << 26)]
    n: usize,
    #[arg(long, default_value_t = 4)]
    streams: usize,
    #[arg(long, default_value_t = 16)]
    chunks: usize,
}

#[derive(Args)]
struct Bench {
    /// Fewer sizes and launches (a few minutes on an H100).
    #[arg(long)]
    quick: bool,
    #[arg(long, default_value = "bench-report")]
    out: PathBuf,
    /// peers.json from `bench/peers/run` on the same GPU: adds "x peer" ratios.
    #[arg(long)]
    peers: Option<PathBuf>,
}

#[derive(Args)]
struct Score {
    /// Another finder's catalog: a CSV with x and y (0-based pixels), peak (Jy/beam), flux (a
    /// sum of pixels) and optionally snr, as bench/peers/finders.py writes Aegean's and PyBDSF's.
    #[arg(long)]
    catalog: PathBuf,
    /// The truth CSV that `host sky` wrote beside the image.
    #[arg(long)]
    truth: PathBuf,
    /// The image's noise σ, Jy/beam, for a truth without a `noise` column (the lesson's sky).
    #[arg(long)]
    noise: Option<f64>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum CaseSet {
    Check,
    Quick,
    Full,
}

#[derive(Args)]
struct Cases {
    /// Which sizes: the small odd shapes of the tests and the sanitizer, or a sweep's.
    #[arg(long, value_enum, default_value_t = CaseSet::Check)]
    set: CaseSet,
    /// Run each case (checked against the CPU) instead of listing it.
    #[arg(long)]
    run: bool,
    /// Only these families (all when none is named).
    #[arg(long = "family")]
    families: Vec<String>,
}

impl Cases {
    /// The families chosen, or an error naming one that does not exist.
    fn families(&self) -> Result<Vec<&'static dyn host::registry::Family>> {
        if self.families.is_empty() {
            return Ok(FAMILIES.to_vec());
        }
        self.families
            .iter()
            .map(|name| ops::family(name).with_context(|| format!("no kernel family `{}`", name)))
            .collect()
    }
}

#[derive(Args)]
struct Launches {
    /// SMs of the GPU the grid-stride kernels' grids are sized for (132: an H100 SXM).
    #[arg(long, default_value_t = 132, value_parser = clap::value_parser!(u32).range(1..))]
    sms: u32,
}

fn cli() -> Command {
    let command = Command::new("host")
        .about("CUDA kernels written in Rust: run, check against the CPU, time")
        .subcommand_required(true)
        .subcommand(Info::augment_args(Command::new("info").about("The device: name, SMs, memory, clocks, peaks")))
        .subcommand(Command::new("streams").about("Two kernels on two streams overlap; a third waits on an event"))
        .subcommand(Bandwidth::augment_args(
            Command::new("bandwidth")
                .about("Host-to-device, device-to-host (pageable vs pinned) and device-to-device GB/s"),
        ))
        .subcommand(Overlap::augment_args(
            Command::new("overlap")
                .about("A vector add split into chunks over several streams, copies overlapping kernels"),
        ))
        .subcommands(FAMILIES.iter().map(|f| f.command()))
        .subcommand(Command::new("all").about("Every kernel family and variant at its default size"))
        .subcommand(Bench::augment_args(
            Command::new("bench").about("A size sweep of every family: report.json, report.md, SVG charts"),
        ))
        .subcommand(host::sky::Options::augment_args(Command::new("sky").about(
            "Writes a synthetic radio sky with known sources (.fits or .npy) and the true sources (CSV)",
        )))
        .subcommand(host::sources::Options::augment_args(Command::new("sources").about(
            "Finds the sources in a radio image on the GPU (local background and noise, flooded islands, Gaussian fits; or the lesson's κσ clipping and threshold) and writes a catalog",
        )))
        .subcommand(host::survey::Options::augment_args(Command::new("survey").about(
            "Finds the sources of many images (files or directories) over --gpus GPUs, each catalog beside its image",
        )))
        .subcommand(Score::augment_args(Command::new("score").about(
            "Scores another finder's catalog against a `host sky` truth, as `host sources --truth` scores its own",
        )))
        .subcommand(Command::new("ptx").about("Prints the kernels' PTX that this host embeds and loads").arg(
            clap::Arg::new("hopper")
                .long("hopper")
                .action(clap::ArgAction::SetTrue)
                .help("The Hopper module (sm_90a) instead of every family's (compute_80)"),
        ))
        .subcommand(host::perf_doc::Options::augment_args(Command::new("perf-doc").about(
            "Prints docs/performance.md from the runner's, the peers' and the sweep's JSON; rewrites the ladder table",
        )))
        .subcommand(Cases::augment_args(
            Command::new("cases")
                .about("Prints `<family> <options>` for each size of a set (the sanitizer runs these)"),
        ))
        .subcommand(Launches::augment_args(Command::new("launches").about(
            "Prints `kernel gx gy gz bx by bz shared_bytes` of each kernel's default run (the twins runner checks them)",
        )));
    Global::augment_args(command)
}

fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    println!("{}", serde_json::to_string(value)?);
    Ok(())
}

/// Prints `report` as one JSON object with `--json`, else as `table` prints it.
fn show<T: serde::Serialize>(json: bool, report: &T, table: impl FnOnce(&T)) -> Result<()> {
    if json {
        print_json(report)
    } else {
        table(report);
        Ok(())
    }
}

/// Writes `text` to stdout; a reader that stops early (`| head`) is not an error.
fn write_stdout(text: &str) -> std::io::Result<()> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => written,
    }
}

fn purpose_of(set: CaseSet) -> Purpose {
    match set {
        CaseSet::Check => Purpose::Check,
        CaseSet::Quick => Purpose::Quick,
        CaseSet::Full => Purpose::Full,
    }
}

/// `host launches`: every registered kernel's launch at its family's default size, no GPU
/// needed; `bench/twins/runner --signatures --launches` compares the twins' with these.
fn print_launches(json: bool, sms: u32) -> Result<()> {
    let mut lines = String::new();
    for family in FAMILIES {
        for (kernel, launch) in family.launches(sms).with_context(|| format!("{}'s launches", family.name()))? {
            let ((gx, gy, gz), (bx, by, bz), shared) = (launch.grid, launch.block, launch.shared_bytes);
            lines += &if json {
                let object = serde_json::json!({ "family": family.name(), "kernel": kernel, "grid": [gx, gy, gz],
                    "block": [bx, by, bz], "shared_bytes": shared });
                format!("{}\n", object)
            } else {
                format!("{kernel} {gx} {gy} {gz} {bx} {by} {bz} {shared}\n")
            };
        }
    }
    Ok(write_stdout(&lines)?)
}

/// Runs one subcommand; returns the kernel reports it made, for the final verdict.
fn run(global: &Global, name: &str, options: &ArgMatches) -> Result<Vec<Report>> {
    if name == "ptx" {
        write_stdout(if options.get_flag("hopper") { host::gpu::HOPPER_PTX } else { host::gpu::KERNELS_PTX })?;
        return Ok(vec![]);
    }
    if name == "perf-doc" {
        write_stdout(&host::perf_doc::run(&host::perf_doc::Options::from_arg_matches(options)?)?)?;
        return Ok(vec![]);
    }
    if name == "sky" {
        let summary = host::sky::run(&host::sky::Options::from_arg_matches(options)?, global.seed)?;
        show(global.json, &summary, |s| s.print())?;
        return Ok(vec![]);
    }
    if name == "sources" {
        let summary = host::sources::run(&host::sources::Options::from_arg_matches(options)?, global.json)?;
        show(global.json, &summary, |s| s.print())?;
        if let Some(failed) = summary.failed() {
            bail!("the GPU's sources did not match the CPU's: {}", failed);
        }
        return Ok(vec![]);
    }
    if name == "survey" {
        let summary = host::survey::run(&host::survey::Options::from_arg_matches(options)?)?;
        show(global.json, &summary, |s| s.print())?;
        if !summary.failed.is_empty() {
            bail!("{} of {} images failed", summary.failed.len(), summary.images);
        }
        return Ok(vec![]);
    }
    if name == "score" {
        use radio::sources::score;
        let options = Score::from_arg_matches(options)?;
        let truth = score::read_truth(&options.truth, options.noise)?;
        let detections = score::read_detections(&options.catalog)?;
        let scored = score::score(&truth, &detections, &score::ScoreOptions::default())?;
        show(global.json, &scored, |s| println!("{}", s))?;
        return Ok(vec![]);
    }
    if name == "launches" {
        print_launches(global.json, Launches::from_arg_matches(options)?.sms)?;
        return Ok(vec![]);
    }
    let cases = if name == "cases" { Some(Cases::from_arg_matches(options)?) } else { None };
    if let Some(cases @ Cases { run: false, .. }) = &cases {
        let purpose = purpose_of(cases.set);
        let lines: Vec<String> = cases
            .families()?
            .into_iter()
            .flat_map(|f| f.sizes(purpose).into_iter().map(move |size| format!("{} {}\n", f.name(), size)))
            .collect();
        write_stdout(&lines.concat())?;
        return Ok(vec![]);
    }
    if let Some(split) = ops::family(name).and_then(|f| f.split(options, global.seed, global.iters as usize)) {
        let report = split?;
        show(global.json, &report, |r| r.print())?;
        if !report.check.passed {
            bail!("the result divided among GPUs did not match the CPU");
        }
        return Ok(vec![]);
    }
    let gpu = Gpu::new().context("starting CUDA")?;
    let timer = Timer { launches: global.iters as usize, cache: global.cache };
    let (iters, seed) = (global.iters as usize, global.seed);
    match name {
        "cases" => {
            let cases = cases.expect("parsed above");
            let purpose = purpose_of(cases.set);
            let mut reports = Vec::new();
            for family in cases.families()? {
                for options in family.sizes(purpose) {
                    reports.extend(host::registry::run_options(&gpu, family, &options, seed, timer)?);
                }
            }
            report::print(&reports, global.json);
            return Ok(reports);
        }
        "info" => {
            let kernels = Info::from_arg_matches(options)?.kernels;
            let rows = if kernels { Some(ops::kernel_resources(&gpu)?) } else { None };
            if global.json {
                print_json(&serde_json::json!({ "device": gpu.info(), "kernels": rows }))?;
            } else {
                gpu.info().print();
                if let Some(rows) = rows {
                    println!("{}", resources::table(&rows));
                    if !gpu.has_hopper() {
                        let hopper: Vec<&str> =
                            host::ops::matmul::hopper::kernels().map(|(kernel, _, _)| kernel).collect();
                        println!("not listed, needs sm_90 (Hopper): {}", hopper.join(", "));
                    }
                }
            }
        }
        "streams" => {
            let report = demos::streams(&gpu, iters, seed)?;
            show(global.json, &report, |r| r.print())?;
            if !report.passed() {
                bail!("a stream result did not match");
            }
        }
        "bandwidth" => {
            let sizes: Vec<usize> =
                Bandwidth::from_arg_matches(options)?.sizes_mib.iter().map(|mib| mib << 20).collect();
            let rows = demos::bandwidth(&gpu, &sizes, iters)?;
            show(global.json, &rows, |rows| demos::print_bandwidth(rows))?;
        }
        "overlap" => {
            let o = Overlap::from_arg_matches(options)?;
            let report = demos::overlap(&gpu, o.n, o.streams, o.chunks, iters, seed)?;
            show(global.json, &report, |r| r.print())?;
            if !report.check.passed {
                bail!("the pipelined result did not match the CPU");
            }
        }
        "all" => {
            let mut reports = Vec::new();
            for family in FAMILIES {
                for options in family.sizes(Purpose::Default) {
                    let family_reports = host::registry::run_options(&gpu, *family, &options, seed, timer)?;
                    report::print(&family_reports, global.json);
                    reports.extend(family_reports);
                }
            }
            return Ok(reports);
        }
        "bench" => {
            let b = Bench::from_arg_matches(options)?;
            let peers = match &b.peers {
                Some(path) => {
                    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                    Some(
                        serde_json::from_str::<serde_json::Value>(&text)
                            .with_context(|| format!("parsing {}", path.display()))?,
                    )
                }
                None => None,
            };
            let timer = Timer { launches: if b.quick { 5 } else { iters }, ..timer };
            let rows = bench::run(&gpu, b.quick, &b.out, peers.as_ref(), seed, timer)?;
            println!("{}", bench::markdown(gpu.info(), &rows, peers.is_some()));
            println!("wrote {}/report.json, report.md and charts", b.out.display());
            return Ok(rows.into_iter().map(|row| row.report).collect());
        }
        family => {
            let family = ops::family(family).with_context(|| format!("no command `{}`", family))?;
            let mut workload = family.prepare(&gpu, options, seed)?;
            let reports = host::registry::run(&gpu, family.name(), workload.as_mut(), timer)?;
            report::print(&reports, global.json);
            return Ok(reports);
        }
    }
    Ok(vec![])
}

fn run_cli() -> Result<()> {
    let matches = cli().get_matches();
    let global = Global::from_arg_matches(&matches)?;
    let (name, options) = matches.subcommand().expect("clap requires a subcommand");
    let reports = run(&global, name, options)?;
    let failed: Vec<_> =
        reports.iter().filter(|r| !r.check.passed).map(|r| format!("{} {}", r.family, r.variant)).collect();
    if !failed.is_empty() {
        bail!("{} result(s) did not match the CPU reference: {}", failed.len(), failed.join(", "));
    }
    Ok(())
}

/// An error ends the program with its chain of causes on one line and exit code 1.
fn main() -> ExitCode {
    #[cfg(unix)]
    // SAFETY: at start-up, before any other thread exists, the default action is restored for
    // SIGPIPE (Rust's runtime ignores it): output piped into a command that stops reading
    // (`host ptx | head`) then ends the program quietly, as it ends any Unix tool, instead of
    // `println!` panicking on the closed pipe.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match run_cli() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {:#}", err);
            ExitCode::FAILURE
        }
    }
}
