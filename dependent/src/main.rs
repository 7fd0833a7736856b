//! A program of a user's own, calling three of `cuda-kernels`' families on its data and
//! checking each answer against the CPU. Without a GPU it prints SKIPPED and exits 0.
use cuda_kernels::histogram::{cpu_reference, histogram_array, F32Bins};
use cuda_kernels::{matmul::*, select::median_array, stats};
use ndarray::Array2;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
    let a = Array2::from_shape_fn((1000, 333), |(i, j)| ((i * 7 + j * 3) % 29) as f32 / 14.0 - 1.0);
    let b = Array2::from_shape_fn((333, 517), |(i, j)| ((i * 5 + j * 11) % 31) as f32 / 15.0 - 1.0);
    let c = gemm_array(&gpu, a.view(), b.view(), Dtype::Bf16)?;
    let want = rounded_reference(Dtype::Bf16, a.as_slice().unwrap(), b.as_slice().unwrap(), 1000, 517, 333);
    let error = c.iter().zip(&want).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
    println!("bf16 gemm 1000×333·333×517 on {}: largest error {error:.1e}", gpu.info().name);
    let values = c.as_slice().unwrap();
    let median = median_array(&gpu, c.view())?;
    let cpu_median = stats::median(&mut values.to_vec()).unwrap();
    println!("median of C: gpu {median}, cpu {cpu_median}");
    let counts = histogram_array(&gpu, values.into(), 8, (-40.0, 40.0))?;
    let cpu = cpu_reference(values.iter().copied(), F32Bins::new(-40.0, 40.0, 8));
    println!("histogram of C in 8 bins over [-40, 40]: {counts} (cpu {cpu:?})");
    let ok = error <= 1e-3 && median == cpu_median && counts.to_vec() == cpu;
    println!("{}", if ok { "all three agree with the CPU: OK" } else { "WRONG" });
    ok.then_some(()).ok_or_else(|| "a GPU result differs from the CPU's".into())
}
