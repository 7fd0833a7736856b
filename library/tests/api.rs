//! The typed API of the transpose, histogram, conv2d, conv1d, vector_add and saxpy families:
//! each function at odd shapes (1, 1×N, N×1, primes) against its family's CPU reference, every
//! step of the `_with` forms, and each shape error; matmul's `gemm_on_slices` beside `gemm`;
//! and `Gpu::upload_staged`. Without a GPU each test says `SKIPPED` and passes (with
//! `REQUIRE_GPU=1` a missing GPU fails instead).

mod common;

use common::{assert_refused, gpu};
use cuda_kernels::data::{random_f32, random_in, random_normal};
use cuda_kernels::gpu::{DeviceArray, DeviceMatrix, DeviceVector, Gpu, GpuError};
use cuda_kernels::matmul::{gemm_array, gemm_on_slices, Dtype, GemmKernel};
use cuda_kernels::{conv1d, conv2d, histogram, saxpy, transpose, vector_add};
use interface::histogram::{F32Bins, U32Bins};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};

fn random_matrix(rows: usize, cols: usize, seed: u64) -> Array2<f32> {
    Array2::from_shape_vec((rows, cols), random_f32(rows * cols, seed)).unwrap()
}

/// Asserts `gpu` and `cpu` within `tolerance` of each other, element by element.
fn assert_close<'a>(
    gpu: impl IntoIterator<Item = &'a f32>,
    cpu: impl IntoIterator<Item = &'a f32>,
    tolerance: f32,
    what: &str,
) {
    let (gpu, cpu): (Vec<f32>, Vec<f32>) = (gpu.into_iter().copied().collect(), cpu.into_iter().copied().collect());
    assert_eq!(gpu.len(), cpu.len(), "{what}: lengths");
    for (i, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
        assert!((g - c).abs() <= tolerance, "{what}: element {i}: GPU {g}, CPU {c}");
    }
}

/// Odd matrix shapes: one element, one row, one column, primes around the tile sizes.
const MATRIX_SHAPES: [(usize, usize); 8] =
    [(1, 1), (1, 37), (37, 1), (1, 1031), (1031, 1), (31, 33), (67, 45), (127, 257)];

/// Odd vector lengths: one element, each tail of a quad, primes.
const LENGTHS: [usize; 10] = [1, 2, 3, 4, 5, 7, 31, 1021, 4099, 1_000_003];

#[test]
fn transpose_matches_the_reference_at_odd_shapes() {
    let Some(gpu) = gpu("transpose_matches_the_reference_at_odd_shapes") else { return };
    for (seed, &(rows, cols)) in MATRIX_SHAPES.iter().enumerate() {
        let host = random_matrix(rows, cols, seed as u64);
        let expected = transpose::cpu_reference(host.as_slice().unwrap(), rows, cols);
        let input = DeviceArray::from_array(&gpu, host.view()).unwrap();
        let mut output = DeviceArray::zeros(&gpu, (cols, rows)).unwrap();
        for &method in transpose::Method::ALL {
            transpose::transpose_with(&gpu, &input, &mut output, method).unwrap();
            let result = output.to_array(&gpu).unwrap();
            assert_eq!(result.as_slice().unwrap(), &expected[..], "{method} {rows}×{cols}");
        }
        transpose::transpose(&gpu, &input, &mut output).unwrap();
        assert_eq!(output.to_array(&gpu).unwrap().as_slice().unwrap(), &expected[..], "default {rows}×{cols}");
        let result = transpose::transpose_array(&gpu, host.view()).unwrap();
        assert_eq!(result.as_slice().unwrap(), &expected[..], "array {rows}×{cols}");
        // A view in another layout (`result.t()`, the input again as a column-major view) is
        // read in logical order: its transpose is `result` again.
        assert_eq!(transpose::transpose_array(&gpu, result.t()).unwrap(), result, "{rows}×{cols} twice");
    }
}

