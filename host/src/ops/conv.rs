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
use cust::memory::{CopyDestination, DeviceBuffer};
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, Zip};
use std::ffi::CStr;

/// Must match `kernels::conv`: the filter array, the tiled 2D kernel's block and tile,
/// and the 1D kernel's block.
const MAX_TAPS: usize = 49;
const TILE: u32 = 32;
const TILED_BLOCK: (u32, u32) = (32, 4);
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

/// Launch configurations of the naive (16×16 threads, one pixel each) and tiled (32×4
/// threads, a 32×32 tile) 2D kernels.
pub fn conv2d_configs(width: usize, height: usize) -> GpuResult<(LaunchConfig, LaunchConfig)> {
    let naive = LaunchConfig { grid: (blocks(width, 16)?, blocks(height, 16)?, 1), block: (16, 16, 1), shared_bytes: 0 };
    let tiled = LaunchConfig {
        grid: (blocks(width, TILE)?, blocks(height, TILE)?, 1),
        block: (TILED_BLOCK.0, TILED_BLOCK.1, 1),
        shared_bytes: 0,
    };
    Ok((naive, tiled))
}

pub fn conv1d_config(n: usize) -> GpuResult<LaunchConfig> {
    Ok(LaunchConfig { grid: (blocks(n, CONV1D_BLOCK)?, 1, 1), block: (CONV1D_BLOCK, 1, 1), shared_bytes: 0 })
}

/// Image on the GPU, filter in constant memory, output poisoned. The filter lives in the
/// module's single `FILTER`, so the most recently built convolution owns it.
pub struct Conv2d {
    pub width: usize,
    pub height: usize,
    pub filter: usize,
    pub image: Vec<f32>,
    pub taps: Vec<f32>,
    naive: LaunchConfig,
    tiled: LaunchConfig,
    input: DeviceBuffer<f32>,
    output: DeviceBuffer<f32>,
}

impl Conv2d {
    pub fn new(gpu: &Gpu, (width, height): (usize, usize), filter: usize, seed: u64) -> GpuResult<Self> {
        let r = radius(filter)?;
        if width == 0 || height == 0 {
            return Err(GpuError::InvalidInput(format!("conv2d needs a non-empty image (got {}x{})", width, height)));
        }
        let (naive, tiled) = conv2d_configs(width, height)?;
        gpu.validate("conv2d_naive", &naive)?;
        gpu.validate(&format!("conv2d_tiled_r{}", r), &tiled)?;
        gpu.ensure_fits("conv2d's input and output", 2 * 4 * (width * height) as u64)?;
        let image = random_f32(width * height, seed);
        let taps = random_f32(filter * filter, seed ^ 1);
        set_filter(gpu, &taps)?;
        let input = gpu.upload("the image", &image)?;
        let output = gpu.poisoned::<f32>("the output", width * height)?;
        Ok(Self { width, height, filter, image, taps, naive, tiled, input, output })
    }

    /// The least any implementation moves: read the image once, write it once.
    pub fn work(&self) -> Work {
        Work::Bytes(2 * 4 * self.image.len() as u64)
    }

    pub fn launch(&self, gpu: &Gpu, variant: Variant) -> GpuResult<()> {
        let (pi, po, len) = (self.input.as_device_ptr(), self.output.as_device_ptr(), self.image.len());
        let (width, height, r) = (self.width, self.height, self.filter / 2);
        let mut args = vec![arg(&pi), arg(&len), arg(&po), arg(&width), arg(&height)];
        match variant {
            Variant::Naive => {
                args.push(arg(&r));
                gpu.launch("conv2d_naive", &self.naive, &args)
            }
            Variant::Tiled => gpu.launch(&format!("conv2d_tiled_r{}", r), &self.tiled, &args),
        }
    }

    pub fn poison(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("the output", &self.output)
    }

    pub fn result(&self) -> GpuResult<Vec<f32>> {
        let mut result = vec![0.0f32; self.image.len()];
        self.output.copy_to(&mut result).during("copying the output back")?;
        Ok(result)
    }

