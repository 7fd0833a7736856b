//! The typed API of the reduce, select, scan and compact families: each function at lengths 1,
//! odd, primes and past 2^20, with NaN (and infinities) salted in, with windows that keep
//! nothing, everything or part, against its family's CPU reference (`cpu_*` beside the
//! family, `cuda_kernels::stats`); the ndarray forms at two dimensions and in other layouts;
//! and each error message. Without a GPU each test says `SKIPPED` and passes (with
//! `REQUIRE_GPU=1` a missing GPU fails instead).

mod common;

use common::{assert_refused, gpu};
use cuda_kernels::data::{random_f32, random_in, random_normal};
use cuda_kernels::gpu::{DeviceArray, DeviceVector, Gpu};
use cuda_kernels::{compact, reduce, scan, select, stats, Window};
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// One value, each tail of a quad, primes, both sides of a scan tile (8192 values), and primes
/// past 2^20 and 2^21.
const LENGTHS: [usize; 14] = [1, 2, 3, 4, 5, 7, 31, 1021, 4093, 8191, 8193, 65_537, 1_048_583, 2_097_169];

/// `values` with NaN at about one place in `every` (and at the first place), seeded.
fn salted(mut values: Vec<f32>, every: usize, seed: u64) -> Vec<f32> {
    let n = values.len();
    for place in random_in(n / every + 1, seed, 0, n) {
        values[place] = f32::NAN;
    }
    values[0] = f32::NAN;
    values
}

/// Windows over standard normal values: every finite value, part of them (one side open, both
/// bounds inside, one bound far out), none (beyond the values, empty, reversed).
const WINDOWS: [(Window, &str); 8] = [
    (Window::FINITE, "everything"),
    (Window { low: -1.0, high: 1.0 }, "(-1, 1)"),
    (Window { low: f64::NEG_INFINITY, high: 0.0 }, "(-inf, 0)"),
    (Window { low: 0.5, high: f64::INFINITY }, "(0.5, inf)"),
    (Window { low: -1e30, high: 1e30 }, "(-1e30, 1e30)"),
    (Window { low: 50.0, high: 60.0 }, "nothing: (50, 60)"),
    (Window { low: 0.25, high: 0.25 }, "nothing: (0.25, 0.25)"),
    (Window { low: 1.0, high: -1.0 }, "nothing: (1, -1)"),
];

/// Σ|v| over the values, the scale of the sum's tolerance.
fn magnitude(values: &[f32]) -> f64 {
    values.iter().map(|v| f64::from(v.abs())).sum()
}

// ---------------------------------------------------------------------------------- reduce

#[test]
fn sum_matches_the_reference_at_odd_lengths() {
    let Some(gpu) = gpu("sum_matches_the_reference_at_odd_lengths") else { return };
    for (seed, &n) in LENGTHS.iter().enumerate() {
        let values = random_f32(n, seed as u64);
        let device_values = DeviceArray::from_slice(&gpu, &values).unwrap();
        let (got, want, tolerance) = (
            reduce::sum(&gpu, &device_values).unwrap(),
            reduce::cpu_sum(&values),
            reduce::sum_tolerance(magnitude(&values)),
        );
        assert!((got - want).abs() <= tolerance, "n={n}: GPU {got}, CPU {want}, tolerance {tolerance}");
        let array = reduce::sum_array(&gpu, ArrayView1::from(&values)).unwrap();
        assert!((array - want).abs() <= tolerance, "array n={n}: GPU {array}, CPU {want}");
        // Small integers: every partial sum is exact in f32 and f64, so the sum is exact.
        let integers: Vec<f32> = (0..n).map(|i| ((i * 7919) % 13) as f32 - 6.0).collect();
        let exact: f64 = integers.iter().map(|&v| f64::from(v)).sum();
        assert_eq!(reduce::sum(&gpu, &DeviceArray::from_slice(&gpu, &integers).unwrap()).unwrap(), exact, "n={n}");
        // One NaN anywhere makes the sum NaN; one infinity makes it infinite.
        let nan = salted(values.clone(), 100_000, seed as u64);
        assert!(reduce::sum(&gpu, &DeviceArray::from_slice(&gpu, &nan).unwrap()).unwrap().is_nan(), "n={n}");
        let mut infinite = values.clone();
        infinite[n / 2] = f32::NEG_INFINITY;
        assert_eq!(reduce::sum_array(&gpu, ArrayView1::from(&infinite)).unwrap(), f64::NEG_INFINITY, "n={n}");
    }
}

