//! `host bench`: a size sweep of every family and variant in the registry, written as
//! `report.json`, `report.md` and SVG charts of throughput vs size, variants side by side under
//! their roof: one per family, and one per roof where a family has several (matmul's FP32,
//! TF32, BF16 and FP16 each under its own peak, beside cuBLAS of the same type). With `--peers` (the JSON that `bench/peers/run` writes
//! on the same GPU) each row that has a peer also gets the ratio to it, and the charts the
//! peer's throughput. Last come the rows of `host sources`' GPU pipeline, against the lesson's
//! CuPy code.

use crate::check::Check;
use crate::data::timed;
use crate::gpu::{Cache, DeviceInfo, Gpu, Timing};
use crate::ops::FAMILIES;
use crate::registry::{Purpose, Timer};
use crate::report::{tflops, Measured, Report, Roof, Work};
use crate::{sky, sources};
use anyhow::{Context, Result};
use comfy_table::{presets::ASCII_MARKDOWN, Table};
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

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
    /// The peer's throughput, in the row's unit.
    pub rate: f64,
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
                    .map(|(library, rate)| PeerRatio { peer: key.clone(), library, rate, ratio: ours / rate }),
                _ => None,
            };
            rows.push(Row { size, report, peer });
        }
        progress.inc(1);
    }
    progress.finish_with_message("done");
    rows.extend(pipeline_rows(gpu, quick, peers, seed)?);

    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let date = utc(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()));
    let json = serde_json::json!({ "device": gpu.info(), "date": date, "quick": quick, "peers": peers, "rows": rows });
    std::fs::write(out.join("report.json"), serde_json::to_string_pretty(&json)?)?;
    std::fs::write(out.join("report.md"), markdown(gpu.info(), &rows, peers.is_some()))?;
    charts(out, &rows, &gpu.info().name)?;
    Ok(rows)
}

/// Runs of the source-finding pipeline per side: each is a whole image's worth of launches.
const PIPELINE_RUNS: usize = 20;

/// `host sources` on the GPU, on the synthetic sky of each side (`host sky`'s defaults), timed
/// wall clock from the NaN count to the measures (the image already on the GPU, as the lesson
/// times CuPy), checked against the CPU pipeline, beside the lesson's CuPy code on the same sky
/// (`bench/peers/sources.py`).
fn pipeline_rows(gpu: &Gpu, quick: bool, peers: Option<&Value>, seed: u64) -> Result<Vec<Row>> {
    let sides: &[usize] = if quick { &[2048] } else { &[2048, 8192] };
    let settings = sources::Settings::LESSON;
    let mut rows = Vec::new();
    for &side in sides {
        let image = sky::default_sky(side, false, seed)?;
        let pipeline = sources::gpu::Pipeline::new(gpu, &image)?;
        let (cpu, cpu_ms) = timed(|| sources::find(&image, &settings));
        // A warm-up run, then the timed ones; the last one's result is checked.
        pipeline.find(&image, &settings)?;
        let mut runs = pipeline.runs(&image, &settings, PIPELINE_RUNS)?;
        let samples = runs.iter().map(sources::Found::total_ms).collect();
        let mut found = runs.pop().context("the pipeline ran at least once")?;
        found.labels = pipeline.labels()?;
        let checks = sources::compare(&found, &cpu?);
        let failed: Vec<&str> = checks.iter().filter(|c| !c.passed).map(|c| c.what.as_str()).collect();
        let check = Check {
            passed: failed.is_empty(),
            worst_error: 0.0,
            tolerance: 0.0,
            mismatches: failed.len(),
            first_mismatch: None,
            race: None,
        };
        let note = format!(
            "{} sources, {} clipping rounds{}",
            found.sources.len(),
            found.background.rounds,
            if failed.is_empty() { String::new() } else { format!("; differ from the CPU: {}", failed.join(", ")) }
        );
        let measured = Measured {
            family: "sources",
            variant: "pipeline".into(),
            shape: format!("{side}x{side} synthetic sky"),
            timing: Timing::from_samples(samples, Cache::Warm),
            work: Work::Bytes(4 * (side * side) as u64),
            cpu_ms: Some(cpu_ms),
            check,
            note: Some(note),
        };
        let report = Report::new(gpu.info(), measured);
        let key = format!("sources_cupy_32_{side}");
        let peer = match (peers, report.throughput) {
            (Some(peers), Some(ours)) => peer_rate(peers, &key, side as u64, report.unit())
                .map(|(library, rate)| PeerRatio { peer: key, library, rate, ratio: ours / rate }),
            _ => None,
        };
        rows.push(Row { size: side as u64, report, peer });
    }
    Ok(rows)
}

