//! One line per kernel run: shape, variant, median time, throughput, speed-up over the CPU
//! reference and the check; or the same as one JSON object per line with `--json`.

use crate::check::Check;
use crate::gpu::DeviceInfo;
use serde::Serialize;

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

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub kernel: String,
    pub variant: String,
    pub shape: String,
    pub gpu_ms: f64,
    pub work: Work,
    /// GB/s for `Work::Bytes`, GFLOP/s for `Work::Flops`.
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
    pub fn new(
        device: &DeviceInfo,
        kernel: &str,
        variant: &str,
        shape: String,
        gpu_ms: f64,
        work: Work,
        cpu_ms: Option<f64>,
        check: Check,
    ) -> Self {
        let seconds = gpu_ms / 1e3;
        let (throughput, peak) = match work {
            Work::Bytes(b) => (Some(b as f64 / seconds / 1e9), device.peak_bandwidth_gbs),
            Work::Flops(f) => (Some(f as f64 / seconds / 1e9), device.peak_fp32_gflops),
            Work::Launches => (None, 0.0),
        };
        Self {
            kernel: kernel.to_string(),
            variant: variant.to_string(),
            shape,
            gpu_ms,
            work,
            throughput,
            percent_of_peak: throughput.filter(|_| peak > 0.0).map(|t| 100.0 * t / peak),
            cpu_ms,
            speedup: cpu_ms.map(|cpu| cpu / gpu_ms),
            check,
            note: None,
        }
    }

    pub fn with_note(mut self, note: String) -> Self {
        self.note = Some(note);
        self
    }

    pub fn unit(&self) -> &'static str {
        match self.work {
            Work::Bytes(_) => "GB/s",
            Work::Flops(_) => "GFLOP/s",
            Work::Launches => "",
        }
    }

    pub fn line(&self) -> String {
        let rate = match (self.throughput, self.percent_of_peak) {
            (Some(t), Some(p)) => format!("{:>9.1} {:<7} ({:>4.1}% of peak)", t, self.unit(), p),
            (Some(t), None) => format!("{:>9.1} {:<7}", t, self.unit()),
            _ => " ".repeat(34),
        };
        let verdict = if self.check.passed { "PASS" } else { "FAIL" };
        let cpu = match (self.cpu_ms, self.speedup) {
            (Some(ms), Some(x)) => format!("cpu {:>9.1} ms  x{:<8.1}", ms, x),
            _ => format!("{:<27}", "cpu -"),
        };
        let mut line = format!(
            "{:<11} {:<10} {:<26} {:>10.4} ms {}  {} {} (worst error {:.3e}, tolerance {:.1e})",
            self.kernel,
            self.variant,
            self.shape,
            self.gpu_ms,
            rate,
            cpu,
            verdict,
            self.check.worst_error,
            self.check.tolerance
        );
        if let Some(first) = self.check.first_mismatch {
            line += &format!(" [{} mismatches, first at {}]", self.check.mismatches, first);
        }
        if let Some(note) = &self.note {
            line += &format!("  {}", note);
        }
        line
    }

    pub fn print(&self, json: bool) {
        if json {
            println!("{}", serde_json::to_string(self).expect("a report serializes"));
        } else {
            println!("{}", self.line());
        }
    }
}
