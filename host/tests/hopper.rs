//! The Hopper matrix products (`kernels/src/matmul/wgmma.rs`) on the GPU: BF16 and FP16 at odd
//! shapes against an f64 CPU reference on the inputs as rounded, and, on any other GPU, the
//! error that they need sm_90; FP8 through `host matmul --dtype fp8` at the tensor types' check
//! shapes and from `.npy` files, or on another GPU named as not run. Without a GPU they report
//! that they skipped.

mod common;

use host::gpu::{Cache, Gpu, GpuError, HOPPER};
use host::io;
use host::ops::family;
use host::ops::matmul::hopper::{self, Precision, Step};
use host::ops::matmul::{fp8, TENSOR_CHECK_SHAPES};
use host::registry::{self, Timer};
use std::path::Path;

/// 1×1×1; k shorter than one slice; m, n, k multiples of nothing; rows of A and B that TMA
/// cannot stride over (padded); several tiles and slices in every direction; more medium tiles
/// (154) than an H100 has SMs, and so more narrow and small ones, so that a persistent block
/// takes several, with edges in m and n; the same with rows of C that are not 16-byte aligned,
/// stored through the epilogue's staging.
const SHAPES: [(usize, usize, usize); 8] = [
    (1, 1, 1),
    (130, 70, 40),
    (257, 263, 300),
    (64, 8, 24),
    (333, 517, 1031),
    (1024, 1536, 2048),
    (1300, 2500, 200),
    (1301, 2099, 136),
];

/// The TMA-store step's shapes, whose rows of C must be a multiple of 16 bytes: as odd as that
/// allows, from 1×4×1 to more wide tiles (153) than an H100 has SMs, with edges in m and n.
const ALIGNED_SHAPES: [(usize, usize, usize); 4] = [(1, 4, 1), (257, 260, 300), (333, 516, 1031), (2049, 2052, 200)];

#[test]
fn wgmma_matches_the_cpu_at_odd_shapes() {
    let Some(gpu) = common::gpu("wgmma_matches_the_cpu_at_odd_shapes") else { return };
    if gpu.info().compute_capability != HOPPER {
        let err =
            hopper::run(&gpu, Step::Pipelined.kernel(Precision::Bf16), (64, 64, 64), common::SEED, 1, Cache::Warm)
                .err()
                .expect("a Hopper kernel launched on another GPU");
        assert!(matches!(&err, GpuError::InvalidLaunch { reason, .. } if reason.contains("needs sm_90")), "{err}");
        return;
    }
    for (kernel, step, _) in hopper::kernels() {
        for shape in SHAPES.into_iter().chain(ALIGNED_SHAPES) {
            let result = hopper::run(&gpu, kernel, shape, common::SEED, 1, Cache::Warm);
            if step == Step::TmaStore && !shape.1.is_multiple_of(4) {
                let err =
                    result.err().unwrap_or_else(|| panic!("{kernel} {shape:?}: ran with rows of C TMA cannot store"));
                assert!(err.to_string().contains("16 bytes"), "{kernel} {shape:?}: {err}");
                continue;
            }
            let outcome = result.unwrap_or_else(|e| panic!("{} {:?}: {}", kernel, shape, e));
            assert!(outcome.worst <= 1.0, "{} {:?}: error {} of the tolerance", kernel, shape, outcome.worst);
        }
    }
}

#[test]
fn wgmma_refuses_an_empty_product() {
    let Some(gpu) = common::gpu("wgmma_refuses_an_empty_product") else { return };
    let (a, b, c) = (
        gpu.upload("A", &[0u16; 8]).unwrap(),
        gpu.upload("B", &[0u16; 8]).unwrap(),
        gpu.poisoned::<f32>("C", 8).unwrap(),
    );
    for (m, n, k) in [(0, 8, 8), (8, 0, 8), (8, 8, 0)] {
        let result = hopper::launch(&gpu, Step::Persistent.kernel(Precision::Bf16), &a, &b, &c, m, n, k);
        assert!(matches!(result, Err(GpuError::InvalidLaunch { .. })), "{m}×{n}×{k}: {result:?}");
    }
}

