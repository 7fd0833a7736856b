//! What a kernel run reports: shape, variant, timing, throughput against its roof (the peak of
//! what bounds it), speed-up over the CPU reference and the check; printed as a table, or one
//! JSON object per result with `--json`.
//!
//! The roof of a memory-bound kernel is the device's bandwidth, and of FP32 arithmetic its FP32
//! rate, both from the device's attributes. The tensor cores' peaks are not among them: on an
//! H100 SXM (or an H200, the same chip at the same clocks) they come from the datasheet
//! ([`H100_SXM_DENSE_TFLOPS`], which also holds FP32's, equal to what the attributes give
//! there); on any other GPU a tensor type's share of peak is left out rather than measured
//! against a number that does not hold for that GPU. A workload that runs on the tensor cores
//! names its arithmetic with [`Report::rebase`].

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

/// The arithmetic a product runs in: the FP32 lanes, or the tensor cores in one input type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Arithmetic {
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
}

impl Arithmetic {
    /// `FP32`, `TF32`, `BF16`, `FP16`, `FP8`: as the datasheet names it.
    pub fn name(self) -> &'static str {
        match self {
            Arithmetic::Fp32 => "FP32",
            Arithmetic::Tf32 => "TF32",
            Arithmetic::Bf16 => "BF16",
            Arithmetic::Fp16 => "FP16",
            Arithmetic::Fp8 => "FP8",
        }
    }
}

/// The H100 SXM's dense peaks (NVIDIA's datasheet, without the 2:4 sparsity that doubles the
/// tensor cores' figures), in TFLOP/s, by the type the inputs are read in.
pub const H100_SXM_DENSE_TFLOPS: [(Arithmetic, f64); 5] = [
    (Arithmetic::Fp32, 66.9),
    (Arithmetic::Tf32, 495.0),
    (Arithmetic::Bf16, 989.0),
    (Arithmetic::Fp16, 989.0),
    (Arithmetic::Fp8, 1979.0),
];

/// Where [`H100_SXM_DENSE_TFLOPS`] comes from, as a roof says it.
const DATASHEET: &str = "H100 SXM datasheet, dense";
const ATTRIBUTES: &str = "from the device's attributes";

/// Whether [`H100_SXM_DENSE_TFLOPS`] holds for `device`: an H100 or H200 of 132 SMs that is not a
/// PCIe or NVL card, whose lower power limits and clocks give lower peaks.
fn datasheet_holds(device: &DeviceInfo) -> bool {
    let name = &device.name;
    let hopper = name.contains("H100") || name.contains("H200");
    hopper && device.multiprocessors == 132 && !name.contains("PCIe") && !name.contains("NVL")
}

/// What bounds a rate: the memory's bandwidth, or one arithmetic's flops.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Roof {
    /// `memory`, or the arithmetic's name (`FP32`, `BF16`, ...): the charts draw one per name.
    pub name: String,
    /// The peak in the report's unit (GB/s or GFLOP/s), where one is known for this device.
    pub peak: Option<f64>,
    /// Where the peak comes from.
    pub source: String,
}

impl Roof {
    /// The device's memory bandwidth.
    pub fn memory(device: &DeviceInfo) -> Self {
        Self { name: "memory".into(), peak: Some(device.peak_bandwidth_gbs), source: ATTRIBUTES.into() }
    }

