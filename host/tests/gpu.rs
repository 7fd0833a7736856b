//! Every family and variant in the registry against its CPU reference, on shapes that include
//! 1, primes and non-multiples of the tiles; larger shapes; and bad input rejected with a clear
//! error.
//!
//! Without a GPU each test reports that it skipped and why (on stderr, past the test
//! harness's capture). With `REQUIRE_GPU=1` a missing GPU fails instead, which is how the GPU
//! machine runs them.

mod common;

use common::{assert_passed, gpu, run, SEED};
use host::gpu::{Gpu, GpuError, LaunchConfig};
use host::ops::matmul::hopper::{Precision, Step};
use host::ops::matmul::{Dtype, GemmKernel};
use host::ops::{family, FAMILIES};
use host::registry::Purpose;
use std::io::Write;

#[test]
fn every_family_matches_the_cpu_on_odd_shapes() {
    let Some(gpu) = gpu("every_family_matches_the_cpu_on_odd_shapes") else { return };
    for family in FAMILIES {
        for options in family.sizes(Purpose::Check) {
            assert_passed(&run(&gpu, family.name(), &options, 1));
        }
    }
}

/// The tensor-core steps for every dtype: the check shapes (odd, 1x1x1, k below one slice),
/// then shapes with many interior blocks and k a whole number of slices.
#[test]
fn tensor_steps_match_the_cpu_for_every_dtype() {
    let Some(gpu) = gpu("tensor_steps_match_the_cpu_for_every_dtype") else { return };
    let matmul = family("matmul").expect("the matmul family");
    for options in matmul.sizes(Purpose::Check).iter().filter(|o| o.contains("--dtype")) {
        assert_passed(&run(&gpu, "matmul", options, 1));
    }
    for dtype in ["tf32", "bf16", "f16"] {
        assert_passed(&run(&gpu, "matmul", &format!("--m 1024 --n 768 --k 512 --dtype {dtype}"), 1));
        assert_passed(&run(&gpu, "matmul", &format!("--m 1031 --n 1029 --k 1027 --dtype {dtype}"), 1));
    }
    expect_error(&gpu, "matmul", "--m 64 --n 64 --k 64 --dtype bf16 --variant async", "pick among the f32 steps");
    // On Hopper the 16-bit dtypes run the wgmma steps beside the mma.sync one (above, checked).
    if gpu.has_hopper() {
        for (dtype, step) in [("bf16", "mma-bf16"), ("f16", "mma-f16")] {
            let reports = run(&gpu, "matmul", &format!("--m 17 --n 31 --k 13 --dtype {dtype}"), 1);
            let names: Vec<&str> = reports.iter().map(|r| r.variant.as_str()).collect();
            let precision = if dtype == "bf16" { Precision::Bf16 } else { Precision::F16 };
            // Not the TMA-store step: its rows of C must be a multiple of 16 bytes, and n is 31.
            let wgmma = Step::LAYERED.map(|s| s.kernel(precision));
            assert!(names.len() == 1 + wgmma.len() && wgmma.iter().all(|w| names.contains(w)), "{dtype}: {names:?}");
            assert!(names.contains(&step), "{dtype}: {names:?}");
        }
    }
}

#[test]
fn large_matmul_and_conv2d_match() {
    let Some(gpu) = gpu("large_matmul_and_conv2d_match") else { return };
    assert_passed(&run(&gpu, "matmul", "--m 2048 --n 2048 --k 2048", 1));
    assert_passed(&run(&gpu, "conv2d", "--width 4096 --height 4096 --filter 5", 1));
}

#[test]
fn racy_counter_loses_increments() {
    let Some(gpu) = gpu("racy_counter_loses_increments") else { return };
    let reports = run(&gpu, "counter", "--threads 1048576", 1);
    assert_passed(&reports);
    let racy = reports.iter().find(|r| r.variant == "racy").expect("a racy report");
    let race = racy.check.race.unwrap_or_else(|| panic!("the racy count is not reported as a race: {}", racy));
    assert!(race.lost > 0, "a million racy increments all survived: {}", racy);
}

