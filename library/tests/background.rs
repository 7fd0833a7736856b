//! The background family's typed API against its CPU reference: odd shapes (1×1, 1×N, N×1,
//! 37×53, primes), boxes larger than the image, a step and a box of one pixel, odd boxes,
//! NaN-salted and blanked images, all-NaN boxes and images, no clipping and narrow windows,
//! and random images and parameters; the device-array form with and without the S/N image; a
//! second pass's kept boxes and its sky's least noise; every error; and a survey-sized 32768²
//! image, checked at sampled grid points and pixels. Without a GPU each GPU test says
//! `SKIPPED` and passes (with `REQUIRE_GPU=1` a missing GPU fails instead); the CPU
//! reference's own rules run everywhere.

mod common;

use common::{assert_refused, gpu};
use cuda_kernels::background::{
    background, background_array, compare, cpu_pixel, cpu_point, cpu_reference, drop_crowded, fill, least_noise,
    Mapper, Maps, Mask, Params,
};
use cuda_kernels::data::{random_in, random_normal};
use cuda_kernels::gpu::{DeviceMatrix, Gpu};
use ndarray::Array2;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Odd shapes (rows × columns): one pixel, a row, a column, primes, wider and taller than a box.
const SHAPES: [(usize, usize); 9] =
    [(1, 1), (1, 53), (53, 1), (1, 1031), (1031, 1), (2, 3), (37, 53), (67, 45), (127, 257)];

/// Parameters at each shape: BANE's default (a box larger than most of these images), a step
/// and a box of one pixel, odd boxes smaller than a cell, no clipping, a narrow window.
fn parameter_sets() -> Vec<Params> {
    vec![
        Params::default(),
        Params::new(1, 1),
        Params::new(4, 3),
        Params { step: (3, 7), box_size: (9, 5), ..Params::default() },
        Params { rounds: 0, ..Params::new(8, 24) },
        Params { kappa: 1.5, ..Params::new(5, 17) },
    ]
}

/// Noise on a slope with a few bright pixels; about one pixel in `nan_every` NaN (none for
/// 0), and some infinities among them, which every box leaves out.
fn sky(rows: usize, cols: usize, seed: u64, nan_every: u32) -> Array2<f32> {
    let noise = random_normal(rows * cols, seed);
    let draws = random_in(rows * cols, seed ^ 0x5EED, 0u32, 1000);
    let mut image = Array2::from_shape_fn((rows, cols), |(y, x)| {
        let i = y * cols + x;
        let bright = if draws[i] < 5 { 50.0 } else { 0.0 };
        noise[i] + 0.02 * x as f32 - 0.01 * y as f32 + bright
    });
    if nan_every > 0 {
        for (i, v) in image.iter_mut().enumerate() {
            match draws[i] % nan_every {
                0 => *v = f32::NAN,
                1 if draws[i].is_multiple_of(7) => *v = f32::INFINITY,
                _ => {}
            }
        }
    }
    image
}

/// The GPU's maps of `image`, asserted equal to the CPU's; returns them.
fn assert_maps_match(gpu: &Gpu, image: &Array2<f32>, params: &Params) -> Maps {
    let what = format!("{:?} {params:?}", image.dim());
    let pixels = image.as_standard_layout().to_owned();
    let expected = cpu_reference(pixels.as_slice().unwrap(), image.ncols(), params).unwrap();
    let maps = background_array(gpu, image.view(), params).unwrap_or_else(|e| panic!("{what}: {e}"));
    let check = compare(&maps, &expected);
    assert!(check.passed, "{what}: {check:?}");
    // Equal bit for bit, as the arithmetic is the same: the tolerances are a margin, not used.
    assert_eq!(check.worst_error, 0.0, "{what}");
    maps
}