#[test]
fn transpose_refuses_bad_shapes() {
    let Some(gpu) = gpu("transpose_refuses_bad_shapes") else { return };
    let input: DeviceMatrix<f32> = DeviceArray::zeros(&gpu, (4, 3)).unwrap();
    let mut output = DeviceArray::zeros(&gpu, (3, 5)).unwrap();
    assert_refused(
        transpose::transpose(&gpu, &input, &mut output),
        "transpose: the output is 3×5, the input 4×3 needs 3×4",
    );
    let mut square = DeviceArray::zeros(&gpu, (4, 3)).unwrap();
    assert_refused(transpose::transpose(&gpu, &input, &mut square), "the output is 4×3, the input 4×3 needs 3×4");
    let empty: DeviceMatrix<f32> = DeviceArray::zeros(&gpu, (0, 3)).unwrap();
    let mut empty_out = DeviceArray::zeros(&gpu, (3, 0)).unwrap();
    assert_refused(transpose::transpose(&gpu, &empty, &mut empty_out), "transpose: the input is 0×3, with no element");
    assert_refused(transpose::transpose_array(&gpu, Array2::<f32>::zeros((5, 0)).view()), "the input is 5×0");
    // An array of another GPU (its own context and stream) is refused, not launched on.
    let other = Gpu::new().unwrap();
    let mut foreign = DeviceArray::zeros(&other, (3, 4)).unwrap();
    assert_refused(transpose::transpose(&gpu, &input, &mut foreign), "arrays are used on the GPU that made them");
}

#[test]
fn histogram_u32_matches_the_reference() {
    let Some(gpu) = gpu("histogram_u32_matches_the_reference") else { return };
    for (seed, &(n, bins)) in
        [(1, 1), (1, 7), (7, 1), (1021, 7), (4099, 256), (100_003, 257), (300_007, 12_000)].iter().enumerate()
    {
        // About a sixth of the values fall past the last bin.
        let values = random_in(n, seed as u64, 0u32, bins + bins / 5 + 2);
        let expected = histogram::cpu_reference(values.iter().copied(), U32Bins::new(bins));
        let device_values = DeviceArray::from_slice(&gpu, &values).unwrap();
        // Counts that are not zero: the functions zero them first.
        let mut counts = DeviceArray::from_slice(&gpu, &vec![7u32; bins as usize]).unwrap();
        for method in histogram::Method::ALL {
            histogram::histogram_u32_with(&gpu, &device_values, &mut counts, method).unwrap();
            assert_eq!(counts.to_array(&gpu).unwrap().to_vec(), expected, "{method} n={n} bins={bins}");
        }
        histogram::histogram_u32(&gpu, &device_values, &mut counts).unwrap();
        assert_eq!(counts.to_array(&gpu).unwrap().to_vec(), expected, "default n={n} bins={bins}");
        let counts = histogram::histogram_u32_array(&gpu, ArrayView1::from(&values), bins).unwrap();
        assert_eq!(counts.to_vec(), expected, "array n={n} bins={bins}");
    }
}

