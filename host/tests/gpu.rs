//! Every kernel and variant against its CPU reference, on shapes that include 1, primes,
//! non-multiples of the tiles and one large shape; and bad input rejected with a clear error.
//!
//! Without a GPU each test reports that it skipped and why (on stderr, past the test
//! harness's capture). With `REQUIRE_GPU=1` a missing GPU fails instead, which is how the
//! GPU machine runs them.

mod common;

use common::gpu;
use host::gpu::{Gpu, GpuError, LaunchConfig};
use host::ops::{conv, counter, histogram, matmul, saxpy, vector_add};
use host::report::Report;
use std::io::Write;

fn assert_passed(reports: &[Report]) {
    assert!(!reports.is_empty());
    for report in reports {
        assert!(report.check.passed, "{}", report.line());
    }
}

const SEED: u64 = 7;

#[test]
fn vector_add_any_length_and_block() {
    let gpu = match gpu("vector_add_any_length_and_block") {
        Some(gpu) => gpu,
        None => return,
    };
    for (n, block) in [(1, 256), (1000, 256), ((1 << 20) + 3, 1024), (10_000_019, 97), (5, 1)] {
        assert_passed(&[vector_add::run(&gpu, n, block, 1, SEED).unwrap()]);
    }
}

#[test]
fn saxpy_is_correct_for_grids_smaller_than_the_data() {
    let gpu = match gpu("saxpy_is_correct_for_grids_smaller_than_the_data") {
        Some(gpu) => gpu,
        None => return,
    };
    for (n, block, grid) in [(1, 256, 0), (999_983, 128, 1), ((1 << 24) + 1, 256, 7), (4099, 32, 0)] {
        assert_passed(&[saxpy::run(&gpu, n, block, grid, 1, SEED).unwrap()]);
    }
}

#[test]
fn atomic_counter_is_exact_and_racy_counter_loses_increments() {
    let gpu = match gpu("atomic_counter_is_exact_and_racy_counter_loses_increments") {
        Some(gpu) => gpu,
        None => return,
    };
    for threads in [1, 1000, 1 << 20] {
        let reports = counter::run(&gpu, threads, 256, 1).unwrap();
        assert_passed(&reports);
    }
    let reports = counter::run(&gpu, 1 << 20, 256, 1).unwrap();
    let racy = reports.iter().find(|r| r.variant == "racy").unwrap();
    assert!(racy.note.as_deref().unwrap_or("").contains("increments lost"));
    assert!(!racy.note.as_deref().unwrap().starts_with("count 1048576 "), "a million racy increments all survived: {}", racy.line());
}

#[test]
fn histograms_match_for_u32_and_f32_inputs() {
    let gpu = match gpu("histograms_match_for_u32_and_f32_inputs") {
        Some(gpu) => gpu,
        None => return,
    };
    for input in [histogram::Input::U32, histogram::Input::F32] {
        for (n, block, grid) in [(1, 256, 0), (1021, 96, 3), ((1 << 22) + 7, 256, 0)] {
            let reports = histogram::run(&gpu, input, n, &histogram::Variant::ALL, block, grid, 1, SEED).unwrap();
            assert_passed(&reports);
        }
    }
}

#[test]
fn matmul_every_variant_on_awkward_shapes() {
    let gpu = match gpu("matmul_every_variant_on_awkward_shapes") {
        Some(gpu) => gpu,
        None => return,
    };
    for shape in [(1, 1, 1), (17, 31, 13), (127, 129, 65), (131, 257, 67), (1, 300, 1), (300, 1, 700), (1024, 768, 512)] {
        assert_passed(&matmul::run(&gpu, shape, &matmul::Variant::ALL, 1, SEED).unwrap());
    }
}

#[test]
fn matmul_large() {
    let gpu = match gpu("matmul_large") {
        Some(gpu) => gpu,
        None => return,
    };
    assert_passed(&matmul::run(&gpu, (2048, 2048, 2048), &matmul::Variant::ALL, 1, SEED).unwrap());
}

#[test]
fn conv2d_every_filter_and_variant() {
    let gpu = match gpu("conv2d_every_filter_and_variant") {
        Some(gpu) => gpu,
        None => return,
    };
    for (size, filter) in [((1, 1), 3), ((37, 29), 5), ((100, 1), 7), ((1031, 517), 3), ((1031, 517), 5), ((1031, 517), 7), ((4096, 4096), 5)] {
        assert_passed(&conv::run_2d(&gpu, size, filter, &conv::Variant::ALL, 1, SEED).unwrap());
    }
}