#[test]
fn sum_array_takes_any_dimension_and_layout() {
    let Some(gpu) = gpu("sum_array_takes_any_dimension_and_layout") else { return };
    for (rows, cols) in [(1, 1), (1, 1031), (1031, 1), (67, 45), (1021, 1031)] {
        let image = Array2::from_shape_vec((rows, cols), random_f32(rows * cols, 3)).unwrap();
        let values = image.as_slice().unwrap();
        let (want, tolerance) = (reduce::cpu_sum(values), reduce::sum_tolerance(magnitude(values)));
        for (view, layout) in [(image.view(), "row-major"), (image.t(), "transposed")] {
            let got = reduce::sum_array(&gpu, view).unwrap();
            assert!((got - want).abs() <= tolerance, "{rows}×{cols} {layout}: GPU {got}, CPU {want}");
        }
        let device_image = DeviceArray::from_array(&gpu, image.view()).unwrap();
        let got = reduce::sum(&gpu, &device_image).unwrap();
        assert!((got - want).abs() <= tolerance, "{rows}×{cols} on the GPU: GPU {got}, CPU {want}");
        // Every other column: a strided view, copied in logical order.
        let strided = image.slice(s![.., ..;2]);
        let kept: Vec<f32> = strided.iter().copied().collect();
        let got = reduce::sum_array(&gpu, strided).unwrap();
        let want = reduce::cpu_sum(&kept);
        assert!((got - want).abs() <= reduce::sum_tolerance(magnitude(&kept)), "{rows}×{cols} strided");
    }
}

/// Asserts that the GPU's moments equal the reference's: counts, min and max exactly, mean
/// and M2 to [`reduce::MOMENTS_RELATIVE`].
fn assert_moments(got: &reduce::Moments, want: &reduce::Moments, what: &str) {
    assert_eq!((got.count, got.nan, got.min, got.max), (want.count, want.nan, want.min, want.max), "{what}");
    let errors = reduce::moments_errors(got, want);
    assert!(errors.iter().all(|&e| e <= 1.0), "{what}: {got:?} vs {want:?}: {errors:?}");
}

#[test]
fn moments_match_the_reference_at_odd_lengths_and_windows() {
    let Some(gpu) = gpu("moments_match_the_reference_at_odd_lengths_and_windows") else { return };
    for (seed, &n) in LENGTHS.iter().enumerate() {
        let clean = random_normal(n, seed as u64);
        // Around a large level against the spread, as an image's background: M2 must not
        // cancel.
        let offset: Vec<f32> = clean.iter().map(|v| 1000.0 + 0.01 * v).collect();
        for (values, data) in [(salted(clean.clone(), 1000, seed as u64), "normal with NaN"), (clean, "normal")] {
            let nan = values.iter().filter(|v| v.is_nan()).count() as u64;
            let device_values = DeviceArray::from_slice(&gpu, &values).unwrap();
            for (window, name) in WINDOWS {
                let what = format!("{data} n={n} {name}");
                let got = reduce::moments(&gpu, &device_values, window).unwrap();
                let want = reduce::cpu_moments(&values, window);
                assert_moments(&got, &want, &what);
                assert_eq!(got.nan, nan, "{what}: NaN counted whatever the window");
                if name.starts_with("nothing") {
                    let empty = (got.count, got.mean, got.m2, got.min, got.max);
                    assert_eq!(empty, (0, 0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY), "{what}");
                }
                let array = reduce::moments_array(&gpu, ArrayView1::from(&values), window).unwrap();
                assert_moments(&array, &want, &format!("array {what}"));
            }
        }
        let device_offset = DeviceArray::from_slice(&gpu, &offset).unwrap();
        for window in [Window::FINITE, Window::new(999.99, 1000.005)] {
            let got = reduce::moments(&gpu, &device_offset, window).unwrap();
            assert_moments(&got, &reduce::cpu_moments(&offset, window), &format!("offset n={n} {window:?}"));
        }
    }
    // Infinities lie in no window, not even the widest.
    let values = [1.0f32, f32::INFINITY, 2.0, f32::NEG_INFINITY, f32::NAN, 3.0];
    let widest = Window::new(f64::NEG_INFINITY, f64::INFINITY);
    let got = reduce::moments_array(&gpu, ArrayView1::from(&values), widest).unwrap();
    assert_eq!((got.count, got.nan, got.min, got.max), (3, 1, 1.0, 3.0));
    assert_moments(&got, &reduce::cpu_moments(&values, widest), "with infinities");
    assert!((got.mean - 2.0).abs() < 1e-15 && (got.m2 - 2.0).abs() < 1e-15, "{got:?}");
}