/// Indices past 2^32 (a `u32` thread index wraps there): vector add just past the boundary,
/// where a 32-bit index once failed from element 4294967296 on.
#[test]
fn arrays_past_2_32_elements() {
    let Some(gpu) = gpu("arrays_past_2_32_elements") else { return };
    let n: u64 = (1 << 32) + 1000;
    let needed = 3 * 4 * n + 2 * gpu.info().l2_bytes;
    if gpu.info().free_memory < needed {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED arrays_past_2_32_elements: needs {} bytes of GPU memory, {} free",
            needed,
            gpu.info().free_memory
        );
        return;
    }
    assert_passed(&run(&gpu, "vector-add", &format!("--n {}", n), 1));
}

fn expect_error(gpu: &Gpu, family_name: &str, options: &str, needle: &str) {
    let family = family(family_name).expect("a registered family");
    match family.prepare_from(gpu, options, SEED) {
        Ok(_) => panic!("`{} {}` was accepted; expected an error mentioning {:?}", family_name, options, needle),
        Err(err) => assert!(format!("{:#}", err).contains(needle), "{:?} not in {:#}", needle, err),
    }
}

fn expect_gpu_error<T: std::fmt::Debug>(result: Result<T, GpuError>, needle: &str) {
    match result {
        Ok(value) => panic!("expected an error mentioning {:?}, got {:?}", needle, value),
        Err(err) => assert!(err.to_string().contains(needle), "{:?} not in {:?}", needle, err.to_string()),
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let Some(gpu) = gpu("bad_input_is_a_clear_error") else { return };
    expect_error(&gpu, "vector-add", "--n 0", "n >= 1");
    expect_error(&gpu, "vector-add", "--n 1000 --block 1025", "limit of 1024");
    expect_error(&gpu, "vector-add", "--n 1000 --block 0", "block size");
    expect_error(&gpu, "matmul", "--m 0 --n 5 --k 5", "m, n, k >= 1");
    expect_error(&gpu, "conv2d", "--width 64 --height 64 --filter 4", "3, 5 or 7");
    expect_error(&gpu, "conv2d", "--width 64 --height 64 --filter 9", "3, 5 or 7");
    expect_error(&gpu, "conv1d", "--n 0 --filter 3", "n >= 1");
    expect_error(&gpu, "histogram", "--n 0", "n >= 1");
    expect_error(&gpu, "counter", "--threads 0", "at least 1 thread");
    expect_error(&gpu, "matmul", "--m 4 --n 4 --k 4 --variant fastest", "invalid value");
    // 400 KB of shared counters: past every GPU's opt-in limit (227 KiB on an H100).
    expect_error(&gpu, "histogram", "--n 100 --bins 100000 --variant shared", "shared memory");
    expect_error(&gpu, "histogram", "--n 100 --bins 0", "at least 1 bin");
    expect_error(&gpu, "histogram", "--n 100 --input f32 --min 4 --max -4", "finite min < max");
    expect_error(&gpu, "label", "--side 0", "--side must be 1 to");
    expect_error(&gpu, "label", "--side 37 --threshold inf", "--threshold must be finite");
    expect_error(&gpu, "measure", "--side 37 --threshold NaN", "--threshold must be finite");
    expect_error(&gpu, "fit", "--side 37 --seed-clip 0", "--seed-clip must be finite and above 0");
    expect_error(&gpu, "fit", "--side 37 --beam-sigma NaN", "--beam-sigma must be finite and above 0");
    let too_big = gpu.info().total_memory;
    expect_error(&gpu, "vector-add", &format!("--n {}", too_big), "not enough GPU memory");
    let config = LaunchConfig { grid: (1, 1, 1), block: (32, 32, 2), shared_bytes: 0 };
    expect_gpu_error(gpu.validate("vector_add", &config), "2048 threads per block");
    let config = LaunchConfig { grid: (1, 1, 1), block: (256, 1, 1), shared_bytes: 1 << 20 };
    expect_gpu_error(gpu.validate("matmul_tiled_16", &config), "shared memory");
    expect_gpu_error(gpu.validate("no_such_kernel", &LaunchConfig::linear(1, 1).unwrap()), "no_such_kernel");
    expect_gpu_error(demo_overlap(&gpu, 10, 11), "chunks");
    expect_gpu_error(gpu.time(0, host::gpu::Cache::Warm, || Ok(()), || Ok(())), "at least one launch");
}

fn demo_overlap(gpu: &Gpu, n: usize, chunks: usize) -> Result<host::demos::OverlapReport, GpuError> {
    host::demos::overlap(gpu, n, 2, chunks, 1, SEED)
}

#[test]
fn corrupt_ptx_fails_to_load_with_a_clear_error() {
    let Some(_gpu) = gpu("corrupt_ptx_fails_to_load_with_a_clear_error") else { return };
    let corrupt = host::gpu::KERNELS_PTX.replacen(".entry vector_add(", ".entry vector_add(((", 1);
    // SAFETY: the module does not load, so nothing is ever launched from it.
    let loaded = unsafe { Gpu::with_ptx(&corrupt) };
    expect_gpu_error(loaded.map(|_| ()), "PTX failed to load");
}

/// `--tune` times every configuration, keeps the fastest in the cache file, and later runs at
/// a shape of the same class add it as `tuned`; a corrupt cache is an error naming the file.
#[test]
fn tuning_keeps_the_fastest_and_later_runs_use_it() {
    let Some(gpu) = gpu("tuning_keeps_the_fastest_and_later_runs_use_it") else { return };
    let cache = std::env::temp_dir().join(format!("tuning-gpu-test-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&cache);
    let with_cache = |options: &str| format!("{} --tuning-cache {}", options, cache.display());

    let tuned = run(&gpu, "matmul", &with_cache("--m 300 --n 200 --k 100 --tune"), 3);
    assert_passed(&tuned);
    assert_eq!(tuned.len(), interface::matmul::TILE_CONFIGS.len());
    let fastest: Vec<_> = tuned.iter().filter(|r| r.note.as_deref().unwrap_or_default().contains("FASTEST")).collect();
    assert_eq!(fastest.len(), 1, "one configuration is marked fastest: {:?}", tuned);
    assert!(tuned.iter().all(|r| fastest[0].timing.median_ms <= r.timing.median_ms));
    assert!(cache.exists(), "--tune wrote {}", cache.display());

    // 257x255x120 is in the class of 300x200x100 (m≤512 n≤256 k≤128).
    for shape in ["--m 300 --n 200 --k 100", "--m 257 --n 255 --k 120"] {
        let later = run(&gpu, "matmul", &with_cache(shape), 1);
        assert_passed(&later);
        assert!(later.iter().any(|r| r.variant == "tuned"), "no tuned variant at {}: {:?}", shape, later);
    }
    let other_class = run(&gpu, "matmul", &with_cache("--m 600 --n 200 --k 100"), 1);
    assert!(other_class.iter().all(|r| r.variant != "tuned"), "tuned for another class: {:?}", other_class);

    // A tensor type's --tune picks among its steps (on Hopper, mma.sync and the wgmma ones) and
    // keeps the pick under a class of its own: f32 runs of the same shape do not see it.
    let steps = run(&gpu, "matmul", &with_cache("--m 300 --n 200 --k 100 --dtype bf16 --tune"), 3);
    assert_passed(&steps);
    let hopper_steps = if gpu.has_hopper() { Step::ALL.len() } else { 0 };
    assert_eq!(steps.len(), 1 + hopper_steps, "{:?}", steps);
    assert_eq!(steps.iter().filter(|r| r.note.as_deref().unwrap_or_default().contains("FASTEST")).count(), 1);
    let later = run(&gpu, "matmul", &with_cache("--m 257 --n 255 --k 120 --dtype bf16"), 1);
    assert_passed(&later);
    let tuned: Vec<_> = later.iter().filter(|r| r.variant == "tuned").collect();
    assert_eq!(tuned.len(), 1, "no tuned bf16 step: {:?}", later);
    assert!(tuned[0].note.as_deref().unwrap_or_default().contains("--tune at 300x200x100"), "{:?}", tuned[0]);
    let f32_later = run(&gpu, "matmul", &with_cache("--m 257 --n 255 --k 120"), 1);
    let f32_tuned = f32_later.iter().find(|r| r.variant == "tuned").expect("the f32 pick");
    assert!(!f32_tuned.note.as_deref().unwrap_or_default().contains("mma"), "{:?}", f32_tuned);

    // `--gpus` shares run gemm's pick with the cache `--tuning-cache` names: the tuned kernel.
    let matmul = family("matmul").expect("the matmul family");
    for dtype in [Dtype::F32, Dtype::Bf16] {
        let options = with_cache(&format!("matmul --m 257 --n 255 --k 120 --dtype {} --gpus 1", dtype.name()));
        let matches = matmul.command().try_get_matches_from(options.split_whitespace()).expect("parsed");
        let report = matmul.split(&matches, SEED, 2).expect("--gpus given").expect("ran");
        assert!(report.check.passed, "{:?}", report);
        let tuned = GemmKernel::tuned_in(&cache, &gpu, dtype, (257, 255, 120)).expect("read").expect("kept");
        let kernel = tuned.kernel(dtype).expect("named");
        assert!(
            report.rows.iter().all(|r| r.kernel == kernel),
            "{} shares ran {:?}, not {kernel}",
            dtype.name(),
            report
        );
    }

    std::fs::write(&cache, "{ this is not JSON").expect("cache overwritten");
    expect_error(&gpu, "matmul", &with_cache("--m 30 --n 20 --k 10"), "not a usable tuning cache");
    expect_error(&gpu, "matmul", &with_cache("--m 30 --n 20 --k 10 --tune"), "not a usable tuning cache");
    std::fs::remove_file(&cache).expect("cleaned up");
}

/// `--gpus N` divides the job among every GPU there is and checks the joined result, for f32
/// and each tensor type; asking for more GPUs than the machine has, or for 0, is an error.
#[test]
fn jobs_divided_among_gpus_match_the_cpu() {
    let Some(_gpu) = gpu("jobs_divided_among_gpus_match_the_cpu") else { return };
    let present = host::gpu::device_count().expect("counted");
    let split = |name: &str, options: &str| {
        let family = family(name).expect("a registered family");
        let args = std::iter::once(name).chain(options.split_whitespace());
        let matches = family.command().try_get_matches_from(args);
        matches.map_err(anyhow::Error::from).and_then(|m| family.split(&m, SEED, 2).expect("--gpus given"))
    };
    for gpus in [1, present] {
        let mut products =
            ["f32", "tf32", "bf16", "f16"].map(|dtype| format!("--m 301 --n 203 --k 99 --dtype {dtype}")).to_vec();
        // Few tiles down a long k: each share's pick is split k (step 4d).
        products.push("--m 67 --n 61 --k 5003".into());
        let jobs = products.iter().map(|options| ("matmul", options.as_str())).chain([("vector-add", "--n 1000003")]);
        for (name, options) in jobs {
            let report = split(name, &format!("{options} --gpus {gpus}")).expect("ran");
            assert!(report.check.passed, "{name} {options} on {gpus} GPUs: {:?}", report);
            assert_eq!(report.rows.last().expect("a row").gpus, gpus);
        }
    }
    let too_many = split("matmul", &format!("--m 64 --n 64 --k 64 --gpus {}", present + 1));
    assert!(format!("{:#}", too_many.expect_err("refused")).contains("this machine has"));
    assert!(split("vector-add", "--n 64 --gpus 0").is_err());
}

/// The pipeline's API, as it calls it: the same images labelled and measured again and again
/// (on the `Gpu`'s stream and on a stream of their own, as the local pipeline measures beside
/// its fits), every result against the CPU, since a race between joins would show only now and
/// then.
#[test]
fn labeler_and_measurer_match_the_cpu_every_time() {
    use cust::stream::{Stream, StreamFlags};
    use host::ops::label::{cpu_reference as label, detect, Connectivity, Input, Labeler, Sky};
    use host::ops::measure::{compare, cpu_reference as measure, Measurer};
    let Some(gpu) = gpu("labeler_and_measurer_match_the_cpu_every_time") else { return };
    let own_stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("a stream");
    for (side, blank, threshold) in [(509, false, 0.0), (1031, true, 3.0), (2048, false, 5.0), (2048, true, 0.5)] {
        let input = Input { sky: Sky { side, blank, image: None }, threshold };
        let d = input.read(SEED).expect("the synthetic sky");
        let image = gpu.upload("the image", &d.pixels).expect("an upload");
        let labeler = Labeler::new(&gpu, d.width, d.height).expect("a labeler");
        let measurer = Measurer::new(&gpu, d.width, d.height).expect("a measurer");
        for connectivity in [Connectivity::Four, Connectivity::Eight] {
            let what = format!("side {side} blank {blank} threshold {threshold} {connectivity:?}");
            let (want, count) = label(&detect(&d.pixels, d.level), d.width, connectivity);
            let sources = measure(&d.pixels, d.width, &want, count);
            for round in 0..8 {
                let got = labeler.label(&gpu, &image, d.level, connectivity).expect("labels");
                assert_eq!(got as usize, count, "{what}, round {round}: the count");
                let labels = gpu.download("labels", labeler.labels(), want.len()).expect("labels back");
                if let Some(i) = (0..want.len()).find(|&i| labels[i] != want[i]) {
                    panic!("{what}, round {round}: pixel {i} labelled {}, SciPy's label {}", labels[i], want[i]);
                }
                let measured = measurer.measure(&gpu, &image, labeler.labels(), got).expect("sources");
                let check = compare(&measured, &sources);
                assert!(check.passed, "{what}, round {round}: {check:?}");
                // SAFETY: the image's upload and the labels' count, copied back, waited for every
                // write to them, and nothing writes them while this measures.
                let beside = unsafe { measurer.measure_on(&gpu, &own_stream, &image, labeler.labels(), got) };
                let check = compare(&beside.expect("sources beside"), &sources);
                assert!(check.passed, "{what}, round {round}, on a stream of their own: {check:?}");
            }
        }
        expect_gpu_error(labeler.label(&gpu, &image, f64::NAN, Connectivity::Four), "level is NaN");
    }
    expect_gpu_error(Labeler::new(&gpu, 0, 5).map(|_| ()), "labels need 1 to");
}

/// `host sources`' GPU pipeline on `image`, against the CPU's definitions; the GPU's result.
fn pipeline_agrees(gpu: &Gpu, image: &host::io::Image, settings: &host::sources::Settings, what: &str) {
    let pipeline = host::sources::gpu::Pipeline::new(gpu, image).unwrap_or_else(|e| panic!("{what}: {e}"));
    let cpu = host::sources::find(image, settings).unwrap_or_else(|e| panic!("{what}: CPU: {e}"));
    // Several runs on one upload: union-find and f64 atomics race differently each time.
    for run in 0..3 {
        let mut found = pipeline.find(image, settings).unwrap_or_else(|e| panic!("{what}: {e}"));
        found.labels = pipeline.labels().unwrap();
        for check in host::sources::compare(&found, &cpu) {
            assert!(check.passed, "{what}, run {run}: {check:?}");
        }
        assert!(!cpu.sources.is_empty(), "{what}: a sky without sources tests little");
    }
}

#[test]
fn the_source_pipeline_matches_the_cpu_on_odd_skies() {
    use host::sources::{Connectivity, Settings};
    let Some(gpu) = gpu("the_source_pipeline_matches_the_cpu_on_odd_skies") else { return };
    for (side, blank, connectivity) in [
        (509, false, Connectivity::Four),
        (509, true, Connectivity::Eight),
        (1000, true, Connectivity::Four),
        (2048, false, Connectivity::Four),
        (2048, true, Connectivity::Eight),
    ] {
        let image = host::sky::default_sky(side, blank, SEED).unwrap();
        let settings = Settings { connectivity, ..Settings::LESSON };
        pipeline_agrees(&gpu, &image, &settings, &format!("{side}² blank {blank} {connectivity:?}"));
    }
    // Not square, and with κ 2 (more rounds): a sky cut to 777 x 301.
    let sky = host::sky::default_sky(1024, false, SEED).unwrap();
    let pixels = sky.pixels.chunks(1024).take(301).flat_map(|row| row[..777].iter().copied()).collect();
    let image = host::io::Image { width: 777, height: 301, pixels };
    pipeline_agrees(&gpu, &image, &Settings { kappa: 2.0, ..Settings::LESSON }, "777x301 at κ 2");
}

#[test]
fn the_source_pipeline_refuses_bad_images() {
    use host::io::Image;
    use host::sources::{gpu::Pipeline, Settings};
    let Some(gpu) = gpu("the_source_pipeline_refuses_bad_images") else { return };
    let find = |pixels: Vec<f32>| {
        let image = Image { width: 4, height: pixels.len() / 4, pixels };
        let pipeline = Pipeline::new(&gpu, &image).unwrap();
        pipeline.find(&image, &Settings::LESSON).map(|_| ()).unwrap_err().to_string()
    };
    let mut pixels = vec![0.5f32; 8];
    pixels[6] = f32::INFINITY;
    assert!(find(pixels).contains("pixel (row 1, column 2) is inf: only NaN marks a blanked pixel"));
    assert!(find(vec![f32::NAN; 8]).contains("all 8 pixels are NaN (blanked)"));
    assert!(find(vec![0.25; 12]).contains("removed every pixel in round 1: all 12 pixels left are 0.25, so σ is 0"));
}
