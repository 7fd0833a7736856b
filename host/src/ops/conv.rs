//! Host side of `kernels::conv`: same-size output, zero padding, odd filters 3×3 to 7×7 (2D)
//! or 3 to 7 taps (1D), the filter written into the kernels' constant memory.
//!
//! Tolerance: image and filter are uniform in [-1, 1), so each of the `taps` products has
//! magnitude at most 1; the GPU (with fused multiply-adds) and the CPU round differently,
//! each within about `taps·ε` of the exact sum. Elements may differ by `4·taps·ε`.

use crate::check;
use crate::data::{random_f32, timed};
use crate::gpu::{arg, CudaContext, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::report::{Report, Work};
use cust::memory::CopyDestination;
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, Zip};
use std::ffi::CStr;

/// Must match `kernels::conv`: the filter array, the tiled 2D kernel's block and tile,
/// and the 1D kernel's block.
const MAX_TAPS: usize = 49;
const TILE: u32 = 32;
const TILED_BLOCK: (u32, u32) = (32, 8);
const CONV1D_BLOCK: u32 = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ArgEnum)]
pub enum Variant {
    Naive,
    Tiled,
}

impl Variant {
    pub const ALL: [Variant; 2] = [Variant::Naive, Variant::Tiled];
}

/// The filter side must be odd and at most 7 (the constant array holds 7×7).
pub fn radius(filter: usize) -> GpuResult<usize> {
    if filter % 2 == 0 || !(3..=7).contains(&filter) {
        return Err(GpuError::InvalidInput(format!("the filter must be 3, 5 or 7 wide (got {})", filter)));
    }
    Ok(filter / 2)
}

fn set_filter(gpu: &Gpu, taps: &[f32]) -> GpuResult<()> {
    let mut padded = [0.0f32; MAX_TAPS];
    padded[..taps.len()].copy_from_slice(taps);
    let name = CStr::from_bytes_with_nul(b"FILTER\0").expect("a NUL-terminated literal");
    let mut symbol = gpu.module.get_global::<[f32; MAX_TAPS]>(name).during("finding FILTER in the module")?;
    symbol.copy_from(&padded).during("writing the filter to constant memory")
}

/// Cross-correlation with zero padding, the definition the kernels implement.
pub fn conv2d_reference(image: ArrayView2<f32>, filter: ArrayView2<f32>) -> Array2<f32> {
    let r = filter.nrows() / 2;
    let (h, w) = image.dim();
    let mut padded = Array2::<f32>::zeros((h + 2 * r, w + 2 * r));
    padded.slice_mut(s![r..r + h, r..r + w]).assign(&image);
    let mut out = Array2::<f32>::zeros((h, w));
    Zip::from(&mut out).and(padded.windows(filter.dim())).par_for_each(|o, window| {
        *o = window.iter().zip(filter.iter()).map(|(x, f)| x * f).sum();
    });
    out
}

pub fn conv1d_reference(signal: ArrayView1<f32>, filter: ArrayView1<f32>) -> Array1<f32> {
    let r = filter.len() / 2;
    let mut padded = Array1::<f32>::zeros(signal.len() + 2 * r);
    padded.slice_mut(s![r..r + signal.len()]).assign(&signal);
    let mut out = Array1::<f32>::zeros(signal.len());
    Zip::from(&mut out).and(padded.windows(filter.len())).par_for_each(|o, window| {
        *o = window.iter().zip(filter.iter()).map(|(x, f)| x * f).sum();
    });
    out
}

fn blocks(extent: usize, per_block: u32) -> GpuResult<u32> {
    u32::try_from((extent as u64 + per_block as u64 - 1) / per_block as u64)
        .map_err(|_| GpuError::InvalidInput(format!("{} is too large for one grid dimension", extent)))
}

