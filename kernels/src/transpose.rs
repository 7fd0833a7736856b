//! Matrix transpose, the lesson in coalescing: `out[c][r] = in[r][c]` for a `rows × cols`
//! row-major f32 matrix. No arithmetic at all, so the only question is how the memory
//! accesses of a warp line up.
//!
//! Every kernel here gives a block a TILE×TILE square of the input, TILE × [`BLOCK_ROWS`]
//! threads that each take TILE / BLOCK_ROWS rows of it: thread `(tx, ty)` handles column
//! `tx` of rows `ty`, `ty + BLOCK_ROWS`, ...
//!
//! **`transpose_naive`**: each thread copies its elements straight across. A warp reads 32
//! consecutive floats of one input row (one 128-byte transaction) but writes them down one
//! output column, 32 floats `rows · 4` bytes apart: 32 transactions for 128 useful bytes.
//! The writes waste most of the bandwidth.
//!
//! **`transpose_shared`**: the block first reads its tile into shared memory row by row
//! (coalesced), synchronizes, then writes the output row by row, reading the tile column by
//! column: the transposition happens inside shared memory, where access order costs little,
//! and both global sides are coalesced. Little, not nothing: a tile column is 32 floats
//! TILE words apart, so all 32 fall in the same shared-memory bank and the warp's read is
//! split into 32 (a 32-way bank conflict).
//!
//! **`transpose_padded`**: the same with each tile row padded by one float (TILE + 1 words),
//! so that consecutive rows start one bank apart and a tile column touches all 32 banks once.
//!
//! **`transpose_padded_64`**: the padded kernel on a 64 × 64 tile with 64 × 4 threads, so
//! each thread moves 16 elements instead of 4: more loads in flight per thread while the
//! block waits at its barrier, and a quarter as many blocks to schedule.

use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::transpose::{BLOCK_ROWS, TILE, WIDE_BLOCK_ROWS, WIDE_TILE};

/// The corner of this block's `side × side` tile: (first row, first column) of the input.
#[inline(always)]
fn tile_origin(side: usize) -> (usize, usize) {
    (thread::block_idx_y() as usize * side, thread::block_idx_x() as usize * side)
}

/// # Safety
/// The launcher (`TransposeArgs` on the host) guarantees: `input` holds `rows · cols`
/// elements and `output` is valid for as many writes and overlaps nothing the kernel reads;
/// and each block is `TILE × BLOCK_ROWS` threads (`WIDE_TILE × WIDE_BLOCK_ROWS` for
/// [`transpose_padded_64`]), one per tile of the grid, as the shared tiles are sized for.
#[kernel]
pub unsafe fn transpose_naive(input: &[f32], output: *mut f32, rows: usize, cols: usize) {
    let (row0, col0) = tile_origin(TILE);
    let (tx, ty) = (thread::thread_idx_x() as usize, thread::thread_idx_y() as usize);
    let col = col0 + tx;
    let mut r = ty;
    while r < TILE {
        let row = row0 + r;
        if row < rows && col < cols {
            *output.add(col * rows + row) = *input.get_unchecked(row * cols + col);
        }
        r += BLOCK_ROWS;
    }
}

/// Through a shared `SIDE × SIDE` tile whose rows are `STRIDE` words apart (SIDE: bank
/// conflicts; SIDE + 1: none), with `SIDE × ROWS` threads; output rows are `out_stride`
/// elements apart (`rows` for a dense transpose) and each element passes through `convert`
/// on its way out.
#[inline(always)]
pub(crate) unsafe fn transpose_tiled<F: Fn(f32) -> f32, const SIDE: usize, const STRIDE: usize, const ROWS: usize>(
    input: &[f32],
    (output, out_stride): (*mut f32, usize),
    rows: usize,
    cols: usize,
    tile: *mut f32,
    convert: F,
) {
    let (row0, col0) = tile_origin(SIDE);
    let (tx, ty) = (thread::thread_idx_x() as usize, thread::thread_idx_y() as usize);

    // Read: thread (tx, r) takes input[row0 + r][col0 + tx] into tile[r][tx].
    let mut r = ty;
    while r < SIDE {
        let (row, col) = (row0 + r, col0 + tx);
        if row < rows && col < cols {
            *tile.add(r * STRIDE + tx) = *input.get_unchecked(row * cols + col);
        }
        r += ROWS;
    }
    thread::sync_threads();

    // Write: thread (tx, r) writes output[col0 + r][row0 + tx] = tile[tx][r]; consecutive
    // threads write consecutive output addresses.
    let mut r = ty;
    while r < SIDE {
        let (out_row, out_col) = (col0 + r, row0 + tx);
        if out_row < cols && out_col < rows {
            *output.add(out_row * out_stride + out_col) = convert(*tile.add(tx * STRIDE + r));
        }
        r += ROWS;
    }
}

/// # Safety
/// As for [`transpose_naive`].
#[kernel]
pub unsafe fn transpose_shared(input: &[f32], output: *mut f32, rows: usize, cols: usize) {
    let tile = shared_array![f32; TILE * TILE];
    transpose_tiled::<_, TILE, TILE, BLOCK_ROWS>(input, (output, rows), rows, cols, tile, |x| x);
}

/// # Safety
/// As for [`transpose_naive`].
#[kernel]
pub unsafe fn transpose_padded(input: &[f32], output: *mut f32, rows: usize, cols: usize) {
    let tile = shared_array![f32; TILE * (TILE + 1)];
    transpose_tiled::<_, TILE, { TILE + 1 }, BLOCK_ROWS>(input, (output, rows), rows, cols, tile, |x| x);
}

/// # Safety
/// As for [`transpose_naive`].
#[kernel]
pub unsafe fn transpose_padded_64(input: &[f32], output: *mut f32, rows: usize, cols: usize) {
    let tile = shared_array![f32; WIDE_TILE * (WIDE_TILE + 1)];
    transpose_tiled::<_, WIDE_TILE, { WIDE_TILE + 1 }, WIDE_BLOCK_ROWS>(input, (output, rows), rows, cols, tile, |x| x);
}