#[test]
fn moments_array_takes_any_dimension_and_layout() {
    let Some(gpu) = gpu("moments_array_takes_any_dimension_and_layout") else { return };
    let image = Array2::from_shape_vec((257, 131), salted(random_normal(257 * 131, 8), 500, 8)).unwrap();
    for (window, name) in WINDOWS {
        let want = reduce::cpu_moments(image.as_slice().unwrap(), window);
        assert_moments(&reduce::moments_array(&gpu, image.view(), window).unwrap(), &want, name);
        assert_moments(&reduce::moments_array(&gpu, image.t(), window).unwrap(), &want, &format!("{name}ᵀ"));
        let device_image = DeviceArray::from_array(&gpu, image.view()).unwrap();
        assert_moments(&reduce::moments(&gpu, &device_image, window).unwrap(), &want, &format!("{name} device"));
    }
}

#[test]
fn reduce_refuses_bad_inputs() {
    let Some(gpu) = gpu("reduce_refuses_bad_inputs") else { return };
    let empty: DeviceVector<f32> = DeviceArray::zeros(&gpu, 0).unwrap();
    let values: DeviceVector<f32> = DeviceArray::from_slice(&gpu, &[1.0, 2.0]).unwrap();
    assert_refused(reduce::sum(&gpu, &empty), "sum: the values are empty");
    assert_refused(reduce::sum_array(&gpu, ArrayView1::<f32>::from(&[])), "sum: the values are empty");
    assert_refused(
        reduce::sum_array(&gpu, ArrayView2::<f32>::from_shape((3, 0), &[]).unwrap()),
        "sum: the values are empty",
    );
    assert_refused(reduce::moments(&gpu, &empty, Window::FINITE), "moments: the values are empty");
    assert_refused(
        reduce::moments_array(&gpu, ArrayView1::<f32>::from(&[]), Window::FINITE),
        "moments: the values are empty",
    );
    for (window, shown) in [(Window::new(f64::NAN, 1.0), "(NaN, 1)"), (Window::new(0.0, f64::NAN), "(0, NaN)")] {
        let expected = format!("moments: the window {shown} has a NaN bound");
        assert_refused(reduce::moments(&gpu, &values, window), &expected);
        assert_refused(reduce::moments_array(&gpu, ArrayView1::from(&[1.0f32]), window), &expected);
    }
    // An array of another GPU object (another stream) is refused.
    let other = Gpu::new().unwrap();
    let foreign: DeviceVector<f32> = DeviceArray::from_slice(&other, &[1.0, 2.0]).unwrap();
    assert_refused(reduce::sum(&gpu, &foreign), "was passed to GPU");
    assert_refused(reduce::moments(&gpu, &foreign, Window::FINITE), "was passed to GPU");
    assert_eq!(reduce::sum(&other, &foreign).unwrap(), 3.0);
}

// ---------------------------------------------------------------------------------- select

/// Values of `n` drawn as `data`: normal, radio noise (σ = 0.0133: a few top digits hold
/// them all), sixteen repeated values, uniform.
fn select_data(n: usize, seed: u64) -> [(Vec<f32>, &'static str); 4] {
    [
        (random_normal(n, seed), "normal"),
        (random_normal(n, seed + 1).iter().map(|v| v * select::NOISE_SIGMA).collect(), "noise"),
        (random_in(n, seed + 2, 0u32, 16).iter().map(|&k| k as f32 * 0.5 - 4.0).collect(), "repeated"),
        (random_f32(n, seed + 3), "uniform"),
    ]
}

/// `np.nanmedian` of the finite values, from `cuda_kernels::stats`: NaN where there are none.
fn finite_median(values: &[f32]) -> f64 {
    let mut finite: Vec<f32> = values.iter().copied().filter(|v| v.is_finite()).collect();
    stats::median(&mut finite).unwrap_or(f64::NAN)
}

#[test]
fn median_matches_np_median_at_odd_lengths() {
    let Some(gpu) = gpu("median_matches_np_median_at_odd_lengths") else { return };
    for (seed, &n) in LENGTHS.iter().enumerate() {
        for (clean, data) in select_data(n, 10 * seed as u64) {
            let mut infinite = salted(clean.clone(), 700, seed as u64);
            for place in random_in(n / 3000 + 1, seed as u64 + 7, 0, n) {
                infinite[place] = if place % 2 == 0 { f32::INFINITY } else { f32::NEG_INFINITY };
            }
            let cases =
                [(salted(clean.clone(), 1000, seed as u64), "with NaN"), (infinite, "with NaN and ±inf"), (clean, "")];
            for (values, salt) in cases {
                let what = format!("{data} {salt} n={n}");
                let want = finite_median(&values);
                let reference = select::cpu_reference(&values, Window::FINITE, None).map_or(f64::NAN, |(m, _)| m);
                assert!(want == reference || (want.is_nan() && reference.is_nan()), "{what}: the references differ");
                let device_values = DeviceArray::from_slice(&gpu, &values).unwrap();
                let got = select::median(&gpu, &device_values).unwrap();
                assert!(got == want || (got.is_nan() && want.is_nan()), "{what}: GPU {got}, CPU {want}");
                let array = select::median_array(&gpu, ArrayView1::from(&values)).unwrap();
                assert!(array == want || (array.is_nan() && want.is_nan()), "array {what}: GPU {array}, CPU {want}");
            }
        }
    }
}

#[test]
fn median_of_no_finite_value_is_nan_and_of_few_is_np_median() {
    let Some(gpu) = gpu("median_of_no_finite_value_is_nan_and_of_few_is_np_median") else { return };
    let median = |values: &[f32]| select::median_array(&gpu, ArrayView1::from(values)).unwrap();
    assert!(median(&[f32::NAN]).is_nan());
    assert!(median(&[f32::NAN; 1021]).is_nan());
    assert!(median(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY]).is_nan());
    assert_eq!(median(&[7.5]), 7.5);
    assert_eq!(median(&[2.0, 1.0]), 1.5);
    assert_eq!(median(&[f32::NAN, 2.0, f32::INFINITY, 1.0, 4.0]), 2.0);
    assert_eq!(median(&[-0.0, 0.0]), 0.0);
    // The mean of two f32 neighbours, exact in f64.
    let next = f32::from_bits(1.0f32.to_bits() + 1);
    assert_eq!(median(&[next, 1.0, f32::NAN]), (1.0 + f64::from(next)) / 2.0);
    assert_eq!(median(&[f32::MAX, -f32::MAX, f32::MAX]), f64::from(f32::MAX));
    assert_eq!(median(&[f32::MAX, f32::MAX]), f64::from(f32::MAX), "no overflow: the mean is in f64");
}