pub fn run_2d(
    gpu: &Gpu,
    (width, height): (usize, usize),
    filter: usize,
    variants: &[Variant],
    iters: usize,
    seed: u64,
) -> GpuResult<Vec<Report>> {
    let r = radius(filter)?;
    if width == 0 || height == 0 {
        return Err(GpuError::InvalidInput(format!("conv2d needs a non-empty image (got {}x{})", width, height)));
    }
    let naive = LaunchConfig { grid: (blocks(width, 16)?, blocks(height, 16)?, 1), block: (16, 16, 1), shared_bytes: 0 };
    let tiled = LaunchConfig {
        grid: (blocks(width, TILE)?, blocks(height, TILE)?, 1),
        block: (TILED_BLOCK.0, TILED_BLOCK.1, 1),
        shared_bytes: 0,
    };
    let tiled_kernel = format!("conv2d_tiled_r{}", r);
    let plan: Vec<(Variant, &str, LaunchConfig)> = variants
        .iter()
        .map(|&v| match v {
            Variant::Naive => (v, "conv2d_naive", naive),
            Variant::Tiled => (v, tiled_kernel.as_str(), tiled),
        })
        .collect();
    for (_, kernel, config) in &plan {
        gpu.validate(kernel, config)?;
    }
    gpu.ensure_fits("conv2d's input and output", 2 * 4 * (width * height) as u64)?;
    let image = random_f32(width * height, seed);
    let taps = random_f32(filter * filter, seed ^ 1);
    set_filter(gpu, &taps)?;
    let input = gpu.upload("the image", &image)?;
    let mut output = gpu.poisoned::<f32>("the output", width * height)?;
    let (pi, po, len) = (input.as_device_ptr(), output.as_device_ptr(), image.len());
    let (reference, cpu_ms) = timed(|| {
        let image = ArrayView2::from_shape((height, width), &image).expect("height×width");
        let taps = ArrayView2::from_shape((filter, filter), &taps).expect("filter×filter");
        conv2d_reference(image, taps).into_raw_vec()
    });

    let mut reports = Vec::new();
    for (variant, kernel, config) in &plan {
        let mut args = vec![arg(&pi), arg(&len), arg(&po), arg(&width), arg(&height)];
        if *variant == Variant::Naive {
            args.push(arg(&r));
        }
        let launch = || gpu.launch(kernel, config, &args);
        output.set_8(0xFF).during("poisoning the output")?;
        launch()?;
        gpu.synchronize(kernel)?;
        let mut result = vec![0.0f32; len];
        output.copy_to(&mut result).during("copying the output back")?;
        let check = check::close(&result, &reference, 4.0 * (filter * filter) as f64 * f32::EPSILON as f64);
        let gpu_ms = gpu.time_ms(kernel, iters, || Ok(()), launch)?;
        let name = if *variant == Variant::Naive { "naive" } else { "tiled" };
        reports.push(Report::new(
            &gpu.info,
            "conv2d",
            name,
            format!("{}x{} filter {}x{}", width, height, filter, filter),
            gpu_ms,
            // The least any implementation moves: read the image once, write it once.
            Work::Bytes(2 * 4 * len as u64),
            Some(cpu_ms),
            check,
        ));
    }
    Ok(reports)
}

pub fn run_1d(gpu: &Gpu, n: usize, filter: usize, iters: usize, seed: u64) -> GpuResult<Report> {
    let r = radius(filter)?;
    if n == 0 {
        return Err(GpuError::InvalidInput("conv1d needs n >= 1".into()));
    }
    let config = LaunchConfig { grid: (blocks(n, CONV1D_BLOCK)?, 1, 1), block: (CONV1D_BLOCK, 1, 1), shared_bytes: 0 };
    gpu.validate("conv1d", &config)?;
    gpu.ensure_fits("conv1d's input and output", 2 * 4 * n as u64)?;
    let signal = random_f32(n, seed);
    let taps = random_f32(filter, seed ^ 1);
    set_filter(gpu, &taps)?;
    let input = gpu.upload("the signal", &signal)?;
    let output = gpu.poisoned::<f32>("the output", n)?;
    let (pi, po) = (input.as_device_ptr(), output.as_device_ptr());
    let launch = || gpu.launch("conv1d", &config, &[arg(&pi), arg(&n), arg(&po), arg(&r)]);
    launch()?;
    gpu.synchronize("conv1d")?;
    let mut result = vec![0.0f32; n];
    output.copy_to(&mut result).during("copying the output back")?;
    let (reference, cpu_ms) =
        timed(|| conv1d_reference(ArrayView1::from(&signal), ArrayView1::from(&taps)).into_raw_vec());
    let check = check::close(&result, &reference, 4.0 * filter as f64 * f32::EPSILON as f64);
    let gpu_ms = gpu.time_ms("conv1d", iters, || Ok(()), launch)?;
    Ok(Report::new(
        &gpu.info,
        "conv1d",
        "tiled",
        format!("n={} filter {}", n, filter),
        gpu_ms,
        Work::Bytes(2 * 4 * n as u64),
        Some(cpu_ms),
        check,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn conv2d_reference_matches_hand_computed_values() {
        let image = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]];
        let filter = array![[0.0f32, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]];
        let out = conv2d_reference(image.view(), filter.view());
        // Centre: 5 + its four neighbours. Corner (0,0): 1 + 2 + 4, the rest is padding.
        assert_eq!(out[[1, 1]], 25.0);
        assert_eq!(out[[0, 0]], 7.0);
        assert_eq!(out[[2, 2]], 9.0 + 8.0 + 6.0);
        // Cross-correlation, not convolution: an off-centre tap is not mirrored.
        let shift = array![[0.0f32, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]];
        assert_eq!(conv2d_reference(image.view(), shift.view())[[1, 1]], 6.0);
    }

    #[test]
    fn conv1d_reference_matches_hand_computed_values() {
        let out = conv1d_reference(array![1.0f32, 2.0, 3.0, 4.0].view(), array![1.0f32, 10.0, 100.0].view());
        assert_eq!(out.to_vec(), vec![210.0, 321.0, 432.0, 43.0]);
    }

    #[test]
    fn filter_sizes_are_validated() {
        assert_eq!(radius(5).unwrap(), 2);
        assert!(radius(4).is_err());
        assert!(radius(9).is_err());
        assert!(radius(1).is_err());
    }
}
