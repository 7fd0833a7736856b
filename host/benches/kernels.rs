//! `cargo bench`: every kernel and variant on the GPU beside its CPU reference, three sizes
//! each. GPU times are CUDA-event times fed to criterion through `iter_custom`; throughput
//! is bytes (GB/s) for memory-bound kernels and flops for matmul (criterion prints
//! "elem/s", read as FLOP/s). Without a GPU the GPU benches are skipped with a message and
//! the CPU benches still run.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use criterion::measurement::WallTime;
use host::data::{random_f32, random_in};
use host::gpu::{Gpu, GpuResult};
use host::ops::conv::{self, Conv1d, Conv2d};
use host::ops::counter::{self, Counter};
use host::ops::histogram::{self, Histogram};
use host::ops::matmul::{self, Matmul};
use host::ops::saxpy::{self, Saxpy};
use host::ops::vector_add::{self, VectorAdd};
use ndarray::{ArrayView1, ArrayView2};
use std::time::Duration;

const SEED: u64 = 11;

/// Registers a GPU bench whose samples are the summed event times of `iters` launches.
fn bench_gpu(
    group: &mut BenchmarkGroup<WallTime>,
    id: BenchmarkId,
    gpu: &Gpu,
    prepare: impl Fn() -> GpuResult<()>,
    launch: impl Fn() -> GpuResult<()>,
) {
    group.bench_function(id, |b| {
        b.iter_custom(|iters| gpu.time_total(iters, &prepare, &launch).expect("a GPU launch failed"))
    });
}