#[test]
fn median_in_takes_the_window() {
    let Some(gpu) = gpu("median_in_takes_the_window") else { return };
    for (seed, &n) in LENGTHS.iter().enumerate() {
        let values = salted(random_normal(n, 40 + seed as u64), 1000, seed as u64);
        let device_values = DeviceArray::from_slice(&gpu, &values).unwrap();
        let image_side = (n as f64).sqrt() as usize;
        for (window, name) in WINDOWS {
            let what = format!("n={n} {name}");
            let got = select::median_in(&gpu, &device_values, window).unwrap();
            match select::cpu_reference(&values, window, None) {
                Some((want, _)) => assert_eq!(got, want, "{what}"),
                None => assert!(got.is_nan(), "{what}: {got} from a window that holds nothing"),
            }
            // A 2-D array: its elements, whatever the shape.
            let image = ArrayView2::from_shape((image_side, image_side), &values[..image_side * image_side]).unwrap();
            let device_image = DeviceArray::from_array(&gpu, image).unwrap();
            let got = select::median_in(&gpu, &device_image, window).unwrap();
            match select::cpu_reference(image.as_slice().unwrap(), window, None) {
                Some((want, _)) => assert_eq!(got, want, "image {what}"),
                None => assert!(got.is_nan(), "image {what}"),
            }
        }
    }
}

#[test]
fn kth_matches_the_reference_at_odd_lengths() {
    let Some(gpu) = gpu("kth_matches_the_reference_at_odd_lengths") else { return };
    for (seed, &n) in LENGTHS.iter().enumerate() {
        for (clean, data) in select_data(n, 20 * seed as u64) {
            let mut values = salted(clean, 500, seed as u64);
            if n > 8 {
                values[n - 1] = f32::INFINITY;
                values[n / 3] = f32::NEG_INFINITY;
            }
            let finite = values.iter().filter(|v| v.is_finite()).count() as u64;
            let device_values = DeviceArray::from_slice(&gpu, &values).unwrap();
            let mut ranks = vec![0, finite / 2, finite.saturating_sub(1)];
            ranks.extend(random_in(3, seed as u64, 0, finite.max(1)));
            for k in ranks.into_iter().filter(|&k| k < finite) {
                let what = format!("{data} n={n} k={k}");
                let (want, count) = select::cpu_reference(&values, Window::FINITE, Some(k)).unwrap();
                assert_eq!(count, finite, "{what}");
                assert_eq!(f64::from(select::kth(&gpu, &device_values, k).unwrap()), want, "{what}");
                let array = select::kth_array(&gpu, ArrayView1::from(&values), k).unwrap();
                assert_eq!(f64::from(array), want, "array {what}");
            }
            // Past the finite values: an error that says how many there are.
            if finite < n as u64 {
                let expected = format!("kth: k = {finite} is not below the number of finite values");
                assert_refused(select::kth(&gpu, &device_values, finite), &expected);
                assert_refused(select::kth_array(&gpu, ArrayView1::from(&values), finite), &expected);
            }
        }
    }
}

