//! What the library's GPU test files share: a GPU, or the report that there is none, and the
//! check that a call was refused with a given message.
#![allow(dead_code)] // each test binary uses its own part of this

use cuda_kernels::gpu::{doctest_gpu, Gpu, GpuError};
use std::io::Write;

/// The GPU, or `None` after saying on stderr (past the harness's capture) that `test` skipped.
/// With `REQUIRE_GPU=1` a missing GPU fails the test instead.
pub fn gpu(test: &str) -> Option<Gpu> {
    let gpu = doctest_gpu().unwrap_or_else(|e| panic!("{test}: {e}"));
    if gpu.is_none() {
        let _ = writeln!(std::io::stderr(), "SKIPPED {test}: no usable GPU");
    }
    gpu
}

/// Asserts that `result` is an [`GpuError::InvalidInput`] whose message contains `expected`.
pub fn assert_refused<T: std::fmt::Debug>(result: Result<T, GpuError>, expected: &str) {
    match result {
        Err(GpuError::InvalidInput(message)) => {
            assert!(message.contains(expected), "{message:?} does not contain {expected:?}")
        }
        other => panic!("expected an invalid input error containing {expected:?}, got {other:?}"),
    }
}
