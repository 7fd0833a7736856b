//! `host <kernel> [options]`: run a kernel on the GPU, check it against the CPU, report speed.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use host::gpu::{DeviceInfo, Gpu};
use host::ops::{conv, counter, histogram, matmul, saxpy, vector_add};
use host::report::Report;
use host::{resources, runtime};

#[derive(Parser)]
#[clap(name = "host", about = "CUDA kernels written in Rust: run, check against the CPU, time")]
struct Cli {
    /// One JSON object per result instead of a table row.
    #[clap(long, global = true)]
    json: bool,
    /// Timed launches per kernel (the median is reported).
    #[clap(long, global = true, default_value_t = 20)]
    iters: usize,
    /// Seed of the random inputs.
    #[clap(long, global = true, default_value_t = 2026)]
    seed: u64,
    #[clap(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The device: name, SMs, memory, compute capability, clocks, peaks.
    Info {
        /// Also each kernel's registers, shared and local memory, and occupancy.
        #[clap(long)]
        kernels: bool,
    },
    /// Two kernels on two streams overlap; a third waits on an event before using a result.
    Streams,
    /// Host-to-device, device-to-host (pageable vs pinned) and device-to-device GB/s.
    Bandwidth {
        /// Transfer sizes in MiB.
        #[clap(long, use_value_delimiter = true, default_value = "1,4,16,64,256")]
        sizes_mib: Vec<usize>,
    },
    /// A vector add split into chunks over several streams, copies overlapping kernels.
    Overlap {
        #[clap(long, default_value_t = 1 << 26)]
        n: usize,
        #[clap(long, default_value_t = 4)]
        streams: usize,
        #[clap(long, default_value_t = 16)]
        chunks: usize,
    },
    /// c = a + b, one thread per element.
    VectorAdd {
        #[clap(long, default_value_t = 1 << 28)]
        n: usize,
        #[clap(long, default_value_t = 256)]
        block: u32,
    },
    /// y = a·x + y with a grid-stride loop over a grid sized to the GPU.
    Saxpy {
        #[clap(long, default_value_t = 1 << 28)]
        n: usize,
        #[clap(long, default_value_t = 256)]
        block: u32,
        /// Blocks in the grid (0: 4 per SM).
        #[clap(long, default_value_t = 0)]
        grid: u32,
    },
    /// Every thread adds 1 to one counter: racy load-add-store vs atomic add.
    Counter {
        #[clap(long, default_value_t = 1 << 20)]
        threads: usize,
        #[clap(long, default_value_t = 256)]
        block: u32,
    },
    /// 256-bin histogram with global atomics and with shared-memory privatization.
    Histogram {
        #[clap(long, default_value_t = 1 << 28)]
        n: usize,
        #[clap(long, arg_enum, default_value = "u32")]
        input: histogram::Input,
        /// Variants to run (all when omitted).
        #[clap(long, arg_enum, multiple_occurrences = true)]
        variant: Vec<histogram::Variant>,
        #[clap(long, default_value_t = 256)]
        block: u32,
        /// Blocks in the grid (0: 8 per SM).
        #[clap(long, default_value_t = 0)]
        grid: u32,
    },
    /// C = A × B, f32 row-major.
    Matmul {
        #[clap(long, default_value_t = 4096)]
        m: usize,
        #[clap(long, default_value_t = 4096)]
        n: usize,
        #[clap(long, default_value_t = 4096)]
        k: usize,
        /// Variants to run (all when omitted).
        #[clap(long, arg_enum, multiple_occurrences = true)]
        variant: Vec<matmul::Variant>,
    },
    /// 2D convolution (cross-correlation), zero padding, filter in constant memory.
    Conv2d {
        #[clap(long, default_value_t = 8192)]
        width: usize,
        #[clap(long, default_value_t = 8192)]
        height: usize,
        /// Filter side: 3, 5 or 7.
        #[clap(long, default_value_t = 5)]
        filter: usize,
        /// Variants to run (all when omitted).
        #[clap(long, arg_enum, multiple_occurrences = true)]
        variant: Vec<conv::Variant>,
    },
    /// 1D convolution with a shared-memory tile and halo.
    Conv1d {
        #[clap(long, default_value_t = 1 << 26)]
        n: usize,
        /// Filter length: 3, 5 or 7.
        #[clap(long, default_value_t = 7)]
        filter: usize,
    },
    /// Every kernel and variant at its default size.
    All,
    /// A size sweep of every kernel: report.json, report.md and SVG charts.
    Bench {
        /// Fewer sizes and launches (a few minutes on an H100).
        #[clap(long)]
        quick: bool,
        #[clap(long, default_value = "bench-report")]
        out: std::path::PathBuf,
        /// peers.json from shared/peers/peers.py, run on the same GPU: adds "x peer" ratios.
        #[clap(long)]
        peers: Option<std::path::PathBuf>,
    },
}

fn or_all<T: Copy>(chosen: &[T], all: &[T]) -> Vec<T> {
    if chosen.is_empty() {
        all.to_vec()
    } else {
        chosen.to_vec()
    }
}