#[test]
fn histogram_f32_matches_numpys_bins() {
    let Some(gpu) = gpu("histogram_f32_matches_numpys_bins") else { return };
    let mut edges = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -4.0, 4.0, 0.0];
    edges.extend([4.0f32.next_up(), (-4.0f32).next_down(), 4.0f32.next_down()]);
    let cases: [(Vec<f32>, u32, (f64, f64)); 7] = [
        (vec![0.5], 1, (0.0, 1.0)),
        (vec![1.0], 7, (0.0, 1.0)),
        (edges, 150, (-4.0, 4.0)),
        (random_normal(1021, 1), 1, (-4.0, 4.0)),
        (random_normal(100_003, 2), 150, (-4.0, 4.0)),
        (random_in(100_003, 3, 0.6f32, 1.1), 3, (0.7, 1.0)),
        (random_normal(300_007, 4), 20_000, (-4.0, 4.0)),
    ];
    for (values, bins, range) in cases {
        let what = format!("n={} bins={bins} range={range:?}", values.len());
        let expected = histogram::cpu_reference(values.iter().copied(), F32Bins::new(range.0, range.1, bins));
        let device_values = DeviceArray::from_slice(&gpu, &values).unwrap();
        let mut counts = DeviceArray::from_slice(&gpu, &vec![u32::MAX; bins as usize]).unwrap();
        for method in histogram::Method::ALL {
            histogram::histogram_f32_with(&gpu, &device_values, range, &mut counts, method).unwrap();
            assert_eq!(counts.to_array(&gpu).unwrap().to_vec(), expected, "{method} {what}");
        }
        histogram::histogram_f32(&gpu, &device_values, range, &mut counts).unwrap();
        assert_eq!(counts.to_array(&gpu).unwrap().to_vec(), expected, "default {what}");
        let counts = histogram::histogram_array(&gpu, ArrayView1::from(&values), bins, range).unwrap();
        assert_eq!(counts.to_vec(), expected, "array {what}");
    }
}

#[test]
fn histogram_falls_back_to_global_atomics_past_shared_memory() {
    let Some(gpu) = gpu("histogram_falls_back_to_global_atomics_past_shared_memory") else { return };
    // 4 bytes a bin: more than any device's shared memory per block (227 KiB on an H100).
    let bins = 100_003u32;
    let values = random_in(200_003, 5, 0u32, bins + 1000);
    let expected = histogram::cpu_reference(values.iter().copied(), U32Bins::new(bins));
    let device_values = DeviceArray::from_slice(&gpu, &values).unwrap();
    let mut counts = DeviceArray::zeros(&gpu, bins as usize).unwrap();
    histogram::histogram_u32(&gpu, &device_values, &mut counts).unwrap();
    assert_eq!(counts.to_array(&gpu).unwrap().to_vec(), expected);
    let floats = random_normal(200_003, 6);
    let expected = histogram::cpu_reference(floats.iter().copied(), F32Bins::new(-4.0, 4.0, bins));
    let counts = histogram::histogram_array(&gpu, ArrayView1::from(&floats), bins, (-4.0, 4.0)).unwrap();
    assert_eq!(counts.to_vec(), expected);
    // Asked for explicitly, the shared-memory step is refused by its launch check.
    let mut counts = DeviceArray::zeros(&gpu, bins as usize).unwrap();
    match histogram::histogram_u32_with(&gpu, &device_values, &mut counts, histogram::Method::SharedVec4) {
        Err(GpuError::InvalidLaunch { reason, .. }) => assert!(reason.contains("shared memory"), "{reason}"),
        other => panic!("expected a refused launch, got {other:?}"),
    }
}

#[test]
fn histogram_refuses_bad_inputs() {
    let Some(gpu) = gpu("histogram_refuses_bad_inputs") else { return };
    let values: DeviceVector<f32> = DeviceArray::from_slice(&gpu, &[0.5, 1.5]).unwrap();
    let empty: DeviceVector<f32> = DeviceArray::zeros(&gpu, 0).unwrap();
    let mut counts = DeviceArray::zeros(&gpu, 4).unwrap();
    let mut no_counts = DeviceArray::zeros(&gpu, 0).unwrap();
    assert_refused(histogram::histogram_f32(&gpu, &empty, (0.0, 1.0), &mut counts), "histogram: the values are empty");
    assert_refused(
        histogram::histogram_f32(&gpu, &values, (0.0, 1.0), &mut no_counts),
        "histogram: the counts hold no bin",
    );
    for range in [(1.0, 0.0), (1.0, 1.0), (1.0, 1.0 + 1e-12), (f64::NAN, 1.0), (0.0, f64::INFINITY)] {
        assert_refused(histogram::histogram_f32(&gpu, &values, range, &mut counts), "histogram: the f32 range");
        assert_refused(histogram::histogram_array(&gpu, ArrayView1::from(&[0.5f32]), 4, range), "the f32 range");
    }
    let integers: DeviceVector<u32> = DeviceArray::from_slice(&gpu, &[1, 2]).unwrap();
    let empty_integers: DeviceVector<u32> = DeviceArray::zeros(&gpu, 0).unwrap();
    assert_refused(histogram::histogram_u32(&gpu, &empty_integers, &mut counts), "histogram: the values are empty");
    assert_refused(histogram::histogram_u32(&gpu, &integers, &mut no_counts), "histogram: the counts hold no bin");
    assert_refused(histogram::histogram_u32_array(&gpu, ArrayView1::from(&[1u32]), 0), "the counts hold no bin");
    assert_refused(histogram::histogram_u32_array(&gpu, ArrayView1::from(&[] as &[u32]), 3), "the values are empty");
}

