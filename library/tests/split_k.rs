//! Split k (steps 4d, 5d and every wgmma step: `kernels/src/matmul/split_k.rs`, `split_async.rs`
//! and `wgmma*.rs`, `library/src/matmul/split.rs`) on the GPU: the split products against an
//! f64 CPU reference at odd shapes and at every split count they allow, `gemm`'s choice of them
//! at long k (reproducible to the bit, within the tolerance) and of step 5d for a mid-sized C,
//! the wgmma splits' accuracy beside one block per tile (their speed printed), and bad launches
//! refused. Without a GPU each test says `SKIPPED` and passes; on a GPU other than Hopper, a
//! wgmma split is refused as needing sm_90 (step 4d runs on every GPU).

mod common;

use common::gpu;
use cuda_kernels::data::random_f32;
use cuda_kernels::gpu::{Cache, DeviceMatrix, Gpu, GpuError};
use cuda_kernels::matmul::hopper::{self, Precision, Step};
use cuda_kernels::matmul::split::{self, F32Split, ReduceArgs, REDUCE};
use cuda_kernels::matmul::tensor::tolerance;
use cuda_kernels::matmul::{
    f32_default, gemm, gemm_array, gemm_with, hopper_precision, rounded_reference, Dtype, GemmKernel,
};
use interface::matmul::split_count;
use ndarray::Array2;

const SEED: u64 = 32;

/// 1×1×1; k within one slice; rows TMA cannot stride over (padded); several tiles; C of 3 rows
/// and a length no multiple of 4 (the reduction's single floats).
const SHAPES: [(usize, usize, usize); 5] = [(1, 1, 1), (17, 31, 13), (130, 70, 700), (257, 263, 1031), (3, 4097, 1500)];

/// Whether `gpu` runs the Hopper module; if not, checks that a split product says it needs it.
fn hopper_or_refused(gpu: &Gpu) -> bool {
    if gpu.has_hopper() {
        return true;
    }
    let kernel = Step::Pipelined.kernel(Precision::Bf16);
    let err = hopper::run_split(gpu, kernel, (64, 64, 1024), 4, SEED, 1, Cache::Warm).err().expect("a refusal");
    assert!(matches!(&err, GpuError::InvalidLaunch { reason, .. } if reason.contains("needs sm_90")), "{err}");
    false
}

#[test]
fn split_products_match_the_cpu_at_odd_shapes_and_every_split() {
    let Some(gpu) = gpu("split_products_match_the_cpu_at_odd_shapes_and_every_split") else { return };
    if !hopper_or_refused(&gpu) {
        return;
    }
    for (step, precision) in Step::LAYERED.into_iter().flat_map(|s| Precision::ALL.map(|p| (s, p))) {
        let kernel = step.kernel(precision);
        for shape in SHAPES {
            for splits in split_counts(split::slices(precision, shape.2)) {
                let outcome = hopper::run_split(&gpu, kernel, shape, splits, SEED, 1, Cache::Warm)
                    .unwrap_or_else(|e| panic!("{kernel} {shape:?} in {splits} splits: {e}"));
                assert!(
                    outcome.worst <= 1.0,
                    "{kernel} {shape:?} in {splits}: error {} of the tolerance",
                    outcome.worst
                );
            }
        }
    }
}

/// Every distinct count of splits of `slices` slices, from one to one a slice.
fn split_counts(slices: usize) -> Vec<usize> {
    let mut counts: Vec<usize> = (1..=slices).map(|wanted| split_count(slices, wanted)).collect();
    counts.dedup();
    counts
}

#[test]
fn f32_split_products_match_the_cpu_at_odd_shapes_and_every_split() {
    let Some(gpu) = gpu("f32_split_products_match_the_cpu_at_odd_shapes_and_every_split") else { return };
    // Besides the shapes above: k a whole number of slices with n a multiple of 4 (interior
    // blocks, no checks), and several tiles of it.
    for (m, n, k) in SHAPES.into_iter().chain([(64, 64, 4096), (200, 136, 1024)]) {
        let a = random_f32(m * k, SEED);
        let b = random_f32(k * n, SEED + 1);
        let expected = rounded_reference(Dtype::F32, &a, &b, m, n, k);
        let a = DeviceMatrix::from_array(&gpu, Array2::from_shape_vec((m, k), a).unwrap().view()).unwrap();
        let b = DeviceMatrix::from_array(&gpu, Array2::from_shape_vec((k, n), b).unwrap().view()).unwrap();
        // Step 4d on 64×64 tiles, step 5d on 128×256.
        for step in [F32Split::Vec4, F32Split::Async] {
            let kernel = |splits| match step {
                F32Split::Vec4 => GemmKernel::Split(splits),
                F32Split::Async => GemmKernel::SplitAsync(splits),
            };
            for splits in split_counts(step.slices(k)) {
                let mut c = DeviceMatrix::zeros(&gpu, (m, n)).unwrap();
                gemm_with(&gpu, &a, &b, &mut c, Dtype::F32, kernel(splits))
                    .unwrap_or_else(|e| panic!("{step:?} {m}×{n}×{k} in {splits} splits: {e}"));
                let c = c.to_array(&gpu).unwrap();
                let worst = c.iter().zip(&expected).map(|(x, y)| (x - y).abs() as f64).fold(0.0, f64::max);
                let bound = cuda_kernels::matmul::tolerance(k);
                assert!(worst <= bound, "{step:?} {m}×{n}×{k} in {splits} splits: error {worst}");
            }
        }
    }
}