#[test]
fn kth_in_takes_the_window() {
    let Some(gpu) = gpu("kth_in_takes_the_window") else { return };
    for (seed, &n) in LENGTHS.iter().enumerate() {
        let values = salted(random_normal(n, 60 + seed as u64), 1000, seed as u64);
        let device_values = DeviceArray::from_slice(&gpu, &values).unwrap();
        for (window, name) in WINDOWS {
            let inside = values.iter().filter(|&&v| window.contains(v)).count() as u64;
            for k in [0, inside / 2, inside.saturating_sub(1)].into_iter().filter(|&k| k < inside) {
                let what = format!("n={n} {name} k={k}");
                let (want, _) = select::cpu_reference(&values, window, Some(k)).unwrap();
                assert_eq!(f64::from(select::kth_in(&gpu, &device_values, window, k).unwrap()), want, "{what}");
            }
            if inside < n as u64 {
                let (low, high) = (window.low, window.high);
                let expected =
                    format!("kth_in: k = {inside} is not below the number of values inside the window ({low}, {high})");
                let expected = format!("{expected}, {inside} of {n}");
                assert_refused(select::kth_in(&gpu, &device_values, window, inside), &expected);
            }
        }
    }
}

#[test]
fn kth_array_takes_any_dimension_and_layout() {
    let Some(gpu) = gpu("kth_array_takes_any_dimension_and_layout") else { return };
    let image = Array2::from_shape_vec((131, 67), salted(random_normal(131 * 67, 9), 300, 9)).unwrap();
    let values = image.as_slice().unwrap();
    let finite = values.iter().filter(|v| v.is_finite()).count() as u64;
    for k in [0, 1, finite / 2, finite - 1] {
        let (want, _) = select::cpu_reference(values, Window::FINITE, Some(k)).unwrap();
        assert_eq!(f64::from(select::kth_array(&gpu, image.view(), k).unwrap()), want, "k={k}");
        assert_eq!(f64::from(select::kth_array(&gpu, image.t(), k).unwrap()), want, "k={k}ᵀ");
    }
    let (want, _) = select::cpu_reference(values, Window::FINITE, None).unwrap();
    assert_eq!(select::median_array(&gpu, image.t()).unwrap(), want);
    assert_eq!(select::median_array(&gpu, image.slice(s![..;-1, ..])).unwrap(), want, "rows reversed");
}

#[test]
fn select_refuses_bad_inputs() {
    let Some(gpu) = gpu("select_refuses_bad_inputs") else { return };
    let empty: DeviceVector<f32> = DeviceArray::zeros(&gpu, 0).unwrap();
    let values: DeviceVector<f32> = DeviceArray::from_slice(&gpu, &[1.0, f32::NAN, 3.0, 2.0, f32::INFINITY]).unwrap();
    let none = ArrayView1::<f32>::from(&[]);
    assert_refused(select::median(&gpu, &empty), "median: the values are empty");
    assert_refused(select::median_array(&gpu, none), "median: the values are empty");
    assert_refused(select::median_in(&gpu, &empty, Window::FINITE), "median_in: the values are empty");
    assert_refused(select::kth(&gpu, &empty, 0), "kth: the values are empty");
    assert_refused(select::kth_array(&gpu, none, 0), "kth: the values are empty");
    assert_refused(select::kth_in(&gpu, &empty, Window::FINITE, 0), "kth_in: the values are empty");
    // k past the values, before anything runs; past the finite ones, after the selection.
    assert_refused(select::kth(&gpu, &values, 5), "kth: k = 5 is not below the number of values, 5 (k counts from 0)");
    let expected = format!("kth: k = {} is not below the number of values, 5", u64::MAX);
    assert_refused(select::kth(&gpu, &values, u64::MAX), &expected);
    let expected = "kth: k = 1 is not below the number of values, 1";
    assert_refused(select::kth_array(&gpu, ArrayView1::from(&[1.0f32]), 1), expected);
    let expected = "kth_in: k = 7 is not below the number of values, 5";
    assert_refused(select::kth_in(&gpu, &values, Window::FINITE, 7), expected);
    assert_refused(
        select::kth(&gpu, &values, 3),
        "kth: k = 3 is not below the number of finite values (NaN and ±∞ are skipped), 3 of 5",
    );
    assert_refused(
        select::kth_in(&gpu, &values, Window::new(1.5, 2.5), 1),
        "kth_in: k = 1 is not below the number of values inside the window (1.5, 2.5), 1 of 5",
    );
    assert_eq!(select::kth(&gpu, &values, 2).unwrap(), 3.0);
    for (window, shown) in [(Window::new(f64::NAN, 1.0), "(NaN, 1)"), (Window::new(0.0, f64::NAN), "(0, NaN)")] {
        assert_refused(
            select::median_in(&gpu, &values, window),
            &format!("median_in: the window {shown} has a NaN bound"),
        );
        assert_refused(
            select::kth_in(&gpu, &values, window, 0),
            &format!("kth_in: the window {shown} has a NaN bound"),
        );
    }
    let other = Gpu::new().unwrap();
    let foreign: DeviceVector<f32> = DeviceArray::from_slice(&other, &[1.0, 2.0]).unwrap();
    assert_refused(select::median(&gpu, &foreign), "was passed to GPU");
    assert_refused(select::kth(&gpu, &foreign, 0), "was passed to GPU");
    assert_eq!(select::median(&other, &foreign).unwrap(), 1.5);
}

