//! The typed API of the label and measure families: connected components numbered as
//! `scipy.ndimage.label` numbers them and the per-label measures, against the CPU references
//! at odd shapes (1×1, 1×N, N×1, primes), with NaN pixels, with both connectivities and with
//! levels that keep nothing or everything; every error; and property tests over random shapes
//! and NaN-salted pixels. Without a GPU each GPU test says `SKIPPED` and passes (with
//! `REQUIRE_GPU=1` a missing GPU fails instead); the CPU references' own properties run
//! everywhere.

mod common;

use common::{assert_refused, gpu};
use cuda_kernels::data::{random_f32, random_in};
use cuda_kernels::gpu::{DeviceArray, DeviceMatrix, Gpu, GpuError};
use cuda_kernels::label::{self, detect, label_in_bands, Connectivity};
use cuda_kernels::measure::{self, compare, Source};
use ndarray::{arr0, Array2, ArrayView2};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::collections::VecDeque;

const CONNECTIVITIES: [Connectivity; 2] = [Connectivity::Four, Connectivity::Eight];

/// Odd shapes (rows × columns): one pixel, one row, one column, primes around the 32 × 16
/// tiles, a row of tiles and a column of them.
const SHAPES: [(usize, usize); 11] =
    [(1, 1), (1, 37), (37, 1), (1, 1031), (1031, 1), (2, 3), (31, 33), (67, 45), (127, 257), (17, 509), (509, 17)];

/// Uniform in [-1, 1), about one pixel in `nan_every` NaN (none for 0).
fn random_image(rows: usize, cols: usize, seed: u64, nan_every: u32) -> Array2<f32> {
    let mut pixels = random_f32(rows * cols, seed);
    if nan_every > 0 {
        let draws = random_in(rows * cols, seed ^ 0xA5A5, 0u32, nan_every);
        pixels.iter_mut().zip(draws).filter(|(_, d)| *d == 0).for_each(|(p, _)| *p = f32::NAN);
    }
    Array2::from_shape_vec((rows, cols), pixels).unwrap()
}

/// [`label::label`] of the pixels of `image` above `level`.
fn cpu_labels(image: ArrayView2<f32>, level: f64, connectivity: Connectivity) -> (Vec<u32>, usize) {
    let pixels: Vec<f32> = image.iter().copied().collect();
    label::cpu_reference(&detect(&pixels, level), image.ncols(), connectivity)
}

/// The GPU's labels of `image` by both forms, each asserted equal to the CPU's; the count.
fn assert_labels_match(gpu: &Gpu, image: ArrayView2<f32>, level: f64, connectivity: Connectivity) -> usize {
    let what = format!("{:?} level {level} {connectivity:?}", image.dim());
    let (expected, count) = cpu_labels(image, level, connectivity);
    let device_image = DeviceArray::from_array(gpu, image).unwrap();
    // Labels that are not zero: every one must be written.
    let mut labels = DeviceArray::from_array(gpu, Array2::from_elem(image.dim(), u32::MAX).view()).unwrap();
    let n = label::label(gpu, &device_image, level, connectivity, &mut labels).unwrap();
    assert_eq!(n, count, "{what}: the count");
    assert_eq!(labels.to_array(gpu).unwrap().into_raw_vec_and_offset().0, expected, "{what}: the labels");
    let (array, n) = label::label_array(gpu, image, level, connectivity).unwrap();
    assert_eq!((array.into_raw_vec_and_offset().0, n), (expected, count), "{what}: label_array");
    count
}

#[test]
fn label_matches_the_reference_at_odd_shapes() {
    let Some(gpu) = gpu("label_matches_the_reference_at_odd_shapes") else { return };
    for (seed, &(rows, cols)) in SHAPES.iter().enumerate() {
        for nan_every in [0, 7] {
            let image = random_image(rows, cols, seed as u64, nan_every);
            for level in [0.0, 0.5, -0.5, 0.9] {
                for connectivity in CONNECTIVITIES {
                    assert_labels_match(&gpu, image.view(), level, connectivity);
                }
            }
            // A view in another layout is read in logical order.
            assert_labels_match(&gpu, image.t(), 0.25, Connectivity::Eight);
        }
    }
    // A whole sky's worth, with many components crossing tiles.
    let image = random_image(1031, 2053, 99, 31);
    for connectivity in CONNECTIVITIES {
        assert!(assert_labels_match(&gpu, image.view(), 0.3, connectivity) > 1000);
    }
}