/// What conv2d's result may differ from the reference by (the module's tolerance): `taps`
/// products of at most `scale` each.
fn conv_tolerance(taps: usize, scale: f32) -> f32 {
    4.0 * taps as f32 * f32::EPSILON * scale.max(1.0)
}

#[test]
fn conv2d_matches_the_reference_at_odd_shapes() {
    let Some(gpu) = gpu("conv2d_matches_the_reference_at_odd_shapes") else { return };
    for (seed, &(height, width)) in MATRIX_SHAPES.iter().enumerate() {
        let image = random_matrix(height, width, seed as u64);
        let input = DeviceArray::from_array(&gpu, image.view()).unwrap();
        let mut output = DeviceArray::zeros(&gpu, (height, width)).unwrap();
        for side in [3, 5, 7] {
            let filter = random_matrix(side, side, 100 + seed as u64);
            let expected = conv2d::cpu_reference(image.view(), filter.view());
            let tolerance = conv_tolerance(side * side, 1.0);
            for method in conv2d::Method::ALL {
                conv2d::conv2d_with(&gpu, &input, filter.view(), &mut output, method).unwrap();
                let what = format!("{method} {height}×{width} {side}×{side}");
                assert_close(&output.to_array(&gpu).unwrap(), &expected, tolerance, &what);
            }
            conv2d::conv2d(&gpu, &input, filter.view(), &mut output).unwrap();
            assert_close(&output.to_array(&gpu).unwrap(), &expected, tolerance, "default");
            // The filter as a transposed view: its taps are read in logical order.
            let flipped = filter.t();
            let result = conv2d::conv2d_array(&gpu, image.view(), flipped).unwrap();
            let expected = conv2d::cpu_reference(image.view(), flipped);
            assert_close(&result, &expected, tolerance, &format!("array {height}×{width} {side}×{side}ᵀ"));
        }
    }
}

#[test]
fn conv2d_named_filters_and_queued_filters() {
    let Some(gpu) = gpu("conv2d_named_filters_and_queued_filters") else { return };
    let image = random_matrix(131, 67, 9);
    let input = DeviceArray::from_array(&gpu, image.view()).unwrap();
    // Every launch queued before any is read: each one's filter is written after the kernels
    // queued before it have read theirs.
    let mut outputs: Vec<DeviceMatrix<f32>> =
        conv2d::Named::ALL.iter().map(|_| DeviceArray::zeros(&gpu, (131, 67)).unwrap()).collect();
    for (named, output) in conv2d::Named::ALL.iter().zip(&mut outputs) {
        conv2d::conv2d(&gpu, &input, named.filter().view(), output).unwrap();
    }
    for (named, output) in conv2d::Named::ALL.iter().zip(&outputs) {
        let filter = named.filter();
        let expected = conv2d::cpu_reference(image.view(), filter.view());
        let tolerance = conv_tolerance(filter.len(), 2.0);
        assert_close(&output.to_array(&gpu).unwrap(), &expected, tolerance, named.name());
    }
    // A second GPU object has its own module, so its own filter.
    let other = Gpu::new().unwrap();
    let other_input = DeviceArray::from_array(&other, image.view()).unwrap();
    let mut other_output = DeviceArray::zeros(&other, (131, 67)).unwrap();
    let (box_filter, sobel) = (conv2d::Named::Box.filter(), conv2d::Named::SobelX.filter());
    conv2d::conv2d(&gpu, &input, box_filter.view(), &mut outputs[0]).unwrap();
    conv2d::conv2d(&other, &other_input, sobel.view(), &mut other_output).unwrap();
    let tolerance = conv_tolerance(9, 2.0);
    let expected = conv2d::cpu_reference(image.view(), box_filter.view());
    assert_close(&outputs[0].to_array(&gpu).unwrap(), &expected, tolerance, "box on the first GPU");
    let expected = conv2d::cpu_reference(image.view(), sobel.view());
    assert_close(&other_output.to_array(&other).unwrap(), &expected, tolerance, "sobel-x on the second");
}

