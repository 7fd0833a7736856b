//! What the GPU test files share: a GPU, or the report that there is none; and running a
//! family at given options.
#![allow(dead_code)] // each test binary uses its own part of this

use host::gpu::{Cache, Gpu, GpuError};
use host::registry::{self, Timer};
use host::report::Report;
use std::io::Write;

pub const SEED: u64 = 7;

/// The GPU, or `None` after saying on stderr (past the test harness's capture) that `test`
/// skipped and why. With `REQUIRE_GPU=1` a missing GPU fails the test instead.
pub fn gpu(test: &str) -> Option<Gpu> {
    match Gpu::new() {
        Ok(gpu) => Some(gpu),
        Err(GpuError::NoGpu(why)) if std::env::var_os("REQUIRE_GPU").is_none() => {
            let _ = writeln!(std::io::stderr(), "SKIPPED {}: {}", test, why);
            None
        }
        Err(err) => panic!("{}: {}", test, err),
    }
}

/// Checks and times `family` at `options` with `launches` timed launches.
pub fn run(gpu: &Gpu, family: &str, options: &str, launches: usize) -> Vec<Report> {
    let family = host::ops::family(family).unwrap_or_else(|| panic!("no family {}", family));
    registry::run_options(gpu, family, options, SEED, Timer { launches, cache: Cache::Flushed })
        .unwrap_or_else(|e| panic!("{} {}: {:#}", family.name(), options, e))
}

pub fn assert_passed(reports: &[Report]) {
    assert!(!reports.is_empty());
    for report in reports {
        assert!(report.check.passed, "{}", report);
    }
}