#[test]
fn label_levels_that_keep_nothing_or_everything() {
    let Some(gpu) = gpu("label_levels_that_keep_nothing_or_everything") else { return };
    for (seed, &(rows, cols)) in SHAPES.iter().enumerate() {
        let image = random_image(rows, cols, 100 + seed as u64, 0);
        for connectivity in CONNECTIVITIES {
            // Every pixel is below 1 and +∞: nothing is kept.
            for level in [1.0, f64::INFINITY, f64::MAX] {
                let (labels, n) = label::label_array(&gpu, image.view(), level, connectivity).unwrap();
                assert_eq!((labels, n), (Array2::zeros((rows, cols)), 0), "{rows}×{cols} level {level}");
            }
            // Every pixel is above -1 and -∞: one component, the whole image.
            for level in [-1.5, f64::NEG_INFINITY, f64::MIN] {
                let (labels, n) = label::label_array(&gpu, image.view(), level, connectivity).unwrap();
                assert_eq!((labels, n), (Array2::ones((rows, cols)), 1), "{rows}×{cols} level {level}");
            }
            // Below everything, NaN pixels are still no pixel's neighbours.
            let salted = random_image(rows, cols, 200 + seed as u64, 3);
            assert_labels_match(&gpu, salted.view(), f64::NEG_INFINITY, connectivity);
            let nan = Array2::from_elem((rows, cols), f32::NAN);
            assert_eq!(assert_labels_match(&gpu, nan.view(), f64::NEG_INFINITY, connectivity), 0);
        }
    }
    // A level that is not an f32 number compares in f64: 0.1f32 is above 0.1 (it rounds up),
    // and the next f32 below it is not.
    let image = ndarray::array![[0.1f32, 0.1f32.next_down(), 0.1f32]];
    let (labels, n) = label::label_array(&gpu, image.view(), 0.1, Connectivity::Four).unwrap();
    assert_eq!((labels, n), (ndarray::array![[1u32, 0, 2]], 2));
}

/// `rows × cols` pixels of whole numbers in [-3, 9], about one in `nan_every` NaN: every sum
/// of them is exact in f64 in any order.
fn whole_image(rows: usize, cols: usize, seed: u64, nan_every: u32) -> Array2<f32> {
    let values = random_in(rows * cols, seed, -3i32, 10);
    let image = random_image(rows, cols, seed, nan_every);
    Array2::from_shape_fn((rows, cols), |(r, c)| {
        let v = image[(r, c)];
        if v.is_nan() {
            v
        } else {
            values[r * cols + c] as f32
        }
    })
}

/// Whether two f64 are the same value, every NaN the same.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Whether two sources are equal field by field, NaN equal to NaN.
fn same_source(a: &Source, b: &Source) -> bool {
    (a.label, a.pixels, a.y_min, a.y_max, a.x_min, a.x_max) == (b.label, b.pixels, b.y_min, b.y_max, b.x_min, b.x_max)
        && same(a.y, b.y)
        && same(a.x, b.x)
        && same(a.flux, b.flux)
        && same(a.peak, b.peak)
}

/// Asserts the GPU's sources of labels 1..=`count` (both forms) equal the CPU's: exactly when
/// `exact` (whole-number pixels), else within [`compare`]'s tolerances.
fn assert_measures_match(gpu: &Gpu, image: ArrayView2<f32>, labels: ArrayView2<u32>, count: usize, exact: bool) {
    let what = format!("{:?} {count} labels", image.dim());
    let pixels: Vec<f32> = image.iter().copied().collect();
    let flat: Vec<u32> = labels.iter().copied().collect();
    let expected = measure::cpu_reference(&pixels, image.ncols(), &flat, count);
    let device_image = DeviceArray::from_array(gpu, image).unwrap();
    let device_labels = DeviceArray::from_array(gpu, labels).unwrap();
    let by_arrays = measure::measure(gpu, &device_image, &device_labels, count).unwrap();
    let by_views = measure::measure_array(gpu, image, labels, count).unwrap();
    for sources in [by_arrays, by_views] {
        assert_eq!(sources.len(), count, "{what}: the number of sources");
        if exact {
            for (got, want) in sources.iter().zip(&expected) {
                assert!(same_source(got, want), "{what}: GPU {got:?}, CPU {want:?}");
            }
        } else {
            let check = compare(&sources, &expected);
            assert!(check.passed, "{what}: {check:?}");
        }
    }
}