#[test]
fn maps_match_the_reference_at_odd_shapes() {
    let Some(gpu) = gpu("maps_match_the_reference_at_odd_shapes") else { return };
    for (seed, &(rows, cols)) in SHAPES.iter().enumerate() {
        for nan_every in [0, 9] {
            let image = sky(rows, cols, seed as u64, nan_every);
            for params in parameter_sets() {
                assert_maps_match(&gpu, &image, &params);
            }
        }
    }
    // A view in another layout is read in logical order.
    let image = sky(45, 67, 3, 11);
    let transposed = image.t().to_owned();
    let maps = background_array(&gpu, image.t(), &Params::new(6, 18)).unwrap();
    let check = compare(&maps, &assert_maps_match(&gpu, &transposed, &Params::new(6, 18)));
    assert_eq!((check.passed, check.worst_error), (true, 0.0));
}

/// Random cases: a shape (often one row or one column), pixels of few distinct values (ties
/// at the median and at the window's edges) or of many, NaN and infinities salted in, and any
/// step, box, κ and number of rounds.
fn cases() -> impl Strategy<Value = (Array2<f32>, Params)> {
    let shape = prop_oneof![(Just(1usize), 1..=200usize), (1..=200usize, Just(1usize)), (1..=60usize, 1..=60usize)];
    let pixel = prop_oneof![
        10 => (-4i32..=4).prop_map(|v| v as f32 * 0.5),
        10 => -100.0f32..100.0,
        1 => Just(f32::NAN),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(-0.0f32),
    ];
    let image = shape.prop_flat_map(move |(rows, cols)| {
        proptest::collection::vec(pixel.clone(), rows * cols)
            .prop_map(move |pixels| Array2::from_shape_vec((rows, cols), pixels).unwrap())
    });
    let params = (1..=20usize, 1..=20usize, 1..=70usize, 1..=70usize, 0.5f64..5.0, 0u32..=12).prop_map(
        |(step_y, step_x, box_y, box_x, kappa, rounds)| Params {
            step: (step_y, step_x),
            box_size: (box_y, box_x),
            kappa,
            rounds,
        },
    );
    (image, params)
}

#[test]
fn maps_agree_with_the_cpu_on_random_images() {
    let Some(gpu) = gpu("maps_agree_with_the_cpu_on_random_images") else { return };
    let mut runner = TestRunner::new(Config { cases: 256, failure_persistence: None, ..Config::default() });
    let result = runner.run(&cases(), |(image, params)| {
        let expected = cpu_reference(image.as_slice().unwrap(), image.ncols(), &params).unwrap();
        let maps = background_array(&gpu, image.view(), &params).unwrap();
        let check = compare(&maps, &expected);
        prop_assert!(check.passed && check.worst_error == 0.0, "{:?} {:?}: {:?}", image.dim(), params, check);
        Ok(())
    });
    result.unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn blanked_areas_and_all_nan_boxes_give_nan_maps() {
    let Some(gpu) = gpu("blanked_areas_and_all_nan_boxes_give_nan_maps") else { return };
    // A primary beam blanked outside its circle, at the default grid and at one whose boxes
    // are smaller than a cell (grid points outside the circle have no finite pixel).
    let side = 301;
    let mut image = sky(side, side, 7, 0);
    let centre = side as f32 / 2.0;
    image.indexed_iter_mut().for_each(|((y, x), v)| {
        if (x as f32 - centre).hypot(y as f32 - centre) > centre {
            *v = f32::NAN;
        }
    });
    // The default box (96 pixels) at the corner reaches inside the circle; a box of 5 does not.
    for (params, corner_blank) in [(Params::default(), false), (Params::new(20, 5), true)] {
        let maps = assert_maps_match(&gpu, &image, &params);
        assert!(maps.background[[0, 0]].is_nan() && maps.noise[[0, 0]].is_nan() && maps.snr[[0, 0]].is_nan());
        assert_eq!(maps.grid[0].is_nan(), corner_blank, "the corner's grid point with {params:?}");
    }
    // Every pixel NaN: every map and grid value NaN.
    let blank = Array2::from_elem((19, 23), f32::NAN);
    let maps = assert_maps_match(&gpu, &blank, &Params::new(4, 8));
    assert!(maps.grid.iter().all(|v| v.is_nan()) && maps.background.iter().all(|v| v.is_nan()));
    // Equal values: no noise, so the S/N is ±∞ or NaN, the same on both sides.
    let flat = Array2::from_shape_fn((17, 29), |(y, _)| if y < 8 { 2.0 } else { 3.0 });
    assert_maps_match(&gpu, &flat, &Params::new(4, 4));
}

#[test]
fn device_arrays_with_and_without_the_snr_image() {
    let Some(gpu) = gpu("device_arrays_with_and_without_the_snr_image") else { return };
    let image = sky(37, 53, 21, 13);
    let params = Params::new(8, 24);
    let expected = cpu_reference(image.as_slice().unwrap(), 53, &params).unwrap();
    let device_image = DeviceMatrix::from_array(&gpu, image.view()).unwrap();
    let zeros = || DeviceMatrix::<f32>::zeros(&gpu, (37, 53)).unwrap();
    let (mut level, mut noise, mut snr) = (zeros(), zeros(), zeros());
    let grid = background(&gpu, &device_image, &params, &mut level, &mut noise, Some(&mut snr)).unwrap();
    // Bit for bit, or NaN on both sides (the GPU's 0 / 0 and the CPU's differ in sign bit).
    let same = |a: &[f32], b: &Array2<f32>| {
        a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
    };
    let host = |map: &DeviceMatrix<f32>| map.to_array(&gpu).unwrap().into_raw_vec_and_offset().0;
    let grid = grid.to_array(&gpu).unwrap().to_vec();
    assert!(grid.iter().zip(&expected.grid).all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())));
    assert!(same(&host(&level), &expected.background) && same(&host(&noise), &expected.noise));
    assert!(same(&host(&snr), &expected.snr));
    // Without the S/N image the other two are the same.
    let (mut level, mut noise) = (zeros(), zeros());
    drop(background(&gpu, &device_image, &params, &mut level, &mut noise, None).unwrap());
    assert!(same(&host(&level), &expected.background) && same(&host(&noise), &expected.noise));
}

