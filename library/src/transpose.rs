//! Host side of `kernels::transpose`: `rows × cols` in, `cols × rows` out, f32 row-major.
//! The result must be exact (nothing is computed). Each report says how the kernel compares
//! with a device-to-device copy of the same bytes, timed the same way in the same run: the
//! ceiling a transpose can reach.

use crate::gpu::{
    product, require, require_disjoint, require_len, DeviceArray, DeviceMatrix, Gpu, GpuResult, KernelArgs,
    LaunchConfig, Params,
};
use cust::memory::DeviceSlice;
use interface::transpose::{BLOCK_ROWS, TILE, WIDE_BLOCK_ROWS, WIDE_TILE};
use ndarray::{Array2, ArrayView2};

crate::variants! {
    /// The steps of the transpose, each adding one idea.
    pub enum Method {
        /// Coalesced reads, strided writes.
        Naive => ("naive", "transpose_naive"),
        /// Through a shared-memory tile (32-way bank conflicts on the column reads).
        Shared => ("shared", "transpose_shared"),
        /// The tile padded by one column: no bank conflicts.
        Padded => ("padded", "transpose_padded"),
        /// Padded, on 64 × 64 tiles: 16 elements per thread.
        Padded64 => ("padded64", "transpose_padded_64"),
    }
}

impl Method {
    /// The launch of this step over a `rows × cols` input: one block per tile of the input,
    /// 32 × 8 threads a 32 × 32 tile, or 64 × 4 threads a 64 × 64 tile for `Padded64`.
    pub fn config(self, rows: usize, cols: usize) -> GpuResult<LaunchConfig> {
        let (side, block_rows) = match self {
            Method::Padded64 => (WIDE_TILE, WIDE_BLOCK_ROWS),
            _ => (TILE, BLOCK_ROWS),
        };
        LaunchConfig::tiles_2d(cols, rows, (side, side), (side as u32, block_rows as u32), 0)
    }
}

/// The transpose of the row-major `rows × cols` `input`: `cols × rows`, row-major.
pub fn cpu_reference(input: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let input = ndarray::ArrayView2::from_shape((rows, cols), input).expect("rows×cols");
    input.t().iter().copied().collect()
}

/// The arguments of the transpose kernels: `input` is `rows × cols`, `output` `cols × rows`.
pub struct TransposeArgs<'a> {
    /// The input, `rows × cols`.
    pub input: &'a DeviceSlice<f32>,
    /// The output, `cols × rows`.
    pub output: &'a DeviceSlice<f32>,
    /// Rows of the input.
    pub rows: usize,
    /// Columns of the input.
    pub cols: usize,
}

// SAFETY: the kernels read `input[..rows·cols]` and write `output[..rows·cols]`, both checked
// to exist and not to overlap; each block of the returned shape covers one tile with the
// threads its kernel's indexing assumes. The parameters are
// `input: &[f32], output: *mut f32, rows: usize, cols: usize`.
unsafe impl KernelArgs for TransposeArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let method = Method::named(kernel)?;
        let len = product(kernel, self.rows, self.cols)?;
        require_len(kernel, "the input", self.input, len)?;
        require_len(kernel, "the output", self.output, len)?;
        require_disjoint(kernel, ("the output", self.output, len), ("the input", self.input, len))?;
        method.config(self.rows, self.cols)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.input).pointer(self.output).value(self.rows).value(self.cols)
    }
}

/// The step [`transpose`] takes: [`Method::Padded`], 32 × 32 tiles padded against bank
/// conflicts. [`Method::Padded64`] is a few percent faster on large square matrices, but its
/// 64 × 64 tiles leave more threads idle on thin or small ones.
pub const DEFAULT_METHOD: Method = Method::Padded;

/// An error unless the input has elements and the output its transposed shape.
fn check_shapes(input: (usize, usize), output: (usize, usize)) -> GpuResult<()> {
    let ((rows, cols), (out_rows, out_cols)) = (input, output);
    require(rows > 0 && cols > 0, || format!("transpose: the input is {rows}×{cols}, with no element"))?;
    require(output == (cols, rows), || {
        format!("transpose: the output is {out_rows}×{out_cols}, the input {rows}×{cols} needs {cols}×{rows}")
    })
}

