//! What a kernel run reports: shape, variant, timing, throughput against the device's peak,
//! speed-up over the CPU reference and the check; printed as a table, or one JSON object per
//! result with `--json`.

use crate::check::Check;
use crate::gpu::{Cache, DeviceInfo, Timing};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use cuda_kernels::check::grouped;
use serde::Serialize;
use std::fmt;

/// What a kernel's speed is measured in: bytes moved (memory-bound) or flops (compute-bound).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub enum Work {
    /// Bytes the kernel must read and write at least once.
    Bytes(u64),
    /// Floating-point operations (a multiply-add counts 2).
    Flops(u64),
    /// Neither rate means much (e.g. one contended counter); report time only.
    Launches,
}

impl Work {
    pub fn unit(self) -> &'static str {
        match self {
            Work::Bytes(_) => "GB/s",
            Work::Flops(_) => "GFLOP/s",
            Work::Launches => "",
        }
    }
}

/// What was measured; [`Report::new`] derives the rates from it.
pub struct Measured {
    pub family: &'static str,
    pub variant: String,
    pub shape: String,
    pub timing: Timing,
    pub work: Work,
    pub cpu_ms: Option<f64>,
    pub check: Check,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub family: String,
    pub variant: String,
    pub shape: String,
    pub timing: Timing,
    pub work: Work,
    /// GB/s for `Work::Bytes`, GFLOP/s for `Work::Flops`, at the median time.
    pub throughput: Option<f64>,
    /// Share of the device's peak memory bandwidth or FP32 rate, in percent.
    pub percent_of_peak: Option<f64>,
    /// Wall time of the CPU reference, where there is one.
    pub cpu_ms: Option<f64>,
    pub speedup: Option<f64>,
    pub check: Check,
    pub note: Option<String>,
}

impl Report {
    pub fn new(device: &DeviceInfo, m: Measured) -> Self {
        let seconds = m.timing.median_ms / 1e3;
        let (throughput, peak) = match m.work {
            Work::Bytes(b) => (Some(b as f64 / seconds / 1e9), device.peak_bandwidth_gbs),
            Work::Flops(f) => (Some(f as f64 / seconds / 1e9), device.peak_fp32_gflops),
            Work::Launches => (None, 0.0),
        };
        Self {
            family: m.family.to_string(),
            variant: m.variant,
            shape: m.shape,
            work: m.work,
            throughput,
            percent_of_peak: throughput.filter(|_| peak > 0.0).map(|t| 100.0 * t / peak),
            speedup: m.cpu_ms.map(|cpu| cpu / m.timing.median_ms),
            cpu_ms: m.cpu_ms,
            timing: m.timing,
            check: m.check,
            note: m.note,
        }
    }

    pub fn unit(&self) -> &'static str {
        self.work.unit()
    }

    fn rate(&self) -> String {
        match (self.throughput, self.percent_of_peak) {
            (Some(t), Some(p)) => format!("{:.1} {} ({:.1}%)", t, self.unit(), p),
            (Some(t), None) => format!("{:.1} {}", t, self.unit()),
            _ => "-".into(),
        }
    }
}

/// The check as a table's last column says it.
fn verdict(check: &Check) -> String {
    if let Some(race) = check.race {
        return match check.passed {
            true => format!("lost {} of {} increments (racy by design)", grouped(race.lost), grouped(race.of)),
            false => format!(
                "FAIL: a count of {} is impossible for {} racing increments",
                grouped(race.counted),
                grouped(race.of)
            ),
        };
    }
    let mut verdict =
        format!("{} (worst error {:.3e}, tolerance {:.1e})", check.label(), check.worst_error, check.tolerance);
    if let Some(first) = check.first_mismatch {
        verdict += &format!(" [{} mismatches, first at {}]", check.mismatches, first);
    }
    verdict
}

/// One line: what a test prints when a result does not match.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}: {:.4} ms, {}, {}",
            self.family,
            self.variant,
            self.shape,
            self.timing.median_ms,
            self.rate(),
            verdict(&self.check)
        )?;
        match &self.note {
            Some(note) => write!(f, "; {}", note),
            None => Ok(()),
        }
    }
}

fn cache_label(cache: Cache) -> &'static str {
    match cache {
        Cache::Flushed => "L2 flushed",
        Cache::Warm => "L2 warm",
    }
}

/// The reports as a terminal table.
pub fn table(reports: &[Report]) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "kernel",
        "variant",
        "shape",
        "median ms",
        "min ms",
        "spread",
        "throughput (% of peak)",
        "cpu ms",
        "x cpu",
        "check",
    ]);
    for r in reports {
        let mut check = verdict(&r.check);
        if let Some(note) = &r.note {
            check += &format!("\n{}", note);
        }
        table.add_row([
            Cell::new(&r.family),
            Cell::new(&r.variant),
            Cell::new(&r.shape),
            Cell::new(format!("{:.4}", r.timing.median_ms)).set_alignment(CellAlignment::Right),
            Cell::new(format!("{:.4}", r.timing.min_ms)).set_alignment(CellAlignment::Right),
            Cell::new(format!("{:.1}%", r.timing.spread_percent)).set_alignment(CellAlignment::Right),
            Cell::new(r.rate()).set_alignment(CellAlignment::Right),
            Cell::new(r.cpu_ms.map_or("-".into(), |ms| format!("{:.1}", ms))).set_alignment(CellAlignment::Right),
            Cell::new(r.speedup.map_or("-".into(), |x| format!("{:.1}", x))).set_alignment(CellAlignment::Right),
            Cell::new(check),
        ]);
    }
    table
}

/// Prints the reports: a table with a line saying how they were timed, or JSON lines.
pub fn print(reports: &[Report], json: bool) {
    if json {
        for report in reports {
            println!("{}", serde_json::to_string(report).expect("a report serializes"));
        }
    } else if let Some(first) = reports.first() {
        println!("{}", table(reports));
        println!(
            "times: CUDA events, {} launches per kernel after a warm-up, {}",
            first.timing.launches,
            cache_label(first.timing.cache)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check;

    #[test]
    fn a_race_reads_as_what_it_lost_and_a_comparison_as_pass_or_fail() {
        assert_eq!(verdict(&check::racy(1, 1 << 20)), "lost 1,048,575 of 1,048,576 increments (racy by design)");
        assert_eq!(verdict(&check::racy(0, 999)), "FAIL: a count of 0 is impossible for 999 racing increments");
        assert_eq!(verdict(&check::exact(&[5], &[5])), "PASS (worst error 0.000e0, tolerance 0.0e0)");
        assert_eq!(
            verdict(&check::exact(&[1, 9], &[1, 4])),
            "FAIL (worst error 5.000e0, tolerance 0.0e0) [1 mismatches, first at 1]"
        );
        assert_eq!(
            (grouped(0), grouped(999), grouped(1000), grouped(12345678)),
            ("0".into(), "999".into(), "1,000".into(), "12,345,678".into())
        );
    }
}