/// Whether `gpu` runs FP8; if not, checks that `host matmul --dtype fp8` prepares nothing to run
/// and names its product with the reason.
fn fp8_or_not_run(gpu: &Gpu) -> bool {
    if gpu.has_hopper() {
        return true;
    }
    let matmul = family("matmul").expect("the matmul family");
    let workload = matmul.prepare_from(gpu, "--m 64 --n 64 --k 64 --dtype fp8", common::SEED).expect("prepared");
    assert!(workload.variants().is_empty(), "FP8 would run on another GPU");
    let unavailable = workload.unavailable();
    assert!(
        matches!(&unavailable[..], [(variant, why)] if variant.kernel == fp8::GEMM && why.contains("needs sm_90")),
        "{unavailable:?}"
    );
    false
}

/// `host matmul --dtype fp8` as the command and `host cases --run` run it: A and B converted on
/// the GPU, the product checked against the f64 reference on the inputs as rounded, each
/// element within its tolerance, at the tensor types' check shapes (1×1×1 and odd ones) and a
/// C of rows no multiple of 4; its rate against FP8's peak.
#[test]
fn fp8_through_host_matmul_matches_the_cpu_at_odd_shapes() {
    let Some(gpu) = common::gpu("fp8_through_host_matmul_matches_the_cpu_at_odd_shapes") else { return };
    if !fp8_or_not_run(&gpu) {
        return;
    }
    for (m, n, k) in TENSOR_CHECK_SHAPES.into_iter().chain([(3, 4097, 1500)]) {
        let reports = common::run(&gpu, "matmul", &format!("--m {m} --n {n} --k {k} --dtype fp8"), 1);
        common::assert_passed(&reports);
        let report = &reports[0];
        assert_eq!((reports.len(), report.variant.as_str()), (1, fp8::GEMM), "{m}x{n}x{k}");
        assert_eq!(report.roof.as_ref().map(|r| r.name.as_str()), Some("FP8"), "{m}x{n}x{k}");
        eprintln!("{report}");
    }
}

/// A and B from `.npy` files whose values e4m3 holds exactly once scaled (multiples of 0.5 up
/// to 3.5, scale 2^-7), so C, written with `--output`, is the exact product; on another GPU no
/// C is written.
#[test]
fn fp8_multiplies_files_into_a_file() {
    let Some(gpu) = common::gpu("fp8_multiplies_files_into_a_file") else { return };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hopper").join("fp8");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let (m, n, k) = (5, 7, 33);
    let value = |i: usize| ((i * 5 % 15) as f32 - 7.0) * 0.5;
    let a: Vec<f32> = (0..m * k).map(value).collect();
    let b: Vec<f32> = (0..k * n).map(|i| value(i + 3)).collect();
    let path = |name: &str| dir.join(name).to_str().expect("a UTF-8 path").to_string();
    io::write_matrix(Path::new(&path("a.npy")), (m, k), &a).expect("A written");
    io::write_matrix(Path::new(&path("b.npy")), (k, n), &b).expect("B written");
    let matmul = family("matmul").expect("the matmul family");
    let args = ["matmul", "--dtype", "e4m3", "--a", &path("a.npy"), "--b", &path("b.npy"), "--output", &path("c.npy")];
    let matches = matmul.command().try_get_matches_from(args).expect("options that parse");
    let mut workload = matmul.prepare(&gpu, &matches, common::SEED).expect("prepared");
    let reports = registry::run(&gpu, "matmul", workload.as_mut(), Timer { launches: 1, cache: Cache::Warm })
        .expect("an FP8 product from files");
    if !gpu.has_hopper() {
        assert!(reports.is_empty() && !dir.join("c.npy").exists(), "FP8 ran on another GPU");
        return;
    }
    common::assert_passed(&reports);
    let ((rows, cols), c) = io::read_matrix::<f32>(&dir.join("c.npy")).expect("C written");
    assert_eq!((rows, cols), (m, n));
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            assert_eq!(c[i * n + j], want, "C[{i}][{j}]");
        }
    }
}
