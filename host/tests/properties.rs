//! Property tests: every kernel against its CPU reference over random shapes (1 to a few
//! thousand, primes, non-multiples of tiles), random launch shapes, and for the f32
//! histogram random data salted with NaN, infinities and the range's edges. Without a GPU
//! they report the skip, like tests/gpu.rs.

mod common;

use common::gpu;
use host::ops::{conv, counter, histogram, matmul, saxpy, vector_add};
use host::report::Report;
use proptest::prelude::*;

fn all_passed(reports: &[Report]) -> Result<(), TestCaseError> {
    for report in reports {
        prop_assert!(report.check.passed, "{}", report.line());
    }
    Ok(())
}

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig { cases: n, ..ProptestConfig::default() }
}

#[test]
fn vector_add_and_saxpy_match_for_random_sizes() {
    let gpu = match gpu("vector_add_and_saxpy_match_for_random_sizes") {
        Some(gpu) => gpu,
        None => return,
    };
    proptest!(cases(48), |(n in 1usize..5000, block in 1u32..=1024, grid in 0u32..20, seed: u64)| {
        all_passed(&[vector_add::run(&gpu, n, block, 1, seed).unwrap()])?;
        all_passed(&[saxpy::run(&gpu, n, block, grid, 1, seed).unwrap()])?;
    });
}

#[test]
fn counters_and_histograms_match_for_random_sizes() {
    let gpu = match gpu("counters_and_histograms_match_for_random_sizes") {
        Some(gpu) => gpu,
        None => return,
    };
    proptest!(cases(48), |(n in 1usize..5000, block in 32u32..=1024, grid in 0u32..20, seed: u64)| {
        all_passed(&counter::run(&gpu, n, block, 1).unwrap())?;
        for input in [histogram::Input::U32, histogram::Input::F32] {
            all_passed(&histogram::run(&gpu, input, n, &histogram::Variant::ALL, block, grid, 1, seed).unwrap())?;
        }
    });
}

fn special_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        4 => -5.0f32..5.0,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(histogram::F32_RANGE.0),
        1 => Just(histogram::F32_RANGE.1),
        1 => Just(f32::from_bits(histogram::F32_RANGE.1.to_bits() - 1)),
        1 => Just(-0.0f32),
    ]
}

#[test]
fn f32_histogram_ignores_nan_infinities_and_out_of_range() {
    let gpu = match gpu("f32_histogram_ignores_nan_infinities_and_out_of_range") {
        Some(gpu) => gpu,
        None => return,
    };
    proptest!(cases(48), |(values in proptest::collection::vec(special_f32(), 1..3000), grid in 0u32..10)| {
        all_passed(&histogram::run_f32_values(&gpu, &values, &histogram::Variant::ALL, 128, grid).unwrap())?;
    });
}

#[test]
fn matmul_matches_for_random_shapes() {
    let gpu = match gpu("matmul_matches_for_random_shapes") {
        Some(gpu) => gpu,
        None => return,
    };
    proptest!(cases(32), |(m in 1usize..400, n in 1usize..400, k in 1usize..700, seed: u64)| {
        all_passed(&matmul::run(&gpu, (m, n, k), &matmul::Variant::ALL, 1, seed).unwrap())?;
    });
}

#[test]
fn convolutions_match_for_random_shapes() {
    let gpu = match gpu("convolutions_match_for_random_shapes") {
        Some(gpu) => gpu,
        None => return,
    };
    proptest!(cases(32), |(w in 1usize..300, h in 1usize..300, n in 1usize..5000, filter in prop_oneof![Just(3usize), Just(5), Just(7)], seed: u64)| {
        all_passed(&conv::run_2d(&gpu, (w, h), filter, &conv::Variant::ALL, 1, seed).unwrap())?;
        all_passed(&[conv::run_1d(&gpu, n, filter, 1, seed).unwrap()])?;
    });
}