#[test]
fn measure_matches_the_reference_at_odd_shapes() {
    let Some(gpu) = gpu("measure_matches_the_reference_at_odd_shapes") else { return };
    for (seed, &(rows, cols)) in SHAPES.iter().enumerate() {
        for connectivity in CONNECTIVITIES {
            // Above a positive level every flux is positive, so its centre is well defined.
            let image = random_image(rows, cols, 300 + seed as u64, 11);
            for level in [0.0, 0.6] {
                let (labels, count) = cpu_labels(image.view(), level, connectivity);
                let labels = Array2::from_shape_vec((rows, cols), labels).unwrap();
                assert_measures_match(&gpu, image.view(), labels.view(), count, false);
                // Labelled on the GPU, measured on it.
                let device_image = DeviceArray::from_array(&gpu, image.view()).unwrap();
                let mut device_labels = DeviceArray::zeros(&gpu, (rows, cols)).unwrap();
                let n = label::label(&gpu, &device_image, level, connectivity, &mut device_labels).unwrap();
                let sources = measure::measure(&gpu, &device_image, &device_labels, n).unwrap();
                let pixels = image.as_slice().unwrap();
                let check = compare(&sources, &measure::cpu_reference(pixels, cols, labels.as_slice().unwrap(), count));
                assert!(check.passed, "{rows}×{cols} level {level} {connectivity:?}: {check:?}");
            }
            // Whole numbers, of either sign, and any level: exactly the CPU's sums.
            let image = whole_image(rows, cols, 400 + seed as u64, 9);
            for level in [-2.0, 0.5, 4.0, f64::NEG_INFINITY] {
                let (labels, count) = cpu_labels(image.view(), level, connectivity);
                let labels = Array2::from_shape_vec((rows, cols), labels).unwrap();
                assert_measures_match(&gpu, image.view(), labels.view(), count, true);
            }
        }
    }
    let image = random_image(1031, 2053, 98, 31);
    let (labels, count) = cpu_labels(image.view(), 0.3, Connectivity::Four);
    let labels = Array2::from_shape_vec((1031, 2053), labels).unwrap();
    assert_measures_match(&gpu, image.view(), labels.view(), count, false);
}

#[test]
fn measure_takes_any_labels() {
    let Some(gpu) = gpu("measure_takes_any_labels") else { return };
    let image = whole_image(37, 41, 7, 5);
    let labels = Array2::from_shape_vec((37, 41), random_in(37 * 41, 8, 0u32, 12)).unwrap();
    // Labels 1..=11 on scattered pixels, some NaN (their flux and centre are NaN; the peak
    // leaves NaN out); labels above `count` left out; labels no pixel carries, with the empty
    // sums; none at all.
    for count in [0, 1, 5, 11, 12, 40, 37 * 41] {
        assert_measures_match(&gpu, image.view(), labels.view(), count, true);
    }
    // A label of only NaN pixels: a NaN flux and centre, a peak of −∞.
    let image = ndarray::array![[f32::NAN, 1.0], [f32::NAN, 2.0]];
    let labels = ndarray::array![[1u32, 2], [1, 0]];
    let sources = measure::measure_array(&gpu, image.view(), labels.view(), 3).unwrap();
    assert!(sources[0].flux.is_nan() && sources[0].x.is_nan() && sources[0].peak == f64::NEG_INFINITY);
    assert_eq!((sources[0].pixels, sources[0].y_min, sources[0].y_max), (2, 0, 1));
    assert_eq!((sources[1].flux, sources[1].peak, sources[1].x), (1.0, 1.0, 1.0));
    let empty = &sources[2];
    assert_eq!((empty.label, empty.pixels, empty.flux, empty.peak), (3, 0, 0.0, f64::NEG_INFINITY));
    assert_eq!((empty.y_min, empty.y_max, empty.x_min, empty.x_max), (usize::MAX, 0, usize::MAX, 0));
    // `compare` fails the NaN flux and passes the empty label.
    let check = compare(&sources, &measure::cpu_reference(&[f32::NAN, 1.0, f32::NAN, 2.0], 2, &[1, 2, 1, 0], 3));
    assert_eq!((check.mismatches, check.first_mismatch), (1, Some(0)));
}

