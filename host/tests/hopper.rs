//! The Hopper matrix products (`kernels/src/matmul/wgmma.rs`) on the GPU: BF16 and FP16 at odd
//! shapes against an f64 CPU reference on the inputs as rounded, and, on any other GPU, the
//! error that they need sm_90. Without a GPU they report that they skipped.

mod common;

use host::gpu::{Cache, GpuError, HOPPER};
use host::ops::matmul::hopper::{self, Precision, Step};

/// 1×1×1; k shorter than one slice; m, n, k multiples of nothing; rows of A and B that TMA
/// cannot stride over (padded); several tiles and slices in every direction.
const SHAPES: [(usize, usize, usize); 6] =
    [(1, 1, 1), (130, 70, 40), (257, 263, 300), (64, 8, 24), (333, 517, 1031), (1024, 1536, 2048)];

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
    for (kernel, _, _) in hopper::kernels() {
        for shape in SHAPES {
            let outcome = hopper::run(&gpu, kernel, shape, common::SEED, 1, Cache::Warm)
                .unwrap_or_else(|e| panic!("{} {:?}: {}", kernel, shape, e));
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