#[test]
fn gemm_splits_a_mid_sized_c_on_step_5c_tiles() {
    let Some(gpu) = gpu("gemm_splits_a_mid_sized_c_on_step_5c_tiles") else { return };
    // 25 tiles of 128×256, k a whole number of slices and n of 4: step 5d's fast path.
    let (m, n, k) = (520, 1032, 1000);
    let sms = gpu.sms() as usize;
    let chosen = GemmKernel::chosen_in(None, &gpu, Dtype::F32, (m, n, k)).unwrap();
    assert_eq!(chosen, f32_default((m, n, k), sms));
    // Where step 4d's 153 tiles are too many to split and step 5c's 25 too few for the SMs.
    if split::f32_splits_for((m, n, k), sms) == 1 && sms > 25 {
        assert!(matches!(chosen, GemmKernel::SplitAsync(splits) if splits > 1), "{chosen:?}");
    }
    let a = random_f32(m * k, SEED);
    let b = random_f32(k * n, SEED + 1);
    let expected = rounded_reference(Dtype::F32, &a, &b, m, n, k);
    let da = DeviceMatrix::from_array(&gpu, Array2::from_shape_vec((m, k), a).unwrap().view()).unwrap();
    let db = DeviceMatrix::from_array(&gpu, Array2::from_shape_vec((k, n), b).unwrap().view()).unwrap();
    let mut c = DeviceMatrix::zeros(&gpu, (m, n)).unwrap();
    gemm(&gpu, &da, &db, &mut c, Dtype::F32).unwrap();
    let c = c.to_array(&gpu).unwrap();
    let worst = c.iter().zip(&expected).map(|(x, y)| (x - y).abs() as f64).fold(0.0, f64::max);
    assert!(worst <= cuda_kernels::matmul::tolerance(k), "{chosen:?}: error {worst}");
}

#[test]
fn gemm_splits_long_k_reproducibly_within_the_tolerance() {
    let Some(gpu) = gpu("gemm_splits_long_k_reproducibly_within_the_tolerance") else { return };
    let (m, n, k) = (67, 61, 20000);
    let a = Array2::from_shape_vec((m, k), random_f32(m * k, SEED)).unwrap();
    let b = Array2::from_shape_vec((k, n), random_f32(k * n, SEED + 1)).unwrap();
    let (da, db) =
        (DeviceMatrix::from_array(&gpu, a.view()).unwrap(), DeviceMatrix::from_array(&gpu, b.view()).unwrap());
    for dtype in [Dtype::F32, Dtype::Tf32, Dtype::Bf16, Dtype::F16] {
        let chosen = GemmKernel::chosen(&gpu, dtype, (m, n, k)).unwrap();
        // f32 splits on every GPU; the tensor types on Hopper.
        if dtype == Dtype::F32 || gpu.has_hopper() {
            let split = matches!(chosen, GemmKernel::Split(s) | GemmKernel::HopperSplit(_, s) if s > 1);
            assert!(split, "{dtype:?}: {chosen:?}");
        }
        let c = gemm_array(&gpu, a.view(), b.view(), dtype).unwrap();
        let again = gemm_array(&gpu, a.view(), b.view(), dtype).unwrap();
        assert!(c.iter().zip(&again).all(|(x, y)| x.to_bits() == y.to_bits()), "{dtype:?}: two runs differ");
        let expected = rounded_reference(dtype, a.as_slice().unwrap(), b.as_slice().unwrap(), m, n, k);
        let bound = if dtype == Dtype::F32 { cuda_kernels::matmul::tolerance(k) } else { tolerance(k) };
        let close = |c: &Array2<f32>| c.iter().zip(&expected).all(|(x, y)| ((x - y).abs() as f64) <= bound);
        assert!(close(&c), "{dtype:?}: C differs from the reference beyond the tolerance");
        // Counts past the slices, or that would leave a split empty, run as the fewest even ones.
        let slices = match hopper_precision(dtype) {
            Some(_) if !gpu.has_hopper() => continue,
            Some(precision) => split::slices(precision, k),
            None => F32Split::Vec4.slices(k),
        };
        let splits = |wanted| match dtype {
            Dtype::F32 => vec![GemmKernel::Split(wanted)],
            _ => vec![GemmKernel::Split(wanted), GemmKernel::HopperSplit(Step::Small, wanted)],
        };
        for kernel in [2, 7, slices - 1, 10 * slices].into_iter().flat_map(splits) {
            let mut c = DeviceMatrix::zeros(&gpu, (m, n)).unwrap();
            gemm_with(&gpu, &da, &db, &mut c, dtype, kernel).unwrap();
            assert!(close(&c.to_array(&gpu).unwrap()), "{dtype:?} on {kernel:?}");
        }
    }
}

