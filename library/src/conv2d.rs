//! Host side of `kernels::conv2d`: same-size output, zero padding, odd filters 3×3 to 7×7,
//! the taps written into the kernels' constant memory. The image is random, a PNG (as
//! grey-scale in [0, 1]), or a 2-D f32 `.npy` or FITS image (its values as stored); the filter
//! random, named (box, gaussian, sharpen, sobel-x) or read from a text file; `--out` writes the
//! GPU's result as an 8-bit PNG, or as f32 `.npy` or FITS (by extension).
//!
//! Tolerance: each of the `taps` products has magnitude at most `s = max|x|·max|f|`, below 1
//! for the random image and filter (uniform in [-1, 1)), up to 5 for a PNG and `sharpen`, any
//! size for a float image. The GPU (with fused multiply-adds) and the CPU round differently,
//! each within about `taps·ε·s` of the exact sum. Elements may differ by `4·taps·ε·max(1, s)`.

use crate::gpu::{
    product, refuse, require, require_disjoint, require_len, CudaContext, DeviceArray, DeviceMatrix, Gpu, GpuResult,
    KernelArgs, LaunchConfig, Params,
};
use cust::memory::{CopyDestination, DeviceSlice};
use interface::conv::{BLOCK_ROWS, FILTER_SYMBOL, MAX_RADIUS, MAX_TAPS, NAIVE_BLOCK, TILE};
use ndarray::{s, Array2, ArrayView2, Zip};
use std::ffi::CString;

/// The conv2d kernel steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// One thread per output pixel, every tap read from global memory (`conv2d_naive`).
    Naive,
    /// 64 × 64 output tiles, the input tile and its halo staged in shared memory
    /// (`conv2d_tiled_r1`, `_r2`, `_r3`, one per radius).
    Tiled,
}

impl Method {
    /// Every step, in ladder order.
    pub const ALL: [Method; 2] = [Method::Naive, Method::Tiled];

    /// The methods chosen with `--variant`, or all of them when none was.
    pub fn chosen(chosen: &[Method]) -> &[Method] {
        if chosen.is_empty() {
            &Method::ALL
        } else {
            chosen
        }
    }

    /// The launch of this step over a `width × height` image ([`naive_config`] or
    /// [`tiled_config`]).
    pub fn config(self, width: usize, height: usize) -> GpuResult<LaunchConfig> {
        match self {
            Method::Naive => naive_config(width, height),
            Method::Tiled => tiled_config(width, height),
        }
    }
}

/// The filters `--filter` knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// 3×3 mean.
    Box,
    /// 5×5 binomial blur.
    Gaussian,
    /// 3×3: the centre minus the discrete Laplacian.
    Sharpen,
    /// 3×3 horizontal gradient.
    SobelX,
}

impl Named {
    /// Every named filter.
    pub const ALL: [Named; 4] = [Named::Box, Named::Gaussian, Named::Sharpen, Named::SobelX];

    /// The name `--filter` takes.
    pub fn name(self) -> &'static str {
        match self {
            Named::Box => "box",
            Named::Gaussian => "gaussian",
            Named::Sharpen => "sharpen",
            Named::SobelX => "sobel-x",
        }
    }

    /// The side and the taps, row by row.
    pub fn taps(self) -> (usize, Vec<f32>) {
        match self {
            Named::Box => (3, vec![1.0 / 9.0; 9]),
            Named::Gaussian => {
                // The outer product of the binomial row 1 4 6 4 1 with itself, over 256.
                let row = [1.0f32, 4.0, 6.0, 4.0, 1.0];
                (5, row.iter().flat_map(|a| row.iter().map(move |b| a * b / 256.0)).collect())
            }
            Named::Sharpen => (3, vec![0.0, -1.0, 0.0, -1.0, 5.0, -1.0, 0.0, -1.0, 0.0]),
            Named::SobelX => (3, vec![-1.0, 0.0, 1.0, -2.0, 0.0, 2.0, -1.0, 0.0, 1.0]),
        }
    }
}

impl Named {
    /// The filter as a `side × side` array, for [`conv2d`] and [`conv2d_array`].
    ///
    /// ```
    /// use cuda_kernels::conv2d::Named;
    ///
    /// let gaussian = Named::Gaussian.filter();
    /// assert_eq!(gaussian.dim(), (5, 5));
    /// assert_eq!(gaussian.sum(), 1.0);
    /// assert_eq!(Named::SobelX.filter()[[1, 0]], -2.0);
    /// ```
    pub fn filter(self) -> Array2<f32> {
        let (side, taps) = self.taps();
        Array2::from_shape_vec((side, side), taps).expect("side × side taps")
    }
}

