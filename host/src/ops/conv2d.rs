//! Host side of `kernels::conv2d`: same-size output, zero padding, odd filters 3×3 to 7×7,
//! the taps written into the kernels' constant memory.
//!
//! Tolerance: image and filter are uniform in [-1, 1), so each of the `taps` products has
//! magnitude at most 1; the GPU (with fused multiply-adds) and the CPU round differently,
//! each within about `taps·ε` of the exact sum. Elements may differ by `4·taps·ε`.

use crate::check;
use crate::data::random_f32;
use crate::gpu::{arg, require, CudaContext, Gpu, GpuResult, LaunchConfig};
use crate::registry::{Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::{CopyDestination, DeviceBuffer};
use interface::conv::{BLOCK_ROWS, FILTER_SYMBOL, MAX_RADIUS, MAX_TAPS, NAIVE_BLOCK, TILE};
use ndarray::{s, Array2, ArrayView2, Zip};
use std::ffi::CString;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    Naive,
    Tiled,
}

impl Method {
    pub const ALL: [Method; 2] = [Method::Naive, Method::Tiled];
}

#[derive(Debug, clap::Args)]
pub struct Options {
    #[arg(long, default_value_t = 8192)]
    pub width: usize,
    #[arg(long, default_value_t = 8192)]
    pub height: usize,
    /// Filter side: 3, 5 or 7.
    #[arg(long, default_value_t = 5)]
    pub filter: usize,
    /// Variants to run (all when omitted).
    #[arg(long = "variant", value_enum)]
    pub variants: Vec<Method>,
}

/// The radius of an odd filter of at most `2·MAX_RADIUS + 1` taps a side.
pub fn radius(filter: usize) -> GpuResult<usize> {
    let widest = 2 * MAX_RADIUS + 1;
    require(filter % 2 == 1 && (3..=widest).contains(&filter), || {
        format!("the filter must be 3, 5 or 7 wide (got {})", filter)
    })?;
    Ok(filter / 2)
}

/// Writes `taps` into the module's constant `FILTER`, which both convolution families read:
/// the most recently prepared convolution owns it.
pub fn set_filter(gpu: &Gpu, taps: &[f32]) -> GpuResult<()> {
    let mut padded = [0.0f32; MAX_TAPS];
    padded[..taps.len()].copy_from_slice(taps);
    let name = CString::new(FILTER_SYMBOL).expect("a symbol name without NUL");
    let mut symbol = gpu.module.get_global::<[f32; MAX_TAPS]>(&name).during("finding FILTER in the module")?;
    symbol.copy_from(&padded).during("writing the filter to constant memory")
}

/// Cross-correlation with zero padding, the definition the kernels implement.
pub fn cpu_reference(image: ArrayView2<f32>, filter: ArrayView2<f32>) -> Array2<f32> {
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

fn naive_config(width: usize, height: usize) -> GpuResult<LaunchConfig> {
    let side = NAIVE_BLOCK as usize;
    LaunchConfig::tiles_2d(width, height, (side, side), (NAIVE_BLOCK, NAIVE_BLOCK), 0)
}

fn tiled_config(width: usize, height: usize) -> GpuResult<LaunchConfig> {
    LaunchConfig::tiles_2d(width, height, (TILE, TILE), (TILE as u32, BLOCK_ROWS as u32), 0)
}

/// The tiled kernel of a radius: the radius is a const generic, one entry point each.
fn tiled_kernel(radius: usize) -> &'static str {
    ["conv2d_tiled_r1", "conv2d_tiled_r2", "conv2d_tiled_r3"][radius - 1]
}

/// Image on the GPU, filter in constant memory, output poisoned.
pub struct Conv2d {
    pub width: usize,
    pub height: usize,
    pub filter: usize,
    pub image: Vec<f32>,
    pub taps: Vec<f32>,
    variants: Vec<Variant>,
    expected: Vec<f32>,
    input: DeviceBuffer<f32>,
    output: DeviceBuffer<f32>,
}