#[test]
fn split_k_at_long_k_is_within_the_tolerance_and_no_less_accurate() {
    let Some(gpu) = gpu("split_k_at_long_k_is_within_the_tolerance_and_no_less_accurate") else { return };
    if !hopper_or_refused(&gpu) {
        return;
    }
    let sms = gpu.sms() as usize;
    let cases = [
        (Precision::Bf16, (64, 64, 65536)),
        (Precision::Tf32, (64, 64, 65536)),
        (Precision::F16, (64, 64, 65536)),
        (Precision::Bf16, (128, 128, 16384)),
        (Precision::Bf16, (64, 64, 8192)),
        (Precision::Bf16, (16, 4096, 4096)),
    ];
    for (precision, shape) in cases {
        let (step, splits) = split::tensor_split_for(precision, shape, sms);
        assert!(splits > 1, "{precision:?} {shape:?} is not split");
        let kernel = step.kernel(precision);
        let split = hopper::run_split(&gpu, kernel, shape, splits, SEED, 20, Cache::Flushed).unwrap();
        let whole = hopper::run(&gpu, Step::Persistent.kernel(precision), shape, SEED, 20, Cache::Flushed).unwrap();
        println!(
            "{precision:?} {shape:?}: {splits} splits of {kernel} {:.4} ms (mean error {:.3e}, largest {:.3e}); \
             one block per tile {:.4} ms (mean error {:.3e}, largest {:.3e})",
            split.timing.median_ms,
            split.mean_error,
            split.max_error,
            whole.timing.median_ms,
            whole.mean_error,
            whole.max_error
        );
        assert!(split.worst <= 1.0 && whole.worst <= 1.0, "{precision:?} {shape:?}: beyond the tolerance");
        // Speeds are printed, not asserted: they belong to the benchmarks and reports.
        if shape.2 >= 16384 {
            assert!(split.mean_error <= whole.mean_error, "{precision:?} {shape:?}: less accurate");
        }
    }
}

#[test]
fn bad_split_launches_are_refused_on_the_gpu() {
    let Some(gpu) = gpu("bad_split_launches_are_refused_on_the_gpu") else { return };
    let refused = |result: Result<(), GpuError>, what: &str| match result {
        Err(GpuError::InvalidLaunch { .. }) => {}
        other => panic!("{what}: expected a refused launch, got {other:?}"),
    };
    // 1000 of k is 16 slices of 64.
    let (m, n, k) = (100, 36, 1000);
    let (a, b) = (gpu.upload("A", &vec![0u16; m * k]).unwrap(), gpu.upload("B", &vec![0u16; k * n]).unwrap());
    let c = gpu.poisoned::<f32>("C", m * n).unwrap();
    let short = gpu.poisoned::<f32>("C", m * n - 1).unwrap();
    for step in [Step::Pipelined, Step::Small] {
        let bf16 = (step, Precision::Bf16);
        for (splits, what) in [(0, "no split"), (17, "more splits than slices"), (15, "an empty split")] {
            refused(split::launch(&gpu, bf16, (&a, &b), &c, (m, n, k), splits), what);
        }
        refused(split::launch(&gpu, bf16, (&a, &b), &short, (m, n, k), 4), "C short");
    }
    let partials = gpu.poisoned::<f32>("partials", 4 * m * n).unwrap();
    let (tail, head) = (partials.index(1..), partials.index(..m * n));
    let with = |partials, c, len, splits| ReduceArgs { partials, c, len, splits };
    let cases = [
        ("partials short", with(&tail, &*c, m * n, 4)),
        ("C inside the partials", with(&partials, &head, m * n, 4)),
        ("partials misaligned", with(&tail, &*c, m * n, 3)),
        ("no splits", with(&partials, &*c, m * n, 0)),
    ];
    for (what, args) in cases {
        // SAFETY: a refused launch queues nothing, and the buffers outlive the synchronization.
        refused(unsafe { gpu.launch(REDUCE, &args) }, what);
    }
    gpu.synchronize("nothing: every launch was refused").unwrap();
}