crate::named!(Method { Naive => "naive", Tiled => "tiled" });

/// Whether a square filter of `side` taps a side is one the kernels take: odd, 3 to
/// `2·MAX_RADIUS + 1`.
pub fn filter_side_ok(side: usize) -> bool {
    side % 2 == 1 && (3..=2 * MAX_RADIUS + 1).contains(&side)
}

/// The radius of an odd filter of at most `2·MAX_RADIUS + 1` taps a side.
pub fn radius(filter: usize) -> GpuResult<usize> {
    require(filter_side_ok(filter), || format!("the filter must be 3, 5 or 7 wide (got {})", filter))?;
    Ok(filter / 2)
}

/// Writes `taps` into the module's constant `FILTER`, which both convolution families read:
/// the most recently prepared convolution owns it.
pub fn set_filter(gpu: &Gpu, taps: &[f32]) -> GpuResult<()> {
    let mut padded = [0.0f32; MAX_TAPS];
    padded[..taps.len()].copy_from_slice(taps);
    let name = CString::new(FILTER_SYMBOL).expect("a symbol name without NUL");
    let mut symbol = gpu.module().get_global::<[f32; MAX_TAPS]>(&name).during("finding FILTER in the module")?;
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

/// The launch of `conv2d_naive` over a `width × height` image: one thread per pixel, in
/// blocks of `NAIVE_BLOCK × NAIVE_BLOCK`.
pub fn naive_config(width: usize, height: usize) -> GpuResult<LaunchConfig> {
    let side = NAIVE_BLOCK as usize;
    LaunchConfig::tiles_2d(width, height, (side, side), (NAIVE_BLOCK, NAIVE_BLOCK), 0)
}

/// The launch of the tiled kernels over a `width × height` image: one block of
/// `TILE × BLOCK_ROWS` threads per `TILE × TILE` output tile.
pub fn tiled_config(width: usize, height: usize) -> GpuResult<LaunchConfig> {
    LaunchConfig::tiles_2d(width, height, (TILE, TILE), (TILE as u32, BLOCK_ROWS as u32), 0)
}

/// The tiled kernel of a radius: the radius is a const generic, one entry point each.
pub fn tiled_kernel(radius: usize) -> &'static str {
    ["conv2d_tiled_r1", "conv2d_tiled_r2", "conv2d_tiled_r3"][radius - 1]
}

/// The arguments of the 2D convolutions: `input` and `output` are `height × width`, row-major,
/// and the filter in constant memory is `2·radius + 1` wide. `conv2d_naive` takes the radius
/// as a parameter; each `conv2d_tiled_r*` has its own.
pub struct Conv2dArgs<'a> {
    /// The image, `height × width`.
    pub input: &'a DeviceSlice<f32>,
    /// The filtered image, the same shape.
    pub output: &'a DeviceSlice<f32>,
    /// Pixels a row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// The filter's radius: `(side - 1) / 2`, 1 to `MAX_RADIUS`.
    pub radius: usize,
}

// SAFETY: the kernels read `input[..width·height]` and write `output[..width·height]`, both
// checked to exist and not to overlap; they read `(2·radius + 1)²` taps of the constant
// `FILTER`, which holds `MAX_TAPS`, and `radius <= MAX_RADIUS` is checked (a tiled kernel's
// shared tile is sized by its own radius, which must be the one asked for). The shape is the
// block and tile each kernel's indexing assumes. The parameters are
// `input: &[f32], output: *mut f32, width: usize, height: usize`, then `radius: usize` for
// `conv2d_naive`.
unsafe impl KernelArgs for Conv2dArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let pixels = product(kernel, self.width, self.height)?;
        require_len(kernel, "the input", self.input, pixels)?;
        require_len(kernel, "the output", self.output, pixels)?;
        require_disjoint(kernel, ("the output", self.output, pixels), ("the input", self.input, pixels))?;
        if !(1..=MAX_RADIUS).contains(&self.radius) {
            return Err(refuse(kernel, format!("radius {} is not 1 to {MAX_RADIUS}", self.radius)));
        }
        if kernel == "conv2d_naive" {
            naive_config(self.width, self.height)
        } else if kernel == tiled_kernel(self.radius) {
            tiled_config(self.width, self.height)
        } else {
            Err(refuse(kernel, format!("it is not a conv2d kernel of radius {}", self.radius)))
        }
    }

    fn params(&self, kernel: &str) -> Params {
        let params = Params::new().slice(self.input).pointer(self.output).value(self.width).value(self.height);
        if kernel == "conv2d_naive" {
            params.value(self.radius)
        } else {
            params
        }
    }
}

