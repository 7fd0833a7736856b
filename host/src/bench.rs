//! `host bench`: a size sweep of every kernel and variant, written as `report.json`,
//! `report.md` and one SVG chart per kernel family (throughput vs size, variants side by
//! side). With `--peers` (the JSON printed by `shared/peers/peers.py` on the same GPU) each
//! row that has a peer also gets the ratio to it.

use crate::gpu::{DeviceInfo, Gpu, GpuResult};
use crate::ops::{conv, counter, histogram, matmul, saxpy, vector_add};
use crate::report::Report;
use anyhow::{Context, Result};
use plotters::prelude::*;
use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// One measured point: the kernel's report, the size it ran at, and its peer if there is one.
#[derive(Debug, Serialize)]
pub struct Row {
    pub size: usize,
    pub report: Report,
    pub peer: Option<PeerRatio>,
}

#[derive(Debug, Serialize)]
pub struct PeerRatio {
    pub peer: String,
    /// Our throughput over the peer's (above 1: faster than the peer).
    pub ratio: f64,
}

enum Job {
    VectorAdd(usize),
    Saxpy(usize),
    Counter(usize),
    Histogram(histogram::Input, usize),
    Matmul(usize),
    Conv2d(usize),
    Conv1d(usize),
}

impl Job {
    fn label(&self) -> String {
        match self {
            Job::VectorAdd(n) => format!("vector-add n={}", n),
            Job::Saxpy(n) => format!("saxpy n={}", n),
            Job::Counter(n) => format!("counter threads={}", n),
            Job::Histogram(input, n) => format!("histogram {:?} n={}", input, n),
            Job::Matmul(side) => format!("matmul {}^3", side),
            Job::Conv2d(side) => format!("conv2d {}^2 5x5", side),
            Job::Conv1d(n) => format!("conv1d n={}", n),
        }
    }

    fn size(&self) -> usize {
        match *self {
            Job::VectorAdd(n) | Job::Saxpy(n) | Job::Counter(n) | Job::Histogram(_, n) | Job::Conv1d(n) => n,
            Job::Matmul(side) | Job::Conv2d(side) => side,
        }
    }

    fn run(&self, gpu: &Gpu, iters: usize, seed: u64) -> GpuResult<Vec<Report>> {
        Ok(match *self {
            Job::VectorAdd(n) => vec![vector_add::run(gpu, n, 256, iters, seed)?],
            Job::Saxpy(n) => vec![saxpy::run(gpu, n, 256, 0, iters, seed)?],
            Job::Counter(n) => counter::run(gpu, n, 256, iters)?,
            Job::Histogram(input, n) => histogram::run(gpu, input, n, &histogram::Variant::ALL, 256, 0, iters, seed)?,
            Job::Matmul(side) => {
                // The simple kernels alone would take most of the sweep at 8192.
                let fast = [matmul::Variant::Blocked, matmul::Variant::Vec4];
                let variants: Vec<_> =
                    matmul::Variant::ALL.iter().copied().filter(|v| side <= 4096 || fast.contains(v)).collect();
                matmul::run(gpu, (side, side, side), &variants, iters, seed)?
            }
            Job::Conv2d(side) => conv::run_2d(gpu, (side, side), 5, &conv::Variant::ALL, iters, seed)?,
            Job::Conv1d(n) => vec![conv::run_1d(gpu, n, 7, iters, seed)?],
        })
    }
}

fn jobs(quick: bool) -> Vec<Job> {
    let powers: &[u32] = if quick { &[20, 24, 28] } else { &[16, 18, 20, 22, 24, 26, 28] };
    let sides: &[usize] = if quick { &[1024, 2048, 4096] } else { &[512, 1024, 2048, 4096, 8192] };
    let images: &[usize] = if quick { &[1024, 4096, 8192] } else { &[512, 1024, 2048, 4096, 8192] };
    let mut jobs = Vec::new();
    for &p in powers {
        jobs.push(Job::VectorAdd(1 << p));
        jobs.push(Job::Saxpy(1 << p));
        jobs.push(Job::Histogram(histogram::Input::U32, 1 << p));
        jobs.push(Job::Histogram(histogram::Input::F32, 1 << p));
        jobs.push(Job::Conv1d(1 << p.min(26)));
    }
    jobs.push(Job::Counter(1 << 20));
    jobs.extend(sides.iter().map(|&s| Job::Matmul(s)));
    jobs.extend(images.iter().map(|&s| Job::Conv2d(s)));
    jobs
}