impl Kernel for Conv2d {
    const NAME: &'static str = "conv2d";
    const ABOUT: &'static str = "2D convolution (cross-correlation), zero padding, filter in constant memory";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let mut list = vec![("conv2d_naive", naive_config(8192, 8192)?)];
        for r in 1..=MAX_RADIUS {
            list.push((tiled_kernel(r), tiled_config(8192, 8192)?));
        }
        Ok(list)
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        let image = |w: usize, h: usize, f: usize| format!("--width {w} --height {h} --filter {f}");
        match purpose {
            Purpose::Default => vec![String::new()],
            Purpose::Check => {
                [(1, 1, 3), (37, 29, 5), (100, 1, 7), (1031, 517, 3), (1031, 517, 5), (1031, 517, 7), (67, 45, 5)]
                    .iter()
                    .map(|&(w, h, f)| image(w, h, f))
                    .collect()
            }
            Purpose::Quick => [1024, 4096, 8192].iter().map(|&s| image(s, s, 5)).collect(),
            Purpose::Full => [512, 1024, 2048, 4096, 8192].iter().map(|&s| image(s, s, 5)).collect(),
            Purpose::Criterion => [512, 1024, 2048].iter().map(|&s| image(s, s, 5)).collect(),
        }
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let (width, height, filter) = (options.width, options.height, options.filter);
        let r = radius(filter)?;
        require(width >= 1 && height >= 1, || format!("conv2d needs a non-empty image (got {}x{})", width, height))?;
        let methods = if options.variants.is_empty() { &Method::ALL[..] } else { &options.variants };
        let mut variants = Vec::new();
        for method in methods {
            let (variant, config) = match method {
                Method::Naive => (Variant::new("naive", "conv2d_naive"), naive_config(width, height)?),
                Method::Tiled => (Variant::new("tiled", tiled_kernel(r)), tiled_config(width, height)?),
            };
            gpu.validate(&variant.kernel, &config)?;
            variants.push(variant);
        }
        gpu.ensure_fits("conv2d's input and output", 2 * 4 * (width * height) as u64)?;
        let image = random_f32(width * height, seed);
        let taps = random_f32(filter * filter, seed ^ 1);
        set_filter(gpu, &taps)?;
        let input = gpu.upload("the image", &image)?;
        let output = gpu.poisoned::<f32>("the output", width * height)?;
        Ok(Self { width, height, filter, image, taps, variants, expected: vec![], input, output })
    }
}

impl Workload for Conv2d {
    fn shape(&self) -> String {
        format!("{}x{} filter {}x{}", self.width, self.height, self.filter, self.filter)
    }

    fn size(&self) -> u64 {
        self.width as u64
    }

    fn peer(&self) -> Option<String> {
        let square = self.width == self.height;
        square.then(|| format!("conv2d_{0}x{0}_f32", self.filter))
    }

    /// The least any implementation moves: read the image once, write it once.
    fn work(&self) -> Work {
        Work::Bytes(2 * 4 * self.image.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        let (pi, po, len) = (self.input.as_device_ptr(), self.output.as_device_ptr(), self.image.len());
        let (width, height, r) = (self.width, self.height, self.filter / 2);
        let mut args = vec![arg(&pi), arg(&len), arg(&po), arg(&width), arg(&height)];
        let config = if variant.kernel == "conv2d_naive" {
            args.push(arg(&r));
            naive_config(width, height)?
        } else {
            tiled_config(width, height)?
        };
        gpu.launch(&variant.kernel, &config, &args)
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("the output", &self.output)
    }

    fn compute_reference(&mut self) {
        let image = ArrayView2::from_shape((self.height, self.width), &self.image).expect("height×width");
        let taps = ArrayView2::from_shape((self.filter, self.filter), &self.taps).expect("filter×filter");
        self.expected = cpu_reference(image, taps).into_raw_vec_and_offset().0;
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let tolerance = 4.0 * (self.filter * self.filter) as f64 * f32::EPSILON as f64;
        Ok(check::close(&gpu.download("the output", &self.output, self.image.len())?, &self.expected, tolerance).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn reference_matches_hand_computed_values() {
        let image = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]];
        let filter = array![[0.0f32, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]];
        let out = cpu_reference(image.view(), filter.view());
        // Centre: 5 + its four neighbours. Corner (0,0): 1 + 2 + 4, the rest is padding.
        assert_eq!(out[[1, 1]], 25.0);
        assert_eq!(out[[0, 0]], 7.0);
        assert_eq!(out[[2, 2]], 9.0 + 8.0 + 6.0);
        // Cross-correlation, not convolution: an off-centre tap is not mirrored.
        let shift = array![[0.0f32, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]];
        assert_eq!(cpu_reference(image.view(), shift.view())[[1, 1]], 6.0);
    }

    #[test]
    fn filter_sizes_are_validated() {
        assert_eq!(radius(5).unwrap(), 2);
        assert!(radius(4).is_err());
        assert!(radius(9).is_err());
        assert!(radius(1).is_err());
    }
}