    /// The peak of `arithmetic` on `device`: the datasheet's on an H100 SXM, elsewhere the
    /// attributes' for FP32 and none for the tensor cores.
    pub fn flops(device: &DeviceInfo, arithmetic: Arithmetic) -> Self {
        let name = arithmetic.name().to_string();
        if datasheet_holds(device) {
            let tflops = H100_SXM_DENSE_TFLOPS.iter().find(|(a, _)| *a == arithmetic).map(|(_, t)| *t);
            return Self { name, peak: tflops.map(|t| t * 1e3), source: DATASHEET.into() };
        }
        match arithmetic {
            Arithmetic::Fp32 => Self { name, peak: Some(device.peak_fp32_gflops), source: ATTRIBUTES.into() },
            _ => Self { name, peak: None, source: format!("no datasheet peak for {}", device.name) },
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
    /// What bounds the throughput: memory, or the arithmetic's peak (FP32 unless the workload
    /// says otherwise with [`Report::rebase`]).
    pub roof: Option<Roof>,
    /// The throughput's share of the roof's peak, in percent, where the peak is known.
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
        let (throughput, roof) = match m.work {
            Work::Bytes(b) => (Some(b as f64 / seconds / 1e9), Some(Roof::memory(device))),
            Work::Flops(f) => (Some(f as f64 / seconds / 1e9), Some(Roof::flops(device, Arithmetic::Fp32))),
            Work::Launches => (None, None),
        };
        let mut report = Self {
            family: m.family.to_string(),
            variant: m.variant,
            shape: m.shape,
            work: m.work,
            throughput,
            roof: None,
            percent_of_peak: None,
            speedup: m.cpu_ms.map(|cpu| cpu / m.timing.median_ms),
            cpu_ms: m.cpu_ms,
            timing: m.timing,
            check: m.check,
            note: m.note,
        };
        report.set_roof(roof);
        report
    }

    /// Measures the flops against `arithmetic`'s peak instead of FP32's: for the products that
    /// run on the tensor cores.
    pub fn rebase(&mut self, device: &DeviceInfo, arithmetic: Arithmetic) {
        if matches!(self.work, Work::Flops(_)) {
            self.set_roof(Some(Roof::flops(device, arithmetic)));
        }
    }

    fn set_roof(&mut self, roof: Option<Roof>) {
        let peak = roof.as_ref().and_then(|r| r.peak).filter(|&p| p > 0.0);
        self.percent_of_peak = self.throughput.zip(peak).map(|(t, p)| 100.0 * t / p);
        self.roof = roof;
    }

    pub fn unit(&self) -> &'static str {
        self.work.unit()
    }

    /// The throughput alone as a person reads it: TFLOP/s for flops, GB/s for bytes; `-` for
    /// none.
    pub fn throughput_text(&self) -> String {
        match (self.throughput, self.work) {
            (Some(t), Work::Flops(_)) => format!("{} TFLOP/s", tflops(t)),
            (Some(t), _) => format!("{:.1} {}", t, self.unit()),
            (None, _) => "-".into(),
        }
    }

    /// The share of the roof's peak: `77.7% of BF16` for flops, `88.0%` of the bandwidth; `-`
    /// where no peak is known.
    pub fn share_text(&self) -> String {
        match (self.percent_of_peak, &self.roof) {
            (Some(p), Some(roof)) if matches!(self.work, Work::Flops(_)) => format!("{p:.1}% of {}", roof.name),
            (Some(p), _) => format!("{p:.1}%"),
            (None, _) => "-".into(),
        }
    }

    /// The throughput with its share of peak: `768.5 TFLOP/s (77.7% of BF16)`.
    pub fn rate(&self) -> String {
        match self.percent_of_peak {
            Some(_) => format!("{} ({})", self.throughput_text(), self.share_text()),
            None => self.throughput_text(),
        }
    }
}