#[test]
fn conv1d_every_filter() {
    let gpu = match gpu("conv1d_every_filter") {
        Some(gpu) => gpu,
        None => return,
    };
    for n in [1, 255, 257, 1_000_003] {
        for filter in [3, 5, 7] {
            assert_passed(&[conv::run_1d(&gpu, n, filter, 1, SEED).unwrap()]);
        }
    }
}

fn expect_error<T: std::fmt::Debug>(result: Result<T, GpuError>, needle: &str) {
    match result {
        Ok(value) => panic!("expected an error mentioning {:?}, got {:?}", needle, value),
        Err(err) => assert!(err.to_string().contains(needle), "{:?} not in {:?}", needle, err.to_string()),
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let gpu = match gpu("bad_input_is_a_clear_error") {
        Some(gpu) => gpu,
        None => return,
    };
    expect_error(vector_add::run(&gpu, 0, 256, 1, SEED), "n >= 1");
    expect_error(vector_add::run(&gpu, 1000, 1025, 1, SEED), "limit of 1024");
    expect_error(vector_add::run(&gpu, 1000, 0, 1, SEED), "block size");
    expect_error(matmul::run(&gpu, (0, 5, 5), &matmul::Variant::ALL, 1, SEED), "m, n, k >= 1");
    expect_error(conv::run_2d(&gpu, (64, 64), 4, &conv::Variant::ALL, 1, SEED), "3, 5 or 7");
    expect_error(conv::run_2d(&gpu, (64, 64), 9, &conv::Variant::ALL, 1, SEED), "3, 5 or 7");
    expect_error(conv::run_1d(&gpu, 0, 3, 1, SEED), "n >= 1");
    let too_big = gpu.info.total_memory;
    expect_error(vector_add::run(&gpu, too_big as usize, 256, 1, SEED), "not enough GPU memory");
    let config = LaunchConfig { grid: (1, 1, 1), block: (32, 32, 2), shared_bytes: 0 };
    expect_error(gpu.validate("vector_add", &config), "2048 threads per block");
    let config = LaunchConfig { grid: (1, 1, 1), block: (256, 1, 1), shared_bytes: 1 << 20 };
    expect_error(gpu.validate("matmul_tiled_16", &config), "shared memory");
    expect_error(gpu.validate("no_such_kernel", &LaunchConfig::linear(1, 1).unwrap()), "no_such_kernel");
}

#[test]
fn corrupt_ptx_fails_to_load_with_a_clear_error() {
    let _gpu = match gpu("corrupt_ptx_fails_to_load_with_a_clear_error") {
        Some(gpu) => gpu,
        None => return,
    };
    let corrupt = host::gpu::KERNELS_PTX.replacen(".entry vector_add(", ".entry vector_add(((", 1);
    expect_error(Gpu::with_ptx(&corrupt).map(|_| ()), "PTX failed to load");
}

/// 1000 launches of every kernel (1000 timed launches per run, buffers allocated and freed
/// around them) must leave the driver's free-memory count where it was.
#[test]
fn repeated_launches_leave_gpu_memory_unchanged() {
    let gpu = match gpu("repeated_launches_leave_gpu_memory_unchanged") {
        Some(gpu) => gpu,
        None => return,
    };
    let every_kernel = |iters: usize| {
        vector_add::run(&gpu, 4099, 256, iters, SEED).unwrap();
        saxpy::run(&gpu, 4099, 256, 0, iters, SEED).unwrap();
        counter::run(&gpu, 4099, 256, iters).unwrap();
        for input in [histogram::Input::U32, histogram::Input::F32] {
            histogram::run(&gpu, input, 4099, &histogram::Variant::ALL, 256, 0, iters, SEED).unwrap();
        }
        matmul::run(&gpu, (67, 65, 33), &matmul::Variant::ALL, iters, SEED).unwrap();
        conv::run_2d(&gpu, (67, 45), 5, &conv::Variant::ALL, iters, SEED).unwrap();
        conv::run_1d(&gpu, 4099, 7, iters, SEED).unwrap();
    };
    every_kernel(1); // module, JIT and driver-internal allocations happen here
    let (free_before, _) = cust::memory::mem_get_info().unwrap();
    every_kernel(1000);
    let (free_after, _) = cust::memory::mem_get_info().unwrap();
    let _ = writeln!(std::io::stderr(), "free GPU memory before {} after {} bytes", free_before, free_after);
    assert_eq!(free_before, free_after, "GPU memory changed across 1000 launches of each kernel");
}