#[test]
fn label_refuses_bad_inputs() {
    let Some(gpu) = gpu("label_refuses_bad_inputs") else { return };
    let image: DeviceMatrix<f32> = DeviceArray::zeros(&gpu, (4, 3)).unwrap();
    let mut wrong = DeviceArray::zeros(&gpu, (3, 5)).unwrap();
    let four = Connectivity::Four;
    assert_refused(label::label(&gpu, &image, 0.0, four, &mut wrong), "label: the labels are 3×5, the image 4×3");
    let mut transposed = DeviceArray::zeros(&gpu, (3, 4)).unwrap();
    assert_refused(label::label(&gpu, &image, 0.0, four, &mut transposed), "the labels are 3×4, the image 4×3");
    let empty: DeviceMatrix<f32> = DeviceArray::zeros(&gpu, (0, 3)).unwrap();
    let mut empty_labels = DeviceArray::zeros(&gpu, (0, 3)).unwrap();
    assert_refused(label::label(&gpu, &empty, 0.0, four, &mut empty_labels), "label: the image is 0×3, with no pixel");
    assert_refused(label::label_array(&gpu, Array2::<f32>::zeros((5, 0)).view(), 0.0, four), "the image is 5×0");
    let mut labels = DeviceArray::zeros(&gpu, (4, 3)).unwrap();
    let nan = "label: the level is NaN, which no pixel is above";
    assert_refused(label::label(&gpu, &image, f64::NAN, four, &mut labels), nan);
    assert_refused(label::label_array(&gpu, Array2::<f32>::zeros((2, 2)).view(), f64::NAN, four), nan);
    // 2^32 pixels (one value, broadcast: nothing is allocated), refused before any copy.
    let zero = arr0(0.0f32);
    let huge = zero.broadcast((65536, 65536)).unwrap();
    assert_refused(
        label::label_array(&gpu, huge, 0.0, four),
        "label: the image is 65536×65536, 4294967296 pixels; u32 labels number at most 4294967294",
    );
    // Taller than the grid can tile: 65536 rows of 16-row tiles.
    let tall = Array2::<f32>::zeros((65536 * 16, 1));
    match label::label_array(&gpu, tall.view(), 0.0, four) {
        Err(GpuError::InvalidLaunch { kernel, reason }) => {
            assert_eq!(kernel, "label_tiles");
            assert!(reason.contains("grid.y = 65536 exceeds the device limit"), "{reason}");
        }
        other => panic!("expected a refused launch, got {other:?}"),
    }
    // An array of another GPU (its own context and stream) is refused, not launched on.
    let other = Gpu::new().unwrap();
    let mut foreign = DeviceArray::zeros(&other, (4, 3)).unwrap();
    let message = "arrays are used on the GPU that made them";
    assert_refused(label::label(&gpu, &image, 0.0, four, &mut foreign), message);
    let foreign_image: DeviceMatrix<f32> = DeviceArray::zeros(&other, (4, 3)).unwrap();
    assert_refused(label::label(&gpu, &foreign_image, 0.0, four, &mut labels), message);
}