// ------------------------------------------------------------------------------------ scan

#[test]
fn exclusive_scan_of_u32_is_exact_and_wraps() {
    let Some(gpu) = gpu("exclusive_scan_of_u32_is_exact_and_wraps") else { return };
    for (seed, &n) in LENGTHS.iter().enumerate() {
        // Flags (as compaction and labelling scan them), and values whose sum wraps many times.
        let flags = random_in(n, seed as u64, 0u32, 2);
        let large = random_in(n, 100 + seed as u64, u32::MAX - 1000, u32::MAX);
        for (values, data) in [(flags, "flags"), (large, "near u32::MAX")] {
            let what = format!("{data} n={n}");
            let (want, want_total) = scan::cpu_reference_u32(&values);
            let input = DeviceArray::from_slice(&gpu, &values).unwrap();
            let mut output = DeviceArray::from_slice(&gpu, &vec![0xDEAD_BEEFu32; n]).unwrap();
            let total = scan::exclusive_scan(&gpu, &input, &mut output).unwrap();
            assert_eq!(total, want_total, "{what}: total");
            assert_eq!(output.to_array(&gpu).unwrap().to_vec(), want, "{what}");
            let (array, array_total) = scan::exclusive_scan_array(&gpu, ArrayView1::from(&values)).unwrap();
            assert_eq!((array.to_vec(), array_total), (want, want_total), "array {what}");
        }
    }
    // A strided view is scanned in logical order.
    let values: Array1<u32> = (0..1001).collect();
    let (output, total) = scan::exclusive_scan_array(&gpu, values.slice(s![..;-2])).unwrap();
    let reversed: Vec<u32> = values.slice(s![..;-2]).to_vec();
    assert_eq!((output.to_vec(), total), scan::cpu_reference_u32(&reversed));
}

/// Asserts the f32 scan `got` (and its total) within the reference's tolerance of `values`'s.
fn assert_f32_scan(got: &[f32], total: f32, values: &[f32], what: &str) {
    let (want, want_total, tolerance) = scan::cpu_reference_f32(values);
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(f64::from((g - w).abs()) <= tolerance, "{what}: element {i}: GPU {g}, CPU {w}, tolerance {tolerance}");
    }
    assert!(f64::from((total - want_total).abs()) <= tolerance, "{what}: total: GPU {total}, CPU {want_total}");
}

#[test]
fn exclusive_scan_of_f32_is_within_the_tolerance() {
    let Some(gpu) = gpu("exclusive_scan_of_f32_is_within_the_tolerance") else { return };
    for (seed, &n) in LENGTHS.iter().enumerate() {
        let values = random_f32(n, seed as u64);
        let input = DeviceArray::from_slice(&gpu, &values).unwrap();
        let mut output = DeviceArray::zeros(&gpu, n).unwrap();
        let total = scan::exclusive_scan(&gpu, &input, &mut output).unwrap();
        assert_f32_scan(output.to_array(&gpu).unwrap().as_slice().unwrap(), total, &values, &format!("n={n}"));
        let (array, total) = scan::exclusive_scan_array(&gpu, ArrayView1::from(&values)).unwrap();
        assert_f32_scan(array.as_slice().unwrap(), total, &values, &format!("array n={n}"));
        // All positive, so the prefixes grow: the tolerance follows the largest.
        let positive: Vec<f32> = values.iter().map(|v| v.abs()).collect();
        let (array, total) = scan::exclusive_scan_array(&gpu, ArrayView1::from(&positive)).unwrap();
        assert_f32_scan(array.as_slice().unwrap(), total, &positive, &format!("positive n={n}"));
        // A NaN: the outputs up to its place are the scan of the values before it, every later
        // one and the total are NaN.
        let place = n / 2;
        let mut nan = values.clone();
        nan[place] = f32::NAN;
        let (array, total) = scan::exclusive_scan_array(&gpu, ArrayView1::from(&nan)).unwrap();
        let before = &values[..place];
        assert_f32_scan(&array.as_slice().unwrap()[..place], array[place], before, &format!("before NaN n={n}"));
        assert!(array.iter().skip(place + 1).all(|v| v.is_nan()), "n={n}: after the NaN");
        assert!(total.is_nan(), "n={n}: the total");
    }
}

