//! The inputs of the tensor-core steps: `A` and `B` converted once from f32 to the type the
//! tensor cores read, on the GPU, before any product. Each row is padded with zeros to a
//! multiple of `MMA_ROW_ALIGN` (8) elements, so every row starts 16-byte aligned and a
//! 16-byte piece of a row lies either wholly inside the padded row or wholly past it: the
//! products then copy whole pieces, and the zeros add nothing.
//!
//! ```text
//!   f32, rows × cols          converted, rows × padded(cols)
//!   a00 a01 a02 a03 a04       r(a00) r(a01) r(a02) r(a03) r(a04) 0 0 0
//! ```
//!
//! TF32 stays in f32 bits, rounded to nearest with ties away from zero (`cvt.rna.tf32.f32`);
//! BF16 and FP16 are rounded to nearest even and written two to a 32-bit word.

use crate::tensor::mma::{to_tf32, Bf16, Mma16, F16};
use crate::{global_index, grid_threads};
use cuda_std::prelude::*;
use interface::matmul::padded;

/// Element `(row, col)` of the `rows × cols` matrix `src`, or 0 past its columns.
#[inline(always)]
unsafe fn element(src: &[f32], cols: usize, row: usize, col: usize) -> f32 {
    if col < cols {
        *src.as_ptr().add(row * cols + col)
    } else {
        0.0
    }
}

/// # Safety
/// `src.len() >= rows·cols`; `dst` is valid for `rows · padded(cols)` f32 writes and does not
/// overlap `src`. Any 1D launch (a grid-stride loop covers every element).
#[kernel]
pub unsafe fn convert_tf32(src: &[f32], dst: *mut f32, rows: usize, cols: usize) {
    let width = padded(cols);
    let mut i = global_index();
    while i < rows * width {
        *dst.add(i) = to_tf32(element(src, cols, i / width, i % width));
        i += grid_threads();
    }
}

/// Pairs of elements rounded to `T` and packed: word `i` of `dst` holds padded elements `2i`
/// and `2i + 1` (a padded row has an even length, so a pair never straddles two rows).
#[inline(always)]
unsafe fn convert_pairs<T: Mma16>(src: &[f32], dst: *mut u32, rows: usize, cols: usize) {
    let pairs = padded(cols) / 2;
    let mut i = global_index();
    while i < rows * pairs {
        let (row, col) = (i / pairs, i % pairs * 2);
        *dst.add(i) = T::pack(element(src, cols, row, col), element(src, cols, row, col + 1));
        i += grid_threads();
    }
}

/// # Safety
/// `src.len() >= rows·cols`; `dst` is 4-byte aligned, valid for `rows · padded(cols)` 16-bit
/// writes and does not overlap `src`. Any 1D launch.
#[kernel]
pub unsafe fn convert_bf16(src: &[f32], dst: *mut u32, rows: usize, cols: usize) {
    convert_pairs::<Bf16>(src, dst, rows, cols);
}

/// # Safety
/// As [`convert_bf16`].
#[kernel]
pub unsafe fn convert_f16(src: &[f32], dst: *mut u32, rows: usize, cols: usize) {
    convert_pairs::<F16>(src, dst, rows, cols);
}
