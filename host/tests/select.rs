//! Radix select through its public API ([`Selector`], what the source finder calls), against
//! the CPU: many ranks and windows on one selector, so that a call that leaves its histogram
//! or state dirty spoils the next; NaN, infinities, equal values and odd sizes.

mod common;

use common::{gpu, SEED};
use host::data::{random_in, random_normal};
use host::gpu::Gpu;
use host::ops::select::{cpu_reference, Find, Median, Selector};
use interface::window::Window;

/// Every rank the test asks for, and the median, on `values` inside `window`.
fn agrees(gpu: &Gpu, selector: &Selector, values: &[f32], window: Window, ranks: &[u64]) {
    let device = gpu.upload("values", values).expect("upload");
    let what = format!("{} values in ({}, {})", values.len(), window.low, window.high);
    let median = selector.median(gpu, &device, window).expect("median");
    let want = cpu_reference(values, window, None).map(|(value, count)| Median { value, count });
    assert_eq!(median, want, "median of {what}");
    // A κσ round that clipped nothing asks for the median unless the count is the one it knows.
    if let Some(Median { count, .. }) = want {
        for (known, expected) in [(count, None), (count + 1, want)] {
            let find = Find::MedianUnlessCount(known as u32);
            // SAFETY: `read_median` below waits for the kernels before `device` goes.
            unsafe { selector.launch(gpu, &device, window, find) }.expect("launch");
            assert_eq!(selector.read_median(gpu).expect("read back"), expected, "{find:?} of {what}");
        }
    }
    for &k in ranks {
        let got = selector.kth(gpu, &device, window, k).expect("kth").map(f32::to_bits);
        let want = cpu_reference(values, window, Some(k)).map(|(v, _)| (v as f32).to_bits());
        assert_eq!(got, want, "rank {k} of {what}");
    }
}

#[test]
fn kth_and_median_match_the_cpu_on_odd_sizes_windows_and_nan() {
    let Some(gpu) = gpu("kth_and_median_match_the_cpu_on_odd_sizes_windows_and_nan") else { return };
    let selector = Selector::new(&gpu).expect("selector");
    for n in [1usize, 2, 3, 5, 31, 1000, 65_537, 1_000_003] {
        let mut values = random_normal(n, SEED + n as u64);
        let ranks = [0, n as u64 / 3, n as u64 / 2, n as u64 - 1, n as u64, u64::MAX];
        agrees(&gpu, &selector, &values, Window::FINITE, &ranks);
        agrees(&gpu, &selector, &values, Window::new(-0.5, 1.25), &ranks);
        // Blanked pixels, infinities and a window that holds nothing.
        for (i, v) in values.iter_mut().enumerate() {
            if i % 7 == 3 {
                *v = f32::NAN;
            }
        }
        values[n - 1] = f32::INFINITY;
        agrees(&gpu, &selector, &values, Window::FINITE, &ranks);
        agrees(&gpu, &selector, &values, Window::new(f64::NEG_INFINITY, -0.25), &ranks);
        agrees(&gpu, &selector, &values, Window::new(9.0, 10.0), &[0]);
    }
}

#[test]
fn equal_values_zeros_and_neighbours_are_exact() {
    let Some(gpu) = gpu("equal_values_zeros_and_neighbours_are_exact") else { return };
    let selector = Selector::new(&gpu).expect("selector");
    // Four levels, each about a quarter of the values: the middle ranks share a value or not.
    for n in [4usize, 1000, 1001, 262_145] {
        let levels: Vec<f32> = random_in(n, SEED, 0u32, 4).into_iter().map(|l| l as f32 - 1.5).collect();
        agrees(&gpu, &selector, &levels, Window::FINITE, &[0, n as u64 / 2, n as u64 - 1]);
    }
    // Both zeros, and f32 neighbours whose mean needs f64.
    let one_up = f32::from_bits(1.0f32.to_bits() + 1);
    agrees(&gpu, &selector, &[0.0, -0.0, 0.0, -0.0], Window::FINITE, &[0, 1, 2, 3]);
    agrees(&gpu, &selector, &[one_up, 1.0], Window::FINITE, &[0, 1]);
    agrees(&gpu, &selector, &[-f32::MAX, f32::MAX, f32::MIN_POSITIVE, -1e-45], Window::FINITE, &[0, 1, 2, 3]);
}

#[test]
fn bad_options_are_clear_errors() {
    let Some(gpu) = gpu("bad_options_are_clear_errors") else { return };
    let family = host::ops::family("select").expect("select is registered");
    for (options, needle) in [("--n 0", "n >= 1"), ("--n 10 --nan 2", "fraction"), ("--n 10 --low NaN", "numbers")] {
        let error = family.prepare_from(&gpu, options, SEED).err().map(|e| format!("{e:#}"));
        assert!(error.as_deref().is_some_and(|e| e.contains(needle)), "select {options}: {error:?}");
    }
}