/// `output = inputᵀ` on `gpu` with the default step ([`DEFAULT_METHOD`]): `input` is
/// `rows × cols`, `output` must be `cols × rows` (both row-major f32); `output[c][r] =
/// input[r][c]`, exactly.
///
/// Checked before anything runs: the input has at least one element, the output has the
/// transposed shape, and both arrays live on `gpu`; an error says what is wrong, e.g.
/// "transpose: the output is 3×5, the input 4×3 needs 3×4".
///
/// Asynchronous: the kernel is queued on `gpu`'s stream and the function returns without
/// waiting. [`DeviceArray::to_array`] waits for it, and dropping either array waits for the
/// kernel that uses it.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::transpose::{cpu_reference, transpose};
/// use cuda_kernels::DeviceArray;
/// use ndarray::Array2;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let host = Array2::from_shape_fn((3, 5), |(r, c)| (10 * r + c) as f32);
/// let input = DeviceArray::from_array(&gpu, host.view())?;
/// let mut output = DeviceArray::zeros(&gpu, (5, 3))?;
/// transpose(&gpu, &input, &mut output)?;
/// let expected = cpu_reference(host.as_slice().unwrap(), 3, 5);
/// assert_eq!(output.to_array(&gpu)?.as_slice(), Some(&expected[..]));
/// # Ok(())
/// # }
/// ```
pub fn transpose(gpu: &Gpu, input: &DeviceMatrix<f32>, output: &mut DeviceMatrix<f32>) -> GpuResult<()> {
    transpose_with(gpu, input, output, DEFAULT_METHOD)
}

/// [`transpose`] with the step `method` (every step computes the same, exact result).
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::transpose::{transpose_with, Method};
/// use cuda_kernels::DeviceArray;
/// use ndarray::Array2;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let host = Array2::from_shape_fn((67, 2), |(r, c)| (r * 2 + c) as f32);
/// let input = DeviceArray::from_array(&gpu, host.view())?;
/// let mut output = DeviceArray::zeros(&gpu, (2, 67))?;
/// for method in Method::ALL.iter().copied() {
///     transpose_with(&gpu, &input, &mut output, method)?;
///     assert_eq!(output.to_array(&gpu)?, host.t());
/// }
/// # Ok(())
/// # }
/// ```
pub fn transpose_with(
    gpu: &Gpu,
    input: &DeviceMatrix<f32>,
    output: &mut DeviceMatrix<f32>,
    method: Method,
) -> GpuResult<()> {
    check_shapes(input.dim(), output.dim())?;
    let (rows, cols) = input.dim();
    gpu.bind()?;
    let args = TransposeArgs { input: input.slice(gpu)?, output: output.slice(gpu)?, rows, cols };
    // SAFETY: the arrays record this launch right after it, so none is freed before it ran.
    unsafe { gpu.launch(method.kernel(), &args) }?;
    input.record_use(gpu)?;
    output.record_use(gpu)
}

/// `inputᵀ`, computed on `gpu`: copies `input` (any memory layout) to the GPU, runs
/// [`transpose`], and returns the `cols × rows` result once the GPU has finished. An empty
/// input is an error.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::transpose::{cpu_reference, transpose_array};
/// use ndarray::array;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let input = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
/// let output = transpose_array(&gpu, input.view())?;
/// assert_eq!(output, array![[1.0f32, 4.0], [2.0, 5.0], [3.0, 6.0]]);
/// assert_eq!(output.as_slice(), Some(&cpu_reference(input.as_slice().unwrap(), 2, 3)[..]));
/// # Ok(())
/// # }
/// ```
pub fn transpose_array(gpu: &Gpu, input: ArrayView2<f32>) -> GpuResult<Array2<f32>> {
    let (rows, cols) = input.dim();
    check_shapes((rows, cols), (cols, rows))?;
    let input = DeviceArray::from_array(gpu, input)?;
    let mut output = DeviceArray::zeros(gpu, (cols, rows))?;
    transpose(gpu, &input, &mut output)?;
    output.to_array(gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_transposes() {
        // [[1, 2, 3], [4, 5, 6]] → [[1, 4], [2, 5], [3, 6]]
        assert_eq!(cpu_reference(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(cpu_reference(&[7.0, 8.0], 1, 2), vec![7.0, 8.0]);
    }

    #[test]
    fn shapes_are_checked() {
        assert!(check_shapes((4, 3), (3, 4)).is_ok());
        assert!(check_shapes((1, 1), (1, 1)).is_ok());
        let message = check_shapes((4, 3), (3, 5)).unwrap_err().to_string();
        assert!(message.contains("transpose: the output is 3×5, the input 4×3 needs 3×4"), "{message}");
        let message = check_shapes((4, 3), (4, 3)).unwrap_err().to_string();
        assert!(message.contains("the output is 4×3, the input 4×3 needs 3×4"), "{message}");
        let message = check_shapes((0, 3), (3, 0)).unwrap_err().to_string();
        assert!(message.contains("transpose: the input is 0×3, with no element"), "{message}");
    }
}
