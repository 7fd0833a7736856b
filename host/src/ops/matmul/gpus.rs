//! `matmul --gpus N`: C's rows divided among N GPUs.

use super::launch::tile_of;
use super::options::{random_inputs, require_shape, shape_and_files, shape_class, Dims};
use super::tune::cached_kernel;
use super::{cpu_reference, launch_config, tolerance, Matmul, Options, SgemmArgs};
use crate::check::{self, product_scale};
use crate::gpu::{require, Gpu, GpuResult};
use crate::multi::{self, Done, Share, SplitReport};
use crate::registry::Kernel;
use crate::report::Work;
use crate::tuning;
use interface::matmul::DEFAULT_TILE;
use std::ops::Range;
use std::path::Path;

/// GPU `i`'s share of a divided SGEMM: its rows of A and C, and all of B, run with the
/// configuration tuned for this GPU and the shape of the share, if there is one.
fn share(
    gpu: &Gpu,
    (a, b): (&[f32], &[f32]),
    rows: Range<usize>,
    (n, k): (usize, usize),
    cache: Option<&Path>,
) -> GpuResult<Share> {
    let m = rows.len();
    let class = shape_class((m, n, k));
    let tuned = match cache {
        // An f32 pick is a tile configuration: no other variants apply.
        Some(path) => cached_kernel(path, &tuning::device_key(gpu.info()), &class, &[])?,
        None => None,
    };
    let kernel = tuned.and_then(|(kernel, _)| tile_of(&kernel)).map_or(DEFAULT_TILE.kernel, |tile| tile.kernel);
    gpu.validate(kernel, &launch_config(kernel, m, n)?)?;
    let a_rows = &a[rows.start * k..rows.end * k];
    Share::new(gpu, rows, kernel, &[("A's rows", a_rows), ("B", b)], m * n)
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

/// `matmul --gpus N`: C's rows divided among N GPUs, after the same job on one GPU.
pub fn split(options: &Options, gpus: usize, seed: u64, iters: usize) -> GpuResult<SplitReport> {
    let count = multi::require_gpus(gpus)?;
    let (shape, inputs) = shape_and_files(options)?;
    require_shape(shape)?;
    let (m, n, k) = shape;
    let (a, b) = inputs.unwrap_or_else(|| random_inputs(shape, seed));
    require(m >= count, || format!("{m} rows cannot be divided among {count} GPUs"))?;
    let cache = options.tuning_cache.clone().or_else(|| tuning::default_path().ok());
    let rows = rows_to_check((m, n, k), count);
    let expected = {
        let picked: Vec<f32> = rows.iter().flat_map(|&r| a[r * k..(r + 1) * k].iter().copied()).collect();
        cpu_reference(&picked, &b, rows.len(), n, k)
    };
    let which = if rows.len() == m {
        "all of C".to_string()
    } else {
        format!("{} of C's {m} rows (both ends of every GPU's share, and rows between)", rows.len())
    };
    let job = multi::Job {
        family: Matmul::NAME,
        shape: format!("{m}x{n}x{k}"),
        work: Work::Flops(2 * (m * n * k) as u64),
        checked: which,
    };
    let setup =
        |gpus: usize, i: usize, gpu: &Gpu| share(gpu, (&a, &b), multi::part(m, gpus, i), (n, k), cache.as_deref());
    let launch = |gpu: &Gpu, share: &Share| {
        let (inputs, c) = share.device();
        // SAFETY: the share's buffers live until `multi` has synchronized its GPU.
        unsafe { gpu.launch(share.kernel, &SgemmArgs { a: inputs[0], b: inputs[1], c, m: share.range.len(), n, k }) }
    };
    let tolerance = tolerance(k) * product_scale(&a, &b);
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
