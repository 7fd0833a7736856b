//! `cargo bench`: every family and variant in the registry on the GPU beside its CPU
//! reference, at the family's criterion sizes. GPU times come from the host's one timer (CUDA
//! events, L2 flushed before each launch) through `iter_custom`; throughput is bytes for
//! memory-bound kernels and flops for matmul (criterion prints "elem/s", read as FLOP/s).
//! Without a GPU the benches say so and measure nothing: the CPU references need a prepared
//! workload, which lives on the GPU.
//!
//! The IDs and settings come from `host::cargo_bench`, whose tests list every ID without a GPU
//! and check that none repeats and that the whole run stays within a few minutes.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use host::cargo_bench::{benches, Target, MEASUREMENT, SAMPLES, WARM_UP};
use host::gpu::{Cache, Gpu};
use host::ops::FAMILIES;
use host::registry::Purpose;
use host::report::Work;

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
            let variants = workload.variants().to_vec();
            for bench in benches(&options, &variants, workload.work() != Work::Launches) {
                let id = BenchmarkId::new(bench.function, bench.parameter);
                match bench.target {
                    Target::Gpu(variant) => {
                        let w = &*workload;
                        group.bench_function(id, |b| {
                            b.iter_custom(|iters| {
                                // SAFETY: `time_total` waits for the launches, and the workload
                                // outlives the benchmark.
                                let launch = || unsafe { w.launch(&gpu, variant) };
                                gpu.time_total(iters, Cache::Flushed, || w.reset(&gpu), launch).expect("a GPU launch")
                            })
                        })
                    }
                    Target::Cpu => group.bench_function(id, |b| b.iter(|| workload.compute_reference())),
                };
            }
        }
        group.finish();
    }
}

criterion_group! {
    name = benches_on_the_gpu;
    config = Criterion::default().sample_size(SAMPLES).warm_up_time(WARM_UP).measurement_time(MEASUREMENT);
    targets = kernels
}
criterion_main!(benches_on_the_gpu);
