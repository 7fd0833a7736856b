//! Host side of `kernels::saxpy`: a grid-stride loop over a grid sized to the GPU, not to the
//! data.
//!
//! Tolerance: the GPU may fuse the multiply-add (one rounding instead of two). With x and y in
//! [-1, 1) and a = 2.5, |a·x| + |y| <= 3.5, so the two differ by at most one rounding of that
//! size: 3.5·ε.

use crate::gpu::{
    blocks, require, require_aligned, require_disjoint, require_len, DeviceArray, DeviceVector, Gpu, GpuResult,
    KernelArgs, LaunchConfig, Params,
};
use cust::memory::DeviceSlice;
use interface::DEFAULT_BLOCK;
use ndarray::{Array1, ArrayView1};

/// The scale `a` of the command line's `y = a·x + y`, which the tolerance above assumes.
pub const A: f32 = 2.5;
/// Blocks per SM when the grid is left to the host: with 256 threads, a full SM.
pub const BLOCKS_PER_SM: u32 = 8;

crate::variants! {
    /// The steps of y = a·x + y.
    pub enum Method {
        /// One element per pass of the loop.
        Gridstride => ("gridstride", "saxpy"),
        /// Four elements per pass, with 16-byte loads and stores.
        Vec4 => ("vec4", "saxpy_vec4"),
    }
}

/// `a·x[i] + y[i]` for each `i`, rounded twice (the GPU may fuse it into one rounding).
pub fn cpu_reference(a: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter().zip(y).map(|(x, y)| a * x + y).collect()
}

/// The arguments of `saxpy` and `saxpy_vec4`: `y = a·x + y` over `x.len()` elements, by a
/// one-dimensional grid of `grid` blocks of `block` threads (any sizes: the loop is grid-stride).
pub struct SaxpyArgs<'a> {
    /// The scale of `x`.
    pub a: f32,
    /// The input.
    pub x: &'a DeviceSlice<f32>,
    /// The input and output, at least as long as `x`.
    pub y: &'a DeviceSlice<f32>,
    /// Blocks in the grid.
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
}

// SAFETY: the kernels read `x[..n]` and read and write `y[..n]`, n = x.len(), with y checked to
// be that long and not to overlap x; `saxpy_vec4` moves quads of both, checked 16-byte aligned.
// A grid-stride loop is correct on any one-dimensional grid (with a second dimension, two
// threads would share an index and race on `y`), which is the only shape built here. The
// parameters are `a: f32, x: &[f32], y: *mut f32`.
unsafe impl KernelArgs for SaxpyArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let method = Method::named(kernel)?;
        let n = self.x.len();
        require_len(kernel, "y", self.y, n)?;
        require_disjoint(kernel, ("y", self.y, n), ("x", self.x, n))?;
        if method == Method::Vec4 {
            require_aligned(kernel, "x", self.x, 16)?;
            require_aligned(kernel, "y", self.y, 16)?;
        }
        LaunchConfig::grid_stride(0, 0, self.block, self.grid)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().value(self.a).slice(self.x).pointer(self.y)
    }
}

/// An error unless `x` has elements and `y` is as long.
fn check_lengths(x: usize, y: usize) -> GpuResult<()> {
    require(x > 0, || "saxpy: x is empty: there is nothing to compute".into())?;
    require(y == x, || format!("saxpy: x holds {x} elements, y {y}: they must be as long"))
}

/// `y = a·x + y`, element by element, in place, on `gpu` (f32; the GPU may fuse the multiply
/// and the add into one rounding, so an element may differ from [`cpu_reference`] by one
/// rounding of `|a·x| + |y|`). The step is [`Method::Vec4`], 16-byte loads and stores, which
/// every device array's alignment allows, on a grid of at most [`BLOCKS_PER_SM`] blocks per SM.
///
/// Checked before anything runs: `x` is not empty, `y` is as long as `x`, and both live on
/// `gpu`.
///
/// Asynchronous: the kernel is queued on `gpu`'s stream and the function returns without
/// waiting. [`DeviceArray::to_array`] waits for it, and dropping an array waits for the kernel
/// that uses it.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::saxpy::{cpu_reference, saxpy};
/// use cuda_kernels::DeviceArray;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let (x, y) = ([1.0f32, -2.0, 0.5, 4.0, 3.0], [0.25f32, 1.0, -1.0, 2.0, 0.0]);
/// let dx = DeviceArray::from_slice(&gpu, &x)?;
/// let mut dy = DeviceArray::from_slice(&gpu, &y)?;
/// saxpy(&gpu, 2.5, &dx, &mut dy)?;
/// // These products and sums are exact in f32, fused or not.
/// assert_eq!(dy.to_array(&gpu)?.to_vec(), cpu_reference(2.5, &x, &y));
/// # Ok(())
/// # }
/// ```
pub fn saxpy(gpu: &Gpu, a: f32, x: &DeviceVector<f32>, y: &mut DeviceVector<f32>) -> GpuResult<()> {
    let n = x.len();
    check_lengths(n, y.len())?;
    // A grid-stride loop over quads: no more blocks than the quads fill, nor than the SMs
    // hold at once.
    let most = gpu.sms() * BLOCKS_PER_SM;
    let grid = blocks(n.div_ceil(4), DEFAULT_BLOCK as usize)?.min(most);
    gpu.bind()?;
    let args = SaxpyArgs { a, x: x.slice(gpu)?, y: y.slice(gpu)?, grid, block: DEFAULT_BLOCK };
    // SAFETY: the arrays record this launch right after it, so none is freed before it ran.
    unsafe { gpu.launch(Method::Vec4.kernel(), &args) }?;
    x.record_use(gpu)?;
    y.record_use(gpu)
}

/// `a·x + y`, computed on `gpu`: copies `x` and `y` to the GPU, runs [`saxpy`], and returns
/// the result once the GPU has finished. Empty or unequal inputs are an error.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::saxpy::{cpu_reference, saxpy_array};
/// use ndarray::Array1;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let x = Array1::linspace(-1.0f32, 1.0, 1001);
/// let y = x.mapv(f32::sin);
/// let result = saxpy_array(&gpu, 2.5, x.view(), y.view())?;
/// let expected = cpu_reference(2.5, &x.to_vec(), &y.to_vec());
/// // At most one rounding apart: |2.5·x| + |y| <= 3.5.
/// for (gpu_value, cpu_value) in result.iter().zip(&expected) {
///     assert!((gpu_value - cpu_value).abs() <= 3.5 * f32::EPSILON);
/// }
/// # Ok(())
/// # }
/// ```
pub fn saxpy_array(gpu: &Gpu, a: f32, x: ArrayView1<f32>, y: ArrayView1<f32>) -> GpuResult<Array1<f32>> {
    check_lengths(x.len(), y.len())?;
    let x = DeviceArray::from_array(gpu, x)?;
    let mut y = DeviceArray::from_array(gpu, y)?;
    saxpy(gpu, a, &x, &mut y)?;
    y.to_array(gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_checked() {
        assert!(check_lengths(1, 1).is_ok());
        let message = check_lengths(6, 5).unwrap_err().to_string();
        assert!(message.contains("saxpy: x holds 6 elements, y 5"), "{message}");
        let message = check_lengths(0, 0).unwrap_err().to_string();
        assert!(message.contains("saxpy: x is empty"), "{message}");
    }
}