#[test]
fn scan_refuses_bad_shapes() {
    let Some(gpu) = gpu("scan_refuses_bad_shapes") else { return };
    let empty: DeviceVector<u32> = DeviceArray::zeros(&gpu, 0).unwrap();
    let mut empty_output: DeviceVector<u32> = DeviceArray::zeros(&gpu, 0).unwrap();
    assert_refused(scan::exclusive_scan(&gpu, &empty, &mut empty_output), "exclusive_scan: the input is empty");
    assert_refused(
        scan::exclusive_scan_array(&gpu, ArrayView1::<f32>::from(&[])),
        "exclusive_scan: the input is empty",
    );
    let input: DeviceVector<f32> = DeviceArray::zeros(&gpu, 5).unwrap();
    for (len, message) in [
        (4, "exclusive_scan: the output holds 4 elements, the input 5 needs 5"),
        (6, "exclusive_scan: the output holds 6 elements, the input 5 needs 5"),
        (0, "exclusive_scan: the output holds 0 elements, the input 5 needs 5"),
    ] {
        let mut output = DeviceArray::zeros(&gpu, len).unwrap();
        assert_refused(scan::exclusive_scan(&gpu, &input, &mut output), message);
    }
    let other = Gpu::new().unwrap();
    let foreign: DeviceVector<u32> = DeviceArray::from_slice(&other, &[1, 2]).unwrap();
    let mut output: DeviceVector<u32> = DeviceArray::zeros(&gpu, 2).unwrap();
    assert_refused(scan::exclusive_scan(&gpu, &foreign, &mut output), "was passed to GPU");
    let mut foreign_output: DeviceVector<u32> = DeviceArray::zeros(&other, 2).unwrap();
    let mine: DeviceVector<u32> = DeviceArray::from_slice(&gpu, &[1, 2]).unwrap();
    assert_refused(scan::exclusive_scan(&gpu, &mine, &mut foreign_output), "was passed to GPU");
    assert_eq!(scan::exclusive_scan(&other, &foreign, &mut foreign_output).unwrap(), 3);
}

// --------------------------------------------------------------------------------- compact

#[test]
fn compact_keeps_the_window_in_order_at_odd_lengths() {
    let Some(gpu) = gpu("compact_keeps_the_window_in_order_at_odd_lengths") else { return };
    let bits = |values: &[f32]| values.iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
    const SENTINEL: f32 = 12345.0;
    for (seed, &n) in LENGTHS.iter().enumerate() {
        let mut values = salted(random_normal(n, 80 + seed as u64), 300, seed as u64);
        if n > 8 {
            values[n - 1] = f32::INFINITY;
            values[1] = f32::NEG_INFINITY;
            values[n / 2] = -0.0;
        }
        let input = DeviceArray::from_slice(&gpu, &values).unwrap();
        for (window, name) in WINDOWS {
            let what = format!("n={n} {name}");
            let want = compact::cpu_reference(&values, window);
            // An output one longer than the input, filled with a sentinel: nothing past the
            // count may be written.
            let mut output = DeviceArray::from_slice(&gpu, &vec![SENTINEL; n + 1]).unwrap();
            let count = compact::compact(&gpu, &input, window, &mut output).unwrap();
            assert_eq!(count, want.len(), "{what}: count");
            let result = output.to_array(&gpu).unwrap();
            assert_eq!(bits(&result.as_slice().unwrap()[..count]), bits(&want), "{what}: kept values");
            assert!(result.iter().skip(count).all(|&v| v == SENTINEL), "{what}: written past the count");
            let array = compact::compact_array(&gpu, ArrayView1::from(&values), window).unwrap();
            assert_eq!(bits(array.as_slice().unwrap()), bits(&want), "array {what}");
        }
    }
}