/// The step [`conv2d`] takes: [`Method::Tiled`], 64 × 64 output tiles staged in shared memory
/// with their halo, three times as fast as [`Method::Naive`] on large images.
pub const DEFAULT_METHOD: Method = Method::Tiled;

/// The kernel of `method` for a filter of `radius`.
fn method_kernel(method: Method, radius: usize) -> &'static str {
    match method {
        Method::Naive => "conv2d_naive",
        Method::Tiled => tiled_kernel(radius),
    }
}

/// An error unless the image has pixels and the output its shape.
fn check_image(image: (usize, usize), output: (usize, usize)) -> GpuResult<()> {
    let (height, width) = image;
    require(height > 0 && width > 0, || format!("conv2d: the image is {height}×{width}, with no pixel"))?;
    let (out_height, out_width) = output;
    require(output == image, || {
        format!("conv2d: the output is {out_height}×{out_width}, the image {height}×{width} needs {height}×{width}")
    })
}

/// An error unless `filter` is square with 3, 5 or 7 taps a side; its radius.
fn filter_radius(filter: (usize, usize)) -> GpuResult<usize> {
    let (rows, cols) = filter;
    require(rows == cols && filter_side_ok(rows), || {
        format!("conv2d: the filter is {rows}×{cols}; it must be 3×3, 5×5 or 7×7")
    })?;
    Ok(rows / 2)
}

/// The two-dimensional cross-correlation of `image` with `filter`, with zero padding, on `gpu`
/// with the default step ([`DEFAULT_METHOD`]): for a `(2r + 1) × (2r + 1)` filter,
/// `output[y][x] = Σ_{fy, fx} filter[fy][fx] · image[y + fy - r][x + fx - r]`, a pixel outside
/// the image reading as zero (the filter is not flipped, as in deep-learning frameworks and
/// `scipy.ndimage.correlate` with `mode='constant'`). `image` is `height × width` (row-major
/// f32), `output` must have its shape; the filter is 3 × 3, 5 × 5 or 7 × 7 ([`Named::filter`]
/// gives the named ones). Elements may differ from [`cpu_reference`] by the rounding of the
/// sum, `4·taps·ε·max(1, max|x|·max|f|)`.
///
/// Checked before anything runs: the image has pixels, the output has its shape, the filter's
/// shape, and that both arrays live on `gpu`; an error says what is wrong, e.g. "conv2d: the
/// output is 4×5, the image 5×4 needs 5×4".
///
/// Asynchronous: the filter is written to the constant memory of `gpu`'s module (a copy that
/// waits for the work already queued on `gpu`, which may read the previous filter), then the
/// kernel is queued on `gpu`'s stream and the function returns without waiting.
/// [`DeviceArray::to_array`] waits for it, and dropping an array waits for the kernel that uses
/// it. Each [`Gpu`] has its own module, so its filter is its own.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::conv2d::{conv2d, cpu_reference, Named};
/// use cuda_kernels::DeviceArray;
/// use ndarray::Array2;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let image = Array2::from_shape_fn((37, 29), |(y, x)| ((y * 7 + x * 3) % 11) as f32 / 11.0);
/// let filter = Named::Gaussian.filter();
/// let input = DeviceArray::from_array(&gpu, image.view())?;
/// let mut output = DeviceArray::zeros(&gpu, (37, 29))?;
/// conv2d(&gpu, &input, filter.view(), &mut output)?;
/// let expected = cpu_reference(image.view(), filter.view());
/// for (gpu_value, cpu_value) in output.to_array(&gpu)?.iter().zip(&expected) {
///     assert!((gpu_value - cpu_value).abs() <= 1e-5);
/// }
/// # Ok(())
/// # }
/// ```
pub fn conv2d(
    gpu: &Gpu,
    image: &DeviceMatrix<f32>,
    filter: ArrayView2<f32>,
    output: &mut DeviceMatrix<f32>,
) -> GpuResult<()> {
    conv2d_with(gpu, image, filter, output, DEFAULT_METHOD)
}