#[test]
fn conv2d_refuses_bad_shapes() {
    let Some(gpu) = gpu("conv2d_refuses_bad_shapes") else { return };
    let image: DeviceMatrix<f32> = DeviceArray::zeros(&gpu, (5, 4)).unwrap();
    let box_filter = conv2d::Named::Box.filter();
    let mut output = DeviceArray::zeros(&gpu, (4, 5)).unwrap();
    assert_refused(
        conv2d::conv2d(&gpu, &image, box_filter.view(), &mut output),
        "conv2d: the output is 4×5, the image 5×4 needs 5×4",
    );
    let mut output = DeviceArray::zeros(&gpu, (5, 4)).unwrap();
    for (rows, cols) in [(1, 1), (2, 2), (4, 4), (3, 5), (5, 3), (9, 9), (0, 0)] {
        let filter = Array2::<f32>::ones((rows, cols));
        let expected = format!("conv2d: the filter is {rows}×{cols}; it must be 3×3, 5×5 or 7×7");
        assert_refused(conv2d::conv2d(&gpu, &image, filter.view(), &mut output), &expected);
        assert_refused(conv2d::conv2d_array(&gpu, Array2::<f32>::ones((5, 4)).view(), filter.view()), &expected);
    }
    let empty: DeviceMatrix<f32> = DeviceArray::zeros(&gpu, (0, 4)).unwrap();
    let mut empty_output = DeviceArray::zeros(&gpu, (0, 4)).unwrap();
    assert_refused(
        conv2d::conv2d(&gpu, &empty, box_filter.view(), &mut empty_output),
        "conv2d: the image is 0×4, with no pixel",
    );
    assert_refused(conv2d::conv2d_array(&gpu, ArrayView2::from_shape((3, 0), &[]).unwrap(), box_filter.view()), "3×0");
}

#[test]
fn conv1d_matches_the_reference_at_odd_lengths() {
    let Some(gpu) = gpu("conv1d_matches_the_reference_at_odd_lengths") else { return };
    for (seed, &n) in LENGTHS.iter().chain(&[255, 257]).enumerate() {
        let signal = Array1::from(random_f32(n, seed as u64));
        let input = DeviceArray::from_array(&gpu, signal.view()).unwrap();
        let mut output = DeviceArray::zeros(&gpu, n).unwrap();
        for taps in [3, 5, 7] {
            let filter = Array1::from(random_f32(taps, 200 + seed as u64));
            let expected = conv1d::cpu_reference(signal.view(), filter.view());
            let tolerance = conv_tolerance(taps, 1.0);
            for &method in conv1d::Method::ALL {
                conv1d::conv1d_with(&gpu, &input, filter.view(), &mut output, method).unwrap();
                assert_close(&output.to_array(&gpu).unwrap(), &expected, tolerance, &format!("{method} n={n} {taps}"));
            }
            conv1d::conv1d(&gpu, &input, filter.view(), &mut output).unwrap();
            assert_close(&output.to_array(&gpu).unwrap(), &expected, tolerance, &format!("default n={n} {taps}"));
            // Taps from a strided view, read in logical order.
            let reversed = filter.slice(ndarray::s![..;-1]);
            let result = conv1d::conv1d_array(&gpu, signal.view(), reversed).unwrap();
            let expected = conv1d::cpu_reference(signal.view(), reversed);
            assert_close(&result, &expected, tolerance, &format!("array n={n} {taps} reversed"));
        }
    }
}

