//! `matmul --gpus N [--dtype T]`: C's rows divided among N GPUs.

use super::options::{random_inputs, require_shape, shape_and_files, Dims};
use super::{cpu_reference, tolerance, Matmul, Options};
use crate::check::{self, product_scale};
use crate::gpu::{require, Gpu, GpuResult};
use crate::multi::{self, Done, Share, SplitReport};
use crate::registry::Kernel;
use crate::report::Work;
use crate::tuning;
use cuda_kernels::matmul::{gemm_on_slices, rounded_reference, tensor, Dtype, GemmKernel};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

/// The kernel GPU `i`'s share of a divided product runs: what the library's `gemm` would run
/// for the share on that GPU ([`GemmKernel::chosen_in`]), with the tuning cache `--tuning-cache`
/// names (else the default one).
fn share_kernel(gpu: &Gpu, dtype: Dtype, (m, n, k): Dims, cache: Option<&Path>) -> GpuResult<GemmKernel> {
    let kernel = GemmKernel::chosen_in(cache, gpu, dtype, (m, n, k))?;
    if dtype == Dtype::F32 {
        gpu.validate(kernel.kernel(dtype)?, &kernel.f32_launch((m, n, k))?)?;
    }
    Ok(kernel)
}

/// Rows of C a run on `gpus` GPUs checks against the CPU: all when the CPU can compute all of
/// C quickly, else both ends of every GPU's share and rows spread between them.
pub(super) fn rows_to_check((m, n, k): Dims, gpus: usize) -> Vec<usize> {
    if m * n * k <= 1 << 33 {
        return (0..m).collect();
    }
    let ends = (0..gpus).flat_map(|i| {
        let share = multi::part(m, gpus, i);
        [share.start, share.end - 1]
    });
    let mut rows: Vec<usize> = ends.chain((1..32).map(|i| i * m / 32)).collect();
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// `matmul --gpus N`: C's rows divided among N GPUs, after the same job on one GPU, in
/// `dtype` (f32, or a tensor type converted from f32 on each GPU within the timed launch).
pub fn split(options: &Options, dtype: Dtype, gpus: usize, seed: u64, iters: usize) -> GpuResult<SplitReport> {
    let count = multi::require_gpus(gpus)?;
    let (shape, inputs) = shape_and_files(options)?;
    require_shape(shape)?;
    let (m, n, k) = shape;
    let (a, b) = inputs.unwrap_or_else(|| random_inputs(shape, seed));
    tensor::require_in_range(dtype, &a, &b)?;
    require(m >= count, || format!("{m} rows cannot be divided among {count} GPUs"))?;
    let cache = options.tuning_cache.clone().or_else(|| tuning::default_path().ok());
    let rows = rows_to_check((m, n, k), count);
    let expected = {
        let picked: Vec<f32> = rows.iter().flat_map(|&r| a[r * k..(r + 1) * k].iter().copied()).collect();
        match dtype {
            Dtype::F32 => cpu_reference(&picked, &b, rows.len(), n, k),
            dtype => rounded_reference(dtype, &picked, &b, rows.len(), n, k),
        }
    };
    let which = if rows.len() == m {
        "all of C".to_string()
    } else {
        format!("{} of C's {m} rows (both ends of every GPU's share, and rows between)", rows.len())
    };
    let job = multi::Job {
        family: Matmul::NAME,
        shape: match dtype {
            Dtype::F32 => format!("{m}x{n}x{k}"),
            dtype => format!("{m}x{n}x{k} {}", dtype.name()),
        },
        work: Work::Flops(2 * (m * n * k) as u64),
        checked: which,
    };
    // Each share's kernel, by its GPU and rows: found once, when the share is made.
    let kernels: Mutex<HashMap<(u64, usize), GemmKernel>> = Mutex::new(HashMap::new());
    let setup = |gpus: usize, i: usize, gpu: &Gpu| -> GpuResult<Share> {
        let range = multi::part(m, gpus, i);
        let kernel = share_kernel(gpu, dtype, (range.len(), n, k), cache.as_deref())?;
        let name = kernel.kernel(dtype)?;
        let a_rows = &a[range.start * k..range.end * k];
        let share = Share::new(gpu, range.clone(), name, &[("A's rows", a_rows), ("B", &b)], range.len() * n)?;
        kernels.lock().expect("no thread panicked holding it").insert((gpu.id(), range.start), kernel);
        Ok(share)
    };
    let launch = |gpu: &Gpu, share: &Share| {
        let kernel = kernels.lock().expect("no thread panicked holding it")[&(gpu.id(), share.range.start)];
        let (inputs, c) = share.device();
        let dims = (share.range.len(), n, k);
        // SAFETY: the share's buffers live until `multi` has synchronized its GPU.
        unsafe { gemm_on_slices(gpu, (inputs[0], inputs[1], c), dims, dtype, kernel) }
    };
    let tolerance = match dtype {
        Dtype::F32 => tolerance(k),
        _ => tensor::tolerance(k),
    } * product_scale(&a, &b);
    let check = |done: &[Done]| {
        // The rows to check, from whichever GPU computed them.
        let got: Vec<f32> = rows
            .iter()
            .flat_map(|&r| {
                let share = done.iter().find(|d| d.range.contains(&r)).expect("the shares cover every row");
                let local = r - share.range.start;
                share.output[local * n..(local + 1) * n].iter().copied()
            })
            .collect();
        check::close(&got, &expected, tolerance)
    };
    multi::measure(job, count, iters, &setup, &launch, &check)
}