/// Seconds since 1970 as `2026-11-23T05:11:02Z`, the form the runner and `bench/peers/run`
/// date their JSON in.
fn utc(seconds: u64) -> String {
    let (days, time) = ((seconds / 86_400) as i64, seconds % 86_400);
    // Days to a civil date (Howard Hinnant's `civil_from_days`), in 400-year eras from 0000-03-01.
    let z = days + 719_468;
    let (era, day_of_era) = (z.div_euclid(146_097), z.rem_euclid(146_097));
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    let (hour, minute, second) = (time / 3600, time % 3600 / 60, time % 60);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
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
            r.throughput_text(),
            r.share_text(),
            r.speedup.map_or("-".into(), |x| format!("{:.1}", x)),
        ];
        if with_peers {
            match &row.peer {
                Some(p) => cells.extend([format!("{:.2}", p.ratio), p.library.clone()]),
                None => cells.extend(["-".into(), "-".into()]),
            }
        }
        cells.push(r.check.label().into());
        table.add_row(cells);
    }
    let cache = rows.first().map_or("", |r| match r.report.timing.cache {
        crate::gpu::Cache::Flushed => "L2 flushed before each launch",
        crate::gpu::Cache::Warm => "L2 left warm between launches",
    });
    format!(
        "# Benchmark report\n\n{} ({} SMs, CC {}.{}). Peaks: {}.\n\
         Times are CUDA-event times of single launches after a warm-up ({}); spread is the interquartile range over the median. \
         Throughput counts the bytes that must move once (GB/s) or the flops (TFLOP/s) at the median time; \
         % of peak is of the row's roof: the memory's bandwidth, or the peak of the arithmetic it runs in.\n\n{}\n",
        device.name,
        device.multiprocessors,
        device.compute_capability.0,
        device.compute_capability.1,
        roofs(rows),
        cache,
        table
    )
}

/// The roofs of `rows`, each once, with its peak and where it comes from:
/// `memory 3352 GB/s (from the device's attributes), BF16 989.0 TFLOP/s (H100 SXM datasheet, dense)`.
fn roofs(rows: &[Row]) -> String {
    let mut seen: Vec<(&Roof, &'static str)> = Vec::new();
    for row in rows {
        if let Some(roof) = &row.report.roof {
            if seen.iter().all(|(r, _)| r.name != roof.name) {
                seen.push((roof, row.report.unit()));
            }
        }
    }
    let described = seen.iter().map(|(roof, unit)| match (roof.peak, *unit) {
        (Some(peak), "GFLOP/s") => format!("{} {} TFLOP/s ({})", roof.name, tflops(peak), roof.source),
        (Some(peak), unit) => format!("{} {peak:.0} {unit} ({})", roof.name, roof.source),
        (None, _) => format!("{} not known ({})", roof.name, roof.source),
    });
    described.collect::<Vec<_>>().join(", ")
}

/// The axis unit for values up to `largest` of `unit`: the unit itself, or its thousandfold
/// (TB/s, TFLOP/s) once values reach a thousand; as (factor, name).
fn axis_unit(unit: &str, largest: f64) -> (f64, String) {
    match unit.strip_prefix('G') {
        Some(rest) if largest >= 1e3 => (1e-3, format!("T{rest}")),
        _ => (1.0, unit.to_string()),
    }
}

/// A size as the x axis labels it: powers of two from 16384 up as `16K`, `1M`, `256M`.
fn size_label(size: u64) -> String {
    let (shift, suffix) = match size.trailing_zeros() {
        30.. => (30, "G"),
        20..=29 => (20, "M"),
        _ => (10, "K"),
    };
    if size >= 16384 && size.is_multiple_of(1 << shift) {
        format!("{}{}", size >> shift, suffix)
    } else {
        size.to_string()
    }
}

/// Our variants' colours (Tableau's, without its red and grey: the roofline is red, the peers
/// black and grey), then darker ones: the matmul ladder has more steps than Tableau has
/// colours, and no two lines of a chart may share one.
const VARIANT_COLORS: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
    RGBColor(128, 64, 0),
    RGBColor(0, 100, 0),
    RGBColor(90, 0, 90),
];