    pub fn cpu_reference(&self) -> Vec<f32> {
        let image = ArrayView2::from_shape((self.height, self.width), &self.image).expect("height×width");
        let taps = ArrayView2::from_shape((self.filter, self.filter), &self.taps).expect("filter×filter");
        conv2d_reference(image, taps).into_raw_vec()
    }
}

pub fn run_2d(
    gpu: &Gpu,
    size: (usize, usize),
    filter: usize,
    variants: &[Variant],
    iters: usize,
    seed: u64,
) -> GpuResult<Vec<Report>> {
    let conv = Conv2d::new(gpu, size, filter, seed)?;
    let (reference, cpu_ms) = timed(|| conv.cpu_reference());
    let tolerance = 4.0 * (filter * filter) as f64 * f32::EPSILON as f64;
    let mut reports = Vec::new();
    for &variant in variants {
        conv.poison(gpu)?;
        conv.launch(gpu, variant)?;
        gpu.synchronize("conv2d")?;
        let check = check::close(&conv.result()?, &reference, tolerance);
        let gpu_ms = gpu.time_ms("conv2d", iters, || Ok(()), || conv.launch(gpu, variant))?;
        reports.push(Report::new(
            &gpu.info,
            "conv2d",
            if variant == Variant::Naive { "naive" } else { "tiled" },
            format!("{}x{} filter {}x{}", conv.width, conv.height, filter, filter),
            gpu_ms,
            conv.work(),
            Some(cpu_ms),
            check,
        ));
    }
    Ok(reports)
}

/// Signal on the GPU, filter in constant memory (see [`Conv2d`]), output poisoned.
pub struct Conv1d {
    pub filter: usize,
    pub signal: Vec<f32>,
    pub taps: Vec<f32>,
    config: LaunchConfig,
    input: DeviceBuffer<f32>,
    output: DeviceBuffer<f32>,
}

impl Conv1d {
    pub fn new(gpu: &Gpu, n: usize, filter: usize, seed: u64) -> GpuResult<Self> {
        radius(filter)?;
        if n == 0 {
            return Err(GpuError::InvalidInput("conv1d needs n >= 1".into()));
        }
        let config = conv1d_config(n)?;
        gpu.validate("conv1d", &config)?;
        gpu.ensure_fits("conv1d's input and output", 2 * 4 * n as u64)?;
        let signal = random_f32(n, seed);
        let taps = random_f32(filter, seed ^ 1);
        set_filter(gpu, &taps)?;
        let input = gpu.upload("the signal", &signal)?;
        let output = gpu.poisoned::<f32>("the output", n)?;
        Ok(Self { filter, signal, taps, config, input, output })
    }

    pub fn work(&self) -> Work {
        Work::Bytes(2 * 4 * self.signal.len() as u64)
    }

    pub fn launch(&self, gpu: &Gpu) -> GpuResult<()> {
        let (pi, po, n, r) = (self.input.as_device_ptr(), self.output.as_device_ptr(), self.signal.len(), self.filter / 2);
        gpu.launch("conv1d", &self.config, &[arg(&pi), arg(&n), arg(&po), arg(&r)])
    }

    pub fn result(&self) -> GpuResult<Vec<f32>> {
        let mut result = vec![0.0f32; self.signal.len()];
        self.output.copy_to(&mut result).during("copying the output back")?;
        Ok(result)
    }

    pub fn cpu_reference(&self) -> Vec<f32> {
        conv1d_reference(ArrayView1::from(&self.signal), ArrayView1::from(&self.taps)).into_raw_vec()
    }
}

pub fn run_1d(gpu: &Gpu, n: usize, filter: usize, iters: usize, seed: u64) -> GpuResult<Report> {
    let conv = Conv1d::new(gpu, n, filter, seed)?;
    conv.launch(gpu)?;
    gpu.synchronize("conv1d")?;
    let (reference, cpu_ms) = timed(|| conv.cpu_reference());
    let check = check::close(&conv.result()?, &reference, 4.0 * filter as f64 * f32::EPSILON as f64);
    let gpu_ms = gpu.time_ms("conv1d", iters, || Ok(()), || conv.launch(gpu))?;
    Ok(Report::new(
        &gpu.info,
        "conv1d",
        "tiled",
        format!("n={} filter {}", n, filter),
        gpu_ms,
        conv.work(),
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