#[test]
fn compact_refuses_bad_inputs() {
    let Some(gpu) = gpu("compact_refuses_bad_inputs") else { return };
    let empty: DeviceVector<f32> = DeviceArray::zeros(&gpu, 0).unwrap();
    let mut empty_output: DeviceVector<f32> = DeviceArray::zeros(&gpu, 0).unwrap();
    assert_refused(compact::compact(&gpu, &empty, Window::FINITE, &mut empty_output), "compact: the input is empty");
    assert_refused(compact::compact_array(&gpu, ArrayView1::from(&[]), Window::FINITE), "compact: the input is empty");
    let input: DeviceVector<f32> = DeviceArray::from_slice(&gpu, &[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let mut short = DeviceArray::zeros(&gpu, 4).unwrap();
    assert_refused(
        compact::compact(&gpu, &input, Window::new(0.0, 1.5), &mut short),
        "compact: the output holds 4 elements, the input 5 needs at least 5",
    );
    let mut output = DeviceArray::zeros(&gpu, 5).unwrap();
    for (window, shown) in [(Window::new(f64::NAN, 1.0), "(NaN, 1)"), (Window::new(0.0, f64::NAN), "(0, NaN)")] {
        let expected = format!("compact: the window {shown} has a NaN bound");
        assert_refused(compact::compact(&gpu, &input, window, &mut output), &expected);
        assert_refused(compact::compact_array(&gpu, ArrayView1::from(&[1.0f32]), window), &expected);
    }
    let other = Gpu::new().unwrap();
    let foreign: DeviceVector<f32> = DeviceArray::from_slice(&other, &[1.0, 2.0]).unwrap();
    assert_refused(compact::compact(&gpu, &foreign, Window::FINITE, &mut output), "was passed to GPU");
    let mut foreign_output: DeviceVector<f32> = DeviceArray::zeros(&other, 5).unwrap();
    assert_refused(compact::compact(&gpu, &input, Window::FINITE, &mut foreign_output), "was passed to GPU");
    assert_eq!(compact::compact(&other, &foreign, Window::new(1.5, 3.0), &mut foreign_output).unwrap(), 1);
}

// ---------------------------------------------------------------------------------- properties

/// Random values (normal, with NaN at random places when `nan` is set) and a random window,
/// for the properties below.
fn property_case() -> impl Strategy<Value = (Vec<f32>, Window)> {
    let values = (1usize..20_000, any::<u64>(), 0usize..50).prop_map(|(n, seed, nan_every)| {
        let values = random_normal(n, seed);
        if nan_every > 1 && n > 1 {
            salted(values, nan_every, seed)
        } else {
            values
        }
    });
    let bound = prop_oneof![Just(f64::NEG_INFINITY), Just(f64::INFINITY), -3.0f64..3.0];
    (values, bound.clone(), bound).prop_map(|(values, low, high)| (values, Window { low, high }))
}

/// Every primitive's typed API against its CPU reference on the same random values: sum,
/// moments in the window, median and a k-th of the finite values, the exclusive scan, the
/// compaction of the window.
#[test]
fn the_primitives_match_their_references_for_random_sizes_nan_and_windows() {
    let Some(gpu) = gpu("the_primitives_match_their_references_for_random_sizes_nan_and_windows") else { return };
    let mut runner = TestRunner::new(Config { cases: 128, ..Config::default() });
    let outcome = runner.run(&property_case(), |(values, window)| {
        let what = format!("n={} window ({}, {})", values.len(), window.low, window.high);
        let device = DeviceArray::from_slice(&gpu, &values).unwrap();
        let finite: Vec<f32> = values.iter().copied().filter(|v| v.is_finite()).collect();

        let sum = reduce::sum(&gpu, &device).unwrap();
        if finite.len() == values.len() {
            let tolerance = reduce::sum_tolerance(magnitude(&values));
            prop_assert!((sum - reduce::cpu_sum(&values)).abs() <= tolerance, "{what}: sum {sum}");
        } else {
            prop_assert!(sum.is_nan(), "{what}: a NaN makes the sum NaN, not {sum}");
        }
        let moments = reduce::moments(&gpu, &device, window).unwrap();
        let want = reduce::cpu_moments(&values, window);
        prop_assert_eq!((moments.count, moments.nan), (want.count, want.nan), "{}", what);
        prop_assert!(reduce::moments_errors(&moments, &want).iter().all(|&e| e <= 1.0), "{what}: {moments:?}");

        let median = select::median(&gpu, &device).unwrap();
        let want_median = stats::median(&mut finite.clone()).unwrap_or(f64::NAN);
        prop_assert!(median == want_median || (median.is_nan() && want_median.is_nan()), "{what}: median {median}");
        if !finite.is_empty() {
            let k = (finite.len() / 3) as u64;
            let mut sorted = finite.clone();
            sorted.sort_by(f32::total_cmp);
            prop_assert_eq!(select::kth(&gpu, &device, k).unwrap(), sorted[k as usize], "{}: k={}", what, k);
        }

        let clean: Vec<f32> = values.iter().map(|v| if v.is_nan() { 0.5 } else { *v }).collect();
        let mut scanned = DeviceArray::zeros(&gpu, clean.len()).unwrap();
        let total = scan::exclusive_scan(&gpu, &DeviceArray::from_slice(&gpu, &clean).unwrap(), &mut scanned).unwrap();
        assert_f32_scan(scanned.to_array(&gpu).unwrap().as_slice().unwrap(), total, &clean, &what);

        let kept = compact::compact_array(&gpu, ArrayView1::from(&values), window).unwrap();
        let want_kept = compact::cpu_reference(&values, window);
        prop_assert_eq!(
            kept.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want_kept.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{}",
            what
        );
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}
