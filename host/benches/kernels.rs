//! `cargo bench`: every family and variant in the registry on the GPU beside its CPU
//! reference, at the family's criterion sizes. GPU times come from the host's one timer (CUDA
//! events, L2 flushed before each launch) through `iter_custom`; throughput is bytes for
//! memory-bound kernels and flops for matmul (criterion prints "elem/s", read as FLOP/s).
//! Without a GPU the benches say so and measure nothing: the CPU references need a prepared
//! workload, which lives on the GPU.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use host::gpu::{Cache, Gpu};
use host::registry::{Purpose, FAMILIES};
use host::report::Work;
use std::time::Duration;

const SEED: u64 = 11;

fn kernels(c: &mut Criterion) {
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(err) => {
            eprintln!("benches skipped: {}", err);
            return;
        }
    };
    for family in FAMILIES {
        let mut group = c.benchmark_group(family.name());
        for options in family.sizes(Purpose::Criterion) {
            let mut workload = family.prepare_from(&gpu, &options, SEED).expect("a bench size prepares");
            match workload.work() {
                Work::Bytes(bytes) => group.throughput(Throughput::Bytes(bytes)),
                Work::Flops(flops) => group.throughput(Throughput::Elements(flops)),
                Work::Launches => group.throughput(Throughput::Elements(1)),
            };
            let size = workload.size();
            for variant in workload.variants().to_vec() {
                let w = &*workload;
                group.bench_function(BenchmarkId::new(format!("gpu-{}", variant.name), size), |b| {
                    b.iter_custom(|iters| {
                        gpu.time_total(iters, Cache::Flushed, || w.reset(&gpu), || w.launch(&gpu, &variant))
                            .expect("a GPU launch")
                    })
                });
            }
            // A counter's reference is the thread count itself: nothing to time on the CPU.
            if workload.work() != Work::Launches {
                group.bench_function(BenchmarkId::new("cpu", size), |b| b.iter(|| workload.compute_reference()));
            }
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = kernels
}
criterion_main!(benches);
