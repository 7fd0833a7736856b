//! What the GPU test files share: a GPU, or the report that there is none.

use host::gpu::{Gpu, GpuError};
use std::io::Write;

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
