//! Host side of `kernels::vector_add`: one thread per element.

use crate::check;
use crate::data::{random_f32, timed};
use crate::gpu::{arg, CudaContext, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::report::{Report, Work};
use cust::memory::CopyDestination;
use ndarray::ArrayView1;

pub fn cpu_reference(a: &[f32], b: &[f32]) -> Vec<f32> {
    (&ArrayView1::from(a) + &ArrayView1::from(b)).to_vec()
}

pub fn run(gpu: &Gpu, n: usize, block: u32, iters: usize, seed: u64) -> GpuResult<Report> {
    if n == 0 {
        return Err(GpuError::InvalidInput("vector-add needs n >= 1".into()));
    }
    let config = LaunchConfig::linear(n, block)?;
    gpu.validate("vector_add", &config)?;
    gpu.ensure_fits("vector-add's three buffers", 3 * 4 * n as u64)?;
    let (a, b) = (random_f32(n, seed), random_f32(n, seed ^ 1));
    let (da, db) = (gpu.upload("a", &a)?, gpu.upload("b", &b)?);
    let dc = gpu.poisoned::<f32>("c", n)?;
    let (pa, pb, pc) = (da.as_device_ptr(), db.as_device_ptr(), dc.as_device_ptr());
    let launch = || gpu.launch("vector_add", &config, &[arg(&pa), arg(&n), arg(&pb), arg(&n), arg(&pc)]);

    launch()?;
    gpu.synchronize("vector_add")?;
    let mut c = vec![0.0f32; n];
    dc.copy_to(&mut c).during("copying c back")?;
    let (reference, cpu_ms) = timed(|| cpu_reference(&a, &b));
    // The GPU performs the same single IEEE addition: the result must be bit-identical.
    let check = check::close(&c, &reference, 0.0);
    let gpu_ms = gpu.time_ms("vector_add", iters, || Ok(()), launch)?;
    Ok(Report::new(
        &gpu.info,
        "vector-add",
        "scalar",
        format!("n={} block={}", n, block),
        gpu_ms,
        Work::Bytes(3 * 4 * n as u64),
        Some(cpu_ms),
        check,
    ))
}