/// Bit for bit, or NaN on both sides.
fn same_f64(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

#[test]
fn a_second_pass_keeps_the_first_passs_values_where_its_mask_left_a_box_whole() {
    let Some(gpu) = gpu("a_second_pass_keeps_the_first_passs_values_where_its_mask_left_a_box_whole") else { return };
    let (mut whole, mut touched_boxes) = (0, 0);
    for (seed, &(rows, cols)) in [(37, 53), (127, 257), (1031, 1), (300, 301)].iter().enumerate() {
        let image = sky(rows, cols, 40 + seed as u64, 17);
        let pixels = image.as_slice().unwrap();
        for params in
            [Params::default(), Params::new(4, 3), Params { step: (3, 7), box_size: (9, 5), ..Params::default() }]
        {
            let what = format!("{rows}x{cols} {params:?}");
            let mapper = Mapper::new(&gpu, (rows, cols), &params).unwrap();
            let (grid_rows, grid_columns) = mapper.grid_shape();
            let (points, n) = (grid_rows * grid_columns, rows * cols);
            let device_image = gpu.upload("the image", pixels).unwrap();
            // Poisoned: a masked pixel the interpolation did not write reads as one left out,
            // whose tile the check of the marked tiles below then expects.
            let (grid, finite) = (
                gpu.poisoned::<f64>("grid", mapper.grid_len()).unwrap(),
                gpu.poisoned::<u32>("counts", points).unwrap(),
            );
            let maps = || gpu.poisoned::<f32>("a map", n).unwrap();
            let (level, noise, masked) = (maps(), maps(), maps());
            let count = gpu.upload("count", &[0u32]).unwrap();
            let tiles = gpu.upload("tiles", &vec![0u32; mapper.tiles()]).unwrap();
            // SAFETY: every buffer outlives the kernels: the downloads below wait for them.
            unsafe {
                gpu.launch("background_grid", &mapper.grid_args(&device_image, &grid).counting(&finite)).unwrap();
                // The bright pixels (50 over noise of 1) are masked, and a few of the noise's.
                let mask = Mask { level: 3.0, masked: &masked, count: &count, touched: &tiles };
                let args = mapper.interpolate_args(&device_image, &grid, &level, &noise, None).masking(mask);
                gpu.launch("background_interpolate", &args).unwrap();
            }
            let first = gpu.download("grid", &grid, mapper.grid_len()).unwrap();
            let first_counts = gpu.download("counts", &finite, points).unwrap();
            let (every_grid, every_count) =
                (gpu.upload("grid", &first).unwrap(), gpu.upload("counts", &first_counts).unwrap());
            // SAFETY: as above.
            unsafe {
                gpu.launch("background_grid", &mapper.grid_args(&masked, &every_grid).counting(&every_count)).unwrap();
                let kept = mapper.grid_args(&masked, &grid).counting(&finite).keeping_untouched(&tiles);
                gpu.launch("background_grid", &kept).unwrap();
            }
            let kept = gpu.download("grid", &grid, mapper.grid_len()).unwrap();
            let every = gpu.download("grid", &every_grid, mapper.grid_len()).unwrap();
            assert!(same_f64(&kept, &every), "{what}: the kept grid differs from every box's");
            let kept_counts = gpu.download("counts", &finite, points).unwrap();
            assert_eq!(kept_counts, gpu.download("counts", &every_count, points).unwrap(), "{what}");
            // The tiles marked are those holding a pixel the mask left out.
            let masked = gpu.download("masked", &masked, n).unwrap();
            let marked = gpu.download("tiles", &tiles, mapper.tiles()).unwrap();
            let (step_y, step_x) = params.step;
            let row = cols.div_ceil(step_x);
            let mut want = vec![0u32; mapper.tiles()];
            for (i, (&pixel, &left)) in pixels.iter().zip(&masked).enumerate() {
                if pixel.is_finite() && left.is_nan() {
                    want[(i / cols) / step_y * row + (i % cols) / step_x] = 1;
                }
            }
            assert_eq!(marked, want, "{what}: the marked tiles");
            let changed = first_counts.iter().zip(&kept_counts).filter(|(a, b)| a != b).count();
            touched_boxes += changed;
            whole += points - changed;
        }
    }
    // Both kinds of box were seen: some kept, some made again.
    assert!(whole > 0 && touched_boxes > 0, "{whole} boxes whole, {touched_boxes} touched");
}

/// `background_least_noise` writes what `least_noise` makes, bit for bit (or NaN): on the grids
/// of odd shapes (NaN points among them, and all-NaN grids), with reaches from none to past the
/// grid.
#[test]
fn the_least_noise_within_reach_matches_the_reference() {
    let Some(gpu) = gpu("the_least_noise_within_reach_matches_the_reference") else { return };
    for (seed, &(rows, cols)) in SHAPES.iter().enumerate() {
        for (params, nan_every) in [(Params::new(4, 3), 7), (Params::new(1, 1), 3), (Params::new(8, 24), 1)] {
            let mapper = Mapper::new(&gpu, (rows, cols), &params).unwrap();
            let maps =
                cpu_reference(sky(rows, cols, 70 + seed as u64, nan_every).as_slice().unwrap(), cols, &params).unwrap();
            let grid = gpu.upload("grid", &maps.grid).unwrap();
            for reach in [(0, 0), (1, 2), (6, 6), (usize::MAX, 3)] {
                let sky = gpu.poisoned::<f64>("sky", mapper.grid_len()).unwrap();
                // SAFETY: both buffers outlive the kernel: the download waits for it.
                unsafe { gpu.launch("background_least_noise", &mapper.least_noise_args(&grid, reach, &sky)).unwrap() };
                let made = gpu.download("sky", &sky, mapper.grid_len()).unwrap();
                let want = least_noise(&maps.grid, mapper.grid_shape(), reach);
                assert!(same_f64(&made, &want), "{rows}x{cols} {params:?} reach {reach:?}");
            }
        }
    }
}

/// `background_fill` leaves out the crowded points and fills the grid as `drop_crowded` and
/// `fill` do, bit for bit (or NaN): on the grids of odd shapes (NaN points among them), with
/// points already empty, with none crowded, with clusters crowded (filled over several rounds),
/// and with every point crowded (none reached: all the first's).
#[test]
fn the_filling_matches_the_reference() {
    let Some(gpu) = gpu("the_filling_matches_the_reference") else { return };
    for (seed, &(rows, cols)) in SHAPES.iter().enumerate() {
        for (params, nan_every) in [(Params::new(4, 3), 7), (Params::new(1, 1), 3), (Params::new(8, 24), 0)] {
            let mapper = Mapper::new(&gpu, (rows, cols), &params).unwrap();
            let first = cpu_reference(sky(rows, cols, 90 + seed as u64, nan_every).as_slice().unwrap(), cols, &params)
                .unwrap()
                .grid;
            let (points, columns) = (mapper.grid_len() / 2, mapper.grid_shape().1);
            // The second pass's own grid: the first's, with every 11th point's box emptied.
            let mut second = first.clone();
            second.chunks_mut(2).step_by(11).for_each(|point| point.fill(f64::NAN));
            let before = vec![100u32; points];
            let patterns: [(&str, Vec<u32>); 4] = [
                ("none crowded", vec![60; points]),
                ("clusters", (0..points).map(|p| if (p / columns + p % columns) % 9 < 4 { 30 } else { 50 }).collect()),
                ("every point", vec![0; points]),
                ("more after than before", (0..points).map(|p| if p % 4 == 0 { 101 } else { 100 }).collect()),
            ];
            for (pattern, after) in patterns {
                let grid = gpu.upload("grid", &second).unwrap();
                let (device_first, device_before, device_after) = (
                    gpu.upload("first", &first).unwrap(),
                    gpu.upload("before", &before).unwrap(),
                    gpu.upload("after", &after).unwrap(),
                );
                let lists = gpu.poisoned::<u32>("lists", 2 * points).unwrap();
                let means = gpu.poisoned::<f64>("means", points).unwrap();
                let args = mapper.fill_args(&grid, &device_first, (&device_before, &device_after), 0.5, &lists, &means);
                // SAFETY: every buffer outlives the kernel: the download waits for it.
                unsafe { gpu.launch("background_fill", &args).unwrap() };
                let made = gpu.download("grid", &grid, mapper.grid_len()).unwrap();
                let mut want = second.clone();
                drop_crowded(&mut want, &before, &after, 0.5);
                fill(&mut want, &first, columns);
                assert!(same_f64(&made, &want), "{rows}x{cols} {params:?}: {pattern}");
            }
        }
    }
}

#[test]
fn bad_inputs_are_refused() {
    let Some(gpu) = gpu("bad_inputs_are_refused") else { return };
    let image = DeviceMatrix::from_array(&gpu, sky(4, 3, 1, 0).view()).unwrap();
    let (mut level, mut noise) =
        (DeviceMatrix::zeros(&gpu, (4, 3)).unwrap(), DeviceMatrix::zeros(&gpu, (4, 3)).unwrap());
    let mut wrong = DeviceMatrix::zeros(&gpu, (3, 4)).unwrap();
    let params = Params::default();
    assert_refused(
        background(&gpu, &image, &params, &mut level, &mut wrong, None),
        "background: the noise map is 3×4, the image 4×3",
    );
    assert_refused(
        background(&gpu, &image, &params, &mut level, &mut noise, Some(&mut wrong)),
        "background: the S/N map is 3×4, the image 4×3",
    );
    assert_refused(background(&gpu, &image, &Params::new(0, 3), &mut level, &mut noise, None), "a grid step of 0×0");
    let empty = Array2::<f32>::zeros((0, 5));
    assert_refused(background_array(&gpu, empty.view(), &params), "background: a 0×5 image");
    let big = Array2::<f32>::zeros((300, 300));
    assert_refused(background_array(&gpu, big.view(), &Params::new(16, 256)), "holds 65536 pixels");
    // An array of another Gpu is refused before anything runs.
    let other = Gpu::new().unwrap();
    assert_refused(background(&other, &image, &params, &mut level, &mut noise, None), "on the GPU that made them");
}

#[test]
fn a_survey_sized_image_completes() {
    let Some(gpu) = gpu("a_survey_sized_image_completes") else { return };
    let side = 32768;
    // The image (4 GiB) and three maps of its size, with room to spare.
    if gpu.info().total_memory < 20 << 30 {
        eprintln!("SKIPPED a_survey_sized_image_completes: {} GiB of GPU memory", gpu.info().total_memory >> 30);
        return;
    }
    let mut pixels = random_normal(side * side, 32);
    // A blanked band, so that some boxes hold no finite pixel at all.
    pixels[..200 * side].iter_mut().for_each(|v| *v = f32::NAN);
    let params = Params::default();
    let image =
        DeviceMatrix::from_array(&gpu, ndarray::ArrayView2::from_shape((side, side), &pixels).unwrap()).unwrap();
    let zeros = || DeviceMatrix::<f32>::zeros(&gpu, (side, side)).unwrap();
    let (mut level, mut noise, mut snr) = (zeros(), zeros(), zeros());
    let grid = background(&gpu, &image, &params, &mut level, &mut noise, Some(&mut snr)).unwrap();
    let grid = grid.to_array(&gpu).unwrap().to_vec();
    let columns = 32768 / 16 + 1;
    assert_eq!(grid.len(), columns * columns * 2);
    // Grid points at the corners, in the blanked band, and spread between.
    let draws = random_in(64, 5, 0, columns);
    let points = [(0, 0), (columns - 1, columns - 1), (5, 7)].into_iter().chain(draws.chunks(2).map(|p| (p[0], p[1])));
    for (row, column) in points {
        let want = cpu_point(&pixels, side, &params, (row, column)).unwrap();
        let got = &grid[(row * columns + column) * 2..][..2];
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        assert!(same(got[0], want[0]) && same(got[1], want[1]), "grid point ({row}, {column}): {got:?}, want {want:?}");
    }
    // Pixels at the ends and spread between, interpolated from the GPU's grid.
    let maps = [level.to_array(&gpu).unwrap(), noise.to_array(&gpu).unwrap(), snr.to_array(&gpu).unwrap()];
    for i in [0, side * side - 1].into_iter().chain(random_in(200, 9, 0, side * side)) {
        let want = cpu_pixel(&pixels, side, &params, &grid, i).unwrap();
        for (map, want) in maps.iter().zip(want) {
            let got = map.as_slice().unwrap()[i];
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "pixel {i}: {got}, want {want}"
            );
        }
    }
}