#[test]
fn conv1d_refuses_bad_shapes() {
    let Some(gpu) = gpu("conv1d_refuses_bad_shapes") else { return };
    let signal: DeviceVector<f32> = DeviceArray::zeros(&gpu, 10).unwrap();
    let taps = Array1::<f32>::ones(3);
    let mut short = DeviceArray::zeros(&gpu, 9).unwrap();
    assert_refused(
        conv1d::conv1d(&gpu, &signal, taps.view(), &mut short),
        "conv1d: the output holds 9 elements, the signal 10 needs 10",
    );
    let mut output = DeviceArray::zeros(&gpu, 10).unwrap();
    for count in [0, 1, 2, 4, 6, 9] {
        let taps = Array1::<f32>::ones(count);
        let expected = format!("conv1d: the filter has {count} taps; it must have 3, 5 or 7");
        assert_refused(conv1d::conv1d(&gpu, &signal, taps.view(), &mut output), &expected);
        assert_refused(conv1d::conv1d_array(&gpu, Array1::<f32>::ones(4).view(), taps.view()), &expected);
    }
    let empty: DeviceVector<f32> = DeviceArray::zeros(&gpu, 0).unwrap();
    let mut empty_output = DeviceArray::zeros(&gpu, 0).unwrap();
    assert_refused(conv1d::conv1d(&gpu, &empty, taps.view(), &mut empty_output), "conv1d: the signal is empty");
    assert_refused(conv1d::conv1d_array(&gpu, Array1::<f32>::zeros(0).view(), taps.view()), "the signal is empty");
}

#[test]
fn vector_add_matches_the_reference() {
    let Some(gpu) = gpu("vector_add_matches_the_reference") else { return };
    for (seed, &n) in LENGTHS.iter().enumerate() {
        let (a, b) = (random_f32(n, seed as u64), random_f32(n, 1000 + seed as u64));
        let expected = vector_add::cpu_reference(&a, &b);
        let (da, db) = (DeviceArray::from_slice(&gpu, &a).unwrap(), DeviceArray::from_slice(&gpu, &b).unwrap());
        let mut dc = DeviceArray::zeros(&gpu, n).unwrap();
        vector_add::vector_add(&gpu, &da, &db, &mut dc).unwrap();
        assert_eq!(dc.to_array(&gpu).unwrap().to_vec(), expected, "n={n}");
        let c = vector_add::vector_add_array(&gpu, ArrayView1::from(&a), ArrayView1::from(&b)).unwrap();
        assert_eq!(c.to_vec(), expected, "array n={n}");
        // The same array twice.
        vector_add::vector_add(&gpu, &da, &da, &mut dc).unwrap();
        assert_eq!(dc.to_array(&gpu).unwrap().to_vec(), vector_add::cpu_reference(&a, &a), "a + a, n={n}");
    }
}

