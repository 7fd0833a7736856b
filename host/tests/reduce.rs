//! The reduction's host API ([`Reducer`]) on the GPU, as the source-finding pipeline calls it:
//! sums at odd sizes from one reducer (its ticket resets itself between launches), and the
//! moments' accuracy far from zero, with NaN, in a window, and on 2^30 values.

mod common;

use host::data::random_f32;
use host::ops::reduce::{cpu_moments, cpu_sum, sum_tolerance, Moments, Reducer, MOMENTS_RELATIVE};
use host::stats;
use interface::window::Window;
use rayon::prelude::*;

fn assert_moments_close(got: &Moments, want: &Moments, what: &str) {
    assert_eq!((got.count, got.nan, got.min, got.max), (want.count, want.nan, want.min, want.max), "{what}");
    let spread = want.std().unwrap_or(0.0);
    assert!(
        (got.mean - want.mean).abs() <= MOMENTS_RELATIVE * (want.mean.abs() + spread),
        "{what}: {got:?} vs {want:?}"
    );
    assert!((got.m2 - want.m2).abs() <= MOMENTS_RELATIVE * want.m2, "{what}: {got:?} vs {want:?}");
}

#[test]
fn one_reducer_sums_slices_of_odd_lengths() {
    let Some(gpu) = common::gpu("one_reducer_sums_slices_of_odd_lengths") else { return };
    let values = random_f32(1_000_003, 3);
    let device = gpu.upload("values", &values).expect("upload");
    let reducer = Reducer::new(&gpu, values.len()).expect("a reducer");
    for n in [1_000_003, 1, 4, 5, 1021, 65_537, 1_000_003] {
        let got = reducer.sum(&gpu, &device.index(..n)).expect("a sum");
        let want = cpu_sum(&values[..n]);
        let tolerance = sum_tolerance(values[..n].iter().map(|v| f64::from(v.abs())).sum());
        assert!((got - want).abs() <= tolerance, "n = {n}: {got} vs {want} (tolerance {tolerance})");
    }
    assert!(reducer.sum(&gpu, &device.index(..0)).is_err(), "no values is an error");
}

#[test]
fn moments_stay_accurate_far_from_zero() {
    let Some(gpu) = common::gpu("moments_stay_accurate_far_from_zero") else { return };
    // As the CPU statistics' test: 10000 + 0.5·(k mod 4), variance 0.3125, exact in f32.
    let values: Vec<f32> = (0..1_000_003).map(|k| 10_000.0 + 0.5 * (k % 4) as f32).collect();
    let device = gpu.upload("values", &values).expect("upload");
    let got =
        Reducer::new(&gpu, values.len()).expect("a reducer").moments(&gpu, &device, Window::FINITE).expect("moments");
    let std = got.std().expect("members");
    assert!((std - stats::std(&values).expect("values")).abs() < 1e-12, "{got:?}");
    assert!((std - 0.3125f64.sqrt()).abs() < 1e-6, "{got:?}");
    assert_moments_close(&got, &cpu_moments(&values, Window::FINITE), "offset 10000");
}

#[test]
fn moments_skip_nan_and_keep_only_the_window() {
    let Some(gpu) = common::gpu("moments_skip_nan_and_keep_only_the_window") else { return };
    let mut values: Vec<f32> = random_f32(1_000_003, 4).into_iter().map(|v| 3.0 + v).collect();
    values.iter_mut().skip(2).step_by(5).for_each(|v| *v = f32::NAN);
    let device = gpu.upload("values", &values).expect("upload");
    let reducer = Reducer::new(&gpu, values.len()).expect("a reducer");
    for window in [Window::FINITE, Window::new(2.5, 3.25), Window::new(5.0, 6.0)] {
        let got = reducer.moments(&gpu, &device, window).expect("moments");
        assert_moments_close(&got, &cpu_moments(&values, window), &format!("{window:?}"));
    }
    let blank = gpu.upload("NaN", &[f32::NAN; 1001]).expect("upload");
    let got = reducer.moments(&gpu, &blank, Window::FINITE).expect("moments");
    assert_eq!((got.count, got.nan, got.std()), (0, 1001, None));
}

#[test]
fn moments_of_2_30_values_keep_the_variance() {
    let Some(gpu) = common::gpu("moments_of_2_30_values_keep_the_variance") else { return };
    // 1000 + 0.25·(k mod 8), every thousandth value NaN: E[x²] − E[x]² in f32 would lose every
    // digit of the variance (about 0.33 against 10^6), and an f32 running sum would stall.
    let n = 1usize << 30;
    let value = |k: usize| if k % 1000 == 999 { f32::NAN } else { 1000.0 + 0.25 * (k % 8) as f32 };
    let values: Vec<f32> = (0..n).into_par_iter().map(value).collect();
    let device = gpu.upload("2^30 values", &values).expect("upload");
    drop(values);
    let got = Reducer::new(&gpu, n).expect("a reducer").moments(&gpu, &device, Window::FINITE).expect("moments");
    // The exact moments: the pattern repeats every 8000 values.
    let mut counts = [0u64; 8];
    let period = 8000;
    for k in 0..period {
        if k % 1000 != 999 {
            counts[k % 8] += (n / period) as u64 + u64::from(k < n % period);
        }
    }
    let count: u64 = counts.iter().sum();
    let level = |r: usize| 1000.0 + 0.25 * r as f64;
    let mean = (0..8).map(|r| counts[r] as f64 * level(r)).sum::<f64>() / count as f64;
    let m2: f64 = (0..8).map(|r| counts[r] as f64 * (level(r) - mean).powi(2)).sum();
    let want = Moments { count, nan: (n / 1000) as u64, mean, m2, min: 1000.0, max: 1001.75 };
    assert_moments_close(&got, &want, "2^30 values");
    let std = got.std().expect("members");
    assert!((std / want.std().expect("members") - 1.0).abs() < 1e-9, "σ {std}");
}