/// GFLOP/s as TFLOP/s with three significant digits or more (one decimal from 10 TFLOP/s on,
/// at most six decimals): `768.5`, `52.3`, `1.23`, `0.0183`.
pub fn tflops(gflops: f64) -> String {
    let t = gflops / 1e3;
    let decimals = if t >= 10.0 || t <= 0.0 { 1 } else { (2 - t.log10().floor() as i32).clamp(1, 6) as usize };
    format!("{t:.decimals$}")
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
/// A device as the driver would describe it, for the roofs: its name and SMs, an FP32 rate
/// of 66.9 TFLOP/s from its attributes and 3352 GB/s of bandwidth.
pub(crate) fn test_device(name: &str, multiprocessors: i32) -> DeviceInfo {
    DeviceInfo {
        name: name.into(),
        compute_capability: (9, 0),
        multiprocessors,
        clock_mhz: 1980.0,
        memory_clock_mhz: 2619.0,
        memory_bus_bits: 5120,
        l2_bytes: 50 << 20,
        total_memory: 80 << 30,
        free_memory: 79 << 30,
        max_threads_per_block: 1024,
        max_threads_per_multiprocessor: 2048,
        max_shared_per_block: 48 << 10,
        max_shared_per_block_optin: 227 << 10,
        max_block_dims: (1024, 1024, 64),
        max_grid_dims: (i32::MAX, 65535, 65535),
        peak_bandwidth_gbs: 3352.0,
        peak_fp32_gflops: 66_900.0,
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

    /// A product of `flops` in `ms`, as the registry reports it, then rebased to `arithmetic`.
    fn product(device: &DeviceInfo, flops: u64, ms: f64, arithmetic: Arithmetic) -> Report {
        let measured = Measured {
            family: "matmul",
            variant: "v".into(),
            shape: "s".into(),
            timing: Timing::from_samples(vec![ms], Cache::Flushed),
            work: Work::Flops(flops),
            cpu_ms: None,
            check: check::exact(&[1], &[1]),
            note: None,
        };
        let mut report = Report::new(device, measured);
        report.rebase(device, arithmetic);
        report
    }

    #[test]
    fn a_product_reads_in_tflops_against_its_own_types_peak() {
        let h100 = test_device("NVIDIA H100 80GB HBM3", 132);
        // 8192³ in 1.4307 ms: 768.5 TFLOP/s, once printed as 768510.9 GFLOP/s (1148.6%) of FP32.
        let bf16 = product(&h100, 2 * 8192u64.pow(3), 1.4307, Arithmetic::Bf16);
        assert_eq!(bf16.rate(), "768.5 TFLOP/s (77.7% of BF16)");
        let fp32 = product(&h100, 2 * 4096u64.pow(3), 2.75, Arithmetic::Fp32);
        assert_eq!(fp32.rate(), "50.0 TFLOP/s (74.7% of FP32)");
        let tf32 = product(&h100, 2 * 4096u64.pow(3), 0.5, Arithmetic::Tf32);
        assert_eq!(tf32.rate(), "274.9 TFLOP/s (55.5% of TF32)");
        let roof = tf32.roof.as_ref().expect("a product has a roof");
        assert_eq!((roof.peak, roof.source.as_str()), (Some(495_000.0), "H100 SXM datasheet, dense"));
        // Small products keep three significant digits.
        assert_eq!(product(&h100, 2 * 256u64.pow(3), 0.0161, Arithmetic::Fp16).rate(), "2.08 TFLOP/s (0.2% of FP16)");
        assert_eq!((tflops(18.3), tflops(523.0), tflops(0.0)), ("0.0183".into(), "0.523".into(), "0.0".into()));

        // Elsewhere FP32 is measured against the attributes and a tensor type against nothing.
        let pcie = test_device("NVIDIA H100 PCIe", 114);
        assert_eq!(product(&pcie, 2 * 8192u64.pow(3), 1.4307, Arithmetic::Bf16).rate(), "768.5 TFLOP/s");
        let fp32 = product(&pcie, 2 * 4096u64.pow(3), 2.75, Arithmetic::Fp32);
        assert_eq!(fp32.roof.as_ref().map(|r| r.source.as_str()), Some("from the device's attributes"));
        assert_eq!(fp32.rate(), "50.0 TFLOP/s (74.7% of FP32)");
    }

    #[test]
    fn the_datasheet_names_every_type_and_holds_for_the_h100_sxm_and_h200_alone() {
        let names: Vec<&str> = H100_SXM_DENSE_TFLOPS.iter().map(|(a, _)| a.name()).collect();
        assert_eq!(names, ["FP32", "TF32", "BF16", "FP16", "FP8"]);
        let peak = |a: Arithmetic| H100_SXM_DENSE_TFLOPS.iter().find(|(x, _)| *x == a).map(|(_, t)| *t);
        assert_eq!(peak(Arithmetic::Bf16), peak(Arithmetic::Fp16));
        assert_eq!(peak(Arithmetic::Fp8), Some(1979.0));
        assert!(datasheet_holds(&test_device("NVIDIA H200", 132)));
        assert!(
            !datasheet_holds(&test_device("NVIDIA H100 NVL", 132))
                && !datasheet_holds(&test_device("NVIDIA A100-SXM4-80GB", 108))
        );
    }
}