fn kernels(c: &mut Criterion) {
    let gpu = match Gpu::new() {
        Ok(gpu) => Some(gpu),
        Err(err) => {
            eprintln!("GPU benches skipped: {}. CPU benches still run.", err);
            None
        }
    };
    let gpu = gpu.as_ref();

    let mut group = c.benchmark_group("vector_add");
    for n in [1 << 16, 1 << 20, 1 << 24] {
        group.throughput(Throughput::Bytes(12 * n as u64));
        if let Some(gpu) = gpu {
            let add = VectorAdd::new(gpu, n, 256, SEED).unwrap();
            bench_gpu(&mut group, BenchmarkId::new("gpu", n), gpu, || Ok(()), || add.launch(gpu));
        }
        let (a, b) = (random_f32(n, SEED), random_f32(n, SEED ^ 1));
        group.bench_function(BenchmarkId::new("cpu", n), |bench| bench.iter(|| vector_add::cpu_reference(&a, &b)));
    }
    group.finish();

    let mut group = c.benchmark_group("saxpy");
    for n in [1 << 16, 1 << 20, 1 << 24] {
        group.throughput(Throughput::Bytes(12 * n as u64));
        if let Some(gpu) = gpu {
            let saxpy = Saxpy::new(gpu, n, 256, 0, SEED).unwrap();
            bench_gpu(&mut group, BenchmarkId::new("gpu", n), gpu, || Ok(()), || saxpy.launch(gpu));
        }
        let (x, y) = (random_f32(n, SEED), random_f32(n, SEED ^ 1));
        group.bench_function(BenchmarkId::new("cpu", n), |bench| bench.iter(|| saxpy::cpu_reference(saxpy::A, &x, &y)));
    }
    group.finish();

    let mut group = c.benchmark_group("counter");
    for threads in [1 << 10, 1 << 16, 1 << 20] {
        group.throughput(Throughput::Elements(threads as u64));
        if let Some(gpu) = gpu {
            let counter = Counter::new(gpu, threads, 256).unwrap();
            for variant in counter::Variant::ALL {
                let id = BenchmarkId::new(format!("gpu-{}", variant.name()), threads);
                bench_gpu(&mut group, id, gpu, || counter.reset(gpu), || counter.launch(gpu, variant));
            }
        }
        group.bench_function(BenchmarkId::new("cpu", threads), |bench| {
            bench.iter(|| (0..threads).fold(0u32, |count, _| black_box(count) + 1))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("histogram");
    for n in [1 << 16, 1 << 20, 1 << 24] {
        group.throughput(Throughput::Bytes(4 * n as u64));
        if let Some(gpu) = gpu {
            let u32_input = Histogram::random_u32(gpu, n, 256, 0, SEED).unwrap();
            let f32_input = Histogram::random_f32(gpu, n, 256, 0, SEED).unwrap();
            for variant in histogram::Variant::ALL {
                let id = BenchmarkId::new(format!("gpu-{}-u32", variant.name()), n);
                bench_gpu(&mut group, id, gpu, || u32_input.reset(gpu), || u32_input.launch(gpu, variant));
                let id = BenchmarkId::new(format!("gpu-{}-f32", variant.name()), n);
                bench_gpu(&mut group, id, gpu, || f32_input.reset(gpu), || f32_input.launch(gpu, variant));
            }
        }
        let values_u32 = random_in(n, SEED, 0u32, 300);
        let values_f32 = random_in(n, SEED, -4.5f32, 4.5);
        let (min, max) = histogram::F32_RANGE;
        group.bench_function(BenchmarkId::new("cpu-u32", n), |b| b.iter(|| histogram::cpu_reference(&values_u32, histogram::bin_u32)));
        group.bench_function(BenchmarkId::new("cpu-f32", n), |b| {
            b.iter(|| histogram::cpu_reference(&values_f32, |v| histogram::bin_f32(v, min, max)))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("matmul");
    for side in [256, 512, 1024] {
        let shape = (side, side, side);
        group.throughput(Throughput::Elements(2 * (side * side * side) as u64));
        if let Some(gpu) = gpu {
            let matmul = Matmul::new(gpu, shape, SEED).unwrap();
            for variant in matmul::Variant::ALL {
                let id = BenchmarkId::new(format!("gpu-{}", variant.name()), side);
                bench_gpu(&mut group, id, gpu, || Ok(()), || matmul.launch(gpu, variant));
            }
        }
        let (a, b) = (random_f32(side * side, SEED), random_f32(side * side, SEED ^ 1));
        group.bench_function(BenchmarkId::new("cpu", side), |bench| bench.iter(|| matmul::cpu_reference(&a, &b, side, side, side)));
    }
    group.finish();

    let mut group = c.benchmark_group("conv2d_5x5");
    for side in [512, 1024, 2048] {
        group.throughput(Throughput::Bytes(8 * (side * side) as u64));
        if let Some(gpu) = gpu {
            let conv = Conv2d::new(gpu, (side, side), 5, SEED).unwrap();
            for variant in conv::Variant::ALL {
                let id = BenchmarkId::new(format!("gpu-{:?}", variant).to_lowercase(), side);
                bench_gpu(&mut group, id, gpu, || Ok(()), || conv.launch(gpu, variant));
            }
        }
        let image = random_f32(side * side, SEED);
        let taps = random_f32(25, SEED ^ 1);
        let (image, taps) = (ArrayView2::from_shape((side, side), &image).unwrap(), ArrayView2::from_shape((5, 5), &taps).unwrap());
        group.bench_function(BenchmarkId::new("cpu", side), |b| b.iter(|| conv::conv2d_reference(image, taps)));
    }
    group.finish();

    let mut group = c.benchmark_group("conv1d_7");
    for n in [1 << 16, 1 << 20, 1 << 24] {
        group.throughput(Throughput::Bytes(8 * n as u64));
        if let Some(gpu) = gpu {
            let conv = Conv1d::new(gpu, n, 7, SEED).unwrap();
            bench_gpu(&mut group, BenchmarkId::new("gpu", n), gpu, || Ok(()), || conv.launch(gpu));
        }
        let (signal, taps) = (random_f32(n, SEED), random_f32(7, SEED ^ 1));
        group.bench_function(BenchmarkId::new("cpu", n), |b| {
            b.iter(|| conv::conv1d_reference(ArrayView1::from(&signal), ArrayView1::from(&taps)))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = kernels
}
criterion_main!(benches);