/// Points of several lines, each under its key, in the order first seen.
struct Lines<K>(Vec<(K, Vec<(f64, f64)>)>);

impl<K: PartialEq> Lines<K> {
    fn add(&mut self, key: K, point: (f64, f64)) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, points)) if points.contains(&point) => {}
            Some((_, points)) => points.push(point),
            None => self.0.push((key, vec![point])),
        }
    }

    fn points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.0.iter().flat_map(|(_, points)| points.iter().copied())
    }
}

/// The charts of `rows`: one per family and roof, `<family>.svg`, or `<family>-<roof>.svg` for
/// each roof of a family whose rows have several (matmul's types), so that each chart holds one
/// type's variants and peers under its own peak. Families that report no throughput (the
/// counters) get none. Returns the files' names.
fn charts(out: &Path, rows: &[Row], device: &str) -> Result<Vec<String>> {
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for row in rows.iter().filter(|r| r.report.throughput.is_some()) {
        let Some(roof) = &row.report.roof else { continue };
        let group = (row.report.family.as_str(), roof.name.as_str());
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    let mut files = Vec::new();
    for &(family, roof) in &groups {
        let several = groups.iter().filter(|(f, _)| *f == family).count() > 1;
        let (file, title) = match several {
            true => (format!("{family}-{}.svg", roof.to_lowercase()), format!("{family} {roof}")),
            false => (format!("{family}.svg"), family.to_string()),
        };
        let chosen: Vec<&Row> = rows
            .iter()
            .filter(|r| r.report.family == family && r.report.roof.as_ref().is_some_and(|x| x.name == roof))
            .collect();
        chart(&out.join(&file), &chosen, family, &title, device).with_context(|| format!("drawing {file}"))?;
        files.push(file);
    }
    Ok(files)
}

/// A chart of rows of one family and roof: each variant's throughput against size, each peer's
/// where `peers.json` measured it, and the roof's peak as a dashed line where it is known.
fn chart(path: &Path, rows: &[&Row], family: &str, title: &str, device: &str) -> Result<()> {
    // Ours by variant; the peers by library and kind of work, which is the key without the
    // size: the SGEMM peers of every size make one line, CUB's u32 and f32 histograms two.
    let (mut ours, mut theirs) = (Lines(Vec::new()), Lines(Vec::new()));
    let (mut unit, mut roof) = ("", None);
    for row in rows {
        let Some(throughput) = row.report.throughput else { continue };
        (unit, roof) = (row.report.unit(), row.report.roof.as_ref());
        // x is log2(size) on a linear axis, labelled with the sizes themselves.
        let x = (row.size as f64).log2();
        ours.add(row.report.variant.clone(), (x, throughput));
        if let Some(peer) = &row.peer {
            theirs.add((peer.library.clone(), peer.peer.replace(&row.size.to_string(), "")), (x, peer.rate));
        }
    }
    let peak = roof.and_then(|r| r.peak);
    let top = ours.points().chain(theirs.points()).map(|(_, y)| y).fold(peak.unwrap_or(0.0), f64::max);
    let (factor, axis) = axis_unit(unit, top);
    let (x_min, x_max) = ours
        .points()
        .chain(theirs.points())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (x, _)| (lo.min(x), hi.max(x)));
    let (x_min, x_max) = (x_min.floor() - 0.5, x_max.ceil() + 0.5);
    // Room above the roofline for its label and the legend.
    let y_max = (top * factor * 1.25).max(1.0);

    let root = SVGBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{title}: throughput vs size ({device})"), ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x_min..x_max, 0.0..y_max)?;
    let decimals = usize::from(y_max < 10.0);
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 16))
        .x_desc("size (elements, or the side of a square)")
        .y_desc(format!("throughput, {axis}"))
        // As many labels as powers of two in the range: one at each, none between.
        .x_labels((x_max - x_min).ceil() as usize)
        .x_label_formatter(&|x| match (x - x.round()).abs() < 1e-6 {
            true => size_label(1u64 << x.round() as u32),
            false => String::new(),
        })
        .y_label_formatter(&|y| format!("{:.*}", decimals, y))
        .draw()?;
    // Each line left to right, in whatever order the sweep measured its sizes.
    let scaled = |points: &[(f64, f64)]| {
        let mut scaled: Vec<_> = points.iter().map(|&(x, y)| (x, y * factor)).collect();
        scaled.sort_by(|a, b| a.0.total_cmp(&b.0));
        scaled
    };
    for (i, (variant, points)) in ours.0.iter().enumerate() {
        let color = VARIANT_COLORS[i % VARIANT_COLORS.len()];
        chart
            .draw_series(LineSeries::new(scaled(points), color.stroke_width(2)))?
            .label(format!("{family} {variant}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(scaled(points).into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
    }
    // Peers in black and grey, crosses and triangles.
    for (i, ((library, work), points)) in theirs.0.iter().enumerate() {
        let shared = theirs.0.iter().filter(|((other, _), _)| other == library).count() > 1;
        let label = if shared { format!("peer: {library} ({work})") } else { format!("peer: {library}") };
        let (grey, cross) = (if i % 4 < 2 { 0 } else { 120 }, i % 2 == 0);
        let style = RGBColor(grey, grey, grey).stroke_width(2);
        let marker = move |at: (i32, i32)| match cross {
            true => Cross::new(at, 6, style).into_dyn(),
            false => TriangleMarker::new(at, 7, style).into_dyn(),
        };
        chart
            .draw_series(LineSeries::new(scaled(points), style))?
            .label(label)
            .legend(move |(x, y)| EmptyElement::at((x + 10, y)) + marker((0, 0)));
        chart.draw_series(scaled(points).into_iter().map(|p| EmptyElement::at(p) + marker((0, 0))))?;
    }
    if let (Some(peak), Some(roof)) = (peak, roof) {
        let (line, red) = (peak * factor, RGBColor(200, 30, 30));
        chart.draw_series(DashedLineSeries::new([(x_min, line), (x_max, line)], 10, 6, red.stroke_width(2)))?;
        let font = ("sans-serif", 16).into_font().color(&red).pos(Pos::new(HPos::Right, VPos::Bottom));
        let label = format!("{} peak {:.*} {axis} ({})", roof.name, decimals + 1, line, roof.source);
        chart.draw_series(std::iter::once(Text::new(label, (x_max, line), font)))?;
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 15))
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check;
    use crate::gpu::{Cache, Timing};
    use crate::report::{test_device, Work};

    /// Every variant of a sweep gets a colour of its own: the families' variants at every
    /// sweep size, and matmul's `tuned` on top of its steps.
    #[test]
    fn every_line_of_a_chart_has_its_own_colour() {
        for family in crate::ops::FAMILIES {
            for options in family.sizes(Purpose::Full).into_iter().chain(family.sizes(Purpose::Quick)) {
                let matches = family.parse(&options).expect("a sweep size parses");
                let variants = family.variants(&matches).expect("its variants").len() + 1;
                assert!(variants <= VARIANT_COLORS.len(), "{} {options}: {variants} lines", family.name());
            }
        }
    }

    /// A roof as the reports carry it.
    fn roof(name: &str, peak: f64, source: &str) -> Option<Roof> {
        Some(Roof { name: name.into(), peak: Some(peak), source: source.into() })
    }

    /// A row with a made-up rate under `roof` (these test the drawing, not a measurement), and
    /// its peer's.
    fn row(
        (family, variant): (&str, &str),
        size: u64,
        (work, roof): (Work, Option<Roof>),
        rate: Option<f64>,
        peer: Option<(&str, &str, f64)>,
    ) -> Row {
        let peak = roof.as_ref().and_then(|r| r.peak);
        let report = Report {
            family: family.into(),
            variant: variant.into(),
            shape: size.to_string(),
            timing: Timing::from_samples(vec![1.0], Cache::Flushed),
            work,
            throughput: rate,
            percent_of_peak: rate.zip(peak).map(|(r, p)| 100.0 * r / p),
            roof,
            cpu_ms: None,
            speedup: None,
            check: check::exact(&[1], &[1]),
            note: None,
        };
        let peer = peer.zip(rate).map(|((key, library, theirs), ours)| PeerRatio {
            peer: key.into(),
            library: library.into(),
            rate: theirs,
            ratio: ours / theirs,
        });
        Row { size, report, peer }
    }

    const DATASHEET: &str = "H100 SXM datasheet, dense";

    /// Matmul in FP32 and BF16 at three cubes, each beside cuBLAS of its type at two; two
    /// histograms beside CUB; a counter, which has no rate.
    fn synthetic_rows() -> Vec<Row> {
        let mut rows = Vec::new();
        let (sgemm, bf16) = ("cuBLAS SGEMM (TF32 off)", "cuBLAS GemmEx BF16 (f32 accumulate, f32 out)");
        for (side, scale) in [(1024u64, 0.5), (2048, 0.8), (4096, 1.0)] {
            let flops = Work::Flops(2 * side.pow(3));
            let peer = |key: &'static str, library: &'static str, rate: f64| match side {
                1024 | 4096 => Some((key, library, rate * scale)),
                _ => None,
            };
            for (variant, rate) in [("blocked", 27_000.0), ("vec4", 45_000.0), ("async", 52_000.0)] {
                let key = if side == 1024 { "sgemm_f32_1024" } else { "sgemm_f32_4096" };
                let roof = roof("FP32", 66_900.0, DATASHEET);
                rows.push(row(
                    ("matmul", variant),
                    side,
                    (flops, roof),
                    Some(rate * scale),
                    peer(key, sgemm, 51_000.0),
                ));
            }
            for (variant, rate) in [("mma-bf16", 420_000.0), ("matmul_wgmma_persistent_bf16", 760_000.0)] {
                let key = if side == 1024 { "gemm_bf16_1024" } else { "gemm_bf16_4096" };
                let roof = roof("BF16", 989_000.0, DATASHEET);
                rows.push(row(
                    ("matmul", variant),
                    side,
                    (flops, roof),
                    Some(rate * scale),
                    peer(key, bf16, 740_000.0),
                ));
            }
        }
        let cub = "CUB DeviceHistogram::HistogramEven";
        for (p, scale) in [(20, 0.4), (24, 0.8), (28, 1.0)] {
            for input in ["u32", "f32"] {
                let key = format!("histogram256_{input}");
                let peer = (p == 28).then_some((key.as_str(), cub, if input == "u32" { 1650.0 } else { 2900.0 }));
                let f32_slower = if input == "f32" { 0.9 } else { 1.0 };
                for (method, rate) in [("global", 30.0 * f32_slower), ("shared_vec4", 2950.0 * f32_slower)] {
                    let variant = format!("{method}-{input}");
                    let work = (Work::Bytes(4 << p), roof("memory", 3352.0, "from the device's attributes"));
                    rows.push(row(("histogram", &variant), 1 << p, work, Some(rate * scale), peer));
                }
            }
        }
        rows.push(row(("counter", "racy"), 1 << 20, (Work::Launches, None), None, None));
        rows
    }

    #[test]
    fn each_type_gets_its_own_chart_under_its_own_roof_beside_its_own_cublas() {
        let dir = std::env::temp_dir().join(format!("host-bench-charts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rows = synthetic_rows();
        let files = charts(&dir, &rows, "a test device").unwrap();
        assert_eq!(files, ["matmul-fp32.svg", "matmul-bf16.svg", "histogram.svg"], "none for the counter");
        // A chart's texts: each `<text ...>` element's content, its one escape undone.
        let texts = |file: &str| {
            let svg = std::fs::read_to_string(dir.join(file)).unwrap().replace("&apos;", "'");
            let texts =
                svg.split("</text>").filter_map(|part| Some(part.split_once("<text")?.1.rsplit('>').next()?.trim()));
            texts.map(String::from).collect::<Vec<_>>()
        };
        let count = |texts: &[String], text: &str| texts.iter().filter(|t| *t == text).count();

        let fp32 = texts("matmul-fp32.svg");
        assert_eq!(count(&fp32, "matmul FP32: throughput vs size (a test device)"), 1);
        assert_eq!(count(&fp32, "throughput, TFLOP/s"), 1);
        assert_eq!(count(&fp32, "peer: cuBLAS SGEMM (TF32 off)"), 1, "one cuBLAS line for every size");
        assert_eq!(count(&fp32, "FP32 peak 66.9 TFLOP/s (H100 SXM datasheet, dense)"), 1);
        for text in ["1024", "2048", "4096", "matmul async", "60"] {
            assert_eq!(count(&fp32, text), 1, "{text} in {fp32:?}");
        }
        assert!(fp32.iter().all(|t| !t.contains("000")), "no GFLOP/s ticks: {fp32:?}");
        assert!(fp32.iter().all(|t| !t.contains("bf16") && !t.contains("BF16")), "no BF16 line: {fp32:?}");

        let bf16 = texts("matmul-bf16.svg");
        assert_eq!(count(&bf16, "BF16 peak 989.0 TFLOP/s (H100 SXM datasheet, dense)"), 1);
        assert_eq!(count(&bf16, "peer: cuBLAS GemmEx BF16 (f32 accumulate, f32 out)"), 1);
        for text in ["matmul mma-bf16", "matmul matmul_wgmma_persistent_bf16"] {
            assert_eq!(count(&bf16, text), 1, "{text} in {bf16:?}");
        }
        assert!(bf16.iter().all(|t| !t.contains("SGEMM") && !t.contains("async")), "no FP32 line: {bf16:?}");

        let histogram = texts("histogram.svg");
        assert_eq!(count(&histogram, "histogram: throughput vs size (a test device)"), 1);
        assert_eq!(count(&histogram, "throughput, TB/s"), 1);
        assert_eq!(count(&histogram, "memory peak 3.35 TB/s (from the device's attributes)"), 1);
        for input in ["u32", "f32"] {
            assert_eq!(
                count(&histogram, &format!("peer: CUB DeviceHistogram::HistogramEven (histogram256_{input})")),
                1
            );
        }
        for text in ["1M", "16M", "256M"] {
            assert_eq!(count(&histogram, text), 1, "{text} in {histogram:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_report_names_each_roof_and_reads_flops_in_tflops() {
        let md = markdown(&test_device("NVIDIA H100 80GB HBM3", 132), &synthetic_rows(), true);
        assert!(md.contains(
            "Peaks: FP32 66.9 TFLOP/s (H100 SXM datasheet, dense), BF16 989.0 TFLOP/s (H100 SXM datasheet, dense), \
             memory 3352 GB/s (from the device's attributes)."
        ));
        // The table's rows as trimmed cells: kernel, variant, size, 3 timings, then the rates.
        let cells: Vec<Vec<&str>> = md.lines().map(|l| l.split('|').map(str::trim).skip(1).collect()).collect();
        let find = |variant: &str, size: &str| {
            cells.iter().find(|c| c.len() > 3 && c[1] == variant && c[2] == size).map(|c| c[6..].to_vec())
        };
        // 760 TFLOP/s at 4096³ is 76.8% of BF16's peak, beside cuBLAS's 740.
        let persistent = find("matmul_wgmma_persistent_bf16", "4096").expect("the 4096³ wgmma row");
        let library = "cuBLAS GemmEx BF16 (f32 accumulate, f32 out)";
        assert_eq!(persistent, ["760.0 TFLOP/s", "76.8% of BF16", "-", "1.03", library, "PASS", ""]);
        let histogram = find("shared_vec4-u32", "268435456").expect("the 256M histogram row");
        assert_eq!(histogram[..2], ["2950.0 GB/s", "88.0%"]);
        assert!(!md.contains("GFLOP/s"), "{md}");
    }

    #[test]
    fn units_and_sizes_read_at_a_glance() {
        assert_eq!(axis_unit("GFLOP/s", 52_300.0), (1e-3, "TFLOP/s".to_string()));
        assert_eq!(axis_unit("GB/s", 3352.0), (1e-3, "TB/s".to_string()));
        assert_eq!(axis_unit("GB/s", 800.0), (1.0, "GB/s".to_string()));
        let labels: Vec<_> = [512, 8192, 16384, 65536, 1 << 20, 1 << 28, 1 << 30, 3 << 20, 1000].map(size_label).into();
        assert_eq!(labels, ["512", "8192", "16K", "64K", "1M", "256M", "1G", "3M", "1000"]);
    }

    #[test]
    fn dates_are_utc() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