fn print_info(info: &DeviceInfo, json: bool) {
    if json {
        println!("{}", serde_json::to_string(info).expect("device info serializes"));
        return;
    }
    println!("device              {}", info.name);
    println!("compute capability  {}.{}", info.compute_capability.0, info.compute_capability.1);
    println!("multiprocessors     {}", info.multiprocessors);
    println!("clock               {:.0} MHz (memory {:.0} MHz, {}-bit bus)", info.clock_mhz, info.memory_clock_mhz, info.memory_bus_bits);
    println!("memory              {:.1} GiB total, {:.1} GiB free", info.total_memory as f64 / (1u64 << 30) as f64, info.free_memory as f64 / (1u64 << 30) as f64);
    println!("limits              {} threads per block, {} bytes shared memory per block", info.max_threads_per_block, info.max_shared_per_block);
    println!("peaks               {:.0} GB/s memory, {:.0} GFLOP/s FP32", info.peak_bandwidth_gbs, info.peak_fp32_gflops);
}

fn run(cli: &Cli, gpu: &Gpu, command: &Command) -> Result<Vec<Report>> {
    let (iters, seed) = (cli.iters, cli.seed);
    Ok(match command {
        Command::Info { kernels } => {
            print_info(&gpu.info, cli.json);
            if *kernels {
                let rows = resources::kernel_resources(gpu)?;
                if cli.json {
                    println!("{}", serde_json::to_string(&rows)?);
                } else {
                    resources::print(&rows);
                }
            }
            vec![]
        }
        Command::Streams => {
            let report = runtime::streams(gpu, iters, seed)?;
            if cli.json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                report.print();
            }
            if !report.passed() {
                bail!("a stream result did not match");
            }
            vec![]
        }
        Command::Bandwidth { sizes_mib } => {
            let sizes: Vec<usize> = sizes_mib.iter().map(|mib| mib << 20).collect();
            let rows = runtime::bandwidth(gpu, &sizes, iters)?;
            if cli.json {
                println!("{}", serde_json::to_string(&rows)?);
            } else {
                runtime::print_bandwidth(&rows);
            }
            vec![]
        }
        Command::Overlap { n, streams, chunks } => {
            let report = runtime::overlap(gpu, *n, *streams, *chunks, iters, seed)?;
            if cli.json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                report.print();
            }
            if !report.check.passed {
                bail!("the pipelined result did not match the CPU");
            }
            vec![]
        }
        Command::VectorAdd { n, block } => vec![vector_add::run(gpu, *n, *block, iters, seed)?],
        Command::Saxpy { n, block, grid } => vec![saxpy::run(gpu, *n, *block, *grid, iters, seed)?],
        Command::Counter { threads, block } => counter::run(gpu, *threads, *block, iters)?,
        Command::Histogram { n, input, variant, block, grid } => histogram::run(
            gpu,
            *input,
            *n,
            &or_all(variant, &histogram::Variant::ALL),
            *block,
            *grid,
            iters,
            seed,
        )?,
        Command::Matmul { m, n, k, variant } => {
            matmul::run(gpu, (*m, *n, *k), &or_all(variant, &matmul::Variant::ALL), iters, seed)?
        }
        Command::Conv2d { width, height, filter, variant } => {
            conv::run_2d(gpu, (*width, *height), *filter, &or_all(variant, &conv::Variant::ALL), iters, seed)?
        }
        Command::Conv1d { n, filter } => vec![conv::run_1d(gpu, *n, *filter, iters, seed)?],
        Command::Bench { quick, out, peers } => {
            let peers = match peers {
                Some(path) => {
                    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                    Some(serde_json::from_str::<serde_json::Value>(&text).with_context(|| format!("parsing {}", path.display()))?)
                }
                None => None,
            };
            let rows = host::bench::run(gpu, *quick, out, peers.as_ref(), seed)?;
            println!("{}", host::bench::markdown(&gpu.info, &rows, peers.is_some()));
            println!("wrote {}/report.json, report.md and charts", out.display());
            rows.into_iter().map(|row| row.report).collect()
        }
        Command::All => {
            let mut reports = Vec::new();
            for command in [
                Command::VectorAdd { n: 1 << 28, block: 256 },
                Command::Saxpy { n: 1 << 28, block: 256, grid: 0 },
                Command::Counter { threads: 1 << 20, block: 256 },
                Command::Histogram { n: 1 << 28, input: histogram::Input::U32, variant: vec![], block: 256, grid: 0 },
                Command::Histogram { n: 1 << 28, input: histogram::Input::F32, variant: vec![], block: 256, grid: 0 },
                Command::Matmul { m: 4096, n: 4096, k: 4096, variant: vec![] },
                Command::Conv2d { width: 8192, height: 8192, filter: 5, variant: vec![] },
                Command::Conv1d { n: 1 << 26, filter: 7 },
            ] {
                for report in run(cli, gpu, &command)? {
                    report.print(cli.json);
                    reports.push(report);
                }
            }
            return Ok(reports);
        }
    })
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let gpu = Gpu::new().context("starting CUDA")?;
    let reports = run(&cli, &gpu, &cli.command)?;
    if !matches!(cli.command, Command::All | Command::Bench { .. }) {
        for report in &reports {
            report.print(cli.json);
        }
    }
    let failed: Vec<_> = reports.iter().filter(|r| !r.check.passed).map(|r| format!("{} {}", r.kernel, r.variant)).collect();
    if !failed.is_empty() {
        bail!("{} result(s) did not match the CPU reference: {}", failed.len(), failed.join(", "));
    }
    Ok(())
}