/// The peer measured by peers.py for the same work, as (name, GB/s or GFLOP/s).
fn peer_for(report: &Report, size: usize, peers: &Value) -> Option<(String, f64)> {
    let get = |key: &str, field: &str| peers.get(key)?.get(field)?.as_f64().map(|v| (key.to_string(), v));
    let same_n = |key: &str| peers.get(key).and_then(|p| p.get("n")).and_then(Value::as_u64) == Some(size as u64);
    match (report.kernel.as_str(), report.variant.as_str()) {
        // Vector add moves 3 streams; the copy peer is the bandwidth ceiling it is held to.
        ("vector-add", _) if same_n("copy_f32") => get("copy_f32", "GBps"),
        ("histogram", v) if v.ends_with("u32") && same_n("histogram256_int_cub") => {
            let cub = get("histogram256_int_cub", "GBps");
            let bincount = get("histogram256_int_cupy_bincount", "GBps");
            [cub, bincount].into_iter().flatten().max_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal))
        }
        ("histogram", v) if v.ends_with("f32") && same_n("histogram256_f32_torch_histc") => {
            get("histogram256_f32_torch_histc", "GBps")
        }
        ("matmul", _) => get(&format!("sgemm_f32_{}", size), "TFLOPs").map(|(k, tflops)| (k, tflops * 1e3)),
        ("conv2d", _) if peers.get("conv2d_5x5_f32")?.get("side")?.as_u64() == Some(size as u64) => {
            get("conv2d_5x5_f32", "GBps")
        }
        _ => None,
    }
}

pub fn run(gpu: &Gpu, quick: bool, out: &Path, peers: Option<&Value>, seed: u64) -> Result<Vec<Row>> {
    let jobs = jobs(quick);
    let iters = if quick { 5 } else { 20 };
    let mut rows = Vec::new();
    let mut stderr = std::io::stderr();
    for (i, job) in jobs.iter().enumerate() {
        let done = 30 * i / jobs.len();
        let _ = write!(stderr, "\r[{}{}] {:>2}/{} {:<40}", "#".repeat(done), ".".repeat(30 - done), i + 1, jobs.len(), job.label());
        let _ = stderr.flush();
        for report in job.run(gpu, iters, seed).with_context(|| job.label())? {
            let peer = peers.and_then(|p| peer_for(&report, job.size(), p)).and_then(|(peer, theirs)| {
                report.throughput.map(|ours| PeerRatio { peer, ratio: ours / theirs })
            });
            rows.push(Row { size: job.size(), report, peer });
        }
    }
    let _ = writeln!(stderr, "\r[{}] {}/{} done{}", "#".repeat(30), jobs.len(), jobs.len(), " ".repeat(40));

    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let json = serde_json::json!({ "device": gpu.info, "quick": quick, "peers": peers, "rows": rows });
    std::fs::write(out.join("report.json"), serde_json::to_string_pretty(&json)?)?;
    std::fs::write(out.join("report.md"), markdown(&gpu.info, &rows, peers.is_some()))?;
    for (file, kernels) in CHARTS {
        chart(&out.join(file), &rows, kernels).with_context(|| format!("drawing {}", file))?;
    }
    Ok(rows)
}

pub fn markdown(device: &DeviceInfo, rows: &[Row], with_peers: bool) -> String {
    let mut md = format!(
        "# Benchmark report\n\n{} ({} SMs, CC {}.{}): peak {:.0} GB/s memory, {:.0} GFLOP/s FP32 (from the device's attributes).\n\
         Times are medians of CUDA-event-timed launches; throughput counts the bytes that must move once \
         (GB/s) or the flops (GFLOP/s).\n\n",
        device.name,
        device.multiprocessors,
        device.compute_capability.0,
        device.compute_capability.1,
        device.peak_bandwidth_gbs,
        device.peak_fp32_gflops
    );
    md += "| kernel | variant | size | ms | throughput | % of peak | x CPU |";
    md += if with_peers { " x peer | peer |" } else { "" };
    md += " check |\n|---|---|---|---:|---:|---:|---:|";
    md += if with_peers { "---:|---|" } else { "" };
    md += "---|\n";
    for row in rows {
        let r = &row.report;
        md += &format!(
            "| {} | {} | {} | {:.4} | {} | {} | {} |",
            r.kernel,
            r.variant,
            r.shape,
            r.gpu_ms,
            r.throughput.map_or("-".into(), |t| format!("{:.1} {}", t, r.unit())),
            r.percent_of_peak.map_or("-".into(), |p| format!("{:.1}%", p)),
            r.speedup.map_or("-".into(), |x| format!("{:.1}", x)),
        );
        if with_peers {
            md += &match &row.peer {
                Some(p) => format!(" {:.2} | {} |", p.ratio, p.peer),
                None => " - | - |".into(),
            };
        }
        md += &format!(" {} |\n", if r.check.passed { "PASS" } else { "FAIL" });
    }
    md
}

