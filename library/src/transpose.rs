//! Host side of `kernels::transpose`: `rows × cols` in, `cols × rows` out, f32 row-major.
//! The result must be exact (nothing is computed). Each report says how the kernel compares
//! with a device-to-device copy of the same bytes, timed the same way in the same run: the
//! ceiling a transpose can reach.

use crate::gpu::{product, require_disjoint, require_len, GpuResult, KernelArgs, LaunchConfig, Params};
use cust::memory::DeviceSlice;
use interface::transpose::{BLOCK_ROWS, TILE, WIDE_BLOCK_ROWS, WIDE_TILE};

crate::variants! {
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
    pub fn config(self, rows: usize, cols: usize) -> GpuResult<LaunchConfig> {
        let (side, block_rows) = match self {
            Method::Padded64 => (WIDE_TILE, WIDE_BLOCK_ROWS),
            _ => (TILE, BLOCK_ROWS),
        };
        LaunchConfig::tiles_2d(cols, rows, (side, side), (side as u32, block_rows as u32), 0)
    }
}

pub fn cpu_reference(input: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let input = ndarray::ArrayView2::from_shape((rows, cols), input).expect("rows×cols");
    input.t().iter().copied().collect()
}

/// The arguments of the transpose kernels: `input` is `rows × cols`, `output` `cols × rows`.
pub struct TransposeArgs<'a> {
    pub input: &'a DeviceSlice<f32>,
    pub output: &'a DeviceSlice<f32>,
    pub rows: usize,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_transposes() {
        // [[1, 2, 3], [4, 5, 6]] → [[1, 4], [2, 5], [3, 6]]
        assert_eq!(cpu_reference(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(cpu_reference(&[7.0, 8.0], 1, 2), vec![7.0, 8.0]);
    }
}
