//! The inputs of the tensor-core steps: `A` and `B` converted once from f32 to the type the
//! tensor cores read, on the GPU, before any product. Each row is padded with zeros to a
//! multiple of `MMA_ROW_ALIGN` (64) elements, so every row starts 16-byte aligned and a
//! 16-byte piece of a row (or a 128-byte row of a Hopper TMA box) lies either wholly inside
//! the padded row or wholly past it: the products then copy whole pieces, and the zeros add
//! nothing.
//!
//! ```text
//!   f32, rows × cols          converted, rows × padded(cols)
//!   a00 a01 a02 a03 a04       r(a00) r(a01) r(a02) r(a03) r(a04) 0 0 0
//! ```
//!
//! TF32 stays in f32 bits, rounded to nearest with ties away from zero (`cvt.rna.tf32.f32`);
//! BF16 and FP16 are rounded to nearest even and written two to a 32-bit word.
//!
//! Hopper's TF32 wgmma reads B only contiguous along k, so its B is converted *transposed*
//! (`convert_tf32_transposed`): through the padded shared tile of `transpose.rs`, each element
//! rounded on its way out. It writes no padding: the host zeroes that copy first, since its
//! tensor map, like the others, reaches to the padded end of each row.

use crate::tensor::mma::{to_tf32, Bf16, Mma16, F16};
use crate::transpose::transpose_tiled;
use crate::{global_index, grid_threads};
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::matmul::padded;
use interface::transpose::{WIDE_BLOCK_ROWS, WIDE_TILE};

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

/// `dst[c][r] = tf32(src[r][c])`: the `rows × cols` matrix `src` transposed and rounded, the
/// rows of `dst` `padded(rows)` elements apart.
///
/// # Safety
/// `src.len() >= rows·cols`; `dst` is valid for `cols · padded(rows)` f32 writes and does not
/// overlap `src`. Blocks of `WIDE_TILE × WIDE_BLOCK_ROWS` threads, one per `WIDE_TILE` square of
/// `src` (x along its columns).
#[kernel]
pub unsafe fn convert_tf32_transposed(src: &[f32], dst: *mut f32, rows: usize, cols: usize) {
    let tile = shared_array![f32; WIDE_TILE * (WIDE_TILE + 1)];
    transpose_tiled::<_, WIDE_TILE, { WIDE_TILE + 1 }, WIDE_BLOCK_ROWS>(src, (dst, padded(rows)), rows, cols, tile, |x| {
        to_tf32(x)
    });
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