#[test]
fn the_reference_follows_its_rules() {
    // A constant image: the background is the constant, the noise 0, the S/N NaN (0 / 0).
    let maps = cpu_reference(&[1.5; 35], 7, &Params::new(2, 3)).unwrap();
    assert!(maps.background.iter().all(|&v| v == 1.5) && maps.noise.iter().all(|&v| v == 0.0));
    assert!(maps.snr.iter().all(|v| v.is_nan()));
    // Boxes of one pixel at columns 0, 4, …, 36, 39 of a row of 40, NaN at columns 12 and 16:
    // pixel 14 is a number, but both corners of its cell are NaN, so its maps are NaN; pixel
    // 13 lies in the same cell. Pixel 12 itself is NaN.
    let mut row: Vec<f32> = (0..40).map(|x| x as f32).collect();
    row[12] = f32::NAN;
    row[16] = f32::NAN;
    let maps = cpu_reference(&row, 40, &Params::new(4, 1)).unwrap();
    assert!(maps.background[[0, 13]].is_nan() && maps.background[[0, 14]].is_nan());
    // Pixel 17 lies between the NaN point at 16 and the point at 20: the NaN corner is left out.
    assert_eq!(maps.background[[0, 17]], 20.0);
    // Pixel 10 lies halfway between the point at 8 and the NaN one at 12: only 8 weighs.
    assert_eq!(maps.background[[0, 10]], 8.0);
    // A box of more pixels than the shared memory holds is refused, one that fits is not.
    let pixels = vec![0.0f32; 300 * 300];
    assert!(cpu_reference(&pixels, 300, &Params::new(16, 256)).is_err());
    // BANE's box for a beam of 8 pixels fits.
    assert!(cpu_reference(&pixels, 300, &Params::new(32, 192)).is_ok());
}
