//! Property tests: kernels against their CPU references over random shapes (1 to a few
//! thousand, primes, non-multiples of tiles), random launch shapes, and for the f32 histogram
//! random data salted with NaN, infinities and the range's edges. Without a GPU they report
//! the skip, like tests/gpu.rs.

mod common;

use common::{gpu, run};
use host::gpu::{Cache, Gpu};
use host::ops::histogram::{Binning, Histogram, Input, Method};
use host::registry::{self, Timer};
use host::report::Report;
use proptest::prelude::*;

fn all_passed(reports: &[Report]) -> Result<(), TestCaseError> {
    for report in reports {
        prop_assert!(report.check.passed, "{}", report);
    }
    Ok(())
}

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig { cases: n, ..ProptestConfig::default() }
}

fn check(gpu: &Gpu, family: &str, options: String) -> Result<(), TestCaseError> {
    all_passed(&run(gpu, family, &options, 1))
}

#[test]
fn one_dimensional_kernels_match_for_random_sizes_and_launch_shapes() {
    let Some(gpu) = gpu("one_dimensional_kernels_match_for_random_sizes_and_launch_shapes") else { return };
    proptest!(cases(48), |(n in 1usize..5000, block in 32u32..=1024, grid in 0u32..20, filter in prop_oneof![Just(3usize), Just(5), Just(7)])| {
        check(&gpu, "vector-add", format!("--n {n} --block {block}"))?;
        check(&gpu, "saxpy", format!("--n {n} --block {block} --grid {grid}"))?;
        check(&gpu, "counter", format!("--threads {n} --block {block}"))?;
        for input in ["u32", "f32"] {
            check(&gpu, "histogram", format!("--n {n} --input {input} --block {block} --grid {grid} --bins {}", 1 + n % 700))?;
        }
        check(&gpu, "conv1d", format!("--n {n} --filter {filter}"))?;
    });
}

const F32_RANGE: (f64, f64) = (-4.0, 4.0);

fn special_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        4 => -5.0f32..5.0,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(F32_RANGE.0 as f32),
        1 => Just(F32_RANGE.1 as f32),
        1 => Just(f32::from_bits((F32_RANGE.1 as f32).to_bits() - 1)),
        1 => Just(-0.0f32),
    ]
}

#[test]
fn f32_histogram_ignores_nan_infinities_and_out_of_range() {
    let Some(gpu) = gpu("f32_histogram_ignores_nan_infinities_and_out_of_range") else { return };
    proptest!(cases(48), |(values in proptest::collection::vec(special_f32(), 1..3000), grid in 0u32..10, bins in 1u32..400)| {
        let bits = values.iter().map(|v| v.to_bits()).collect();
        let binning = Binning { input: Input::F32, bins, range: F32_RANGE };
        let mut histogram = Histogram::with_values(&gpu, binning, bits, &Method::ALL, 128, grid).unwrap();
        all_passed(&registry::run(&gpu, "histogram", &mut histogram, Timer { launches: 1, cache: Cache::Warm }).unwrap())?;
    });
}

#[test]
fn matmul_matches_for_random_shapes() {
    let Some(gpu) = gpu("matmul_matches_for_random_shapes") else { return };
    proptest!(cases(32), |(m in 1usize..400, n in 1usize..400, k in 1usize..700)| {
        check(&gpu, "matmul", format!("--m {m} --n {n} --k {k}"))?;
    });
}

#[test]
fn conv2d_matches_for_random_shapes() {
    let Some(gpu) = gpu("conv2d_matches_for_random_shapes") else { return };
    proptest!(cases(32), |(w in 1usize..300, h in 1usize..300, filter in prop_oneof![Just(3usize), Just(5), Just(7)])| {
        check(&gpu, "conv2d", format!("--width {w} --height {h} --filter {filter}"))?;
    });
}
