//! Host side of `kernels::vector_add`: one thread per element.

use crate::check;
use crate::data::{random_f32, timed};
use crate::gpu::{arg, CudaContext, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::report::{Report, Work};
use cust::memory::{CopyDestination, DeviceBuffer};
use ndarray::ArrayView1;

pub fn cpu_reference(a: &[f32], b: &[f32]) -> Vec<f32> {
    (&ArrayView1::from(a) + &ArrayView1::from(b)).to_vec()
}

/// Inputs on the GPU, ready to launch.
pub struct VectorAdd {
    pub n: usize,
    config: LaunchConfig,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    da: DeviceBuffer<f32>,
    db: DeviceBuffer<f32>,
    dc: DeviceBuffer<f32>,
}

impl VectorAdd {
    pub fn new(gpu: &Gpu, n: usize, block: u32, seed: u64) -> GpuResult<Self> {
        if n == 0 {
            return Err(GpuError::InvalidInput("vector-add needs n >= 1".into()));
        }
        let config = LaunchConfig::linear(n, block)?;
        gpu.validate("vector_add", &config)?;
        gpu.ensure_fits("vector-add's three buffers", 3 * 4 * n as u64)?;
        let (a, b) = (random_f32(n, seed), random_f32(n, seed ^ 1));
        let (da, db) = (gpu.upload("a", &a)?, gpu.upload("b", &b)?);
        let dc = gpu.poisoned::<f32>("c", n)?;
        Ok(Self { n, config, a, b, da, db, dc })
    }

    pub fn work(&self) -> Work {
        Work::Bytes(3 * 4 * self.n as u64)
    }

    pub fn launch(&self, gpu: &Gpu) -> GpuResult<()> {
        let (pa, pb, pc) = (self.da.as_device_ptr(), self.db.as_device_ptr(), self.dc.as_device_ptr());
        let n = self.n;
        gpu.launch("vector_add", &self.config, &[arg(&pa), arg(&n), arg(&pb), arg(&n), arg(&pc)])
    }

    pub fn result(&self) -> GpuResult<Vec<f32>> {
        let mut c = vec![0.0f32; self.n];
        self.dc.copy_to(&mut c).during("copying c back")?;
        Ok(c)
    }
}

pub fn run(gpu: &Gpu, n: usize, block: u32, iters: usize, seed: u64) -> GpuResult<Report> {
    let add = VectorAdd::new(gpu, n, block, seed)?;
    add.launch(gpu)?;
    gpu.synchronize("vector_add")?;
    let (reference, cpu_ms) = timed(|| cpu_reference(&add.a, &add.b));
    // The GPU performs the same single IEEE addition: the result must be bit-identical.
    let check = check::close(&add.result()?, &reference, 0.0);
    let gpu_ms = gpu.time_ms("vector_add", iters, || Ok(()), || add.launch(gpu))?;
    Ok(Report::new(
        &gpu.info,
        "vector-add",
        "scalar",
        format!("n={} block={}", n, block),
        gpu_ms,
        add.work(),
        Some(cpu_ms),
        check,
    ))
}