/// [`conv2d`] with the step `method`.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::conv2d::{conv2d_with, cpu_reference, Method, Named};
/// use cuda_kernels::DeviceArray;
/// use ndarray::Array2;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let image = Array2::from_shape_fn((5, 67), |(y, x)| ((y + 2 * x) % 5) as f32);
/// let filter = Named::SobelX.filter();
/// let input = DeviceArray::from_array(&gpu, image.view())?;
/// let mut output = DeviceArray::zeros(&gpu, (5, 67))?;
/// for method in Method::ALL {
///     conv2d_with(&gpu, &input, filter.view(), &mut output, method)?;
///     // Small integers: every sum is exact.
///     assert_eq!(output.to_array(&gpu)?, cpu_reference(image.view(), filter.view()));
/// }
/// # Ok(())
/// # }
/// ```
pub fn conv2d_with(
    gpu: &Gpu,
    image: &DeviceMatrix<f32>,
    filter: ArrayView2<f32>,
    output: &mut DeviceMatrix<f32>,
    method: Method,
) -> GpuResult<()> {
    check_image(image.dim(), output.dim())?;
    let radius = filter_radius(filter.dim())?;
    let (height, width) = image.dim();
    gpu.bind()?;
    let args = Conv2dArgs { input: image.slice(gpu)?, output: output.slice(gpu)?, width, height, radius };
    // Row by row, whatever the view's memory layout.
    let taps: Vec<f32> = filter.iter().copied().collect();
    set_filter(gpu, &taps)?;
    // SAFETY: the arrays record this launch right after it, so none is freed before it ran.
    unsafe { gpu.launch(method_kernel(method, radius), &args) }?;
    image.record_use(gpu)?;
    output.record_use(gpu)
}

/// The cross-correlation of `image` with `filter` (3 × 3, 5 × 5 or 7 × 7), with zero padding,
/// computed on `gpu`: copies the image to the GPU, runs [`conv2d`], and returns the result, of
/// the image's shape, once the GPU has finished. An empty image or another filter shape is an
/// error.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::conv2d::{conv2d_array, cpu_reference, Named};
/// use ndarray::array;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let image = array![[0.0f32, 1.0, 0.0], [1.0, 2.0, 1.0]];
/// let filter = Named::Sharpen.filter();
/// let output = conv2d_array(&gpu, image.view(), filter.view())?;
/// assert_eq!(output, array![[-2.0f32, 3.0, -2.0], [3.0, 7.0, 3.0]]);
/// assert_eq!(output, cpu_reference(image.view(), filter.view()));
/// # Ok(())
/// # }
/// ```
pub fn conv2d_array(gpu: &Gpu, image: ArrayView2<f32>, filter: ArrayView2<f32>) -> GpuResult<Array2<f32>> {
    check_image(image.dim(), image.dim())?;
    filter_radius(filter.dim())?;
    let image = DeviceArray::from_array(gpu, image)?;
    let mut output = DeviceArray::zeros(gpu, image.dim())?;
    conv2d(gpu, &image, filter, &mut output)?;
    output.to_array(gpu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn named_filters_are_square_and_the_reference_correlates() {
        for named in Named::ALL {
            let filter = named.filter();
            assert!(filter.is_square() && filter_side_ok(filter.nrows()), "{}", named.name());
        }
        let image = array![[0.0f32, 1.0, 0.0], [1.0, 2.0, 1.0]];
        let out = cpu_reference(image.view(), Named::Sharpen.filter().view());
        assert_eq!(out, array![[-2.0f32, 3.0, -2.0], [3.0, 7.0, 3.0]]);
    }

    #[test]
    fn shapes_are_checked() {
        assert!(check_image((5, 4), (5, 4)).is_ok());
        assert_eq!(filter_radius((7, 7)).unwrap(), 3);
        let message = check_image((5, 4), (4, 5)).unwrap_err().to_string();
        assert!(message.contains("conv2d: the output is 4×5, the image 5×4 needs 5×4"), "{message}");
        let message = check_image((0, 4), (0, 4)).unwrap_err().to_string();
        assert!(message.contains("conv2d: the image is 0×4, with no pixel"), "{message}");
        for (rows, cols) in [(1, 1), (4, 4), (3, 5), (9, 9), (0, 0)] {
            let message = filter_radius((rows, cols)).unwrap_err().to_string();
            assert!(message.contains(&format!("conv2d: the filter is {rows}×{cols}; it must be 3×3, 5×5 or 7×7")));
        }
    }
}