#[test]
fn measure_refuses_bad_inputs() {
    let Some(gpu) = gpu("measure_refuses_bad_inputs") else { return };
    let image: DeviceMatrix<f32> = DeviceArray::zeros(&gpu, (4, 3)).unwrap();
    let wrong: DeviceMatrix<u32> = DeviceArray::zeros(&gpu, (3, 4)).unwrap();
    assert_refused(measure::measure(&gpu, &image, &wrong, 1), "measure: the labels are 3×4, the image 4×3");
    let (four_by_three, three_by_four) = (Array2::<f32>::zeros((4, 3)), Array2::<u32>::zeros((3, 4)));
    assert_refused(
        measure::measure_array(&gpu, four_by_three.view(), three_by_four.view(), 1),
        "measure: the labels are 3×4, the image 4×3",
    );
    let empty: DeviceMatrix<f32> = DeviceArray::zeros(&gpu, (3, 0)).unwrap();
    let empty_labels: DeviceMatrix<u32> = DeviceArray::zeros(&gpu, (3, 0)).unwrap();
    assert_refused(measure::measure(&gpu, &empty, &empty_labels, 0), "measure: the image is 3×0, with no pixel");
    let labels: DeviceMatrix<u32> = DeviceArray::zeros(&gpu, (4, 3)).unwrap();
    assert_refused(measure::measure(&gpu, &image, &labels, 13), "measure: 13 labels on 12 pixels");
    assert_refused(
        measure::measure_array(&gpu, four_by_three.view(), four_by_three.mapv(|_| 0u32).view(), usize::MAX),
        &format!("measure: {} labels on 12 pixels", usize::MAX),
    );
    let (zero, no_label) = (arr0(0.0f32), arr0(0u32));
    let (huge, huge_labels) = (zero.broadcast((65536, 65536)).unwrap(), no_label.broadcast((65536, 65536)).unwrap());
    assert_refused(
        measure::measure_array(&gpu, huge, huge_labels, 1),
        "measure: the image is 65536×65536, 4294967296 pixels; at most 4294967295",
    );
    let other = Gpu::new().unwrap();
    let foreign: DeviceMatrix<u32> = DeviceArray::zeros(&other, (4, 3)).unwrap();
    assert_refused(measure::measure(&gpu, &image, &foreign, 1), "arrays are used on the GPU that made them");
}

/// Random cases: a shape (often one row or one column), whole-number pixels in [-3, 9] with
/// NaN salted in (about one in `nan_weight + 9`), a level in [-4, 10] in halves (on the pixels
/// and between them), and a connectivity.
fn cases(nan_weight: u32) -> impl Strategy<Value = (Array2<f32>, f64, Connectivity)> {
    let shape = prop_oneof![(Just(1usize), 1..=300usize), (1..=300usize, Just(1usize)), (1..=40usize, 1..=40usize)];
    let pixel = prop_oneof![9 => (-3i32..=9).prop_map(|v| v as f32), nan_weight => Just(f32::NAN)];
    let image = shape.prop_flat_map(move |(rows, cols)| {
        proptest::collection::vec(pixel.clone(), rows * cols)
            .prop_map(move |pixels| Array2::from_shape_vec((rows, cols), pixels).unwrap())
    });
    let connectivity = prop_oneof![Just(Connectivity::Four), Just(Connectivity::Eight)];
    (image, (-8i32..=20).prop_map(|h| h as f64 / 2.0), connectivity)
}

/// A runner of `cases` cases that writes no failure file.
fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() })
}

#[test]
fn label_agrees_with_the_cpu_on_random_images() {
    let Some(gpu) = gpu("label_agrees_with_the_cpu_on_random_images") else { return };
    let result = runner(256).run(&cases(2), |(image, level, connectivity)| {
        let (expected, count) = cpu_labels(image.view(), level, connectivity);
        let (labels, n) = label::label_array(&gpu, image.view(), level, connectivity).unwrap();
        prop_assert_eq!(n, count);
        prop_assert_eq!(labels.into_raw_vec_and_offset().0, expected);
        Ok(())
    });
    result.unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn measure_agrees_with_the_cpu_on_random_images() {
    let Some(gpu) = gpu("measure_agrees_with_the_cpu_on_random_images") else { return };
    // The labels of the image, measured with their count, or a few labels fewer or more.
    let strategy = (cases(2), -3isize..=3);
    let result = runner(256).run(&strategy, |((image, level, connectivity), extra)| {
        let pixels: Vec<f32> = image.iter().copied().collect();
        let (labels, count) = cpu_labels(image.view(), level, connectivity);
        let count = count.saturating_add_signed(extra).min(pixels.len());
        let expected = measure::cpu_reference(&pixels, image.ncols(), &labels, count);
        let labels = Array2::from_shape_vec(image.dim(), labels).unwrap();
        let sources = measure::measure_array(&gpu, image.view(), labels.view(), count).unwrap();
        prop_assert_eq!(sources.len(), count);
        for (got, want) in sources.iter().zip(&expected) {
            prop_assert!(same_source(got, want), "GPU {:?}, CPU {:?}", got, want);
        }
        Ok(())
    });
    result.unwrap_or_else(|e| panic!("{e}"));
}

/// SciPy's numbering by a flood fill: components in raster order of their first pixel.
fn flood_fill(mask: &[bool], width: usize, connectivity: Connectivity) -> (Vec<u32>, usize) {
    let height = mask.len() / width;
    let mut labels = vec![0u32; mask.len()];
    let mut count = 0;
    for start in 0..mask.len() {
        if !mask[start] || labels[start] != 0 {
            continue;
        }
        count += 1;
        labels[start] = count as u32;
        let mut queue = VecDeque::from([start]);
        while let Some(i) = queue.pop_front() {
            let (row, col) = ((i / width) as isize, (i % width) as isize);
            for (dr, dc) in [(-1isize, -1isize), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)] {
                if connectivity == Connectivity::Four && dr != 0 && dc != 0 {
                    continue;
                }
                let (r, c) = (row + dr, col + dc);
                if r < 0 || c < 0 || r >= height as isize || c >= width as isize {
                    continue;
                }
                let j = r as usize * width + c as usize;
                if mask[j] && labels[j] == 0 {
                    labels[j] = count as u32;
                    queue.push_back(j);
                }
            }
        }
    }
    (labels, count)
}