#[test]
fn vector_add_refuses_bad_shapes() {
    let Some(gpu) = gpu("vector_add_refuses_bad_shapes") else { return };
    let a: DeviceVector<f32> = DeviceArray::zeros(&gpu, 4).unwrap();
    let b: DeviceVector<f32> = DeviceArray::zeros(&gpu, 5).unwrap();
    let mut c = DeviceArray::zeros(&gpu, 4).unwrap();
    assert_refused(vector_add::vector_add(&gpu, &a, &b, &mut c), "vector_add: a holds 4 elements, b 5");
    let mut short = DeviceArray::zeros(&gpu, 3).unwrap();
    assert_refused(
        vector_add::vector_add(&gpu, &a, &a, &mut short),
        "vector_add: the output c holds 3 elements, a and b 4",
    );
    let empty: DeviceVector<f32> = DeviceArray::zeros(&gpu, 0).unwrap();
    let mut empty_c = DeviceArray::zeros(&gpu, 0).unwrap();
    assert_refused(vector_add::vector_add(&gpu, &empty, &empty, &mut empty_c), "vector_add: a is empty");
    let (four, five) = (Array1::<f32>::ones(4), Array1::<f32>::ones(5));
    assert_refused(vector_add::vector_add_array(&gpu, four.view(), five.view()), "a holds 4 elements, b 5");
    assert_refused(
        vector_add::vector_add_array(&gpu, four.slice(ndarray::s![..0]), four.slice(ndarray::s![..0])),
        "a is empty",
    );
}

#[test]
fn saxpy_matches_the_reference() {
    let Some(gpu) = gpu("saxpy_matches_the_reference") else { return };
    for (seed, &n) in LENGTHS.iter().enumerate() {
        let (x, y) = (random_f32(n, seed as u64), random_f32(n, 1000 + seed as u64));
        for a in [saxpy::A, -1.0, 0.0] {
            let expected = saxpy::cpu_reference(a, &x, &y);
            // x and y in [-1, 1): one rounding of |a·x| + |y| at most.
            let tolerance = (a.abs() + 1.0) * f32::EPSILON;
            let dx = DeviceArray::from_slice(&gpu, &x).unwrap();
            let mut dy = DeviceArray::from_slice(&gpu, &y).unwrap();
            saxpy::saxpy(&gpu, a, &dx, &mut dy).unwrap();
            assert_close(&dy.to_array(&gpu).unwrap(), &expected, tolerance, &format!("a={a} n={n}"));
            let result = saxpy::saxpy_array(&gpu, a, ArrayView1::from(&x), ArrayView1::from(&y)).unwrap();
            assert_close(&result, &expected, tolerance, &format!("array a={a} n={n}"));
        }
    }
}

#[test]
fn saxpy_refuses_bad_shapes() {
    let Some(gpu) = gpu("saxpy_refuses_bad_shapes") else { return };
    let x: DeviceVector<f32> = DeviceArray::zeros(&gpu, 6).unwrap();
    let mut y = DeviceArray::zeros(&gpu, 5).unwrap();
    assert_refused(saxpy::saxpy(&gpu, 2.0, &x, &mut y), "saxpy: x holds 6 elements, y 5");
    let empty: DeviceVector<f32> = DeviceArray::zeros(&gpu, 0).unwrap();
    let mut empty_y = DeviceArray::zeros(&gpu, 0).unwrap();
    assert_refused(saxpy::saxpy(&gpu, 2.0, &empty, &mut empty_y), "saxpy: x is empty");
    let (six, five) = (Array1::<f32>::ones(6), Array1::<f32>::ones(5));
    assert_refused(saxpy::saxpy_array(&gpu, 2.0, six.view(), five.view()), "x holds 6 elements, y 5");
    assert_refused(
        saxpy::saxpy_array(&gpu, 2.0, six.slice(ndarray::s![..0]), five.slice(ndarray::s![..0])),
        "x is empty",
    );
}

