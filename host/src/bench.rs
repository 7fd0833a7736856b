//! `host bench`: a size sweep of every family and variant in the registry, written as
//! `report.json`, `report.md` and one SVG chart per family (throughput vs size, variants side
//! by side). With `--peers` (the JSON that `bench/peers/run` writes on the same GPU) each row
//! that has a peer also gets the ratio to it.

use crate::gpu::{DeviceInfo, Gpu};
use crate::registry::{Purpose, Timer, FAMILIES};
use crate::report::Report;
use anyhow::{Context, Result};
use comfy_table::{presets::ASCII_MARKDOWN, Table};
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// One measured point: the kernel's report, the size it ran at, and its peer if there is one.
#[derive(Debug, Serialize)]
pub struct Row {
    /// The x axis of the charts: elements, or the side of a square.
    pub size: u64,
    pub report: Report,
    pub peer: Option<PeerRatio>,
}

#[derive(Debug, Serialize)]
pub struct PeerRatio {
    pub peer: String,
    pub library: String,
    /// Our throughput over the peer's (above 1: faster than the peer).
    pub ratio: f64,
}

/// The peer in `peers` that measured the same work at the same size, as (library, rate).
fn peer_rate(peers: &Value, key: &str, size: u64, unit: &str) -> Option<(String, f64)> {
    let entry = peers.get("peers")?.get(key)?;
    let same_size = ["n", "side"].iter().find_map(|f| entry.get(f)?.as_u64()) == Some(size);
    let field = if unit == "GB/s" { "GBps" } else { "GFLOPs" };
    let library = entry.get("library").and_then(Value::as_str).unwrap_or(key).to_string();
    same_size.then_some(())?;
    Some((library, entry.get(field)?.as_f64()?))
}

pub fn run(gpu: &Gpu, quick: bool, out: &Path, peers: Option<&Value>, seed: u64, timer: Timer) -> Result<Vec<Row>> {
    let purpose = if quick { Purpose::Quick } else { Purpose::Full };
    let jobs: Vec<_> = FAMILIES.iter().flat_map(|f| f.sizes(purpose).into_iter().map(move |s| (*f, s))).collect();
    let progress = ProgressBar::new(jobs.len() as u64).with_style(
        ProgressStyle::with_template("[{bar:30}] {pos}/{len} {msg}").expect("a valid template").progress_chars("#>."),
    );
    let mut rows = Vec::new();
    for (family, options) in jobs {
        progress.set_message(format!("{} {}", family.name(), options));
        let mut workload = family.prepare_from(gpu, &options, seed)?;
        let (size, peer) = (workload.size(), workload.peer());
        let reports = crate::registry::run(gpu, family.name(), workload.as_mut(), timer)
            .with_context(|| format!("{} {}", family.name(), options))?;
        for report in reports {
            let peer = match (&peer, peers, report.throughput) {
                (Some(key), Some(peers), Some(ours)) => peer_rate(peers, key, size, report.unit())
                    .map(|(library, theirs)| PeerRatio { peer: key.clone(), library, ratio: ours / theirs }),
                _ => None,
            };
            rows.push(Row { size, report, peer });
        }
        progress.inc(1);
    }
    progress.finish_with_message("done");

    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let json = serde_json::json!({ "device": gpu.info, "quick": quick, "peers": peers, "rows": rows });
    std::fs::write(out.join("report.json"), serde_json::to_string_pretty(&json)?)?;
    std::fs::write(out.join("report.md"), markdown(&gpu.info, &rows, peers.is_some()))?;
    for family in FAMILIES {
        let file = format!("{}.svg", family.name());
        chart(&out.join(&file), &rows, family.name()).with_context(|| format!("drawing {}", file))?;
    }
    Ok(rows)
}

pub fn markdown(device: &DeviceInfo, rows: &[Row], with_peers: bool) -> String {
    let mut table = Table::new();
    table.load_preset(ASCII_MARKDOWN);
    let mut header =
        vec!["kernel", "variant", "size", "median ms", "min ms", "spread", "throughput", "% of peak", "x CPU"];
    if with_peers {
        header.extend(["x peer", "peer"]);
    }
    header.push("check");
    table.set_header(header);
    for row in rows {
        let r = &row.report;
        let mut cells = vec![
            r.family.clone(),
            r.variant.clone(),
            r.shape.clone(),
            format!("{:.4}", r.timing.median_ms),
            format!("{:.4}", r.timing.min_ms),
            format!("{:.1}%", r.timing.spread_percent),
            r.throughput.map_or("-".into(), |t| format!("{:.1} {}", t, r.unit())),
            r.percent_of_peak.map_or("-".into(), |p| format!("{:.1}%", p)),
            r.speedup.map_or("-".into(), |x| format!("{:.1}", x)),
        ];
        if with_peers {
            match &row.peer {
                Some(p) => cells.extend([format!("{:.2}", p.ratio), p.library.clone()]),
                None => cells.extend(["-".into(), "-".into()]),
            }
        }
        cells.push(if r.check.passed { "PASS" } else { "FAIL" }.into());
        table.add_row(cells);
    }
    let cache = rows.first().map_or("", |r| match r.report.timing.cache {
        crate::gpu::Cache::Flushed => "L2 flushed before each launch",
        crate::gpu::Cache::Warm => "L2 left warm between launches",
    });
    format!(
        "# Benchmark report\n\n{} ({} SMs, CC {}.{}): peak {:.0} GB/s memory, {:.0} GFLOP/s FP32 (from the device's attributes).\n\
         Times are CUDA-event times of single launches after a warm-up ({}); spread is the interquartile range over the median. \
         Throughput counts the bytes that must move once (GB/s) or the flops (GFLOP/s) at the median time.\n\n{}\n",
        device.name,
        device.multiprocessors,
        device.compute_capability.0,
        device.compute_capability.1,
        device.peak_bandwidth_gbs,
        device.peak_fp32_gflops,
        cache,
        table
    )
}

fn chart(path: &Path, rows: &[Row], family: &str) -> Result<()> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut unit = "";
    for row in rows.iter().filter(|r| r.report.family == family) {
        let throughput = match row.report.throughput {
            Some(t) => t,
            None => continue,
        };
        let label = format!("{} {}", row.report.family, row.report.variant);
        unit = row.report.unit();
        match series.iter_mut().find(|(name, _)| *name == label) {
            Some((_, points)) => points.push(((row.size as f64).log2(), throughput)),
            None => series.push((label, vec![((row.size as f64).log2(), throughput)])),
        }
    }
    // x is log2(size) on a linear axis, labelled with the sizes themselves.
    let (x_min, x_max) = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|&(x, _)| x))
        .fold((f64::MAX, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (x_min, x_max) = (x_min.floor() - 0.5, x_max.ceil() + 0.5);
    let y_max = series.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y)).fold(0.0f64, f64::max) * 1.1;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let x_label = "size (elements, or the side of a square)";
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}: throughput vs size", family), ("sans-serif", 22))
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
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}