proptest! {
    #![proptest_config(Config { failure_persistence: None, ..Config::default() })]

    #[test]
    fn cpu_labels_are_a_flood_fills((image, level, connectivity) in cases(2), band_rows in 1usize..6) {
        let pixels: Vec<f32> = image.iter().copied().collect();
        let mask = detect(&pixels, level);
        let expected = flood_fill(&mask, image.ncols(), connectivity);
        prop_assert_eq!(&label::cpu_reference(&mask, image.ncols(), connectivity), &expected);
        prop_assert_eq!(&label_in_bands(&mask, image.ncols(), connectivity, band_rows), &expected);
    }

    #[test]
    fn cpu_measures_sum_each_labels_pixels((image, level, connectivity) in cases(2), extra in -3isize..=3) {
        let (rows, cols) = image.dim();
        let pixels: Vec<f32> = image.iter().copied().collect();
        let (labels, count) = cpu_labels(image.view(), level, connectivity);
        let count = count.saturating_add_signed(extra).min(pixels.len());
        let sources = measure::cpu_reference(&pixels, cols, &labels, count);
        prop_assert_eq!(sources.len(), count);
        for (i, source) in sources.iter().enumerate() {
            let ours: Vec<(usize, usize, f32)> = (0..rows * cols)
                .filter(|&p| labels[p] as usize == i + 1)
                .map(|p| (p / cols, p % cols, pixels[p]))
                .collect();
            prop_assert_eq!(source.label as usize, i + 1);
            prop_assert_eq!(source.pixels, ours.len());
            // Added from +0 in raster order, as SciPy's `bincount` (`Sum` starts from -0).
            let sum = |weight: &dyn Fn(usize, usize) -> f64| {
                ours.iter().fold(0.0, |total, &(r, c, v)| total + f64::from(v) * weight(r, c))
            };
            let flux = sum(&|_, _| 1.0);
            prop_assert!(same(source.flux, flux), "flux {} vs {}", source.flux, flux);
            let (y, x) = (sum(&|r, _| r as f64) / flux, sum(&|_, c| c as f64) / flux);
            prop_assert!(same(source.y, y) && same(source.x, x), "centre {:?}", source);
            let peak = ours.iter().map(|&(_, _, v)| v).fold(f32::NEG_INFINITY, f32::max);
            prop_assert_eq!(source.peak, f64::from(peak));
            let rows_of = ours.iter().map(|&(r, _, _)| r);
            let cols_of = ours.iter().map(|&(_, c, _)| c);
            prop_assert_eq!((source.y_min, source.y_max), (rows_of.clone().min().unwrap_or(usize::MAX), rows_of.max().unwrap_or(0)));
            prop_assert_eq!((source.x_min, source.x_max), (cols_of.clone().min().unwrap_or(usize::MAX), cols_of.max().unwrap_or(0)));
        }
    }
}