/// Chart files and the kernels each one shows.
const CHARTS: &[(&str, &[&str])] = &[
    ("memory_bound.svg", &["vector-add", "saxpy", "conv1d"]),
    ("histogram.svg", &["histogram"]),
    ("matmul.svg", &["matmul"]),
    ("conv2d.svg", &["conv2d"]),
];

fn chart(path: &Path, rows: &[Row], kernels: &[&str]) -> Result<()> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut unit = "";
    for row in rows.iter().filter(|r| kernels.contains(&r.report.kernel.as_str())) {
        let throughput = match row.report.throughput {
            Some(t) => t,
            None => continue,
        };
        let label = format!("{} {}", row.report.kernel, row.report.variant);
        unit = row.report.unit();
        match series.iter_mut().find(|(name, _)| *name == label) {
            Some((_, points)) => points.push(((row.size as f64).log2(), throughput)),
            None => series.push((label, vec![((row.size as f64).log2(), throughput)])),
        }
    }
    // x is log2(size) on a linear axis, labelled with the sizes themselves.
    let (x_min, x_max) = series.iter().flat_map(|(_, p)| p.iter().map(|&(x, _)| x)).fold((f64::MAX, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (x_min, x_max) = (x_min.floor() - 0.5, x_max.ceil() + 0.5);
    let y_max = series.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y)).fold(0.0f64, f64::max) * 1.1;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let x_label = if kernels.contains(&"matmul") || kernels.contains(&"conv2d") { "size (side of the square)" } else { "elements" };
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}: throughput vs size", kernels.join(", ")), ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x_min..x_max, 0.0..y_max.max(1.0))?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(unit)
        .x_labels(((x_max - x_min) as usize).max(2))
        .x_label_formatter(&|x| format!("{:.0}", 2f64.powf(*x)))
        .draw()?;
    for (i, (label, points)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
    }
    chart.configure_series_labels().border_style(&BLACK).background_style(&WHITE.mix(0.9)).position(SeriesLabelPosition::UpperLeft).draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Check;
    use crate::report::Work;

    fn device() -> DeviceInfo {
        DeviceInfo {
            name: "test device".into(),
            compute_capability: (9, 0),
            multiprocessors: 132,
            clock_mhz: 1980.0,
            memory_clock_mhz: 2619.0,
            memory_bus_bits: 5120,
            total_memory: 80 << 30,
            free_memory: 79 << 30,
            max_threads_per_block: 1024,
            max_shared_per_block: 49152,
            max_block_dims: (1024, 1024, 64),
            max_grid_dims: (i32::MAX, 65535, 65535),
            peak_bandwidth_gbs: 3352.0,
            peak_fp32_gflops: 66908.0,
        }
    }

    fn row(kernel: &str, variant: &str, size: usize, ms: f64, work: Work) -> Row {
        let check = Check { passed: true, worst_error: 0.0, tolerance: 0.0, mismatches: 0, first_mismatch: None };
        let report = Report::new(&device(), kernel, variant, format!("{}", size), ms, work, Some(10.0 * ms), check);
        Row { size, report, peer: None }
    }

    #[test]
    fn markdown_and_charts_hold_every_row_and_variant() {
        let mut rows = Vec::new();
        for (i, side) in [1024usize, 2048, 4096].iter().enumerate() {
            let flops = 2 * (side * side * side) as u64;
            rows.push(row("matmul", "naive", *side, 1.0 + i as f64, Work::Flops(flops)));
            rows.push(row("matmul", "blocked", *side, 0.2 + i as f64, Work::Flops(flops)));
        }
        rows[5].peer = Some(PeerRatio { peer: "sgemm_f32_4096".into(), ratio: 0.5 });
        let md = markdown(&device(), &rows, true);
        assert_eq!(md.matches("| matmul |").count(), 6);
        assert!(md.contains("| 0.50 | sgemm_f32_4096 |"));
        assert!(md.contains("% of peak"));
        let dir = std::env::temp_dir().join(format!("bench-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("matmul.svg");
        chart(&path, &rows, &["matmul"]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        for text in ["matmul naive", "matmul blocked", "GFLOP/s", "size (side of the square)"] {
            assert!(svg.contains(text), "the chart lacks {:?}", text);
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