/// `gemm_on_slices` (what `host matmul --gpus` runs on each GPU's share of C) gives what `gemm`
/// gives on the same inputs, for f32 and the tensor types, and refuses memory too short for the
/// shape and an empty product.
#[test]
fn gemm_on_slices_matches_gemm_and_refuses_short_memory() {
    let Some(gpu) = gpu("gemm_on_slices_matches_gemm_and_refuses_short_memory") else { return };
    let (m, n, k) = (67, 45, 33);
    let (a, b) = (random_matrix(m, k, 11), random_matrix(k, n, 12));
    let da = gpu.upload("A", a.as_slice().unwrap()).unwrap();
    let db = gpu.upload("B", b.as_slice().unwrap()).unwrap();
    let dc = gpu.poisoned("C", m * n).unwrap();
    for dtype in [Dtype::F32, Dtype::Tf32, Dtype::Bf16, Dtype::F16] {
        let want = gemm_array(&gpu, a.view(), b.view(), dtype).unwrap();
        let kernel = GemmKernel::chosen(&gpu, dtype, (m, n, k)).unwrap();
        // SAFETY: the buffers outlive the product: the download below waits for it.
        unsafe { gemm_on_slices(&gpu, (&da, &db, &dc), (m, n, k), dtype, kernel) }.unwrap();
        let got = gpu.download("C", &dc, m * n).unwrap();
        assert_eq!(got, want.into_raw_vec_and_offset().0, "{}: the same kernel on the same inputs", dtype.name());
    }
    let kernel = GemmKernel::chosen(&gpu, Dtype::F32, (m + 1, n, k)).unwrap();
    // SAFETY: refused before anything is queued.
    let short = unsafe { gemm_on_slices(&gpu, (&da, &db, &dc), (m + 1, n, k), Dtype::F32, kernel) };
    assert_refused(short, &format!("gemm: A holds {} values, {}×{n}×{k} needs", m * k, m + 1));
    // SAFETY: as above.
    let empty = unsafe { gemm_on_slices(&gpu, (&da, &db, &dc), (0, n, k), Dtype::F32, kernel) };
    assert_refused(empty, "gemm: an empty product");
}

#[test]
fn download_copies_every_chunk_back() {
    let Some(gpu) = gpu("download_copies_every_chunk_back") else { return };
    let (chunk, least) = (cuda_kernels::gpu::STAGING_CHUNK_BYTES / 4, cuda_kernels::gpu::STAGED_DOWNLOAD_BYTES / 4);
    let host: Vec<u32> = (0..3 * chunk as u32 + 5).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let device = gpu.upload("the values", &host).unwrap();
    // Below the staged size (a copy to pageable memory), on its edge, within one chunk, on the
    // chunk's edges, and over several, the last one short: prefixes of one buffer.
    for len in [0, 1, least - 1, least, chunk - 1, chunk, chunk + 1, 2 * chunk, host.len()] {
        assert_eq!(gpu.download("the values", &device, len).unwrap(), host[..len], "{len} values");
    }
    let error = gpu.download("the values", &device, host.len() + 1).unwrap_err().to_string();
    assert!(error.contains("copying the values back") && error.contains("asked of a buffer of"), "{error}");
}

#[test]
fn upload_staged_copies_every_chunk() {
    let Some(gpu) = gpu("upload_staged_copies_every_chunk") else { return };
    let chunk = cuda_kernels::gpu::STAGING_CHUNK_BYTES / std::mem::size_of::<f32>();
    // Within one chunk (a plain upload), on its edges, and several chunks with a short last one,
    // so that both page-locked chunks are refilled, within an upload and from the last one's.
    for len in [1, chunk - 1, chunk, chunk + 1, 2 * chunk, 3 * chunk + 7, 3 * chunk + 7] {
        let host: Vec<f32> = (0..len).map(|i| i as f32 * 0.5 - 3.0).collect();
        let device = gpu.upload_staged("the values", &host).unwrap();
        assert_eq!(gpu.download("the values", &device, len).unwrap(), host, "{len} values");
    }
    // A type of 12 bytes, which does not divide the chunk: its chunks hold whole values.
    let triples: Vec<[u32; 3]> = (0..chunk as u32).map(|i| [i, !i, i ^ 0x5555]).collect();
    let device = gpu.upload_staged("the triples", &triples).unwrap();
    assert_eq!(gpu.download("the triples", &device, triples.len()).unwrap(), triples);
}
